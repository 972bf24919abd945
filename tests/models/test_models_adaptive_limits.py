"""The adaptive controller against token-bound limits and random 429s, over loopback HTTP."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import anyio
import pytest

from agentjudge import Evaluator, Status
from agentjudge.core import Context
from agentjudge.judges import LLMJudge
from agentjudge.models import OpenAIChat
from agentjudge.models._adaptive import AdaptiveController
from agentjudge.testing import FakeModelServer, FakeRateLimit, FakeResponse
from agentjudge.testing._fake_server import _charge

TEMPLATE = "Q: {{input}}\nA: {{output}}\nCorrect?"


async def judge_calls(
    server: FakeModelServer, calls: int, concurrency: int = 50
) -> tuple[list[Any], AdaptiveController]:
    """``calls`` LLM-judge calls through an Evaluator; the results and the client's controller."""
    async with OpenAIChat("m", base_url=server.base_url, api_key="k") as model:
        evaluator = Evaluator(LLMJudge("j", model, TEMPLATE), max_concurrency=concurrency)
        contexts = [Context(input=f"q{i}", output=f"a{i}") for i in range(calls)]
        results = [r async for case in evaluator.run(contexts) for r in case.results]
        return results, model._session.get().controller


async def test_a_token_bound_limit_is_paced_from_the_token_headers() -> None:
    """Tokens per minute binding (~100 calls/s, 1,000 req/s allowed): under 5% 429s."""
    async with FakeModelServer(FakeResponse(text="Answer: YES")) as probe:
        await judge_calls(probe, 1)
        per_call = _charge(probe.requests[0])
    limit = FakeRateLimit(rps=1000, burst=100, tpm=100 * 60 * per_call)
    async with FakeModelServer(FakeResponse(text="Answer: YES"), rate_limit=limit) as server:
        results, _ = await judge_calls(server, 300)
    assert [r.status for r in results] == [Status.PASS] * 300
    assert server.throttled <= 15  # 5% of the calls


@pytest.mark.timing
async def test_random_429s_do_not_spiral_the_rate_down() -> None:
    """A proxy refusing one call in five at random is learned as noise: the cuts are undone.

    Timing: the controller tells noise from congestion by when refusals arrive, so on a
    machine loaded far past its cores (load average 18 on 2 cores) the window stayed at 4.
    """
    rng = random.Random(7)

    def flaky(_: Any) -> FakeResponse:
        if rng.random() < 0.2:
            return FakeResponse(status=429, headers={"retry-after-ms": "2"})
        return FakeResponse(text="Answer: YES", latency=0.005)

    async with FakeModelServer(flaky) as server:
        results, controller = await judge_calls(server, 600, concurrency=32)
    assert all(r.status is Status.PASS for r in results)
    # once the refusals are known as noise, the window is back near the concurrency used
    assert controller.window >= 8


async def test_free_capacity_is_admitted_without_a_trip_through_the_loop() -> None:
    """A request with capacity free and nobody queued is admitted at once (issue 19.11).

    Every admission went through the controller's lock, one per pass through the event loop:
    100 concurrent LLM-judge calls waited ~0.3 s each to be admitted.
    """
    control = AdaptiveController(100, initial=100)
    passes: list[int] = []
    asyncio.get_running_loop().call_soon(passes.append, 1)
    for _ in range(50):
        await control.admit()
    assert passes == []
    assert control.in_flight == 50


async def test_a_newcomer_queues_behind_a_request_waiting_for_capacity() -> None:
    """With the window full, later requests wait in arrival order: none jumps the queue."""
    control = AdaptiveController(1, initial=1)
    await control.admit()
    order: list[str] = []

    async def request(name: str) -> None:
        await control.admit()
        order.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(request, "first")
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(request, "second")
        await anyio.wait_all_tasks_blocked()
        assert order == []
        control.finished()  # frees the one slot: the first waiter takes it
        await anyio.wait_all_tasks_blocked()
        assert order == ["first"]
        control.finished()
    assert order == ["first", "second"]
    assert control.in_flight == 1

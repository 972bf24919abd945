"""A model call that fails leaves no error, traceback or frame in a reference cycle (issue 19.11).

The client kept a failed first attempt's error in locals of frames that the error's traceback
holds (error -> traceback -> frame -> error): every failed call (a provider outage: every
call) left ~25-55 objects, its frames among them, for the garbage collector. Retried calls
still leave tenacity's own objects (its retrying object and state refer to each other), but
no error, traceback or frame.
"""

from __future__ import annotations

from collections import Counter

import anyio
import pytest
from gc_support import failure_kinds, garbage_of

from agentjudge import Message, ModelRequest, OpenAIChat, RetryPolicy
from agentjudge.exceptions import ModelHTTPError
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

REQUEST = ModelRequest(messages=(Message(role="user", content="is 4 the answer to 2+2?"),))


async def _garbage_of_calls(answer: FakeResponse, attempts: int) -> Counter[str]:
    """What 8 calls answered ``answer`` leave to the collector (after 8 not counted)."""
    policy = RetryPolicy(attempts=attempts, initial_delay=0.0, max_delay=0.0, jitter=False)
    async with (
        FakeModelServer(answer, record=False) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="sk-test", retry=policy) as model,
    ):

        async def calls() -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(_call, model)

        await calls()  # connections opened, paths learned: not counted
        return await garbage_of(calls)


async def _call(model: OpenAIChat) -> None:
    try:
        await model.complete(REQUEST)
    except ModelHTTPError:
        OUTCOMES["failed"] += 1
    else:
        OUTCOMES["answered"] += 1


OUTCOMES: Counter[str] = Counter()


@pytest.mark.parametrize("status", [500, 400])
async def test_a_failed_call_leaves_no_cyclic_garbage(status: int) -> None:
    answer = FakeResponse(status=status, json={"error": {"message": "unavailable"}})
    OUTCOMES.clear()
    assert await _garbage_of_calls(answer, attempts=1) == Counter()
    assert dict(OUTCOMES) == {"failed": 16}


async def test_a_retried_failed_call_keeps_no_error_or_frame_in_a_cycle() -> None:
    answer = FakeResponse(status=500, json={"error": {"message": "unavailable"}})
    OUTCOMES.clear()
    assert failure_kinds(await _garbage_of_calls(answer, attempts=3)) == Counter()
    assert dict(OUTCOMES) == {"failed": 16}


async def test_a_call_that_succeeds_leaves_no_cyclic_garbage() -> None:
    OUTCOMES.clear()
    assert await _garbage_of_calls(FakeResponse(text="PASS"), attempts=1) == Counter()
    assert dict(OUTCOMES) == {"answered": 16}


async def test_a_throttled_call_retried_by_the_client_leaves_no_cyclic_garbage() -> None:
    """Every other answer a 429 (retried by the adaptive client, under a deadline)."""
    answered = [0]

    def answer(body: object) -> FakeResponse:
        answered[0] += 1
        if answered[0] % 2:
            error = {"error": {"message": "slow down"}}
            return FakeResponse(status=429, json=error, headers={"retry-after-ms": "1"})
        return FakeResponse(text="PASS")

    async with (
        FakeModelServer(answer, record=False) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="sk-test") as model,
    ):

        async def calls() -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(_call_within_a_deadline, model)

        await calls()
        OUTCOMES.clear()
        assert await garbage_of(calls) == Counter()
    assert dict(OUTCOMES) == {"answered": 8}
    assert answered[0] >= 24  # some of them were throttled and sent again


async def _call_within_a_deadline(model: OpenAIChat) -> None:
    with anyio.fail_after(10):  # the adaptive client retries throttled calls until a deadline
        await _call(model)

"""Model clients under the Evaluator: failures become ERROR results, juries survive 429s."""

from __future__ import annotations

import random
from typing import Any

import pytest

from agentjudge.core import Context, Status
from agentjudge.models import OpenAIChat, RateLimit, RetryPolicy
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

engine = pytest.importorskip("agentjudge.engine")
llm = pytest.importorskip("agentjudge.judges._llm")

TEMPLATE = "Question: {{input}}\nAnswer: {{output}}\nIs the answer correct?"


async def test_hang_becomes_a_timeout_error_result() -> None:
    """A server that never answers gives an ERROR result with the timeout's type, no hang."""
    async with (
        FakeModelServer(FakeResponse(hang=True)) as server,
        OpenAIChat("m", base_url=server.base_url, timeout=0.2, retry=None) as model,
    ):
        judge = llm.LLMJudge("correct", model, TEMPLATE)
        evaluator = engine.Evaluator(judge, retry=None, timeout=5.0)
        [result] = await evaluator.evaluate(input="2+2?", output="4")
    assert result.status is Status.ERROR
    assert result.error_type == "ReadTimeout"
    assert len(server.requests) == 1


async def test_401_becomes_an_error_result_with_the_hint() -> None:
    """A 401 is one request and an ERROR result whose reasoning says what to fix."""
    async with (
        FakeModelServer(FakeResponse(status=401, text="Incorrect API key")) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="bad") as model,
    ):
        judge = llm.LLMJudge("correct", model, TEMPLATE)
        [result] = await engine.Evaluator(judge).evaluate(input="2+2?", output="4")
    assert result.status is Status.ERROR
    assert result.error_type == "ModelHTTPError"
    assert "OPENAI_API_KEY" in (result.reasoning or "")
    assert len(server.requests) == 1  # neither the client nor the Evaluator retried


async def test_jury_under_429s_has_no_errors_and_keeps_the_budget() -> None:
    """3 judges x 20 cases with 20% 429 (retry-after-ms 50): no ERROR, budget never exceeded.

    20 cases (was 40, each window of 40 calls costing 0.25 s of waiting): 48 calls at once
    (16 cases, 3 judges) still overrun one window's budget, and the rest need a second.
    """
    rng = random.Random(7)

    def flaky(request: Any) -> FakeResponse:
        if rng.random() < 0.2:
            return FakeResponse(status=429, headers={"retry-after-ms": "50"})
        return FakeResponse(text="Answer: YES")

    limit = RateLimit(rpm=40, period=0.25)
    retry = RetryPolicy(attempts=8, initial_delay=0.01, max_delay=0.1)
    async with (
        FakeModelServer(flaky) as server,
        OpenAIChat("a", base_url=server.base_url, rate_limit=limit, retry=retry) as a,
        OpenAIChat("b", base_url=server.base_url, rate_limit=limit, retry=retry) as b,
        OpenAIChat("c", base_url=server.base_url, rate_limit=limit, retry=retry) as c,
    ):
        jury = engine.Jury([llm.LLMJudge(m.name, m, TEMPLATE) for m in (a, b, c)])
        evaluator = engine.Evaluator(jury, max_concurrency=48)
        contexts = [Context(input=f"q{i}", output=f"a{i}") for i in range(20)]
        statuses = [
            r.status async for case in evaluator.run(contexts, concurrency=16) for r in case.results
        ]
    assert len(statuses) == 60
    assert Status.ERROR not in statuses
    times = sorted(r.time for r in server.received)
    assert len(times) > 60  # some calls were retried
    most = max(sum(1 for u in times if t <= u < t + 0.25) for t in times)
    assert most <= 40

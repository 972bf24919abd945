"""A Retry-After longer than the time left fails at once, naming the wait (issue 12, item 11)."""

from __future__ import annotations

import anyio
import pytest

from agentjudge import Evaluator, Status
from agentjudge.core import Context, Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.judges import LLMJudge
from agentjudge.models import ModelRequest, OpenAIChat, RetryPolicy
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
REQUEST = ModelRequest(messages=(Message(role="user", content="Grade this."),))


async def test_evaluator_timeout_shorter_than_retry_after_reports_the_429() -> None:
    """Under an Evaluator timeout of 2 s a 429 asking for 30 s is an ERROR naming both waits."""
    limited = FakeResponse(status=429, text="slow down", headers={"Retry-After": "30"})
    async with (
        FakeModelServer(limited) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k", retry=FAST) as model,
    ):
        evaluator = Evaluator(LLMJudge("j", model, "{{output}}"), timeout=2)
        [result] = await evaluator.evaluate(Context(output="4"))
    judgment = result.judgment
    assert judgment is not None and judgment.status is Status.ERROR
    assert result.error_type == "ModelHTTPError"
    assert "HTTP 429" in judgment.reasoning
    assert "provider asked to wait 30 s" in judgment.reasoning
    assert "left before the timeout" in judgment.reasoning
    assert len(server.requests) == 1  # not retried: the wait could never fit


async def test_client_under_fail_after_fails_at_once_with_the_requested_wait() -> None:
    """Called under anyio.fail_after, the client raises ModelHTTPError (429), not TimeoutError."""
    limited = FakeResponse(status=429, headers={"retry-after-ms": "20000"})
    async with (
        FakeModelServer(limited) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST) as model,
    ):
        with anyio.fail_after(3), pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert caught.value.status_code == 429
    assert "asked to wait 20 s before retrying, longer than the" in str(caught.value)


async def test_retry_after_that_fits_the_deadline_is_still_honoured() -> None:
    """A Retry-After shorter than the time left is waited and the retry succeeds."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(status=429, headers={"retry-after-ms": "50"}))
        async with OpenAIChat("m", base_url=server.base_url, retry=FAST) as model:
            with anyio.fail_after(20):  # generous bound: the wait asked for is 0.05 s
                response = await model.complete(REQUEST)
    assert response.text == "PASS"
    assert response.attempts == 2

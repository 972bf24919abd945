"""A client's first attempt skips the retry machinery: equal to the general path (issue 19.11).

`HTTPModelClient._send` makes the first HTTP attempt directly and hands over to
``call_with_retry`` only when it failed (`_retried`). This property test pins that to the
general path it replaced, ``call_with_retry(policy, attempt)`` around every attempt (kept
below as `GeneralPath`), against the real loopback server: for any script of answers (success,
429, 503, 500, 400, a body that is not a completion), retry policy, adaptive or not, with or
without a deadline, both give the same answer and attempts, or the same error, after the same
number of requests.
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge._retry import call_with_retry
from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.models import OpenAIChat, RetryPolicy
from agentjudge.models._failures import RetryableStatus, exhausted_hint, is_retryable_error
from agentjudge.models._http import _Tally
from agentjudge.models._provider import Reply
from agentjudge.models._types import ModelRequest
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

REQUEST = ModelRequest(messages=(Message(role="user", content="Is the answer correct?"),))
ANSWERS = {
    "ok": FakeResponse(text="PASS"),
    "429": FakeResponse(status=429, headers={"retry-after-ms": "1"}),
    "503": FakeResponse(status=503, headers={"retry-after-ms": "1"}),
    "500": FakeResponse(status=500, text="boom"),
    "400": FakeResponse(status=400, text="bad request"),
    "garbage": FakeResponse(raw_body=b"not json"),
}


class GeneralPath(OpenAIChat):
    """`_send` as it was: every attempt, the first included, inside ``call_with_retry``."""

    async def _send(self, content: bytes, estimate: int) -> tuple[Reply, int, float]:
        headers = self._request_headers()
        tally = _Tally()

        async def attempt() -> Reply:
            while True:
                try:
                    return await self._once(content, headers, estimate, tally)
                except RetryableStatus as exc:
                    if not self._retries_throttle(exc):
                        raise
                    tally.throttled += 1

        policy = self.retry

        def retryable(exc: BaseException) -> bool:
            return is_retryable_error(exc) or (policy is not None and policy.is_retryable(exc))

        try:
            reply, attempts = await call_with_retry(policy, attempt, retryable=retryable)
        except RetryableStatus as exc:
            allowed = policy.attempts if policy is not None else 1
            raise ModelHTTPError(
                exc.status_code, self.name, exc.excerpt, exhausted_hint(exc.status_code, allowed)
            ) from exc
        return reply, attempts + tally.throttled, tally.queued


async def _outcome(
    cls: type[OpenAIChat], script: list[str], attempts: int, adaptive: bool, deadline: bool
) -> tuple[Any, ...]:
    policy = RetryPolicy(attempts=attempts, initial_delay=0.0, max_delay=0.0)
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        for name in script:
            server.enqueue(ANSWERS[name])
        async with cls(
            "m", base_url=server.base_url, api_key="k" * 12, retry=policy, adaptive=adaptive
        ) as model:
            try:
                with anyio.fail_after(30 if deadline else None):
                    response = await model.complete(REQUEST)
            except Exception as exc:  # the error is the outcome compared
                result: tuple[Any, ...] = ("error", type(exc), str(exc))
            else:
                result = ("answer", response.text, response.attempts)
        return (*result, len(server.requests))


@settings(max_examples=40, deadline=None)
@given(
    script=st.lists(st.sampled_from(sorted(ANSWERS)), max_size=4),
    attempts=st.integers(min_value=1, max_value=3),
    adaptive=st.booleans(),
    deadline=st.booleans(),
)
def test_first_attempt_fast_path_equals_the_retry_machinery(
    script: list[str], attempts: int, adaptive: bool, deadline: bool
) -> None:
    """Same answer and attempts (or the same error) after the same requests, either way."""

    async def both() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        fast = await _outcome(OpenAIChat, script, attempts, adaptive, deadline)
        general = await _outcome(GeneralPath, script, attempts, adaptive, deadline)
        return fast, general

    fast, general = anyio.run(both)
    assert fast == general

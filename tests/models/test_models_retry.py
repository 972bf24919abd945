"""Model clients: which HTTP failures are retried, how long they wait, and what escapes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anyio
import httpx
import pytest

from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError, ModelResponseError
from agentjudge.models import OpenAIChat, RetryPolicy
from agentjudge.models._headers import parse_retry_after
from agentjudge.models._types import ModelRequest
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
REQUEST = ModelRequest(messages=(Message(role="user", content="Is the answer correct?"),))


def gap(server: FakeModelServer, i: int = 0) -> float:
    """Seconds between the arrival of request i and request i + 1 at the server."""
    return server.received[i + 1].time - server.received[i].time


# -- Retry-After parsing -------------------------------------------------------------------------


def test_retry_after_seconds_and_milliseconds() -> None:
    """Retry-After delay-seconds (digits) is read as-is; retry-after-ms may have a fraction."""
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": " 120 "}) == 120.0
    assert parse_retry_after({"retry-after-ms": "250.5"}) == 0.2505


def test_retry_after_ms_wins() -> None:
    """retry-after-ms is preferred over Retry-After (it is more precise)."""
    assert parse_retry_after({"retry-after-ms": "150", "Retry-After": "1"}) == 0.15


def test_retry_after_http_date() -> None:
    """An HTTP date becomes the seconds until then; a past date means 0."""
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=7), usegmt=True)
    earlier = format_datetime(now - timedelta(seconds=7), usegmt=True)
    assert parse_retry_after({"Retry-After": later}, now=now) == 7.0
    assert parse_retry_after({"Retry-After": earlier}, now=now) == 0.0


def test_retry_after_garbage_is_ignored() -> None:
    """Missing, negative, non-finite or unparseable values give None (use the backoff)."""
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "-1"}) is None
    assert parse_retry_after({"Retry-After": "inf"}) is None
    assert parse_retry_after({"retry-after-ms": "nan"}) is None


# -- retried statuses ----------------------------------------------------------------------------


async def test_429_honours_retry_after_seconds() -> None:
    """A 429 with retry-after-ms: 150 is retried, and the retry arrives >= 0.15 s later.

    Not honoured, the retry would come after at most 0.08 s (FAST's 0.02 s backoff and the
    adaptive controller's first 0.05-0.06 s pause): 0.15 s (was 0.3) tells them apart.
    """
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(status=429, headers={"retry-after-ms": "150"}))
        async with OpenAIChat("m", base_url=server.base_url, retry=FAST) as model:
            response = await model.complete(REQUEST)
    assert response.text == "PASS"
    assert response.attempts == 2
    assert len(server.requests) == 2
    assert gap(server) >= 0.15


async def test_429_honours_retry_after_ms() -> None:
    """retry-after-ms: 120 makes the retry wait >= 0.12 s (the same 0.08 s bound as above)."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(status=429, headers={"retry-after-ms": "120"}))
        async with OpenAIChat("m", base_url=server.base_url, retry=FAST) as model:
            await model.complete(REQUEST)
    assert gap(server) >= 0.12


async def test_503_honours_retry_after_http_date() -> None:
    """A Retry-After HTTP date (whole seconds) is waited for before the retry."""
    promised: list[float] = []

    def busy_until_next_second(request: object) -> FakeResponse:
        now = datetime.now(UTC)
        target = now.replace(microsecond=0) + timedelta(seconds=1)
        promised.append((target - now).total_seconds())
        return FakeResponse(
            status=503, headers={"Retry-After": format_datetime(target, usegmt=True)}
        )

    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(busy_until_next_second)
        async with OpenAIChat("m", base_url=server.base_url, retry=FAST) as model:
            await model.complete(REQUEST)
    assert len(server.requests) == 2
    assert gap(server) >= promised[0] - 0.01


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529])
async def test_retryable_statuses_then_success(status: int) -> None:
    """408, 409, 429 and 5xx are retried with backoff until an answer arrives."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(status=status), FakeResponse(status=status))
        async with OpenAIChat("m", base_url=server.base_url, retry=FAST) as model:
            response = await model.complete(REQUEST)
    assert response.text == "PASS"
    assert response.attempts == 3
    assert len(server.requests) == 3


async def test_5xx_exhausted_raises_model_http_error() -> None:
    """When every attempt gets a 500 the last status escapes as ModelHTTPError."""
    async with (
        FakeModelServer(FakeResponse(status=500, text="boom")) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert len(server.requests) == 3
    assert caught.value.status_code == 500
    assert caught.value.model == "openai:m"
    assert "boom" in caught.value.body_excerpt
    assert "after 3 attempts" in str(caught.value)


async def test_429_exhausted_hint_mentions_rate_limit() -> None:
    """A 429 that never clears says to lower the rate limit or concurrency."""
    async with (
        FakeModelServer(FakeResponse(status=429, headers={"retry-after": "0"})) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST) as model,
    ):
        with pytest.raises(ModelHTTPError, match="RateLimit"):
            await model.complete(REQUEST)


async def test_retry_none_makes_one_attempt() -> None:
    """retry=None means a single attempt: a 503 escapes at once."""
    async with (
        FakeModelServer(FakeResponse(status=503)) as server,
        OpenAIChat("m", base_url=server.base_url, retry=None) as model,
    ):
        with pytest.raises(ModelHTTPError):
            await model.complete(REQUEST)
    assert len(server.requests) == 1


async def test_huge_retry_after_falls_back_to_backoff() -> None:
    """A Retry-After above max_retry_after is not slept; the policy's backoff is used."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(status=429, headers={"Retry-After": "3600"}))
        async with OpenAIChat(
            "m", base_url=server.base_url, retry=FAST, max_retry_after=5.0
        ) as model:
            with anyio.fail_after(5):
                response = await model.complete(REQUEST)
    assert response.text == "PASS"


# -- not retried ---------------------------------------------------------------------------------


async def test_401_is_not_retried_and_says_what_to_fix() -> None:
    """A 401 raises at once (exactly one request) naming OPENAI_API_KEY / api_key."""
    async with (
        FakeModelServer(FakeResponse(status=401, text="Incorrect API key")) as server,
        OpenAIChat("gpt-x", base_url=server.base_url, api_key="bad") as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert len(server.requests) == 1
    error = caught.value
    assert error.status_code == 401
    assert error.model == "openai:gpt-x"
    assert "Incorrect API key" in error.body_excerpt
    assert "OPENAI_API_KEY / api_key" in str(error)
    assert str(error).startswith("openai:gpt-x: HTTP 401")


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, "check parameters"),
        (403, "permission"),
        (404, "check the model name"),
        (422, "response_schema"),
    ],
)
async def test_client_errors_are_not_retried(status: int, hint: str) -> None:
    """400, 403, 404 and 422 raise at once with a hint about what to fix."""
    async with (
        FakeModelServer(FakeResponse(status=status)) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST) as model,
    ):
        with pytest.raises(ModelHTTPError, match=hint) as caught:
            await model.complete(REQUEST)
    assert len(server.requests) == 1
    assert caught.value.status_code == status


# -- bodies, transport, timeouts -----------------------------------------------------------------


async def test_malformed_body_is_retried_then_used() -> None:
    """A 2xx body that is not JSON is retried; the next good answer is returned."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(raw_body="<html>proxy error</html>"))
        async with OpenAIChat("m", base_url=server.base_url, retry=FAST) as model:
            response = await model.complete(REQUEST)
    assert response.text == "PASS"
    assert len(server.requests) == 2


async def test_malformed_body_exhausted_raises_response_error() -> None:
    """A 2xx body that is never a completion ends in ModelResponseError naming the problem."""
    async with (
        FakeModelServer(FakeResponse(raw_body=json.dumps({"choices": []}))) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST) as model,
    ):
        with pytest.raises(ModelResponseError, match="choices"):
            await model.complete(REQUEST)
    assert len(server.requests) == 3


async def test_hang_raises_the_client_timeout() -> None:
    """A server that never answers raises an httpx timeout after `timeout` seconds."""
    async with (
        FakeModelServer(FakeResponse(hang=True)) as server,
        OpenAIChat("m", base_url=server.base_url, timeout=0.2, retry=None) as model,
    ):
        with anyio.fail_after(5), pytest.raises(httpx.TimeoutException):
            await model.complete(REQUEST)
    assert len(server.requests) == 1


async def test_timeouts_are_retried() -> None:
    """A timed-out attempt is retried; a later answer is returned."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(hang=True))
        async with OpenAIChat("m", base_url=server.base_url, timeout=0.2, retry=FAST) as model:
            response = await model.complete(REQUEST)
    assert response.text == "PASS"
    assert response.attempts == 2


async def test_connection_refused_is_retried_then_raised() -> None:
    """Connection errors are transport errors: retried, then raised."""
    async with FakeModelServer() as server:
        dead = server.base_url
    async with OpenAIChat("m", base_url=dead, retry=FAST) as model:
        with pytest.raises(httpx.TransportError):
            await model.complete(REQUEST)


# -- the injected httpx client -------------------------------------------------------------------


async def test_injected_client_with_mock_transport() -> None:
    """An injected httpx.AsyncClient (here a MockTransport) carries every request."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(429, headers={"retry-after-ms": "1"})
        return httpx.Response(
            200,
            json={
                "model": "m-2024",
                "choices": [{"message": {"content": "PASS"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            },
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with OpenAIChat("m", base_url="https://llm.example/v1", api_key="sk", client=http) as m:
        response = await m.complete(REQUEST)
    assert not http.is_closed  # the client did not own it
    await http.aclose()
    assert response.text == "PASS"
    assert response.model == "m-2024"
    assert response.usage.total_tokens == 4
    assert [str(r.url) for r in seen] == ["https://llm.example/v1/chat/completions"] * 2
    assert seen[0].headers["authorization"] == "Bearer sk"
    assert json.loads(seen[0].content)["messages"] == [
        {"role": "user", "content": "Is the answer correct?"}
    ]


async def test_aiohttp_exceptions_become_transport_errors() -> None:
    """An aiohttp error escaping a transport is retried and raised as httpx.TransportError."""
    import aiohttp

    class Broken(httpx.AsyncBaseTransport):
        calls = 0

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            Broken.calls += 1
            raise aiohttp.ClientError("bad framing")

    http = httpx.AsyncClient(transport=Broken())
    async with OpenAIChat("m", base_url="http://x/v1", client=http, retry=FAST) as model:
        with pytest.raises(httpx.TransportError, match="bad framing"):
            await model.complete(REQUEST)
    await http.aclose()
    assert Broken.calls == 3

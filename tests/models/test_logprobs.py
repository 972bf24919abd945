"""Token log-probabilities: request field, OpenAI wire format, fake server, cache."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentjudge.core import Message
from agentjudge.models import AnthropicMessages, OpenAIChat, SqliteCache
from agentjudge.models._types import ModelRequest, TokenLogprob
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

ASK = (Message(role="user", content="Is the sky blue?"),)


def _request(logprobs: int | None = None, **fields: object) -> ModelRequest:
    return ModelRequest(messages=ASK, logprobs=logprobs, **fields)  # type: ignore[arg-type]


def test_logprobs_request_field_is_bounded() -> None:
    """ModelRequest.logprobs accepts 0..20 or None and refuses anything else."""
    assert _request().logprobs is None
    assert _request(0).logprobs == 0
    assert _request(20).logprobs == 20
    for bad in (-1, 21):
        with pytest.raises(ValidationError, match="logprobs"):
            _request(bad)


def test_token_logprob_refuses_positive_or_infinite_values() -> None:
    """TokenLogprob holds finite log-probabilities <= 0 only."""
    with pytest.raises(ValidationError):
        TokenLogprob(token="a", logprob=0.5)
    with pytest.raises(ValidationError):
        TokenLogprob(token="a", logprob=-math.inf)
    with pytest.raises(ValidationError):
        TokenLogprob(token="a", logprob=-0.1, top=(("b", math.nan),))


async def test_no_logprobs_field_is_sent_unless_asked() -> None:
    """A request without logprobs sends no logprobs keys and gets no logprobs back."""
    async with FakeModelServer(FakeResponse(text="yes")) as server:
        client = OpenAIChat("m", base_url=server.base_url, api_key="k")
        async with client:
            response = await client.complete(_request())
    assert "logprobs" not in server.requests[0]
    assert "top_logprobs" not in server.requests[0]
    assert response.logprobs is None


async def test_openai_sends_and_parses_scripted_logprobs() -> None:
    """logprobs=k sends logprobs/top_logprobs and parses choices[0].logprobs.content."""
    scripted = (
        TokenLogprob(
            token="yes",
            logprob=math.log(0.7),
            top=(("yes", math.log(0.7)), ("no", math.log(0.2)), ("maybe", math.log(0.1))),
        ),
    )
    async with FakeModelServer(FakeResponse(text="yes", logprobs=scripted)) as server:
        client = OpenAIChat("m", base_url=server.base_url, api_key="k")
        async with client:
            response = await client.complete(_request(2))
    assert server.requests[0]["logprobs"] is True
    assert server.requests[0]["top_logprobs"] == 2
    assert response.logprobs is not None
    (token,) = response.logprobs
    assert token.token == "yes"
    assert token.logprob == pytest.approx(math.log(0.7))
    assert [t for t, _ in token.top] == ["yes", "no"]  # cut to top_logprobs=2 by the server


async def test_fake_server_generates_default_logprobs_spelling_the_text() -> None:
    """Without a script, generated tokens spell the answer and carry k alternatives each."""
    async with FakeModelServer(FakeResponse(json={"verdict": "pass"})) as server:
        client = OpenAIChat("m", base_url=server.base_url, api_key="k")
        async with client:
            response = await client.complete(_request(3))
    assert response.logprobs is not None
    assert "".join(t.token for t in response.logprobs) == response.text
    assert all(len(t.top) == 3 and t.top[0][0] == t.token for t in response.logprobs)
    assert all(t.logprob == pytest.approx(math.log(0.9)) for t in response.logprobs)


async def test_malformed_logprobs_become_a_warning_not_a_crash() -> None:
    """A logprobs list with a positive logprob is dropped with a warning; the text is kept."""
    body = (
        '{"choices": [{"message": {"role": "assistant", "content": "yes"}, '
        '"finish_reason": "stop", "logprobs": {"content": [{"token": "yes", "logprob": 3}]}}]}'
    )
    async with FakeModelServer(FakeResponse(raw_body=body)) as server:
        client = OpenAIChat("m", base_url=server.base_url, api_key="k")
        async with client:
            response = await client.complete(_request(2))
    assert response.text == "yes"
    assert response.logprobs is None
    assert any("no token logprobs" in w and "<= 0" in w for w in response.warnings)


async def test_server_without_logprobs_support_is_reported_in_warnings() -> None:
    """A server that ignores the logprobs request leaves them None and says so in warnings."""
    body = '{"choices": [{"message": {"role": "assistant", "content": "yes"}}]}'
    async with FakeModelServer(FakeResponse(raw_body=body)) as server:
        client = OpenAIChat("m", base_url=server.base_url, api_key="k")
        async with client:
            response = await client.complete(_request(2))
    assert response.logprobs is None
    assert any("may not support logprobs" in w for w in response.warnings)


async def test_anthropic_refuses_a_logprobs_request_before_any_call() -> None:
    """AnthropicMessages raises a ValueError naming the provider and SelfConsistency."""
    async with FakeModelServer() as server:
        client = AnthropicMessages("claude", base_url=server.base_url, api_key="k")
        async with client:
            with pytest.raises(ValueError, match=r"Anthropic.*SelfConsistency"):
                await client.complete(_request(5))
    assert server.requests == []


async def test_cache_key_includes_logprobs_and_hits_keep_them(tmp_path: Path) -> None:
    """Asking for logprobs is a different cache entry; a cached answer keeps its logprobs."""
    cache = SqliteCache(tmp_path / "cache.sqlite")
    plain, asked = _request(), _request(2)
    assert cache.key("c", plain) != cache.key("c", asked)
    assert cache.key("c", asked) != cache.key("c", _request(3))
    async with FakeModelServer(FakeResponse(text="yes")) as server:
        client = OpenAIChat("m", base_url=server.base_url, api_key="k", cache=cache)
        async with client:
            first = await client.complete(asked)
            again = await client.complete(asked)
            without = await client.complete(plain)
    assert len(server.requests) == 2  # the repeated logprobs request was a hit
    assert again.cached and again.logprobs == first.logprobs and first.logprobs
    assert without.logprobs is None and not without.cached
    await cache.aclose()

"""OpenAIChat and AnthropicMessages: request shapes, parsing, structured output, lifecycle."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx
import pytest

from agentjudge.core import Message
from agentjudge.models import (
    AnthropicMessages,
    ModelClient,
    ModelRequest,
    OpenAIChat,
    RateLimit,
    default_transport,
)
from agentjudge.models._schema import schema_errors
from agentjudge.models._transport import Poster, Session
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string"},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}


def ask(text: str = "Grade this.", **fields: Any) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), **fields)


# -- OpenAI --------------------------------------------------------------------------------------


async def test_openai_request_body_and_response() -> None:
    """The body carries model, messages and knobs; text, usage and finish_reason come back."""
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        OpenAIChat("gpt-x", base_url=server.base_url, api_key="sk-1") as model,
    ):
        request = ModelRequest(
            messages=(
                Message(role="system", content="You are strict."),
                Message(role="user", content="Is 2+2=4 correct? Answer PASS or FAIL."),
            ),
            temperature=0.0,
            max_tokens=5,
        )
        response = await model.complete(request)
    body = server.requests[0]
    assert body["model"] == "gpt-x"
    assert body["messages"][0] == {"role": "system", "content": "You are strict."}
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 5
    assert "response_format" not in body
    assert server.received[0].headers["authorization"] == "Bearer sk-1"
    assert response.text == "PASS"
    assert response.parsed is None
    assert response.model == "gpt-x"
    assert response.finish_reason == "stop"
    assert (
        response.usage.input_tokens
        == len("You are strict.Is 2+2=4 correct? Answer PASS or FAIL.") // 4
    )
    assert response.usage.output_tokens == 1
    assert response.usage.total_tokens == response.usage.input_tokens + 1
    assert response.raw is not None and response.raw["object"] == "chat.completion"
    assert not response.cached


async def test_openai_structured_output() -> None:
    """A response_schema is sent as a strict json_schema and the answer comes back parsed."""
    answer = {"score": 0.8, "reasoning": "mostly right"}
    schema = {**SCORE_SCHEMA, "title": "Grade"}
    async with (
        FakeModelServer(FakeResponse(json=answer)) as server,
        OpenAIChat("gpt-x", base_url=server.base_url) as model,
    ):
        response = await model.complete(ask(response_schema=schema))
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Grade"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["score", "reasoning"]
    assert response.parsed == answer
    assert json.loads(response.text) == answer
    assert response.schema_error is None


async def test_schema_reask_after_invalid_json() -> None:
    """An answer that is not JSON is re-asked with a correction; the second answer is used."""
    good = {"score": 1, "reasoning": "exact"}
    async with (
        FakeModelServer(FakeResponse(json=good)) as server,
        OpenAIChat("gpt-x", base_url=server.base_url, schema_retries=1) as model,
    ):
        server.enqueue(FakeResponse(text="The score is high."))
        response = await model.complete(ask(response_schema=SCORE_SCHEMA))
    assert response.parsed == good
    assert response.attempts == 2
    second = server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "The score is high."}
    assert second[-1]["role"] == "user"
    assert "not valid JSON" in second[-1]["content"]
    assert response.usage.input_tokens is not None
    assert response.usage.input_tokens > 0  # summed over both calls


async def test_schema_failing_twice_returns_parsed_none() -> None:
    """Two answers that break the schema give parsed=None and the raw text, never a score."""
    async with (
        FakeModelServer(FakeResponse(json={"score": 7, "reasoning": "way off"})) as server,
        OpenAIChat("gpt-x", base_url=server.base_url, schema_retries=1) as model,
    ):
        response = await model.complete(ask(response_schema=SCORE_SCHEMA))
    assert len(server.requests) == 2
    assert response.parsed is None
    assert json.loads(response.text) == {"score": 7, "reasoning": "way off"}
    assert response.schema_error is not None
    assert "greater than the maximum" in response.schema_error


async def test_schema_retries_zero_asks_once() -> None:
    """schema_retries=0 never re-asks."""
    async with (
        FakeModelServer(FakeResponse(text="nope")) as server,
        OpenAIChat("gpt-x", base_url=server.base_url, schema_retries=0) as model,
    ):
        response = await model.complete(ask(response_schema=SCORE_SCHEMA))
    assert len(server.requests) == 1
    assert response.parsed is None


async def test_nan_in_structured_output_is_rejected() -> None:
    """NaN or Infinity in a structured answer is a schema failure, never a score."""
    async with (
        FakeModelServer(FakeResponse(text='{"score": NaN, "reasoning": "x"}')) as server,
        OpenAIChat("gpt-x", base_url=server.base_url, schema_retries=0) as model,
    ):
        response = await model.complete(ask(response_schema=SCORE_SCHEMA))
    assert response.parsed is None
    assert "not valid JSON" in (response.schema_error or "")


async def test_code_fenced_json_is_accepted() -> None:
    """A JSON answer wrapped in a markdown code fence is still parsed."""
    fenced = '```json\n{"score": 0.5, "reasoning": "half"}\n```'
    async with (
        FakeModelServer(FakeResponse(text=fenced)) as server,
        OpenAIChat("gpt-x", base_url=server.base_url) as model,
    ):
        response = await model.complete(ask(response_schema=SCORE_SCHEMA))
    assert response.parsed == {"score": 0.5, "reasoning": "half"}


async def test_env_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL and OPENAI_API_KEY are used when not given."""
    async with FakeModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        async with OpenAIChat("gpt-x") as model:
            assert model.base_url == server.base_url
            await model.complete(ask())
    assert server.received[0].headers["authorization"] == "Bearer sk-env"


def test_defaults_without_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without env vars the public endpoints are used and no key is sent."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    model = OpenAIChat("gpt-4o-mini")
    assert model.base_url == "https://api.openai.com/v1"
    assert model.api_key is None
    assert model.name == "openai:gpt-4o-mini"
    assert AnthropicMessages("claude-x").base_url == "https://api.anthropic.com/v1"
    assert AnthropicMessages("claude-x").name == "anthropic:claude-x"
    assert OpenAIChat("m", name="judge-a").name == "judge-a"
    assert isinstance(model, ModelClient)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"timeout": -1}, "timeout"),
        ({"schema_retries": -1}, "schema_retries"),
        ({"base_url": "ftp://x"}, "base_url"),
        ({"retry": 3}, "retry"),
        ({"rate_limit": 60}, "rate_limit"),
    ],
)
def test_bad_knobs_are_rejected(kwargs: dict[str, Any], match: str) -> None:
    """Invalid constructor arguments raise ValueError naming the argument."""
    with pytest.raises(ValueError, match=match):
        OpenAIChat("m", **kwargs)


def test_blank_model_is_rejected() -> None:
    """A blank model name is a ValueError."""
    with pytest.raises(ValueError, match="model"):
        OpenAIChat("  ")


async def test_extra_headers_and_body_are_sent() -> None:
    """headers= and extra_body= are added to every request."""
    async with (
        FakeModelServer() as server,
        OpenAIChat(
            "m", base_url=server.base_url, headers={"X-Team": "eval"}, extra_body={"seed": 7}
        ) as model,
    ):
        await model.complete(ask())
    assert server.received[0].headers["x-team"] == "eval"
    assert server.requests[0]["seed"] == 7


# -- Anthropic -----------------------------------------------------------------------------------


async def test_anthropic_request_shape() -> None:
    """System messages go top-level; x-api-key and anthropic-version headers are sent."""
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        AnthropicMessages("claude-x", base_url=server.base_url, api_key="ak") as model,
    ):
        request = ModelRequest(
            messages=(
                Message(role="system", content="Be strict."),
                Message(role="user", content="Grade it."),
                Message(role="assistant", content="Thinking."),
                Message(role="user", content="Final?"),
            ),
            temperature=0.2,
        )
        response = await model.complete(request)
    body = server.requests[0]
    headers = server.received[0].headers
    assert server.received[0].path == "/v1/messages"
    assert headers["x-api-key"] == "ak"
    assert headers["anthropic-version"] == "2023-06-01"
    assert body["system"] == "Be strict."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["max_tokens"] == 1024
    assert body["temperature"] == 0.2
    assert response.text == "PASS"
    assert response.finish_reason == "end_turn"
    assert response.usage.input_tokens is not None
    assert response.usage.output_tokens == 1
    assert response.usage.total_tokens is None  # Anthropic reports none; none is made up


async def test_anthropic_structured_output_via_forced_tool() -> None:
    """A response_schema forces a tool call; parsed is the tool input."""
    answer = {"score": 0.25, "reasoning": "mostly wrong"}
    async with (
        FakeModelServer(FakeResponse(json=answer)) as server,
        AnthropicMessages("claude-x", base_url=server.base_url, max_tokens=300) as model,
    ):
        response = await model.complete(ask(response_schema=SCORE_SCHEMA))
    body = server.requests[0]
    assert body["tools"][0]["name"] == "response"
    assert body["tools"][0]["input_schema"] == SCORE_SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "response"}
    assert body["max_tokens"] == 300
    assert response.parsed == answer
    assert json.loads(response.text) == answer
    assert response.finish_reason == "tool_use"


async def test_anthropic_reasks_when_the_tool_is_not_called() -> None:
    """A text answer to a forced-tool request is re-asked; parsed None after the retries."""
    async with (
        FakeModelServer(FakeResponse(text="I think it is fine.")) as server,
        AnthropicMessages("claude-x", base_url=server.base_url, schema_retries=1) as model,
    ):
        response = await model.complete(ask(response_schema=SCORE_SCHEMA))
    assert len(server.requests) == 2
    assert server.requests[1]["messages"][-2] == {
        "role": "assistant",
        "content": "I think it is fine.",
    }
    assert response.parsed is None
    assert "did not call the tool" in (response.schema_error or "")


async def test_anthropic_usage_cache_fields() -> None:
    """Anthropic cache token counts map to cache_creation_tokens / cache_read_tokens."""
    usage = {
        "input_tokens": 10,
        "output_tokens": 2,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 40,
    }
    async with (
        FakeModelServer(FakeResponse(text="ok", usage=usage)) as server,
        AnthropicMessages("claude-x", base_url=server.base_url) as model,
    ):
        response = await model.complete(ask())
    assert response.usage.cache_creation_tokens == 5
    assert response.usage.cache_read_tokens == 40


async def test_anthropic_401_hint_names_the_env_var() -> None:
    """A 401 from Anthropic points at ANTHROPIC_API_KEY."""
    from agentjudge.exceptions import ModelHTTPError

    async with (
        FakeModelServer(FakeResponse(status=401)) as server,
        AnthropicMessages("claude-x", base_url=server.base_url) as model,
    ):
        with pytest.raises(ModelHTTPError, match="ANTHROPIC_API_KEY"):
            await model.complete(ask())


# -- concurrency, lifecycle, transport -----------------------------------------------------------


async def test_max_concurrency_caps_requests_in_flight() -> None:
    """No more than max_concurrency requests are in flight at the server at once."""
    active = 0
    peak = 0

    async def slow(request: object) -> FakeResponse:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await anyio.sleep(0.02)
        active -= 1
        return FakeResponse(text="ok")

    async with (
        FakeModelServer(slow) as server,
        OpenAIChat("m", base_url=server.base_url, max_concurrency=3) as model,
        anyio.create_task_group() as tg,
    ):
        for _ in range(12):
            tg.start_soon(model.complete, ask())
    assert len(server.requests) == 12
    assert peak == 3


async def test_a_free_concurrency_slot_is_taken_without_a_trip_through_the_loop() -> None:
    """A free slot costs no pass through the event loop; a taken one is waited for (19.11).

    The limiter's two checkpoints per request were part of the client's per-call cost.
    """
    session = Session(Poster(), max_concurrency=1)
    passes: list[int] = []
    asyncio.get_running_loop().call_soon(passes.append, 1)
    await session.limiter.take()
    assert passes == []
    second = anyio.Event()

    async def waiter() -> None:
        await session.limiter.take()
        second.set()
        session.limiter.release()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert not second.is_set()  # max_concurrency=1 still holds
        session.limiter.release()
        await second.wait()
    await session.aclose()


async def test_queued_s_counts_waiting_for_a_slot() -> None:
    """Time spent waiting for a concurrency slot is reported as queued_s."""
    responses = []
    async with (
        FakeModelServer(FakeResponse(text="ok", latency=0.1)) as server,
        OpenAIChat("m", base_url=server.base_url, max_concurrency=1) as model,
    ):

        async def one() -> None:
            responses.append(await model.complete(ask()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
    assert sorted(r.queued_s > 0.05 for r in responses) == [False, True]


async def test_default_transport_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """On asyncio aiohttp is the default; AGENTJUDGE_HTTP_TRANSPORT picks another transport."""
    assert default_transport() == "aiohttp"
    async with (
        FakeModelServer(FakeResponse(text="direct")) as server,
        OpenAIChat("m", base_url=server.base_url) as model,
    ):
        assert model.http_client is None  # aiohttp is driven directly
        assert (await model.complete(ask())).text == "direct"
    for choice, expected_type in (("httpx", httpx.AsyncClient), ("httpx-aiohttp", None)):
        monkeypatch.setenv("AGENTJUDGE_HTTP_TRANSPORT", choice)
        assert default_transport() == choice
        async with (
            FakeModelServer(FakeResponse(text=f"via {choice}")) as server,
            OpenAIChat("m", base_url=server.base_url) as model,
        ):
            http = model.http_client
            assert isinstance(http, httpx.AsyncClient)
            if expected_type is not None:
                assert type(http) is expected_type
            assert (await model.complete(ask())).text == f"via {choice}"
        assert http.is_closed  # leaving `async with` closed the client it built
    monkeypatch.setenv("AGENTJUDGE_HTTP_TRANSPORT", "curl")
    with pytest.raises(ValueError, match="AGENTJUDGE_HTTP_TRANSPORT"):
        default_transport()


async def test_client_is_reusable_after_aclose() -> None:
    """After aclose() the client opens new connections on the next call."""
    async with FakeModelServer() as server:
        model = OpenAIChat("m", base_url=server.base_url)
        async with model:
            await model.complete(ask())
        assert (await model.complete(ask())).text == "ok"
        await model.aclose()
        await model.aclose()  # idempotent


def test_client_survives_separate_event_loops() -> None:
    """One client object works across two anyio.run calls (per-loop limiter and HTTP client)."""
    model = OpenAIChat("m", rate_limit=RateLimit(rpm=100))

    async def once() -> str:
        async with FakeModelServer(FakeResponse(text="hi")) as server:
            model.base_url = server.base_url
            try:
                return (await model.complete(ask())).text
            finally:
                await model.aclose()

    assert anyio.run(once) == "hi"
    assert anyio.run(once) == "hi"


def test_complete_rejects_non_requests() -> None:
    """complete() takes a ModelRequest."""

    async def run() -> None:
        await OpenAIChat("m").complete("hello")  # type: ignore[arg-type]

    with pytest.raises(TypeError, match="ModelRequest"):
        anyio.run(run)


# -- the schema checker --------------------------------------------------------------------------


def test_schema_checker_subset() -> None:
    """The checker enforces types, bounds, enums, required and additionalProperties."""
    schema = {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": ["pass", "fail"]},
            "score": {"type": "integer", "minimum": 0, "maximum": 10},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "child": {"$ref": "#/$defs/Child"},
        },
        "required": ["label", "score"],
        "additionalProperties": False,
        "$defs": {"Child": {"type": "object", "properties": {"n": {"type": "number"}}}},
    }
    good = {"label": "pass", "score": 3, "ok": True, "tags": ["a"], "note": None, "child": {"n": 1}}
    assert schema_errors(good, schema) == []
    bad = {"label": "maybe", "score": True, "extra": 1, "tags": [1], "child": {"n": "x"}}
    errors = " | ".join(schema_errors(bad, schema))
    assert "'maybe' is not one of" in errors
    assert "$.score: True is not of type 'integer'" in errors
    assert "'extra' was unexpected" in errors
    assert "$.tags[0]: 1 is not of type 'string'" in errors
    assert "$.child.n: 'x' is not of type 'number'" in errors
    assert schema_errors({"score": 11, "label": "fail"}, schema) == [
        "$.score: 11 is greater than the maximum of 10"
    ]
    assert schema_errors({"label": "pass"}, schema) == ["$: 'score' is a required property"]


async def test_environment_proxy_is_resolved_once_per_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The aiohttp transport honours HTTPS_PROXY / NO_PROXY like httpx does."""
    from agentjudge.models._transport import AiohttpPoster as _AiohttpPoster

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "llm.local")
    for name in ("https_proxy", "no_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    poster = _AiohttpPoster(4)
    try:
        assert poster._proxy("https://api.example/v1/x") == "http://proxy.internal:3128"
        assert poster._proxy("https://llm.local:8443/v1/x") is None
        assert poster._proxy("http://api.example/v1/x") is None  # no HTTP_PROXY set
    finally:
        await poster.aclose()


async def test_entering_a_client_builds_its_connections_before_the_first_call() -> None:
    """`async with client` (a service's lifespan) builds the session: no first call pays."""
    async with FakeModelServer(FakeResponse(text="ok")) as server:
        client = OpenAIChat("m", base_url=server.base_url, api_key="k")
        assert client._session.peek() is None  # lazy until used or entered
        async with client:
            session = client._session.peek()
            assert session is not None and client._session.is_current()
            await client.complete(ModelRequest(messages=[Message(role="user", content="q")]))
            assert client._session.peek() is session  # the first call used it
        assert client._session.peek() is None  # closed on exit

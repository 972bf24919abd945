"""FakeModelServer speaks the real protocols: the official SDKs talk to it (issue 23).

The ``openai``, ``anthropic`` and ``google-genai`` SDKs (dev dependencies) send their ordinary
calls to the fake over loopback and must read every answer into their own types: plain
completions, structured output (OpenAI ``json_schema``, Anthropic tool use, Gemini
``responseSchema``), usage, finish reasons and error answers, each parsed into the SDK's own
error classes. Then agentjudge's clients make the same call against the same server and the
requests are compared with the SDK's: same path, the headers that matter, the same body. (The
batch endpoints are driven with the openai and anthropic SDKs in
tests/models/test_models_batch_fake.py.)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pydantic import BaseModel
from sdk_support import genai_http_options, sdk, sdk_http

from agentjudge.core import Message, ToolCall
from agentjudge.models import ModelRequest, model_from_string
from agentjudge.testing import FakeModelServer, FakeRateLimit, FakeResponse

openai = sdk("openai")
anthropic = sdk("anthropic")
genai = sdk("google.genai")
genai_errors = sdk("google.genai.errors")
genai_types = sdk("google.genai.types")
pytestmark = [
    pytest.mark.xdist_group("sdk"),  # the SDKs import in one worker (sdk_support)
    # google-genai's async path subclasses aiohttp.ClientSession, which aiohttp warns against:
    # the SDK's own warning, not the fake's
    pytest.mark.filterwarnings(
        "ignore:Inheritance class AiohttpClientSession from ClientSession:DeprecationWarning"
    ),
]

SCHEMA: dict[str, Any] = {
    "title": "Verdict",
    "type": "object",
    "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["verdict", "score"],
    "additionalProperties": False,
}
ANSWER = {"verdict": "PASS", "score": 4}
SYSTEM = "You are a strict grader."
USER = "Grade this answer: 42."
TOOL_DESCRIPTION = "Record the answer in the required structure."


class Verdict(BaseModel):
    verdict: str
    score: int


def ask(**fields: Any) -> ModelRequest:
    messages = (Message(role="system", content=SYSTEM), Message(role="user", content=USER))
    return ModelRequest(messages=messages, **fields)


@asynccontextmanager
async def talking(kind: str) -> AsyncIterator[tuple[FakeModelServer, Any]]:
    """A fake server answering "PASS" and the official SDK client of ``kind`` pointed at it."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        if kind == "openai":
            async with openai.AsyncOpenAI(
                base_url=server.base_url,
                api_key="sk-test",
                max_retries=0,
                http_client=sdk_http(openai),
            ) as client:
                yield server, client
        elif kind == "anthropic":
            async with anthropic.AsyncAnthropic(
                base_url=server.url,
                api_key="ak-test",
                max_retries=0,
                http_client=sdk_http(anthropic),
            ) as other:
                yield server, other
        else:
            options = genai_http_options(genai_types, base_url=server.url)
            google = genai.Client(api_key="gk-test", http_options=options)
            try:
                yield server, google
            finally:
                await google.aio.aclose()


# -- OpenAI ---------------------------------------------------------------------------------------


async def test_openai_sdk_reads_a_plain_completion() -> None:
    async with talking("openai") as (server, oai):
        completion = await oai.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": USER}]
        )
        assert completion.object == "chat.completion"
        assert completion.model == "gpt-4o-mini"
        choice = completion.choices[0]
        assert (choice.message.role, choice.message.content, choice.finish_reason) == (
            "assistant",
            "PASS",
            "stop",
        )
        usage = completion.usage
        assert usage is not None and usage.prompt_tokens == len(USER) // 4
        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
        server.enqueue(FakeResponse(text="cut", finish_reason="length"))
        cut = await oai.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": USER}], max_tokens=1
        )
        assert cut.choices[0].finish_reason == "length"


async def test_openai_sdk_parses_json_schema_structured_output() -> None:
    async with talking("openai") as (server, oai):
        server.enqueue(FakeResponse(json=ANSWER))
        completion = await oai.chat.completions.parse(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": USER}],
            response_format=Verdict,
        )
        assert completion.choices[0].message.parsed == Verdict(**ANSWER)
        sent = server.requests[0]["response_format"]
        assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True


async def test_openai_sdk_reads_tool_calls_and_logprobs() -> None:
    async with talking("openai") as (server, oai):
        server.enqueue(FakeResponse(tool_calls=[ToolCall(name="lookup", arguments={"q": "42"})]))
        called = await oai.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": USER}]
        )
        call = called.choices[0].message.tool_calls
        assert called.choices[0].finish_reason == "tool_calls"
        assert call is not None and call[0].type == "function"
        assert (call[0].function.name, json.loads(call[0].function.arguments)) == (
            "lookup",
            {"q": "42"},
        )
        server.enqueue(FakeResponse(text="PASS now"))
        scored = await oai.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": USER}],
            logprobs=True,
            top_logprobs=2,
        )
        logprobs = scored.choices[0].logprobs
        assert logprobs is not None and logprobs.content is not None
        assert [t.token for t in logprobs.content] == ["PASS", " now"]
        assert all(len(t.top_logprobs) == 2 for t in logprobs.content)


async def test_openai_sdk_reads_the_responses_api() -> None:
    async with talking("openai") as (server, oai):
        response = await oai.responses.create(model="gpt-4o-mini", input=USER)
        assert (response.status, response.output_text) == ("completed", "PASS")
        assert response.usage is not None and response.usage.input_tokens == len(USER) // 4
        server.enqueue(FakeResponse(json=ANSWER))
        parsed = await oai.responses.parse(model="gpt-4o-mini", input=USER, text_format=Verdict)
        assert parsed.output_parsed == Verdict(**ANSWER)


@pytest.mark.parametrize(
    ("status", "error", "kind", "code"),
    [
        (429, "RateLimitError", "requests", "rate_limit_exceeded"),
        (503, "InternalServerError", "server_error", None),
        (401, "AuthenticationError", "invalid_request_error", "invalid_api_key"),
        (400, "BadRequestError", "invalid_request_error", None),
    ],
)
async def test_openai_sdk_raises_its_own_error_types(
    status: int, error: str, kind: str, code: str | None
) -> None:
    async with talking("openai") as (server, oai):
        server.enqueue(FakeResponse(status=status, text="nope", headers={"Retry-After": "7"}))
        with pytest.raises(getattr(openai, error)) as caught:
            await oai.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": USER}]
            )
        exc = caught.value
        assert (exc.status_code, exc.message, exc.type, exc.code) == (
            status,
            f"Error code: {status} - nope",
            kind,
            code,
        )
        assert isinstance(exc.body, dict) and exc.body["message"] == "nope"
        assert exc.response.headers["retry-after"] == "7"


async def test_openai_sdk_retries_a_429_after_its_retry_after_ms() -> None:
    """The SDK reads the 429's retry-after-ms, waits, retries; x-ratelimit-* reach it too."""
    async with FakeModelServer(FakeResponse(text="PASS"), rate_limit=FakeRateLimit()) as server:
        server.enqueue(FakeResponse(status=429, text="slow down", headers={"retry-after-ms": "5"}))
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="k", max_retries=1, http_client=sdk_http(openai)
        ) as client:
            raw = await client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": USER}]
            )
    assert raw.parse().choices[0].message.content == "PASS"
    retries = [r.headers["x-stainless-retry-count"] for r in server.received]
    assert retries == ["0", "1"]
    assert int(raw.headers["x-ratelimit-remaining-requests"]) >= 0
    assert raw.headers["x-ratelimit-reset-requests"].endswith("ms")


async def test_openai_sdk_stream_request_is_refused_not_answered_empty() -> None:
    """Regression: stream=True used to get a JSON body the SDK read as an empty stream."""
    async with talking("openai") as (_server, oai):
        with pytest.raises(openai.BadRequestError, match="does not stream"):
            await oai.chat.completions.create(
                model="m", messages=[{"role": "user", "content": USER}], stream=True
            )


async def test_agentjudge_openai_request_equals_the_sdk_request() -> None:
    async with talking("openai") as (server, oai):
        server.default = FakeResponse(json=ANSWER)
        await oai.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
            temperature=0.0,
            max_tokens=50,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "Verdict", "schema": SCHEMA, "strict": True},
            },
        )
        async with model_from_string(
            "openai:gpt-4o-mini", base_url=server.base_url, api_key="sk-test"
        ) as ours:
            answer = await ours.complete(
                ask(temperature=0.0, max_tokens=50, response_schema=SCHEMA)
            )
        assert answer.parsed == ANSWER
        theirs, mine = server.received
        assert (
            (mine.method, mine.path)
            == (theirs.method, theirs.path)
            == ("POST", "/v1/chat/completions")
        )
        for header in ("authorization", "content-type"):
            assert mine.headers[header] == theirs.headers[header]
        assert mine.json == theirs.json


# -- Anthropic ------------------------------------------------------------------------------------


async def test_anthropic_sdk_reads_a_plain_message() -> None:
    async with talking("anthropic") as (server, claude):
        message = await claude.messages.create(
            model="claude-test",
            max_tokens=64,
            system=SYSTEM,
            messages=[{"role": "user", "content": USER}],
        )
        assert (message.type, message.role, message.model) == (
            "message",
            "assistant",
            "claude-test",
        )
        block = message.content[0]
        assert isinstance(block, anthropic.types.TextBlock) and block.text == "PASS"
        assert message.stop_reason == "end_turn"
        assert message.usage.input_tokens == (len(SYSTEM) + len(USER)) // 4
        assert message.usage.output_tokens == 1
        server.enqueue(FakeResponse(text="cut", finish_reason="max_tokens"))
        cut = await claude.messages.create(
            model="claude-test",
            max_tokens=1,
            messages=[{"role": "user", "content": USER}],
        )
        assert cut.stop_reason == "max_tokens"


async def test_anthropic_sdk_reads_forced_tool_use() -> None:
    async with talking("anthropic") as (server, claude):
        server.enqueue(FakeResponse(json=ANSWER))
        message = await claude.messages.create(
            model="claude-test",
            max_tokens=64,
            messages=[{"role": "user", "content": USER}],
            tools=[{"name": "Verdict", "input_schema": SCHEMA}],
            tool_choice={"type": "tool", "name": "Verdict"},
        )
        block = message.content[0]
        assert isinstance(block, anthropic.types.ToolUseBlock)
        assert (block.name, block.input, message.stop_reason) == ("Verdict", ANSWER, "tool_use")


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        (429, "RateLimitError", "rate_limit_error"),
        (503, "InternalServerError", "api_error"),
        (529, "OverloadedError", "overloaded_error"),
        (401, "AuthenticationError", "authentication_error"),
        (413, "APIStatusError", "request_too_large"),
    ],
)
async def test_anthropic_sdk_raises_its_own_error_types(status: int, error: str, kind: str) -> None:
    """Regression: 529 and 413 were ``api_error``/``invalid_request_error`` bodies."""
    async with talking("anthropic") as (server, claude):
        server.enqueue(FakeResponse(status=status, text="nope", headers={"retry-after": "3"}))
        with pytest.raises(getattr(anthropic, error)) as caught:
            await claude.messages.create(
                model="m", max_tokens=8, messages=[{"role": "user", "content": USER}]
            )
        exc = caught.value
        assert exc.status_code == status
        assert exc.body == {"type": "error", "error": {"type": kind, "message": "nope"}}
        assert exc.response.headers["retry-after"] == "3"


async def test_anthropic_sdk_stream_request_is_refused() -> None:
    async with talking("anthropic") as (_server, claude):
        with pytest.raises(anthropic.BadRequestError, match="does not stream"):
            await claude.messages.create(
                model="m", max_tokens=8, messages=[{"role": "user", "content": USER}], stream=True
            )


async def test_agentjudge_anthropic_request_matches_the_sdk_request() -> None:
    """Same path and body; both send anthropic-version and the key (header names differ)."""
    async with talking("anthropic") as (server, claude):
        server.default = FakeResponse(json=ANSWER)
        await claude.messages.create(
            model="claude-test",
            max_tokens=50,
            system=SYSTEM,
            messages=[{"role": "user", "content": USER}],
            # this SDK version has no temperature parameter; agentjudge sends the documented one
            extra_body={"temperature": 0.0},
            tools=[{"name": "Verdict", "description": TOOL_DESCRIPTION, "input_schema": SCHEMA}],
            tool_choice={"type": "tool", "name": "Verdict"},
        )
        async with model_from_string(
            "anthropic:claude-test", base_url=server.base_url, api_key="ak-test"
        ) as ours:
            answer = await ours.complete(
                ask(temperature=0.0, max_tokens=50, response_schema=SCHEMA)
            )
        assert answer.parsed == ANSWER
        theirs, mine = server.received
        assert (mine.method, mine.path) == (theirs.method, theirs.path) == ("POST", "/v1/messages")
        assert mine.headers["content-type"] == theirs.headers["content-type"]
        assert "anthropic-version" in mine.headers and "anthropic-version" in theirs.headers
        # the SDK sends the key as a bearer token, agentjudge in x-api-key (both documented)
        assert theirs.headers["authorization"] == "Bearer ak-test"
        assert mine.headers["x-api-key"] == "ak-test"
        assert mine.json == theirs.json


# -- Gemini ---------------------------------------------------------------------------------------


async def test_genai_sdk_reads_a_plain_answer() -> None:
    async with talking("gemini") as (server, gemini):
        response = await gemini.aio.models.generate_content(
            model="gemini-2.5-flash",
            contents=USER,
            config=genai_types.GenerateContentConfig(system_instruction=SYSTEM),
        )
        assert response.text == "PASS"
        assert response.model_version == "gemini-2.5-flash"
        assert response.candidates is not None
        assert response.candidates[0].finish_reason == genai_types.FinishReason.STOP
        usage = response.usage_metadata
        assert usage is not None and usage.prompt_token_count == (len(SYSTEM) + len(USER)) // 4
        assert usage.total_token_count == usage.prompt_token_count + (
            usage.candidates_token_count or 0
        )
        assert server.requests[0]["systemInstruction"]["parts"] == [{"text": SYSTEM}]
        server.enqueue(FakeResponse(text="cut", finish_reason="MAX_TOKENS"))
        cut = await gemini.aio.models.generate_content(model="gemini-2.5-flash", contents=USER)
        assert cut.candidates is not None
        assert cut.candidates[0].finish_reason == genai_types.FinishReason.MAX_TOKENS


async def test_genai_sdk_parses_a_response_schema_answer() -> None:
    async with talking("gemini") as (server, gemini):
        server.enqueue(FakeResponse(json=ANSWER))
        response = await gemini.aio.models.generate_content(
            model="gemini-2.5-flash",
            contents=USER,
            config=genai_types.GenerateContentConfig(
                response_mime_type="application/json", response_schema=Verdict
            ),
        )
        assert response.parsed == Verdict(**ANSWER)
        config = server.requests[0]["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseSchema"]["type"] == "OBJECT"


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (429, "ClientError", "RESOURCE_EXHAUSTED"),
        (503, "ServerError", "UNAVAILABLE"),
        (401, "ClientError", "UNAUTHENTICATED"),
    ],
)
async def test_genai_sdk_raises_its_own_error_types(status: int, error: str, code: str) -> None:
    async with talking("gemini") as (server, gemini):
        server.enqueue(FakeResponse(status=status, text="nope"))
        with pytest.raises(getattr(genai_errors, error)) as caught:
            await gemini.aio.models.generate_content(model="gemini-2.5-flash", contents=USER)
        assert (caught.value.code, caught.value.status, caught.value.message) == (
            status,
            code,
            "nope",
        )


async def test_genai_sdk_reads_the_retry_info_of_a_throttled_request() -> None:
    async with talking("gemini") as (server, gemini):
        server.set_rate_limit(FakeRateLimit(rps=0.01, burst=1))
        await gemini.aio.models.generate_content(model="gemini-2.5-flash", contents=USER)
        with pytest.raises(genai_errors.ClientError) as caught:
            await gemini.aio.models.generate_content(model="gemini-2.5-flash", contents=USER)
        assert caught.value.code == 429
        details = caught.value.details["error"]["details"]
        assert details[0]["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
        assert details[0]["retryDelay"].endswith("s")


async def test_agentjudge_gemini_request_matches_the_sdk_request() -> None:
    """Same path shape and key header; the same body but for what the SDK adds or spells apart."""
    async with talking("gemini") as (server, gemini):
        server.default = FakeResponse(json=ANSWER)
        await gemini.aio.models.generate_content(
            model="gemini-2.5-flash",
            contents=[genai_types.Content(role="user", parts=[genai_types.Part(text=USER)])],
            config=genai_types.GenerateContentConfig(
                system_instruction=SYSTEM,
                temperature=0.0,
                max_output_tokens=50,
                response_mime_type="application/json",
                response_schema=SCHEMA,
            ),
        )
        async with model_from_string(
            "gemini:gemini-2.5-flash", base_url=f"{server.url}/v1", api_key="gk-test"
        ) as ours:
            answer = await ours.complete(
                ask(temperature=0.0, max_tokens=50, response_schema=SCHEMA)
            )
        assert answer.parsed == ANSWER
        theirs, mine = server.received
        assert (mine.method, mine.path) == (theirs.method, theirs.path)
        assert mine.path == "/v1/models/gemini-2.5-flash:generateContent"
        assert mine.headers["x-goog-api-key"] == theirs.headers["x-goog-api-key"] == "gk-test"
        assert mine.headers["content-type"] == theirs.headers["content-type"]
        sdk_body = json.loads(
            json.dumps(theirs.json).replace('"property_ordering"', '"propertyOrdering"')
        )
        sdk_body["systemInstruction"].pop("role")  # the SDK labels the instruction "user"
        # the SDK keeps additionalProperties; agentjudge drops it (and checks the answer itself)
        schema = sdk_body["generationConfig"]["responseSchema"]
        assert schema.pop("additional_properties") is False
        assert mine.json == sdk_body


async def test_genai_sdk_creates_polls_and_reads_an_inline_batch() -> None:
    """Regression: the fake required metadata.key and gave results only where the SDK never
    reads them (``response``, not ``metadata.output``)."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        options = genai_http_options(genai_types, base_url=server.url, api_version="v1beta")
        client = genai.Client(api_key="gk-test", http_options=options)
        try:
            asks = [
                {"contents": [{"role": "user", "parts": [{"text": "first"}]}]},
                {
                    "contents": [{"role": "user", "parts": [{"text": "second"}]}],
                    "metadata": {"key": "b"},
                },
            ]
            job = await client.aio.batches.create(model="gemini-2.5-flash", src=asks)
            assert job.name is not None
            assert job.state == genai_types.JobState.JOB_STATE_RUNNING
            done = await client.aio.batches.get(name=job.name)
        finally:
            await client.aio.aclose()
    assert done.state == genai_types.JobState.JOB_STATE_SUCCEEDED
    assert done.dest is not None and done.dest.inlined_responses is not None
    answers = done.dest.inlined_responses
    assert [a.response.text for a in answers if a.response is not None] == ["PASS", "PASS"]
    assert [a.metadata for a in answers] == [None, {"key": "b"}]

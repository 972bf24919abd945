"""GeminiChat over real loopback HTTP against FakeModelServer's Gemini wire format."""

from __future__ import annotations

import json

import anyio
import pytest

from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.models import GeminiChat, ModelRequest, RetryPolicy, model_from_string
from agentjudge.models._gemini import gemini_retry_delay, gemini_schema
from agentjudge.testing._fake_gemini import gemini_error
from agentjudge.testing._fake_server import FakeModelServer, FakeRateLimit, FakeResponse

FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
SCHEMA = {
    "$defs": {"Reason": {"type": "string", "description": "why"}},
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0},
        "reason": {"$ref": "#/$defs/Reason"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["score", "reason"],
    "additionalProperties": False,
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def ask(**fields: object) -> ModelRequest:
    messages = (
        Message(role="system", content="You are strict."),
        Message(role="user", content="Grade this."),
    )
    return ModelRequest(messages=messages, **fields)  # type: ignore[arg-type]


async def test_gemini_request_and_structured_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """generateContent path, x-goog-api-key, systemInstruction, responseSchema; usage read."""
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key-123456")
    async with (
        FakeModelServer(FakeResponse(json={"score": 4, "reason": "ok"})) as server,
        model_from_string("gemini:gemini-2.5-flash", base_url=f"{server.url}/v1beta") as model,
    ):
        assert isinstance(model, GeminiChat)
        response = await model.complete(ask(response_schema=SCHEMA, temperature=0.0))
    assert response.parsed == {"score": 4, "reason": "ok"}
    assert response.finish_reason == "stop"
    assert response.model == "gemini-2.5-flash"
    assert response.usage.input_tokens == len("You are strict.Grade this.") // 4
    assert response.usage.output_tokens is not None and response.usage.output_tokens > 0
    received = server.received[0]
    assert received.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert received.headers["x-goog-api-key"] == "gemini-key-123456"
    body = received.json
    assert body["systemInstruction"] == {"parts": [{"text": "You are strict."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Grade this."}]}]
    config = body["generationConfig"]
    assert config["temperature"] == 0.0
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["properties"]["reason"] == {
        "type": "STRING",
        "description": "why",
    }
    assert "additionalProperties" not in config["responseSchema"]


def test_gemini_schema_translation() -> None:
    """Types upper-cased, nullable from type lists, $ref inlined, unknown keywords dropped."""
    out = gemini_schema(SCHEMA)
    assert out["type"] == "OBJECT"
    assert out["required"] == ["score", "reason"]
    assert out["propertyOrdering"] == ["score", "reason", "note"]
    assert out["properties"]["score"] == {"type": "INTEGER", "minimum": 0}
    assert out["properties"]["note"] == {"type": "STRING", "nullable": True}
    with pytest.raises(ValueError, match="not a local"):
        gemini_schema({"$ref": "https://example.com/s.json"})


async def test_gemini_retry_delay_from_the_error_body_is_honoured() -> None:
    """A 429 whose wait is only in the body's RetryInfo is retried after that wait."""
    body = (
        '{"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", '
        '"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", '
        '"retryDelay": "0.01s"}]}}'
    )
    assert gemini_retry_delay(body.encode()) == 0.01
    async with FakeModelServer(FakeResponse(text="fine")) as server:
        server.enqueue(FakeResponse(status=429, raw_body=body))
        async with GeminiChat(
            "gemini-2.5-flash", base_url=f"{server.url}/v1beta", api_key="g-123456789", retry=FAST
        ) as model:
            response = await model.complete(ask())
    assert response.text == "fine"
    assert response.attempts == 2


async def test_gemini_rate_limited_answers_are_google_errors_then_an_http_error() -> None:
    """The fake's 429s carry Google's error body; exhausted retries raise ModelHTTPError."""
    async with FakeModelServer(FakeResponse(text="x")) as server:
        server.set_rate_limit(FakeRateLimit(rps=0.001, burst=1, headers=False))
        async with GeminiChat(
            "m",
            base_url=f"{server.url}/v1beta",
            api_key="g-123456789",
            retry=FAST,
            max_retry_after=0.0,
        ) as model:
            await model.complete(ask())
            with pytest.raises(ModelHTTPError) as caught:
                await model.complete(ask())
    assert caught.value.status_code == 429
    assert "RESOURCE_EXHAUSTED" in str(caught.value)


def test_gemini_keys_follow_the_google_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """GOOGLE_API_KEY wins over GEMINI_API_KEY; without either both are named."""
    assert model_from_string("gemini:m").missing_key == (
        "GEMINI_API_KEY is not set (nor GOOGLE_API_KEY)"
    )
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key-1")
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key-2")
    model = model_from_string("gemini:models/gemini-2.5-pro")
    assert model.api_key == "google-key-2"
    assert model.missing_key is None
    assert model.url.endswith("/v1beta/models/gemini-2.5-pro:generateContent")
    assert model_from_string("gemini:m", api_key="mine-12345").api_key == "mine-12345"


async def test_gemini_errors_are_redacted_with_a_hint() -> None:
    """A 400 echoing the key shows [REDACTED] and the usual hint."""
    key = "AIzaSy-secret-key-123"
    async with (
        FakeModelServer(FakeResponse(status=400, text=f"API key {key} not valid")) as srv,
        GeminiChat("m", base_url=f"{srv.url}/v1beta", api_key=key) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(ask())
    text = str(caught.value)
    assert key not in text and "[REDACTED]" in text
    assert "INVALID_ARGUMENT" in text


# -- RetryInfo in the error body feeds the adaptive controller ------------------------------------


def _retry_info(delay: str) -> bytes:
    detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    error = {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", "details": [detail]}
    return json.dumps({"error": error}).encode()


async def test_a_retry_info_wait_pauses_every_request_of_the_client() -> None:
    """A 429 whose RetryInfo asks for 7 s (no header) pauses the whole client: with 2 s left,
    the next call is not sent and its error names the provider's wait."""
    async with FakeModelServer(FakeResponse(text="fine")) as server:
        server.enqueue(FakeResponse(status=429, raw_body=gemini_error(429, "quota", 7.0)))
        async with GeminiChat(
            "gemini-2.5-flash", base_url=f"{server.url}/v1beta", api_key="g-123456789", retry=FAST
        ) as model:
            with anyio.fail_after(2):
                with pytest.raises(ModelHTTPError, match="asked to wait 7 s"):
                    await model.complete(ask())
                with pytest.raises(ModelHTTPError) as paused:
                    await model.complete(ask())
    assert len(server.requests) == 1  # the second call waited for the shared pause: not sent
    assert paused.value.status_code == 429
    assert "the wait the provider asked for" in str(paused.value)


async def test_a_retry_info_wait_longer_than_max_retry_after_is_not_honoured() -> None:
    """RetryInfo 7 s with max_retry_after=1: the backoff applies, the retry is answered."""
    async with FakeModelServer(FakeResponse(text="fine")) as server:
        server.enqueue(FakeResponse(status=429, raw_body=_retry_info("7s")))
        async with GeminiChat(
            "m",
            base_url=f"{server.url}/v1beta",
            api_key="g-123456789",
            retry=FAST,
            max_retry_after=1.0,
        ) as model:
            with anyio.fail_after(5):
                response = await model.complete(ask())
    assert response.text == "fine"
    assert response.attempts == 2


@pytest.mark.parametrize(
    ("delay", "seconds"),
    [("7s", 7.0), ("0.5s", 0.5), ("1.000000001s", 1.000000001), ("0s", 0.0)],
)
def test_retry_info_reads_canonical_durations(delay: str, seconds: float) -> None:
    """google.protobuf.Duration in JSON: digits, up to 9 fractional digits, 's'."""
    assert gemini_retry_delay(_retry_info(delay)) == seconds


@pytest.mark.parametrize(
    "delay",
    ["1e3s", "-1s", "+5s", " 5s", "5 s", "5", "5.s", "infs", "nans", "5ms", 7, None, "1_0s"],
)
def test_retry_info_refuses_what_is_not_a_duration(delay: object) -> None:
    """Signs, exponents, blanks, other units and non-strings are no delay (None)."""
    detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    body = json.dumps({"error": {"code": 429, "details": [detail]}}).encode()
    assert gemini_retry_delay(body) is None


def test_retry_info_needs_the_exact_type_and_one_delay() -> None:
    """Another @type, two RetryInfo details that disagree, or a non-JSON body read as None."""
    other = {"@type": "type.googleapis.com/evil.rpc.RetryInfo", "retryDelay": "5s"}
    body = json.dumps({"error": {"details": [other]}}).encode()
    assert gemini_retry_delay(body) is None
    one = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "5s"}
    two = {**one, "retryDelay": "9s"}
    assert gemini_retry_delay(json.dumps({"error": {"details": [one, two]}}).encode()) is None
    assert gemini_retry_delay(json.dumps({"error": {"details": [one, one]}}).encode()) == 5.0
    assert gemini_retry_delay(b"\xff not json") is None

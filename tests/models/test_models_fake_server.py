"""FakeModelServer: a real loopback HTTP server speaking the OpenAI and Anthropic shapes."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there, judge"}]}


async def test_base_url_is_loopback_and_ends_in_v1() -> None:
    """base_url points at 127.0.0.1 on a real port and ends in /v1."""
    async with FakeModelServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        assert server.port > 0


async def test_base_url_outside_the_context_raises() -> None:
    """Asking for base_url of a server that is not running is a clear error."""
    with pytest.raises(RuntimeError, match="not running"):
        _ = FakeModelServer().base_url


async def test_openai_shape_and_recorded_requests() -> None:
    """POST /v1/chat/completions answers in the OpenAI shape and records the JSON body."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server, httpx.AsyncClient() as http:
        response = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
    assert response.status_code == 200
    body = response.json()
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "PASS"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["model"] == "m"
    assert body["usage"]["prompt_tokens"] == len("hello there, judge") // 4
    assert body["usage"]["total_tokens"] == (
        body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )
    assert server.requests == [CHAT]
    assert server.received[0].path == "/v1/chat/completions"
    assert server.received[0].headers["content-type"] == "application/json"


async def test_a_server_that_records_nothing_still_answers() -> None:
    """record=False: the same answers, nothing kept (a long benchmark's memory stays flat)."""
    async with FakeModelServer(FakeResponse(text="PASS"), record=False) as server:
        server.enqueue(FakeResponse(text="first"))
        async with httpx.AsyncClient() as http:
            texts = []
            for _ in range(2):
                r = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
                texts.append(r.json()["choices"][0]["message"]["content"])
        assert texts == ["first", "PASS"]
        assert server.requests == [] and server.received == []


async def test_enqueue_is_fifo_then_default() -> None:
    """Queued answers are served first-in first-out, then the default."""
    async with FakeModelServer(FakeResponse(text="default")) as server:
        server.enqueue(FakeResponse(text="one"), FakeResponse(text="two"))
        async with httpx.AsyncClient() as http:
            texts = []
            for _ in range(3):
                r = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
                texts.append(r.json()["choices"][0]["message"]["content"])
    assert texts == ["one", "two", "default"]
    assert server.pending == 0


async def test_callable_default_sees_the_request() -> None:
    """A callable default receives the request JSON and scripts the answer."""

    def echo(request: dict[str, Any]) -> FakeResponse:
        return FakeResponse(text=request["messages"][-1]["content"].upper())

    async with FakeModelServer(echo) as server, httpx.AsyncClient() as http:
        r = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
    assert r.json()["choices"][0]["message"]["content"] == "HELLO THERE, JUDGE"


async def test_json_answer_is_message_content_for_openai() -> None:
    """FakeResponse(json=...) becomes the OpenAI message content as JSON text."""
    async with (
        FakeModelServer(FakeResponse(json={"score": 1})) as server,
        httpx.AsyncClient() as http,
    ):
        r = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
    assert json.loads(r.json()["choices"][0]["message"]["content"]) == {"score": 1}


async def test_anthropic_text_and_forced_tool() -> None:
    """/v1/messages answers text, or a tool_use block when the request forces the tool."""
    tool_request = {
        "model": "c",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "grade", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "grade"},
    }
    async with FakeModelServer(FakeResponse(json={"score": 0.5})) as server:
        server.enqueue(FakeResponse(text="plain"))
        async with httpx.AsyncClient() as http:
            text = (await http.post(f"{server.base_url}/messages", json=CHAT)).json()
            tool = (await http.post(f"{server.base_url}/messages", json=tool_request)).json()
    assert text["content"] == [{"type": "text", "text": "plain"}]
    assert text["stop_reason"] == "end_turn"
    assert tool["content"][0]["type"] == "tool_use"
    assert tool["content"][0]["name"] == "grade"
    assert tool["content"][0]["input"] == {"score": 0.5}
    assert tool["stop_reason"] == "tool_use"
    assert set(tool["usage"]) == {"input_tokens", "output_tokens"}


async def test_error_status_headers_and_raw_body() -> None:
    """Statuses, extra headers and verbatim bodies are sent as scripted."""
    async with FakeModelServer() as server:
        server.enqueue(
            FakeResponse(status=429, headers={"Retry-After": "3"}, text="slow down"),
            FakeResponse(raw_body=b"{not json"),
        )
        async with httpx.AsyncClient() as http:
            limited = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
            broken = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
            missing = await http.post(f"{server.base_url}/nope", json=CHAT)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "3"
    assert limited.json()["error"]["message"] == "slow down"
    assert broken.status_code == 200
    assert broken.content == b"{not json"
    assert missing.status_code == 404


async def test_keep_alive_reuses_one_connection() -> None:
    """Sequential requests on one HTTP/1.1 connection are all answered (keep-alive)."""
    async with FakeModelServer() as server:
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(limits=limits) as http:
            for _ in range(5):
                r = await http.post(f"{server.base_url}/chat/completions", json=CHAT)
                assert r.status_code == 200
        async with await anyio.connect_tcp("127.0.0.1", server.port) as raw:
            payload = json.dumps(CHAT).encode()
            head = (
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n"
            ).encode()
            await raw.send(head + payload + head + payload)
            received = b""
            while received.count(b"HTTP/1.1 200") < 2:
                received += await raw.receive()
    assert len(server.requests) == 7


async def test_an_upload_expecting_100_continue_gets_it_before_its_body() -> None:
    """``Expect: 100-continue`` is answered at once (botocore waited 1 s for it per S3 upload)."""
    async with (
        FakeModelServer() as server,
        await anyio.connect_tcp("127.0.0.1", server.port) as raw,
    ):
        payload = json.dumps(CHAT).encode()
        await raw.send(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
        )
        interim = b""
        with anyio.fail_after(10):  # a bound, not an order: without the answer, nothing comes
            while b"\r\n\r\n" not in interim:  # nothing else comes before the body is sent
                interim += await raw.receive()
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        await raw.send(payload)
        received = b""
        while b"HTTP/1.1 200" not in received:
            received += await raw.receive()
    assert server.requests == [CHAT]


async def test_hang_never_answers() -> None:
    """hang=True keeps the client waiting until it gives up."""
    async with FakeModelServer(FakeResponse(hang=True)) as server, httpx.AsyncClient() as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.post(f"{server.base_url}/chat/completions", json=CHAT, timeout=0.1)
    assert len(server.requests) == 1


@pytest.mark.timing
async def test_latency_delays_the_answer() -> None:
    """latency delays the answer by at least that long."""
    async with (
        FakeModelServer(FakeResponse(text="x", latency=0.1)) as server,
        httpx.AsyncClient() as http,
    ):
        start = anyio.current_time()
        await http.post(f"{server.base_url}/chat/completions", json=CHAT)
        assert anyio.current_time() - start >= 0.1


def test_fake_response_validates() -> None:
    """A status outside 100-599 or a negative latency is rejected."""
    with pytest.raises(ValueError, match="status"):
        FakeResponse(status=42)
    with pytest.raises(ValueError, match="latency"):
        FakeResponse(latency=-1)
    with pytest.raises(TypeError, match="enqueue"):
        FakeModelServer().enqueue("text")  # type: ignore[arg-type]


def test_fake_response_tool_calls_must_be_tool_calls() -> None:
    """Scripted tool calls are `ToolCall` objects (a dict is refused with a clear TypeError)."""
    from agentjudge import ToolCall

    assert FakeResponse(tool_calls=[ToolCall("f")]).tool_calls[0].name == "f"
    with pytest.raises(TypeError, match="ToolCall"):
        FakeResponse(tool_calls=[{"name": "f"}])  # type: ignore[list-item]

"""Response bodies are capped by max_response_bytes, streamed, never retried (issue 12, item 14)."""

from __future__ import annotations

import json

import anyio
import pytest
from anyio.abc import SocketStream

from agentjudge import Evaluator, Status
from agentjudge.core import Context, Message
from agentjudge.exceptions import ModelHTTPError, ModelResponseError
from agentjudge.judges import LLMJudge
from agentjudge.models import (
    DEFAULT_MAX_RESPONSE_BYTES,
    AnthropicMessages,
    ModelRequest,
    OpenAIChat,
    ResponseTooLarge,
    RetryPolicy,
)
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
REQUEST = ModelRequest(messages=(Message(role="user", content="Grade this."),))


def _completion(text: str) -> bytes:
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
    return json.dumps(body).encode()


def test_default_cap_is_16_mib_and_must_be_positive() -> None:
    """The default cap is 16 MiB; a cap below 1 byte is a ValueError naming the option."""
    assert DEFAULT_MAX_RESPONSE_BYTES == 16 * 1024 * 1024
    assert OpenAIChat("m").max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES
    assert AnthropicMessages("m", max_response_bytes=10).max_response_bytes == 10
    with pytest.raises(ValueError, match="max_response_bytes must be an integer >= 1"):
        OpenAIChat("m", max_response_bytes=0)


async def test_answer_over_the_cap_is_a_clear_non_retried_error() -> None:
    """A 4 KiB answer under a 1 KiB cap raises ResponseTooLarge at once (one request only)."""
    big = _completion("x" * 4096)
    async with (
        FakeModelServer(FakeResponse(raw_body=big)) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST, max_response_bytes=1024) as model,
    ):
        with pytest.raises(ResponseTooLarge) as caught:
            await model.complete(REQUEST)
    assert isinstance(caught.value, ModelResponseError)
    assert "the answer is too large" in str(caught.value)
    assert f"declares {len(big)} bytes" in str(caught.value)
    assert "max_response_bytes=1024" in str(caught.value)
    assert len(server.requests) == 1


async def test_answer_within_the_cap_is_read() -> None:
    """An answer of exactly the cap's size is accepted."""
    body = _completion("ok")
    async with (
        FakeModelServer(FakeResponse(raw_body=body)) as server,
        OpenAIChat("m", base_url=server.base_url, max_response_bytes=len(body)) as model,
    ):
        assert (await model.complete(REQUEST)).text == "ok"


async def test_too_large_answer_becomes_an_error_judgment() -> None:
    """Through an Evaluator, an answer over the cap is an ERROR judgment saying it is too large."""
    async with (
        FakeModelServer(FakeResponse(raw_body=_completion("y" * 5000))) as server,
        OpenAIChat("m", base_url=server.base_url, max_response_bytes=2048) as model,
    ):
        [result] = await Evaluator(LLMJudge("j", model, "{{output}}")).evaluate(Context(output="a"))
    assert result.judgment is not None and result.judgment.status is Status.ERROR
    assert result.error_type == "ResponseTooLarge"
    assert "too large" in result.judgment.reasoning
    assert len(server.requests) == 1


async def test_error_status_with_a_huge_body_keeps_its_status() -> None:
    """A 400 whose body is over the cap is still reported as HTTP 400, body marked as cut."""
    async with (
        FakeModelServer(FakeResponse(status=400, raw_body=b"e" * 10_000)) as server,
        OpenAIChat("m", base_url=server.base_url, max_response_bytes=100) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert caught.value.status_code == 400
    assert "[a body of 10000 bytes, over max_response_bytes=100, was not read]" in str(caught.value)


async def test_reading_stops_at_the_cap_of_an_endless_chunked_body() -> None:
    """A server streaming a chunked body forever: the client stops at the cap and raises."""
    chunk = b"z" * 4096
    stop_sending = anyio.Event()

    async def endless(stream: SocketStream) -> None:
        async with stream:
            await stream.receive()  # the request (small: one read is enough on loopback)
            await stream.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            try:
                while not stop_sending.is_set():
                    await stream.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return  # the client hung up: what we expect

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, endless)
        model = OpenAIChat(
            "m", base_url=f"http://127.0.0.1:{port}/v1", retry=None, max_response_bytes=64 * 1024
        )
        try:
            with anyio.fail_after(20):  # generous bound: an unbounded read would never end
                with pytest.raises(ResponseTooLarge, match="went past 65536 bytes"):
                    await model.complete(REQUEST)
        finally:
            stop_sending.set()
            await model.aclose()
            tg.cancel_scope.cancel()
    await listener.aclose()

"""The aiohttp transport awaits each response and releases it as ``async with`` would.

`AiohttpPoster.post` awaits the request (no request and response context managers: four
coroutines per request fewer) and then, whatever happened, calls ``release()`` and awaits
``wait_for_close()``, which is what aiohttp's ``__aexit__`` does. With one connection, any
connection not given back would hang the next request.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import anyio
import pytest

from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError, ModelResponseError
from agentjudge.models import OpenAIChat, RetryPolicy
from agentjudge.models._transport import AiohttpPoster
from agentjudge.models._types import ModelRequest
from agentjudge.testing import FakeModelServer, FakeResponse

REQUEST = ModelRequest(messages=[Message(role="user", content="q")])


def _client(server: FakeModelServer, **options: Any) -> OpenAIChat:
    client = OpenAIChat(
        "m",
        base_url=server.base_url,
        api_key="k",
        max_concurrency=1,
        retry=RetryPolicy(attempts=1),
        **options,
    )
    assert isinstance(client._session.get().poster, AiohttpPoster)
    return client


async def test_every_kind_of_answer_gives_its_one_connection_back() -> None:
    big = "x" * 5000
    async with FakeModelServer(FakeResponse(text="ok")) as server:
        server.enqueue(
            FakeResponse(text="first"),
            FakeResponse(text=big),  # over max_response_bytes: refused, connection given back
            FakeResponse(text="gone", status=400),
            FakeResponse(raw_body=b"not json"),
            FakeResponse(text="last"),
        )
        async with _client(server, max_response_bytes=2000) as client:
            with anyio.fail_after(10):  # a connection kept would hang here, not fail
                assert (await client.complete(REQUEST)).text == "first"
                with pytest.raises(ModelResponseError, match="too large"):
                    await client.complete(REQUEST)
                with pytest.raises(ModelHTTPError):
                    await client.complete(REQUEST)
                with pytest.raises(ModelResponseError):
                    await client.complete(REQUEST)
                assert (await client.complete(REQUEST)).text == "last"


async def test_a_request_cancelled_while_it_waits_gives_its_connection_back() -> None:
    async with FakeModelServer(FakeResponse(text="ok")) as server:
        server.enqueue(FakeResponse(hang=True))
        async with _client(server) as client:
            with anyio.move_on_after(0.2) as scope:
                await client.complete(REQUEST)
            assert scope.cancelled_caught
            with anyio.fail_after(10):
                assert (await client.complete(REQUEST)).text == "ok"


async def test_responses_are_released_without_aiohttps_context_managers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each response: release() and wait_for_close() once, as __aexit__ would; no __aenter__."""
    calls: list[str] = []
    response_class = aiohttp.ClientResponse
    release, wait_for_close = response_class.release, response_class.wait_for_close

    def counted_release(self: aiohttp.ClientResponse) -> Any:
        calls.append("release")
        return release(self)

    async def counted_wait(self: aiohttp.ClientResponse) -> None:
        calls.append("wait_for_close")
        await wait_for_close(self)

    async def entered(self: aiohttp.ClientResponse) -> aiohttp.ClientResponse:
        calls.append("__aenter__")
        return self

    monkeypatch.setattr(response_class, "release", counted_release)
    monkeypatch.setattr(response_class, "wait_for_close", counted_wait)
    monkeypatch.setattr(response_class, "__aenter__", entered)
    async with FakeModelServer(FakeResponse(text="ok")) as server, _client(server) as client:
        for _ in range(3):
            assert (await client.complete(REQUEST)).text == "ok"
    assert "__aenter__" not in calls
    # wait_for_close releases once more itself, as it does after __aexit__'s release
    assert calls.count("wait_for_close") == 3
    assert calls.count("release") == 6

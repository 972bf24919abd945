"""One table maps transport errors to httpx's, whichever transport raised them."""

from __future__ import annotations

import socket

import aiohttp
import httpx
import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from agentjudge.core import Message
from agentjudge.models import OpenAIChat, RetryPolicy
from agentjudge.models._transport import aiohttp_error_map
from agentjudge.models._types import ModelRequest

FAST = RetryPolicy(attempts=3, initial_delay=0.0, max_delay=0.0)
REQUEST = ModelRequest(messages=(Message(role="user", content="Is the answer correct?"),))


class _Raising(httpx.AsyncBaseTransport):
    """An httpx transport that lets one aiohttp exception escape, counting calls."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        self.calls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        raise self.exc


async def _complete_through(exc: Exception) -> tuple[BaseException, int]:
    transport = _Raising(exc)
    http = httpx.AsyncClient(transport=transport)
    try:
        async with OpenAIChat("m", base_url="http://x/v1", client=http, retry=FAST) as model:
            with pytest.raises(httpx.HTTPError) as caught:
                await model.complete(REQUEST)
    finally:
        await http.aclose()
    return caught.value, transport.calls


def test_no_row_is_shadowed_by_an_earlier_broader_row() -> None:
    """Rows run most specific first: no row's class is a subclass of an earlier row's."""
    rows = aiohttp_error_map()
    for i, later in enumerate(rows):
        for earlier in rows[:i]:
            assert not issubclass(later.source, earlier.source), (later, earlier)
        assert issubclass(later.target, httpx.TransportError)


async def test_an_invalid_url_error_is_not_retried() -> None:
    """aiohttp's InvalidURL becomes httpx.UnsupportedProtocol, raised after one attempt."""
    error, calls = await _complete_through(aiohttp.InvalidURL("http://x/v1"))
    assert type(error) is httpx.UnsupportedProtocol
    assert calls == 1


async def test_an_aiohttp_timeout_escaping_httpx_is_a_read_timeout() -> None:
    """A socket timeout from aiohttp is httpx.ReadTimeout (retried), chained to the original."""
    error, calls = await _complete_through(aiohttp.SocketTimeoutError("slow"))
    assert type(error) is httpx.ReadTimeout
    assert isinstance(error.__cause__, aiohttp.SocketTimeoutError)
    assert calls == 3


async def test_a_proxy_refusal_is_a_proxy_error() -> None:
    """A proxy that refuses the request is httpx.ProxyError, not a generic transport error."""
    info = aiohttp.RequestInfo(URL("http://x/v1"), "POST", CIMultiDictProxy(CIMultiDict()))
    error, _ = await _complete_through(aiohttp.ClientHttpProxyError(info, (), status=407))
    assert type(error) is httpx.ProxyError


async def test_a_refused_connection_on_the_aiohttp_transport_is_a_connect_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default aiohttp transport maps a refused loopback connection to httpx.ConnectError."""
    monkeypatch.setenv("AGENTJUDGE_HTTP_TRANSPORT", "aiohttp")
    with socket.socket() as sock:  # a port nothing listens on once this closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    async with OpenAIChat("m", base_url=base_url, api_key="k", retry=None) as model:
        with pytest.raises(httpx.ConnectError, match=f"127.0.0.1:{port}"):
            await model.complete(REQUEST)

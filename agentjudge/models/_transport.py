"""How the model clients send one POST: transports, capped response reads, the per-loop session.

- A client that builds its own connections picks the transport measured fastest in
  ``benchmarks/bench_llm.py`` (`default_transport`); an injected ``httpx.AsyncClient`` always
  wins. Transport failures surface as httpx exceptions whichever transport is in use.
- Transport failures are translated by one table, `aiohttp_error_map` (as httpx maps
  httpcore's errors and httpx-aiohttp maps aiohttp's): the first row whose aiohttp (or
  builtin) exception class matches decides the httpx exception raised, so a new mapping is one
  row. Both the aiohttp transport and an injected httpx client whose transport lets an aiohttp
  error escape go through it.
- Response bodies are streamed and read only up to ``max_bytes``: a longer body is never held
  in memory (`Response.truncated` tells the caller, who refuses the answer).
- `Session` holds everything of a client that belongs to one event loop and one process (the
  connections and the concurrency limiter). It is never pickled: a client sent to a worker
  process rebuilds it lazily on first use.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from agentjudge.models._adaptive import Controller, new_controller
from agentjudge.models._loop import new_wake

__all__ = [
    "TRANSPORTS",
    "TRANSPORT_ENV",
    "AiohttpPoster",
    "ErrorRow",
    "HttpxPoster",
    "Poster",
    "Response",
    "Session",
    "Slots",
    "aiohttp_error_map",
    "default_transport",
    "make_http_client",
    "make_poster",
    "map_transport_errors",
]

TRANSPORT_ENV = "AGENTJUDGE_HTTP_TRANSPORT"
TRANSPORTS = ("aiohttp", "httpx-aiohttp", "httpx")
"""The transports a client can build for itself (see `default_transport`)."""
_CHUNK = 64 * 1024
_UNKNOWN: Any = object()


def _on_asyncio() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def default_transport() -> str:
    """The transport a client that builds its own HTTP connections uses here.

    Measured in ``benchmarks/bench_llm.py`` (1,000 loopback requests at 100 in flight):
    ``"aiohttp"`` (an `aiohttp.ClientSession` driven directly) is the fastest and the default
    on asyncio; ``"httpx-aiohttp"`` (`httpx.AsyncClient` on the httpx-aiohttp transport) pays
    httpx's request/response machinery on top; ``"httpx"`` (httpx's own transport) is ~10x
    slower at that concurrency and is used where aiohttp cannot run (trio).
    ``AGENTJUDGE_HTTP_TRANSPORT`` overrides the choice. An injected ``client=`` always wins.
    """
    wanted = os.environ.get(TRANSPORT_ENV, "").strip().lower()
    if wanted and wanted not in TRANSPORTS:
        raise ValueError(f"{TRANSPORT_ENV} must be one of {', '.join(TRANSPORTS)}, got {wanted!r}")
    if wanted == "httpx" or not _on_asyncio():
        return "httpx"
    return wanted or "aiohttp"


def make_http_client(*, max_connections: int = 100) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` on the httpx-aiohttp transport (on asyncio), else httpx's own.

    Handy to inject (``client=``) when you want httpx features (event hooks, mounts) with a
    fast transport. Must be called inside the event loop that will use it.
    """
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    if _on_asyncio():
        from httpx_aiohttp import HttpxAiohttpClient

        client: httpx.AsyncClient = HttpxAiohttpClient(limits=limits)
        return client
    return httpx.AsyncClient(limits=limits)


@dataclass(frozen=True, slots=True)
class Response:
    """What the clients need of an HTTP response, whatever transport produced it.

    Attributes:
        status_code: The HTTP status.
        headers: The response headers.
        content: The body, at most ``max_bytes`` of it.
        truncated: True when the body was longer than ``max_bytes`` (reading stopped there).
        declared: The Content-Length the server declared, if any.
    """

    status_code: int
    headers: Mapping[str, str]
    content: bytes
    truncated: bool = False
    declared: int | None = None

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.content.decode("utf-8", errors="replace")


def _declared_length(headers: Mapping[str, str]) -> int | None:
    try:
        value = int(headers.get("content-length", ""))
    except ValueError:
        return None
    return value if value >= 0 else None


async def _read_capped(
    status: int,
    headers: Mapping[str, str],
    chunks: AsyncIterator[bytes],
    max_bytes: int,
) -> Response:
    """Read ``chunks`` until the body ends or passes ``max_bytes`` (then stop reading)."""
    declared = _declared_length(headers)
    if declared is not None and declared > max_bytes:
        return Response(status, headers, b"", truncated=True, declared=declared)
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > max_bytes:
            return Response(status, headers, bytes(body[:max_bytes]), True, declared)
    return Response(status, headers, bytes(body), False, declared)


@dataclass(frozen=True, slots=True)
class ErrorRow:
    """One row of `aiohttp_error_map`: what a matching exception becomes.

    Attributes:
        source: The exception class matched (``isinstance``).
        target: The httpx exception raised instead (chained from the original).
        message: Its text; ``{url}``, ``{name}`` (the original's class name), ``{exc}`` (its
            text) and ``{timeout}`` (the attempt's I/O timeout) are filled in.
    """

    source: type[BaseException]
    target: type[httpx.TransportError]
    message: str = "{url}: {name}: {exc}"


@functools.cache  # one table per process (aiohttp is imported on first use only)
def aiohttp_error_map() -> tuple[ErrorRow, ...]:
    """The aiohttp exceptions and the httpx ones they become; the first matching row wins.

    More specific classes come first: a connect timeout is a ``TimeoutError`` and a
    ``ClientError``, and is a `httpx.ConnectTimeout`; a proxy connection error is a connector
    error, and is a `httpx.ProxyError`. An invalid URL is `httpx.UnsupportedProtocol`, which
    the clients never retry; every other row is retried.
    """
    import aiohttp

    return (
        ErrorRow(
            aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout, "{url}: connect timed out ({exc})"
        ),
        ErrorRow(TimeoutError, httpx.ReadTimeout, "{url}: no answer within {timeout} s"),
        ErrorRow(aiohttp.ClientProxyConnectionError, httpx.ProxyError),
        ErrorRow(aiohttp.ClientHttpProxyError, httpx.ProxyError),
        ErrorRow(aiohttp.ClientConnectorError, httpx.ConnectError, "{url}: {exc}"),
        ErrorRow(aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
        ErrorRow(aiohttp.ClientPayloadError, httpx.RemoteProtocolError),
        ErrorRow(aiohttp.InvalidURL, httpx.UnsupportedProtocol),
        ErrorRow(aiohttp.ClientError, httpx.TransportError),
        ErrorRow(OSError, httpx.TransportError),
    )


def _mapped(exc: Exception, url: str, io_timeout: float | None) -> httpx.TransportError | None:
    for row in aiohttp_error_map():
        if isinstance(exc, row.source):
            text = row.message.format(url=url, name=type(exc).__name__, exc=exc, timeout=io_timeout)
            return row.target(text)
    return None


def _from_aiohttp(exc: BaseException) -> bool:
    return type(exc).__module__.split(".", 1)[0] == "aiohttp"


@contextmanager
def map_transport_errors(
    url: str, io_timeout: float | None, *, only_aiohttp: bool = False
) -> Iterator[None]:
    """Raise an exception that `aiohttp_error_map` maps as its httpx counterpart.

    httpx's own exceptions and unmapped ones pass through unchanged.

    Args:
        url: The request URL (without credentials), named in the message.
        io_timeout: The attempt's I/O timeout, named in a read timeout's message.
        only_aiohttp: Map only exceptions raised by aiohttp itself (an injected httpx client
            maps its own; only aiohttp errors its transport let escape are translated).
    """
    try:
        yield
    except Exception as exc:
        _raise_mapped(exc, url, io_timeout, only_aiohttp=only_aiohttp)
        raise


def _raise_mapped(
    exc: Exception, url: str, io_timeout: float | None, *, only_aiohttp: bool
) -> None:
    """Raise ``exc``'s httpx counterpart (see `map_transport_errors`); return when it has none."""
    if isinstance(exc, httpx.HTTPError):
        return
    mapped = None if only_aiohttp and not _from_aiohttp(exc) else _mapped(exc, url, io_timeout)
    if mapped is not None:
        raise mapped from exc


class Poster:
    """Sends one POST and returns a `Response`; raises httpx exceptions on transport failures."""

    http_client: httpx.AsyncClient | None = None

    async def post(
        self,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        io_timeout: float | None,
        max_bytes: int,
    ) -> Response:
        """POST ``content`` to ``url`` and read at most ``max_bytes`` of the answer."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close connections this poster opened."""


class HttpxPoster(Poster):
    """Sends through an `httpx.AsyncClient` (injected by the user, or built by the client)."""

    def __init__(self, client: httpx.AsyncClient, *, owned: bool) -> None:
        self.http_client = client
        self.owned = owned

    async def post(
        self,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        io_timeout: float | None,
        max_bytes: int,
    ) -> Response:
        """POST through httpx, streaming the answer (see `Poster.post`)."""
        client = self.http_client
        assert client is not None
        with map_transport_errors(url, io_timeout, only_aiohttp=True):
            async with client.stream(
                "POST", url, content=content, headers=headers, timeout=httpx.Timeout(io_timeout)
            ) as response:
                return await _read_capped(
                    response.status_code,
                    response.headers,
                    response.aiter_bytes(_CHUNK),
                    max_bytes,
                )

    async def aclose(self) -> None:
        """Close the httpx client when this poster built it (an injected one stays open)."""
        if self.owned and self.http_client is not None:
            await self.http_client.aclose()


class AiohttpPoster(Poster):
    """Drives an `aiohttp.ClientSession` directly (the measured-fastest transport)."""

    def __init__(self, max_connections: int) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        # trust_env=False: aiohttp would look proxies and netrc up on a worker thread for every
        # request (~0.8 ms each); the environment's proxy is resolved once per host instead.
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_connections), trust_env=False
        )
        self._timeouts: dict[float | None, Any] = {}
        self._proxies: dict[tuple[str, str], str | None] = {}
        self._url_proxies: dict[str, str | None] = {}
        """`_proxy` of each URL posted to (read once per URL, not per request)."""

    def _proxy(self, url: str) -> str | None:
        """The proxy the environment (HTTP(S)_PROXY, NO_PROXY) sets for ``url``, if any."""
        scheme, _, rest = url.partition("://")
        host = rest.split("/", 1)[0]
        key = (scheme, host)
        if key not in self._proxies:
            import urllib.request

            proxies = urllib.request.getproxies()
            proxy = proxies.get(scheme) or proxies.get("all")
            hostname = host.rsplit("@", 1)[-1].split(":", 1)[0]
            if proxy and urllib.request.proxy_bypass(hostname):
                proxy = None
            self._proxies[key] = proxy or None
        return self._proxies[key]

    def _timeout(self, seconds: float | None) -> Any:
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            timeout = self._aiohttp.ClientTimeout(
                total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
            )
            self._timeouts[seconds] = timeout
        return timeout

    async def post(
        self,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        io_timeout: float | None,
        max_bytes: int,
    ) -> Response:
        """POST through aiohttp, streaming the answer (see `Poster.post`).

        Errors are mapped as `map_transport_errors` maps them (inline: no context manager per
        request). The response is awaited and released as ``async with`` would release it
        (``release()``, then ``wait_for_close()``, whatever happened), without the context
        managers' four coroutines per request.
        """
        proxy = self._url_proxies.get(url, _UNKNOWN)
        if proxy is _UNKNOWN:
            proxy = self._url_proxies[url] = self._proxy(url)
        timeout = self._timeouts.get(io_timeout) or self._timeout(io_timeout)
        try:
            response = await self._session.post(
                url,
                data=content,
                headers=headers,
                timeout=timeout,
                proxy=proxy,
                allow_redirects=False,
            )
            try:
                answered = response.headers
                declared = _declared_length(answered)
                # a known, allowed length of plain bytes (a compressed body may inflate past
                # the cap): one read instead of a chunk loop
                if (
                    declared is not None
                    and declared <= max_bytes
                    and "content-encoding" not in answered
                ):
                    body = await response.read()
                    return Response(response.status, answered, body, False, declared)
                chunks = response.content.iter_chunked(_CHUNK)
                return await _read_capped(response.status, answered, chunks, max_bytes)
            finally:
                response.release()
                await response.wait_for_close()
        except Exception as exc:
            _raise_mapped(exc, url, io_timeout, only_aiohttp=False)
            raise

    async def aclose(self) -> None:
        """Close the aiohttp session and its connections."""
        await self._session.close()


def make_poster(max_connections: int) -> Poster:
    """A poster on `default_transport`, owning its connections."""
    transport = default_transport()
    if transport == "aiohttp":
        return AiohttpPoster(max_connections)
    if transport == "httpx-aiohttp":
        return HttpxPoster(make_http_client(max_connections=max_connections), owned=True)
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return HttpxPoster(httpx.AsyncClient(limits=limits), owned=True)


class _SlotWaiter:
    """One request waiting for a concurrency slot."""

    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = new_wake()
        self.granted = False
        """True once a released slot was handed to it (it must use or give it back)."""


class Slots:
    """A client's ``max_concurrency`` slots, taken first come, first served; none ever leaked.

    What `anyio.CapacityLimiter` did for the client, without tracking which task holds a slot
    (its acquire and release took ~4-12 us per request, most of that bookkeeping the client
    does not need): a count of free slots and a FIFO of waiters, each handed the slot that a
    release frees. Equal to the limiter on random schedules with waiters giving up at any
    moment (``tests/models/test_models_slots.py``).

    Args:
        total: Slots in all.
    """

    __slots__ = ("_queue", "free")

    def __init__(self, total: int) -> None:
        self.free = total
        """Slots nobody holds (none while anyone waits)."""
        self._queue: deque[_SlotWaiter] = deque()

    def take_now(self) -> bool:
        """Take a free slot (nobody queued) without awaiting; False: none free, nothing taken."""
        if self.free > 0 and not self._queue:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        """Take a slot, waiting in line for one when none is free."""
        if self.take_now():
            return
        waiter = _SlotWaiter()
        self._queue.append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.granted:  # handed a slot, but it will not be used: the next one gets it
                self.release()
            else:
                self._queue.remove(waiter)
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter in line, else to the free ones."""
        if self._queue:
            waiter = self._queue.popleft()
            waiter.granted = True
            waiter.event.set()
        else:
            self.free += 1


class Session:
    """A client's state that belongs to one event loop of one process: never pickled.

    Holds the poster (connections) and the concurrency slots; built lazily on first use in
    each loop (see `agentjudge.models._loop.LoopLocal`), so a client copied to a worker
    process, or reused by a later ``anyio.run``, starts with fresh ones. The client's
    `AdaptiveController` lives here too (one per client and loop; or one shared by the
    processes of a Ray run, see `agentjudge.models._adaptive.share_controllers`).

    Args:
        poster: What sends requests.
        max_concurrency: Requests in flight at most.
        key: The client's name and endpoint (which shared controller it obeys).
    """

    def __init__(self, poster: Poster, max_concurrency: int, key: str = "") -> None:
        self.poster = poster
        self.limiter = Slots(max_concurrency)
        self.controller: Controller = new_controller(key, max_concurrency)

    async def aclose(self) -> None:
        """Close the connections this session opened (an injected client stays open)."""
        await self.poster.aclose()

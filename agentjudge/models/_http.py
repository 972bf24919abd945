"""The HTTP machinery shared by the model clients.

- Transport: inject any `httpx.AsyncClient` with ``client=`` (its transport, proxies, hooks
  and mounts apply). A client that builds its own connections picks the transport measured
  fastest in ``benchmarks/bench_llm.py`` (`default_transport`): on asyncio it drives an
  `aiohttp.ClientSession` directly, because httpx's default connection pool burns CPU at high
  concurrency (~10x slower than aiohttp for 1,000 loopback requests at 100 in flight) and even
  on the httpx-aiohttp transport httpx's request/response machinery costs ~0.3 ms a request.
  Transport failures surface as httpx exceptions (`httpx.TransportError` and its subclasses,
  e.g. `httpx.ReadTimeout`) whichever transport is in use. On trio, or with
  ``AGENTJUDGE_HTTP_TRANSPORT=httpx``, httpx's own transport is used.
- Retry classification: 408, 409, 429, 5xx, transport errors (timeouts included) and 2xx bodies
  that are not a usable completion are retried by the client's `RetryPolicy`; other statuses
  raise `ModelHTTPError` at once, with a hint saying what to fix.
- ``Retry-After`` (delay-seconds or an HTTP date) and ``retry-after-ms`` are honoured up to
  ``max_retry_after`` seconds; longer (or unparseable) waits fall back to the policy's backoff.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, ClassVar, Self

import anyio
import httpx

from agentjudge.core import Message
from agentjudge.engine._retry import RetryPolicy, call_with_retry
from agentjudge.exceptions import ModelHTTPError, ModelResponseError, RetryableError
from agentjudge.models._cache import SqliteCache
from agentjudge.models._loop import LoopLocal
from agentjudge.models._ratelimit import RateLimit
from agentjudge.models._schema import SchemaViolation, schema_errors
from agentjudge.models._types import MAX_TOKEN_COUNT, ModelRequest, ModelResponse, Usage

__all__ = [
    "RETRYABLE_STATUSES",
    "TRANSPORTS",
    "HTTPModelClient",
    "default_transport",
    "is_retryable_error",
    "make_http_client",
    "parse_retry_after",
]

logger = logging.getLogger("agentjudge.models")

TRANSPORT_ENV = "AGENTJUDGE_HTTP_TRANSPORT"
RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Statuses retried besides every 5xx."""
_EXCERPT_CHARS = 500
_DEFAULT_OUTPUT_ESTIMATE = 256


# -- transport ------------------------------------------------------------------------------------

TRANSPORTS = ("aiohttp", "httpx-aiohttp", "httpx")
"""The transports a client can build for itself (see `default_transport`)."""


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
class _Response:
    """What the clients need of an HTTP response, whatever transport produced it."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


class _Poster:
    """Sends one POST and returns a `_Response`; raises httpx exceptions on transport failures."""

    http_client: httpx.AsyncClient | None = None

    async def post(
        self, url: str, content: bytes, headers: Mapping[str, str], io_timeout: float | None
    ) -> _Response:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close connections this poster opened."""


class _HttpxPoster(_Poster):
    def __init__(self, client: httpx.AsyncClient, *, owned: bool) -> None:
        self.http_client = client
        self._owned = owned

    async def post(
        self, url: str, content: bytes, headers: Mapping[str, str], io_timeout: float | None
    ) -> _Response:
        try:
            response = await self.http_client.post(  # type: ignore[union-attr]
                url, content=content, headers=headers, timeout=httpx.Timeout(io_timeout)
            )
        except httpx.HTTPError:
            raise
        except Exception as exc:
            if type(exc).__module__.split(".", 1)[0] == "aiohttp":  # unmapped by a transport
                raise httpx.TransportError(f"{type(exc).__name__}: {exc}") from exc
            raise
        return _Response(response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        if self._owned and self.http_client is not None:
            await self.http_client.aclose()


class _AiohttpPoster(_Poster):
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
        self, url: str, content: bytes, headers: Mapping[str, str], io_timeout: float | None
    ) -> _Response:
        aiohttp = self._aiohttp
        try:
            async with self._session.post(
                url,
                data=content,
                headers=headers,
                timeout=self._timeout(io_timeout),
                proxy=self._proxy(url),
                allow_redirects=False,
            ) as response:
                body = await response.read()
                return _Response(response.status, response.headers, body)
        except aiohttp.ConnectionTimeoutError as exc:
            raise httpx.ConnectTimeout(f"{url}: connect timed out ({exc})") from exc
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"{url}: no answer within {io_timeout} s") from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(f"{url}: {exc}") from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            raise httpx.RemoteProtocolError(f"{url}: {type(exc).__name__}: {exc}") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise httpx.TransportError(f"{url}: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._session.close()


def _make_poster(max_connections: int) -> _Poster:
    transport = default_transport()
    if transport == "aiohttp":
        return _AiohttpPoster(max_connections)
    if transport == "httpx-aiohttp":
        return _HttpxPoster(make_http_client(max_connections=max_connections), owned=True)
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return _HttpxPoster(httpx.AsyncClient(limits=limits), owned=True)


# -- Retry-After ----------------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, else ``Retry-After``.

    ``Retry-After`` may be delay-seconds (fractions accepted) or an HTTP date (a date in the
    past means 0). Returns None when neither header is present or parseable.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = _finite_non_negative(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = lowered.get("retry-after")
    if value is None:
        return None
    seconds = _finite_non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def _finite_non_negative(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


# -- errors ---------------------------------------------------------------------------------------


class _RetryableStatus(RetryableError):
    """A status worth retrying (408, 409, 429, 5xx); becomes `ModelHTTPError` when exhausted."""

    def __init__(self, status_code: int, excerpt: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status_code}: {excerpt}", retry_after=retry_after)
        self.status_code = status_code
        self.excerpt = excerpt


def is_retryable_error(exc: BaseException) -> bool:
    """The client's own retry rule: retryable statuses, transport errors, unusable 2xx bodies."""
    if isinstance(exc, httpx.UnsupportedProtocol):
        return False
    return isinstance(exc, _RetryableStatus | httpx.TransportError | ModelResponseError)


def _excerpt(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "..."


def _plain(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists (for json.dumps)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class _UsageReader:
    """Reads a provider's token counts, never losing the answer over a bad one.

    A count that is present but not an integer within ``0..2**53-1`` is dropped (None) and a
    warning recorded.
    """

    def __init__(self, client: str) -> None:
        self.client = client
        self.warnings: list[str] = []

    def count(self, value: Any, where: str) -> int | None:
        """``value`` when it is a valid token count; None (with a warning) when it is not."""
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT:
            return value
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:40] + "..."
        self.warnings.append(
            f"{self.client}: {where}={shown} is not a token count (an integer within "
            "0..2**53-1); it was dropped from the usage"
        )
        return None


def _add_usage(a: Usage | None, b: Usage, warnings: list[str]) -> Usage:
    """``a + b`` field by field; a sum above 2**53-1 is dropped with a warning."""
    if a is None:
        return b
    merged: dict[str, int | None] = {}
    for field in Usage.model_fields:
        x, y = getattr(a, field), getattr(b, field)
        total = None if x is None and y is None else (x or 0) + (y or 0)
        if total is not None and total > MAX_TOKEN_COUNT:
            warnings.append(f"the summed usage {field}={total} is above 2**53-1; it was dropped")
            total = None
        merged[field] = total
    return Usage(**merged)


# -- the shared client ----------------------------------------------------------------------------


@dataclass
class _Reply:
    """One decoded completion, before structured-output checks."""

    text: str
    structured: Any
    """The tool input (Anthropic) / None (OpenAI: decoded from text)."""
    model: str | None
    finish_reason: str | None
    usage: Usage
    raw: dict[str, Any]
    billed_tokens: int | None
    warnings: tuple[str, ...] = ()
    """Problems that did not stop the answer being used (e.g. a dropped usage count)."""


class HTTPModelClient:
    """What `OpenAIChat` and `AnthropicMessages` share: transport, limits, retries, cache.

    Subclasses define the wire format (`_body`, `_parse`, `_structured`, `_headers`).
    """

    provider: ClassVar[str]
    path: ClassVar[str]
    base_url_env: ClassVar[str]
    api_key_env: ClassVar[str]
    default_base_url: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        max_concurrency: int = 16,
        rate_limit: RateLimit | None = None,
        retry: RetryPolicy | None = RetryPolicy(),  # noqa: B008 - frozen value
        timeout: float | None = 60.0,
        cache: SqliteCache | None = None,
        schema_retries: int = 1,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_retry_after: float = 60.0,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-blank string, got {model!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise ValueError(f"max_concurrency must be an integer >= 1, got {max_concurrency!r}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be an integer >= 1, got {max_concurrency!r}")
        if timeout is not None and not (
            isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0
        ):
            raise ValueError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}"
            )
        if isinstance(schema_retries, bool) or not isinstance(schema_retries, int):
            raise ValueError(f"schema_retries must be an integer >= 0, got {schema_retries!r}")
        if schema_retries < 0:
            raise ValueError(f"schema_retries must be an integer >= 0, got {schema_retries!r}")
        if not (isinstance(max_retry_after, int | float) and max_retry_after >= 0):
            raise ValueError(f"max_retry_after must be a number >= 0, got {max_retry_after!r}")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ValueError(f"retry must be a RetryPolicy or None, got {retry!r}")
        if rate_limit is not None and not isinstance(rate_limit, RateLimit):
            raise ValueError(f"rate_limit must be a RateLimit or None, got {rate_limit!r}")
        if cache is not None and not isinstance(cache, SqliteCache):
            raise ValueError(f"cache must be a SqliteCache or None, got {cache!r}")
        if client is not None and not isinstance(client, httpx.AsyncClient):
            raise ValueError(f"client must be an httpx.AsyncClient, got {client!r}")
        resolved = base_url or os.environ.get(self.base_url_env) or self.default_base_url
        if not resolved.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url must start with http:// or https://, got {resolved!r}"
                + ("" if base_url else f" (from {self.base_url_env})")
            )
        self.model = model
        self.name = name or f"{self.provider}:{model}"
        self.base_url = resolved.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get(self.api_key_env)
        self.max_concurrency = max_concurrency
        self.rate_limit = rate_limit if rate_limit is not None else RateLimit()
        self.retry = retry
        self.timeout = None if timeout is None else float(timeout)
        self.cache = cache
        self.schema_retries = schema_retries
        self.max_retry_after = float(max_retry_after)
        self.extra_headers = dict(headers or {})
        self.extra_body = _plain(extra_body or {})
        self._injected = None if client is None else _HttpxPoster(client, owned=False)
        self._owned: LoopLocal[_Poster] = LoopLocal(lambda: _make_poster(self.max_concurrency))
        self._limiter: LoopLocal[anyio.CapacityLimiter] = LoopLocal(
            lambda: anyio.CapacityLimiter(self.max_concurrency)
        )
        self._header_cache: dict[str, str] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"

    # -- lifecycle --------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client this model client created (an injected client stays open)."""
        if self._owned.is_current():
            poster = self._owned.get()
            self._owned.clear()
            await poster.aclose()
        else:
            self._owned.clear()

    @property
    def url(self) -> str:
        """The endpoint requests are posted to."""
        return f"{self.base_url}{self.path}"

    @property
    def http_client(self) -> httpx.AsyncClient | None:
        """The `httpx.AsyncClient` in use: the injected one, or the one this client built.

        None when the client drives aiohttp directly (the default transport on asyncio). Read
        it inside the running loop (the client builds its connections on first use).
        """
        return self._poster().http_client

    def _poster(self) -> _Poster:
        return self._injected if self._injected is not None else self._owned.get()

    # -- the protocol -----------------------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request (retries, schema re-asks and the cache included).

        Raises:
            ModelHTTPError: A non-retryable status, or retryable ones until attempts ran out.
            ModelResponseError: A 2xx body that is not a completion, after the retries.
            httpx.TransportError: Connection failures and timeouts, after the retries.
        """
        if not isinstance(request, ModelRequest):
            raise TypeError(f"complete() takes a ModelRequest, got {type(request).__name__}")
        if self.cache is None:
            return await self._complete(request)
        key = self.cache.key(self.name, request, self._cache_params())
        return await self.cache.fetch(key, lambda: self._complete(request), client=self.name)

    # -- one logical call -------------------------------------------------------------------------

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        schema = request.response_schema
        plain_schema = _plain(schema) if schema is not None else None
        messages = list(request.messages)
        usage: Usage | None = None
        queued = 0.0
        attempts = 0
        rounds = self.schema_retries + 1 if schema is not None else 1
        problem: str | None = None
        reply: _Reply | None = None
        parsed: dict[str, Any] | None = None
        warnings: list[str] = []
        for _ in range(rounds):
            body = self._body(request, messages, plain_schema)
            reply, made, waited = await self._send(body, self._estimate(request, messages))
            attempts += made
            queued += waited
            warnings.extend(reply.warnings)
            usage = _add_usage(usage, reply.usage, warnings)
            if plain_schema is None:
                break
            try:
                parsed = self._structured(reply, plain_schema)
            except SchemaViolation as exc:
                problem = str(exc)
                messages.extend(self._correction(reply, problem))
                continue
            problem = None
            break
        assert reply is not None
        return ModelResponse(
            text=reply.text,
            parsed=parsed,
            model=reply.model,
            finish_reason=reply.finish_reason,
            usage=usage or Usage(),
            raw=reply.raw,
            queued_s=queued,
            attempts=attempts,
            schema_error=problem,
            warnings=tuple(warnings),
        )

    def _estimate(self, request: ModelRequest, messages: list[Message]) -> int:
        chars = sum(len(m.content) for m in messages)
        if request.response_schema is not None:
            chars += len(json.dumps(_plain(request.response_schema)))
        return chars // 4 + (self._output_allowance(request) or _DEFAULT_OUTPUT_ESTIMATE)

    def _output_allowance(self, request: ModelRequest) -> int | None:
        return request.max_tokens

    async def _send(self, body: dict[str, Any], estimate: int) -> tuple[_Reply, int, float]:
        content = json.dumps(body).encode()
        headers = self._request_headers()
        queued = 0.0

        async def attempt() -> _Reply:
            nonlocal queued
            poster = self._poster()
            limiter = self._limiter.get()
            started = anyio.current_time()
            async with limiter:
                lease = await self.rate_limit.acquire(estimate)
                queued += anyio.current_time() - started
                billed: int | None = None  # the estimate, unless usage says otherwise
                try:
                    response = await poster.post(self.url, content, headers, self.timeout)
                    if not 200 <= response.status_code < 300:
                        billed = 0  # rejected requests are not billed
                        raise self._status_error(response)
                    reply = self._decode(response)
                    billed = reply.billed_tokens
                    return reply
                finally:
                    lease.settle(billed)

        policy = self.retry

        def retryable(exc: BaseException) -> bool:
            return is_retryable_error(exc) or (policy is not None and policy.is_retryable(exc))

        try:
            try:
                # the first attempt runs without the retry machinery (the common, fast path)
                reply, attempts = await attempt(), 1
            except Exception as first:
                if policy is None or policy.attempts <= 1 or not retryable(first):
                    raise
                reply, attempts = await call_with_retry(
                    policy, attempt, attempts_made=1, last_error=first, retryable=retryable
                )
        except _RetryableStatus as exc:
            attempts_allowed = policy.attempts if policy is not None else 1
            raise ModelHTTPError(
                exc.status_code,
                self.name,
                exc.excerpt,
                self._exhausted_hint(exc.status_code, attempts_allowed),
            ) from exc
        return reply, attempts, queued

    def _status_error(self, response: _Response) -> Exception:
        status = response.status_code
        excerpt = _excerpt(response.text)
        if status in RETRYABLE_STATUSES or status >= 500:
            wait = parse_retry_after(response.headers)
            if wait is not None and wait > self.max_retry_after:
                wait = None
            return _RetryableStatus(status, excerpt, wait)
        return ModelHTTPError(status, self.name, excerpt, self._hint(status))

    def _decode(self, response: _Response) -> _Reply:
        try:
            data = json.loads(response.content)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ModelResponseError(
                f"{self.name}: HTTP {response.status_code} with a body that is not a JSON "
                f"object: {_excerpt(response.text) or '(empty)'}"
            )
        try:
            reply = self._parse(data)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ModelResponseError(
                f"{self.name}: the response is not a {self.provider} completion ({exc}): "
                f"{_excerpt(response.text)}"
            ) from None
        for warning in reply.warnings:
            logger.warning("%s", warning)
        return reply

    # -- hints ------------------------------------------------------------------------------------

    def _hint(self, status: int) -> str:
        if status == 401:
            return f"authentication failed: check {self.api_key_env} / api_key"
        if status == 403:
            return "permission denied: check that the API key may use this model and endpoint"
        if status == 404:
            return f"not found: check the model name {self.model!r} and base_url {self.base_url!r}"
        if status in (400, 422):
            return (
                "the request was rejected: check parameters (temperature, max_tokens, "
                "extra_body) and response_schema"
            )
        if status == 413:
            return "the request is too large: shorten the prompt"
        return "the request was rejected and retrying will not help"

    def _exhausted_hint(self, status: int, attempts: int) -> str:
        tried = f"still HTTP {status} after {attempts} attempt{'s' if attempts != 1 else ''}"
        if status == 429:
            return f"{tried}: rate limited; lower RateLimit(rpm=..., tpm=...) or max_concurrency"
        if status >= 500:
            return f"{tried}: the server is failing; try later or allow more retry attempts"
        return f"{tried}; try later or allow more retry attempts"

    # -- wire format (subclasses) -----------------------------------------------------------------

    def _request_headers(self) -> dict[str, str]:
        if self._header_cache is None:
            merged = {"content-type": "application/json", "accept": "application/json"}
            merged.update(self._auth_headers())
            merged.update(self.extra_headers)
            self._header_cache = merged
        return self._header_cache

    def _auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _cache_params(self) -> dict[str, Any]:
        return {"extra_body": self.extra_body}

    def _body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, data: dict[str, Any]) -> _Reply:
        raise NotImplementedError

    def _structured(self, reply: _Reply, schema: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _correction(self, reply: _Reply, problem: str) -> list[Message]:
        shown = reply.text.strip() or "(an empty answer)"
        return [
            Message(role="assistant", content=shown),
            Message(
                role="user",
                content=(
                    f"That answer cannot be used: {problem}. Answer again with only a JSON "
                    "object that follows the required schema exactly."
                ),
            ),
        ]


def check_against_schema(value: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` when it is an object that follows ``schema``.

    Raises:
        SchemaViolation: Listing what is wrong.
    """
    if not isinstance(value, dict):
        raise SchemaViolation("the answer must be a JSON object")
    errors = schema_errors(value, schema)
    if errors:
        raise SchemaViolation("the answer does not follow the schema: " + "; ".join(errors))
    return value

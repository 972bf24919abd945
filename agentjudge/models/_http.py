"""The HTTP machinery shared by the model clients.

- Transport: users program against `httpx.AsyncClient` (inject your own with ``client=``).
  When a client builds its own, it uses the httpx-aiohttp transport on asyncio, because
  httpx's default connection pool burns CPU at high concurrency (measured in
  ``benchmarks/bench_llm.py``: ~10x slower than aiohttp for 1,000 loopback requests at 100 in
  flight, while the aiohttp transport stays within ~1.5x). On other event loops (trio), or with
  ``AGENTJUDGE_HTTP_TRANSPORT=httpx``, the default httpx transport is used.
- Retry classification: 408, 409, 429, 5xx, transport errors (timeouts included) and 2xx bodies
  that are not a usable completion are retried by the client's `RetryPolicy`; other statuses
  raise `ModelHTTPError` at once, with a hint saying what to fix.
- ``Retry-After`` (delay-seconds or an HTTP date) and ``retry-after-ms`` are honoured up to
  ``max_retry_after`` seconds; longer (or unparseable) waits fall back to the policy's backoff.
"""

from __future__ import annotations

import json
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
from agentjudge.models._types import ModelRequest, ModelResponse, Usage

__all__ = [
    "RETRYABLE_STATUSES",
    "HTTPModelClient",
    "default_transport",
    "is_retryable_error",
    "make_http_client",
    "parse_retry_after",
]

TRANSPORT_ENV = "AGENTJUDGE_HTTP_TRANSPORT"
RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Statuses retried besides every 5xx."""
_EXCERPT_CHARS = 500
_DEFAULT_OUTPUT_ESTIMATE = 256


# -- transport ------------------------------------------------------------------------------------


def _on_asyncio() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def default_transport() -> str:
    """The transport a client-built `httpx.AsyncClient` uses here: ``"aiohttp"`` or ``"httpx"``.

    ``AGENTJUDGE_HTTP_TRANSPORT`` (``aiohttp`` / ``httpx``) overrides the choice; the aiohttp
    transport is only possible on asyncio.
    """
    wanted = os.environ.get(TRANSPORT_ENV, "").strip().lower()
    if wanted not in ("", "aiohttp", "httpx"):
        raise ValueError(f"{TRANSPORT_ENV} must be 'aiohttp' or 'httpx', got {wanted!r}")
    if wanted == "httpx" or not _on_asyncio():
        return "httpx"
    try:
        import httpx_aiohttp  # noqa: F401
    except ImportError:  # pragma: no cover - a declared dependency
        return "httpx"
    return "aiohttp"


def make_http_client(*, max_connections: int = 100) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` on the measured-fastest transport (see `default_transport`).

    Must be called inside the event loop that will use it.
    """
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    if default_transport() == "aiohttp":
        from httpx_aiohttp import HttpxAiohttpClient

        client: httpx.AsyncClient = HttpxAiohttpClient(limits=limits)
        return client
    return httpx.AsyncClient(limits=limits)


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


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _add_usage(a: Usage | None, b: Usage) -> Usage:
    if a is None:
        return b
    merged: dict[str, int | None] = {}
    for field in Usage.model_fields:
        x, y = getattr(a, field), getattr(b, field)
        merged[field] = None if x is None and y is None else (x or 0) + (y or 0)
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
        self._injected = client
        self._owned: LoopLocal[httpx.AsyncClient] = LoopLocal(
            lambda: make_http_client(max_connections=self.max_concurrency)
        )
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
            client = self._owned.get()
            self._owned.clear()
            await client.aclose()
        else:
            self._owned.clear()

    @property
    def url(self) -> str:
        """The endpoint requests are posted to."""
        return f"{self.base_url}{self.path}"

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The `httpx.AsyncClient` in use (created on first use inside the running loop)."""
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
        for _ in range(rounds):
            body = self._body(request, messages, plain_schema)
            reply, made, waited = await self._send(body, self._estimate(request, messages))
            attempts += made
            queued += waited
            usage = _add_usage(usage, reply.usage)
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
        timeout = httpx.Timeout(self.timeout)
        queued = 0.0

        async def attempt() -> _Reply:
            nonlocal queued
            http = self.http_client
            limiter = self._limiter.get()
            started = anyio.current_time()
            async with limiter:
                lease = await self.rate_limit.acquire(estimate)
                queued += anyio.current_time() - started
                try:
                    response = await http.post(
                        self.url, content=content, headers=headers, timeout=timeout
                    )
                except httpx.HTTPError:
                    raise
                except Exception as exc:
                    if type(exc).__module__.split(".", 1)[0] == "aiohttp":
                        raise httpx.TransportError(f"{type(exc).__name__}: {exc}") from exc
                    raise
                status = response.status_code
                if not 200 <= status < 300:
                    lease.settle(0)
                    raise self._status_error(response)
                reply = self._decode(response)
                lease.settle(reply.billed_tokens)
                return reply

        policy = self.retry

        def retryable(exc: BaseException) -> bool:
            return is_retryable_error(exc) or (policy is not None and policy.is_retryable(exc))

        try:
            reply, attempts = await call_with_retry(policy, attempt, retryable=retryable)
        except _RetryableStatus as exc:
            attempts_allowed = policy.attempts if policy is not None else 1
            raise ModelHTTPError(
                exc.status_code,
                self.name,
                exc.excerpt,
                self._exhausted_hint(exc.status_code, attempts_allowed),
            ) from exc
        return reply, attempts, queued

    def _status_error(self, response: httpx.Response) -> Exception:
        status = response.status_code
        excerpt = _excerpt(response.text)
        if status in RETRYABLE_STATUSES or status >= 500:
            wait = parse_retry_after(response.headers)
            if wait is not None and wait > self.max_retry_after:
                wait = None
            return _RetryableStatus(status, excerpt, wait)
        return ModelHTTPError(status, self.name, excerpt, self._hint(status))

    def _decode(self, response: httpx.Response) -> _Reply:
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
            return self._parse(data)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ModelResponseError(
                f"{self.name}: the response is not a {self.provider} completion ({exc}): "
                f"{_excerpt(response.text)}"
            ) from None

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

"""`HTTPModelClient`: the client machinery every provider shares (see `_provider` for the hooks).

- Transport: see `agentjudge.models._transport` (an injected `httpx.AsyncClient` always wins;
  otherwise the measured-fastest transport; failures surface as httpx exceptions).
- Retry classification (`agentjudge.models._failures`): 408, 409, 429, 5xx, transport errors
  (timeouts included) and 2xx bodies that are not a usable completion are retried by the
  client's `RetryPolicy`; other statuses raise `ModelHTTPError` at once, with a hint saying
  what to fix.
- The wait a retryable answer asks for (the provider's ``capacity_signals``: ``Retry-After``
  (delay-seconds or an HTTP date) and ``retry-after-ms`` by default, Gemini's ``RetryInfo``
  body too) is honoured up to ``max_retry_after`` seconds; longer (or unparseable) waits fall
  back to the policy's backoff.
  An honoured wait longer than the time left before the caller's deadline (e.g. the
  Evaluator's timeout) fails at once with a `ModelHTTPError` saying so, instead of sleeping
  into the timeout.
- Response bodies are read up to ``max_response_bytes`` (16 MiB by default); a larger answer is
  a `ModelResponseError` that is not retried.
- Secrets (API key, URL credentials, credential headers) are redacted from every error text the
  client builds (see `agentjudge.models._secrets`).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Awaitable, Mapping
from functools import partial
from types import TracebackType
from typing import Any, Self, Unpack, cast

import anyio
import httpx

from agentjudge._compat import loop_time
from agentjudge._retry import call_with_retry
from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError, ModelResponseError
from agentjudge.judging import add_queued, spend_gate
from agentjudge.models._adaptive import (
    THROTTLE_STATUSES,
    CapacityDeadline,
    Controller,
    admit_at_once,
    feedback,
)
from agentjudge.models._failures import (
    RETRYABLE_STATUSES,
    ResponseTooLarge,
    RetryableStatus,
    excerpt,
    exhausted_hint,
    is_retryable_error,
    is_retryable_status,
    status_hint,
)
from agentjudge.models._headers import CapacitySignals, header_signals, parse_retry_after
from agentjudge.models._json import dumps as json_dumps
from agentjudge.models._json import dumps_structured, dumps_text
from agentjudge.models._json import loads as json_loads
from agentjudge.models._loop import LoopLocal
from agentjudge.models._options import ClientKeywords, ClientOptions
from agentjudge.models._provider import ProviderHooks, Reply
from agentjudge.models._ratelimit import RateLease, RateLimit
from agentjudge.models._schema import SchemaViolation, plain_json
from agentjudge.models._secrets import (
    Secrets,
    basic_authorization,
    mask_url,
    missing_key_reason,
    split_credentials,
)
from agentjudge.models._spend import Pricing, metered, seen_by
from agentjudge.models._transport import (
    TRANSPORTS,
    HttpxPoster,
    Poster,
    Response,
    Session,
    default_transport,
    make_http_client,
    make_poster,
)
from agentjudge.models._types import ModelRequest, ModelResponse, Usage, answer_response
from agentjudge.models._usage import add_usage

__all__ = [
    "RETRYABLE_STATUSES",
    "TRANSPORTS",
    "HTTPModelClient",
    "ResponseTooLarge",
    "default_transport",
    "is_retryable_error",
    "make_http_client",
    "parse_retry_after",
]

logger = logging.getLogger("agentjudge.models")

_DEFAULT_OUTPUT_ESTIMATE = 256
# -- the shared client ----------------------------------------------------------------------------


def _time_left() -> float:
    """Seconds until the caller's deadline (an Evaluator timeout, a fail_after); inf if none."""
    return anyio.current_effective_deadline() - loop_time()


def _sent_reply(sent: tuple[Reply, int, float]) -> Reply:
    return sent[0]


class _Tally:
    """What one logical send counts over its HTTP requests.

    The counts start as class attributes (made per send without a Python ``__init__``; a
    count is an instance attribute once it changed, which most sends never do).
    """

    queued: float = 0.0
    """Seconds spent waiting for capacity."""
    throttled: int = 0
    """Throttled answers the adaptive client retried itself (not counted as attempts)."""


class HTTPModelClient(ProviderHooks):
    """What every provider's client shares: transport, limits, retries, cache, budgets.

    A provider subclasses it and implements the provider protocol (documented in
    `agentjudge.models._provider`): ``request_body`` and ``parse_reply`` at least, and where
    the defaults do not fit ``auth_headers``, ``structured_answer``, ``finish_response``,
    ``capacity_signals``, ``batch_api`` and ``cache_tokens_apart``. Subclasses take the shared
    options as ``**options`` (one definition: `ClientOptions`, which checks them; an unknown
    keyword is a TypeError listing the known ones).

    A client is picklable (configuration only: the API key included, so a pickle is a
    secret): its connections and concurrency limiter live in a per-loop `Session` that is
    rebuilt lazily wherever the client is used next, e.g. in a worker process. A client given
    an injected ``client=`` cannot be pickled (that httpx client holds open connections).
    """

    def __init__(self, model: str, **options: Unpack[ClientKeywords]) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-blank string, got {model!r}")
        given = ClientOptions.of(type(self).__name__, options)
        self.model = model
        self.adaptive = given.adaptive
        self.name = given.name or f"{self.provider}:{model}"
        self.api_key = (
            given.api_key if given.api_key is not None else os.environ.get(self.api_key_env)
        )
        self._key_given = given.api_key is not None
        self.extra_headers = dict(given.headers or {})
        self.max_concurrency = given.max_concurrency
        self.rate_limit = given.rate_limit if given.rate_limit is not None else RateLimit()
        self.retry = given.retry
        self.timeout = None if given.timeout is None else float(given.timeout)
        self.cache = given.cache
        self.schema_retries = given.schema_retries
        self.max_retry_after = float(given.max_retry_after)
        self.max_response_bytes = given.max_response_bytes
        self.extra_body = plain_json(given.extra_body or {})
        self._injected = given.client
        self._session: LoopLocal[Session] = LoopLocal(self._new_session)
        self._credentials: tuple[str, str] | None = None
        self._header_cache: dict[str, str] | None = None
        if given.base_url:
            self.base_url = given.base_url
        else:
            from_env = os.environ.get(self.base_url_env)
            self._set_base_url(from_env or self.default_base_url, self.base_url_env)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"

    # -- the base URL and the credentials ---------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The API root, without credentials (``user:password@`` is sent as Basic auth)."""
        return self._base_url

    @base_url.setter
    def base_url(self, value: str) -> None:
        self._set_base_url(value, None)

    def _set_base_url(self, value: object, env: str | None) -> None:
        origin = f" (from {env})" if env else ""
        if not isinstance(value, str) or not value.startswith(("http://", "https://")):
            shown = mask_url(value) if isinstance(value, str) else value
            raise ValueError(f"base_url must start with http:// or https://, got {shown!r}{origin}")
        clean, credentials = split_credentials(value)
        if credentials is not None:
            self._refuse_second_authorization(value, origin)
        self._base_url = clean.rstrip("/")
        self._credentials = credentials
        self._header_cache = None

    def _refuse_second_authorization(self, url: str, origin: str) -> None:
        clashes = []
        if self.api_key and self.api_key_header == "authorization":
            clashes.append(
                f"an API key (api_key= or {self.api_key_env}; pass api_key='' to send none)"
            )
        if any(name.lower() == "authorization" for name in self.extra_headers):
            clashes.append("headers['Authorization']")
        if clashes:
            raise ValueError(
                f"base_url {mask_url(url)!r}{origin} "
                "carries credentials, which are sent as the Authorization header (HTTP Basic), "
                f"but {' and '.join(clashes)} would set that header too; give one of them"
            )

    @property
    def missing_key(self) -> str | None:
        """What keeps this client from authenticating (``"OPENAI_API_KEY is not set"``), or None.

        See `agentjudge.models._secrets.missing_key_reason`; ``api_key=`` given (``""`` sends none),
        URL credentials and an injected ``client=`` (it may authenticate itself) count as keys.
        """
        if self._key_given or self._credentials or self._injected is not None:
            return None
        return missing_key_reason(self.api_key_env, self.api_key, self.base_url, self.extra_headers)

    @property
    def secrets(self) -> Secrets:
        """The secrets as configured now (built when an error text is, so never stale)."""
        values: list[str | None] = [self.api_key]
        if self._credentials is not None:
            user, password = self._credentials
            values += [password, f"{user}:{password}" if password else None]
        return Secrets(values, self._build_headers())

    # -- pickling: configuration only -------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        if self._injected is not None:
            given = type(self._injected).__name__
            raise TypeError(
                f"{self!r} cannot be pickled: it was given client=<{given}>, "
                "which holds open connections. To send it to worker processes (workers > 1), "
                "build it without client= (it then opens its own connections in each process)"
            )
        state = self.__dict__.copy()
        del state["_session"]  # connections and limiter: rebuilt lazily where it is used
        state["_header_cache"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._session = LoopLocal(self._new_session)

    # -- lifecycle --------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Build the connection pool for the running loop now, not on the first call.

        Building it imports the HTTP transport (hundreds of milliseconds, once per process):
        entering the client in a service's lifespan keeps that off the first request.
        """
        self._session.get()
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
        if self._session.is_current():
            session = self._session.get()
            self._session.clear()
            await session.aclose()
        else:
            self._session.clear()

    def _new_session(self) -> Session:
        key = f"{self.name} {self.url}"
        if self._injected is not None:
            return Session(HttpxPoster(self._injected, owned=False), self.max_concurrency, key)
        return Session(make_poster(self.max_concurrency), self.max_concurrency, key)

    @property
    def url(self) -> str:
        """The endpoint requests are posted to."""
        return f"{self._base_url}{self.path}"

    @property
    def http_client(self) -> httpx.AsyncClient | None:
        """The `httpx.AsyncClient` in use: the injected one, or the one this client built.

        None when the client drives aiohttp directly (the default transport on asyncio). Read
        it inside the running loop (the client builds its connections on first use).
        """
        return self._session.get().poster.http_client

    # -- the protocol -----------------------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request (retries, schema re-asks and the cache included).

        Raises:
            ModelHTTPError: A non-retryable status, or retryable ones until attempts ran out
                (rate-limited ones, with ``adaptive``, until the caller's deadline), or a
                ``Retry-After`` / shared pause longer than the time left before it.
            ModelResponseError: A 2xx body that is not a completion, after the retries, or
                one larger than ``max_response_bytes`` (not retried).
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
        plain_schema = plain_json(schema) if schema is not None else None
        sent = request.messages  # the conversation; a schema re-ask appends its correction
        usage: Usage | None = None
        queued = 0.0
        attempts = 0
        rounds = self.schema_retries + 1 if schema is not None else 1
        problem: str | None = None
        reply: Reply | None = None
        parsed: dict[str, Any] | None = None
        warnings: tuple[str, ...] = ()
        gate = spend_gate.get()  # a Budget's, inside an Evaluator attempt; None without one
        for _ in range(rounds):
            # nothing made for the body (its message list, the encoded bytes) is kept in this
            # frame while the request is in flight: fewer live objects per call, and the
            # collector's work grows with them
            content, estimate, pricing = self._encoded(request, sent, plain_schema, gate)
            if gate is None:
                reply, made, waited = await self._send(content, estimate)
            else:
                send = partial(self._send, content, estimate)
                sent_reply = await metered(gate, cast(Pricing, pricing), send, _sent_reply)
                reply, made, waited = sent_reply
            attempts += made
            queued += waited
            warnings += reply.warnings
            if usage is None:
                usage = reply.usage
            else:
                summed: list[str] = []
                usage = add_usage(usage, reply.usage, summed)
                warnings += tuple(summed)
            if plain_schema is None:
                break
            try:
                parsed = self.structured_answer(reply, plain_schema)
            except SchemaViolation as exc:
                problem = str(exc)
                sent = (*sent, *self._correction(reply, problem))
                continue
            problem = None
            break
        assert reply is not None
        response = answer_response(
            text=reply.text,
            parsed=parsed,
            model=reply.model,
            finish_reason=reply.finish_reason,
            usage=usage or Usage(),
            raw=reply.raw,
            queued_s=queued,
            attempts=attempts,
            schema_error=problem,
            warnings=warnings,
        )
        return self.finish_response(request, response)

    def _encoded(
        self,
        request: ModelRequest,
        sent: tuple[Message, ...],
        plain_schema: dict[str, Any] | None,
        gate: object,
    ) -> tuple[bytes, int, Pricing | None]:
        """The encoded body of one round, its token estimate, and its pricing under a budget.

        The provider gets the conversation as a new list (``request_body``'s protocol); it is
        dropped when this returns, before the request is sent. The token estimate only
        matters to a `RateLimit` with a budget (0 otherwise).
        """
        messages = list(sent)
        encode = json_dumps if plain_schema is None else dumps_structured
        content = encode(self.request_body(request, messages, plain_schema))
        estimate = self._estimate(request, messages, plain_schema) if self.rate_limit.enabled else 0
        pricing = None if gate is None else self.pricing(request, messages, plain_schema)
        return content, estimate, pricing

    def pricing(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> Pricing:
        """What a budget prices one request of this client by (see `agentjudge.models._spend`).

        Args:
            request: The request.
            messages: The conversation sent (the request's, plus any schema re-asks).
            schema: The plain JSON schema asked for, or None.
        """
        allowance = self._output_allowance(request)
        return Pricing(self.name, self.model, tuple(messages), schema, allowance, seen_by(self))

    def _estimate(
        self, request: ModelRequest, messages: list[Message], plain_schema: Any = None
    ) -> int:
        chars = sum(len(m.content) for m in messages)
        if request.response_schema is not None:
            schema = plain_json(request.response_schema) if plain_schema is None else plain_schema
            chars += len(dumps_text(schema))  # written once per schema value
        return chars // 4 + (self._output_allowance(request) or _DEFAULT_OUTPUT_ESTIMATE)

    def _output_allowance(self, request: ModelRequest) -> int | None:
        return request.max_tokens

    async def _send(self, content: bytes, estimate: int) -> tuple[Reply, int, float]:
        """POST ``content`` (the encoded body) with the retries; (reply, requests, seconds queued).

        The first attempt is made directly (the common case: it succeeds); only when it fails
        does the retry machinery start (`_retried`), exactly where ``call_with_retry`` would
        take over. ``estimate`` is the tokens a `RateLimit` with a budget charges (else unused).
        """
        headers = self._request_headers()
        tally = _Tally()
        try:
            try:
                return await self._once(content, headers, estimate, tally), 1, tally.queued
            except Exception as exc:
                first = exc
            try:
                reply, attempts = await self._retried(first, content, headers, estimate, tally)
            finally:
                del first  # an error's traceback holds this frame: no cycle through it
        except RetryableStatus as exc:
            policy = self.retry
            attempts_allowed = policy.attempts if policy is not None else 1
            raise ModelHTTPError(
                exc.status_code,
                self.name,
                exc.excerpt,
                exhausted_hint(exc.status_code, attempts_allowed),
            ) from exc
        return reply, attempts + tally.throttled, tally.queued

    async def _retried(
        self,
        first: Exception,
        content: bytes,
        headers: Mapping[str, str],
        estimate: int,
        tally: _Tally,
    ) -> tuple[Reply, int]:
        """After a failed first attempt: what ``call_with_retry(policy, attempt)`` does next.

        A throttled answer the adaptive client retries itself (`_retries_throttle`) does not
        end the attempt; the `RetryPolicy` (``retryable``) decides about anything else.
        Returns the reply and the attempts made (the first included).
        """
        policy = self.retry

        def retryable(exc: BaseException) -> bool:
            return is_retryable_error(exc) or (policy is not None and policy.is_retryable(exc))

        async def attempt() -> Reply:
            while True:  # rate-limited answers are retried here, until the caller's deadline
                try:
                    return await self._once(content, headers, estimate, tally)
                except RetryableStatus as exc:
                    if not self._retries_throttle(exc):
                        raise
                    tally.throttled += 1

        try:
            if isinstance(first, RetryableStatus) and self._retries_throttle(first):
                tally.throttled += 1  # still the first attempt
                return await call_with_retry(policy, attempt, retryable=retryable)
            if policy is None or policy.attempts <= 1 or not retryable(first):
                raise first
            return await call_with_retry(
                policy, attempt, attempts_made=1, last_error=first, retryable=retryable
            )
        finally:
            del first  # an error's traceback holds this frame: no cycle through it

    async def _once(
        self, content: bytes, headers: Mapping[str, str], estimate: int, tally: _Tally
    ) -> Reply:
        """One HTTP request: a concurrency slot, the controller's and the rate limit's capacity.

        The POST is awaited here (one coroutine per request fewer than a separate exchange
        step); what the answer says is read by `_answered`. A request that fails to send
        settles its lease at the estimate and releases the controller's capacity.
        """
        session = self._session.get()
        started = loop_time()
        slots = session.limiter
        waited = not slots.take_now()  # each step takes free capacity without awaiting
        if waited:
            await slots.take()
        try:
            control = session.controller if self.adaptive else None
            begun = started
            if control is not None:
                # free capacity: no deadline read, no await (and, when nothing waited yet, the
                # clock read above is the time of admission: the same step)
                at_once = admit_at_once(control, None if waited else started)
                waited = waited or at_once is None
                begun = at_once if at_once is not None else await self._admit(control)
            try:
                limit = self.rate_limit
                lease = limit.unlimited_lease()
                if lease is None:
                    waited = True
                    lease = await limit.acquire(estimate)
            except BaseException:
                if control is not None:
                    control.finished()
                raise
            if waited:  # else nothing was awaited: no time queued (and no clock read)
                queued = loop_time() - started
                tally.queued += queued
                add_queued(queued)  # waiting for capacity is queueing, not the judge's work
            try:
                response = await self._post(session.poster, content, headers)
            except BaseException as exc:
                lease.settle(None)  # not answered: the estimate stands
                if control is not None:
                    control.finished()
                if isinstance(exc, httpx.HTTPError):
                    clean = self.secrets.scrub(exc)  # a transport error holding a secret
                    if clean is not exc:
                        raise clean from None
                raise
            return self._answered(response, control, begun, lease)
        finally:
            slots.release()

    async def _admit(self, control: Controller) -> float:
        """Wait for the controller's capacity; a pause past the deadline is an HTTP error.

        The error carries the status that set the pause and says what set its length.
        """
        try:
            return await control.admit(anyio.current_effective_deadline())
        except CapacityDeadline as exc:
            what = "rate limited" if exc.status == 429 else "the provider is overloaded"
            cause = (
                "the wait the provider asked for (Retry-After or its error body)"
                if exc.asked
                else f"the backoff after HTTP {exc.status} answers"
            )
            raise ModelHTTPError(
                exc.status,
                self.name,
                "",
                f"{what}: every request of this client waits {exc.wait:.1f} s more ({cause}), "
                f"longer than the {max(exc.left, 0.0):.1f} s left before the timeout; not sent",
            ) from None

    def _retries_throttle(self, exc: RetryableStatus) -> bool:
        """True when the adaptive client retries this throttled answer itself (a deadline is set).

        Without a deadline the `RetryPolicy`'s attempts bound the retries instead.
        """
        return (
            self.adaptive
            and exc.status_code in THROTTLE_STATUSES
            and self.retry is not None
            and self.retry.attempts > 1
            and _time_left() < math.inf
        )

    def _answered(
        self, response: Response, control: Controller | None, begun: float, lease: RateLease
    ) -> Reply:
        """Tell the controller and the rate limit how the POST went; the reply, or its error."""
        billed: int | None = None  # the estimate, unless usage says otherwise
        told = control is None
        try:
            status = response.status_code
            ok = 200 <= status < 300
            signals = None
            if control is not None or is_retryable_status(status):
                signals = self._signals(response)
            if control is not None:
                told = True
                assert signals is not None
                feedback(control, begun, status, signals, self.max_retry_after)
            if not ok:
                billed = 0  # rejected requests are not billed
                raise self._status_error(response, signals)
            reply = self._decode(response)
            billed = reply.billed_tokens
            return reply
        finally:
            lease.settle(billed)
            if not told:
                assert control is not None
                control.finished()

    def _post(
        self, poster: Poster, content: bytes, headers: Mapping[str, str]
    ) -> Awaitable[Response]:
        """The POST of one attempt, for `_once` to await (a hook: Bedrock signs each attempt).

        Not a coroutine of its own (one level fewer per request): `_once` redacts a transport
        error whose text holds a secret.
        """
        return poster.post(self.url, content, headers, self.timeout, self.max_response_bytes)

    def _signals(self, response: Response) -> CapacitySignals:
        """The provider's `capacity_signals` of ``response``; a failing hook reads headers."""
        try:
            return self.capacity_signals(response.status_code, response.headers, response.content)
        except Exception:  # a provider's bug must not turn an answer into an error
            logger.warning("%s: capacity_signals failed; headers read instead", self.name)
            return header_signals(response.headers)

    def _status_error(self, response: Response, signals: CapacitySignals | None) -> Exception:
        status = response.status_code
        excerpt = self._excerpt(response)
        if is_retryable_status(status):
            wait = signals.retry_after if signals is not None else None
            if wait is not None and wait > self.max_retry_after:
                wait = None  # not honoured: the policy's backoff applies
            left = _time_left()
            if wait is not None and wait >= left:
                return ModelHTTPError(
                    status,
                    self.name,
                    excerpt,
                    f"the provider asked to wait {wait:g} s before retrying, longer than the "
                    f"{max(left, 0.0):.1f} s left before the timeout; not retried",
                )
            return RetryableStatus(status, excerpt, wait)
        hint = status_hint(
            status, key_env=self.api_key_env, model=self.model, base_url=self.base_url
        )
        return ModelHTTPError(status, self.name, excerpt, hint)

    def _excerpt(self, response: Response) -> str:
        """The start of the body, secrets redacted (before cutting, so no half key shows)."""
        text = excerpt(self.secrets.redact(response.text))
        if response.truncated:
            cap = f"max_response_bytes={self.max_response_bytes}"
            note = (
                f"[a body of {response.declared} bytes, over {cap}, was not read]"
                if response.declared is not None
                else f"[body cut at {cap}]"
            )
            text = f"{text} {note}" if text else note
        return text

    def _decode(self, response: Response) -> Reply:
        if response.truncated:
            raise self._too_large(response)
        try:
            data = json_loads(response.content)  # json.loads, by orjson where it reads the same
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ModelResponseError(
                f"{self.name}: HTTP {response.status_code} with a body that is not a JSON "
                f"object: {self._excerpt(response) or '(empty)'}"
            )
        try:
            reply = self.parse_reply(data)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ModelResponseError(
                f"{self.name}: the response is not a {self.provider} completion "
                f"({self.secrets.redact(str(exc))}): {self._excerpt(response)}"
            ) from None
        for warning in reply.warnings:
            logger.warning("%s", warning)
        return reply

    def _too_large(self, response: Response) -> ModelResponseError:
        size = (
            f"declares {response.declared} bytes"
            if response.declared is not None
            else f"went past {self.max_response_bytes} bytes"
        )
        return ResponseTooLarge(
            f"{self.name}: the answer is too large: HTTP {response.status_code} body {size}, "
            f"over max_response_bytes={self.max_response_bytes}; reading stopped there and the "
            "answer was dropped (not retried). Ask for a shorter answer (max_tokens) or raise "
            "max_response_bytes",
            limit=self.max_response_bytes,
        )

    # -- wire format (subclasses) -----------------------------------------------------------------

    def _request_headers(self) -> dict[str, str]:
        if self._header_cache is None:
            self._header_cache = self._build_headers()
        return self._header_cache

    @property
    def request_headers(self) -> dict[str, str]:
        """The headers every request sends (a copy): content type, authentication, ``headers=``.

        A provider's batch adapter sends them too (`BatchAPI.of`); they hold the secrets.
        """
        return dict(self._request_headers())

    def _build_headers(self) -> dict[str, str]:
        merged = {"content-type": "application/json", "accept": "application/json"}
        if self._credentials is not None:
            merged["authorization"] = basic_authorization(*self._credentials)
        merged.update(self.auth_headers())
        merged.update(self.extra_headers)
        return merged

    def _cache_params(self) -> dict[str, Any]:
        return {"extra_body": self.extra_body}

    def _correction(self, reply: Reply, problem: str) -> list[Message]:
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

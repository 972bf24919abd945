"""`FakeModelServer`: a real HTTP/1.1 server on 127.0.0.1 that speaks the main model APIs.

It answers ``POST /v1/chat/completions`` (and Azure OpenAI's
``POST /openai/deployments/<name>/chat/completions``) and ``POST /v1/responses`` in the OpenAI
shapes and ``POST /v1/messages`` in the Anthropic shape, scripted tool calls included (see
`agentjudge.testing._fake_wire`; Gemini's ``generateContent``: see
`agentjudge.testing._fake_gemini`; AWS Bedrock's ``POST /model/<id>/converse``, SigV4 signature
checked: see `agentjudge.testing._fake_bedrock`; its batch inference jobs and S3 objects: see
`agentjudge.testing._fake_bedrock_batch`), so the real clients (and any other HTTP client)
can be tested over loopback without touching the network. Every response is scripted: queue
`FakeResponse` objects with `FakeModelServer.enqueue` (served first-in first-out), or give a
``default`` that is either a `FakeResponse` or a callable that receives the request's JSON
body and returns one.

The server is built on anyio streams, keeps connections alive (HTTP/1.1) and records every
request it receives (`FakeModelServer.requests`, `FakeModelServer.received`).
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import Any, Self, TypeAlias

import anyio
from anyio.abc import Listener, SocketAttribute, SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from agentjudge.core import ToolCall
from agentjudge.models._types import TokenLogprob
from agentjudge.testing._fake_batches import FakeBatches
from agentjudge.testing._fake_bedrock import (
    BEDROCK_ROUTE,
    FAKE_AWS_ACCESS_KEY_ID,
    FAKE_AWS_SECRET_ACCESS_KEY,
    bedrock_body,
    bedrock_error,
    signature_refusal,
    with_error_type,
)
from agentjudge.testing._fake_bedrock_batch import FakeBedrockBatch
from agentjudge.testing._fake_gemini import GEMINI_ROUTE, gemini_body, gemini_error
from agentjudge.testing._fake_http import (
    CONTINUE,
    MAX_HEAD,
    BadRequest,
    expects_continue,
    http_response,
    parse_head,
    read_body,
)
from agentjudge.testing._fake_wire import (
    anthropic_tool_blocks,
    error_body,
    openai_tool_calls,
    refusal,
    responses_body,
)
from agentjudge.testing._fake_wire import prompt_chars as _prompt_chars
from agentjudge.testing._fake_wire import tokens as _tokens

__all__ = ["FakeModelServer", "FakeRateLimit", "FakeResponse", "ReceivedRequest", "Responder"]


@dataclass(frozen=True)
class FakeResponse:
    """One scripted answer of the fake server.

    Args:
        text: The assistant text. With ``status >= 400`` it becomes the error message.
        json: A structured answer: OpenAI receives it as the message content (JSON text);
            Anthropic receives it as the ``input`` of a ``tool_use`` block when the request
            forces a tool (else as text).
        status: The HTTP status to answer with.
        headers: Extra response headers, e.g. ``{"Retry-After": "2"}``.
        latency: Seconds to wait before answering.
        hang: Never answer (until the client gives up or the server stops).
        raw_body: Sent verbatim instead of a generated body (e.g. a malformed body).
        usage: Overrides the generated token counts, in the provider's own keys (OpenAI
            ``prompt_tokens``/``completion_tokens``/``total_tokens``, Anthropic
            ``input_tokens``/``output_tokens``).
        finish_reason: Overrides ``"stop"`` (OpenAI) / ``"end_turn"`` or ``"tool_use"``
            (Anthropic).
        logprobs: The token log-probabilities an OpenAI chat completion returns when the
            request asks for them (``"logprobs": true``); each token's ``top`` is cut to the
            request's ``top_logprobs``. Without a script the server makes them up: the text
            split into word and punctuation tokens (leading spaces attached), each chosen
            with probability 0.9, followed by ``top_logprobs - 1`` filler alternatives
            (``"<alt1>"``, ...) sharing the remaining 0.1. Never sent to a request that did
            not ask, nor on the Anthropic route (that API has no logprobs).
        tool_calls: Tool calls the model requests (`ToolCall`; ids are made up when unset):
            OpenAI chat ``message.tool_calls`` (finish reason ``"tool_calls"``), Anthropic
            ``tool_use`` blocks after the text (stop reason ``"tool_use"``), Responses API
            ``function_call`` output items. Without ``text`` the reply carries only the calls.
        cost: What the call was charged, in US dollars, sent as ``usage.cost`` in an OpenAI
            chat completion, the way OpenRouter reports each call's cost (its usage
            accounting); None (the default) sends no cost, as OpenAI does.
    """

    text: str | None = None
    json: Any = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    latency: float = 0.0
    hang: bool = False
    raw_body: bytes | str | None = None
    usage: Mapping[str, int] | None = None
    finish_reason: str | None = None
    logprobs: Sequence[TokenLogprob] | None = None
    tool_calls: Sequence[ToolCall] = ()
    cost: float | None = None

    def __post_init__(self) -> None:
        if not all(isinstance(c, ToolCall) for c in self.tool_calls):
            raise TypeError("FakeResponse tool_calls must be a sequence of ToolCall")
        if self.logprobs is not None and not all(
            isinstance(t, TokenLogprob) for t in self.logprobs
        ):
            raise TypeError("FakeResponse logprobs must be a sequence of TokenLogprob")
        if not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status (100-599), got {self.status!r}")
        if not self.latency >= 0 or self.latency == float("inf"):
            raise ValueError(f"latency must be a finite number >= 0, got {self.latency!r}")
        if self.cost is not None and not 0 <= self.cost < float("inf"):
            raise ValueError(f"cost must be a finite number of USD >= 0, got {self.cost!r}")


@dataclass(frozen=True)
class FakeRateLimit:
    """A provider-like rate limit the server enforces, hidden from clients (token buckets).

    Requests beyond it are answered 429 with ``Retry-After`` (whole seconds, rounded up, as RFC
    9110 defines it), ``retry-after-ms`` (the exact wait) and
    OpenAI-style ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers (also sent
    on answered requests when ``headers`` is True). ``limit-*`` is the bucket's capacity,
    ``remaining-*`` its whole tokens left and ``reset-*`` the time until it is full again (e.g.
    ``"120ms"``), so ``(limit - remaining) / reset`` is the refill rate, as with OpenAI.

    Args:
        rps: Requests per second refilled (None: no request limit).
        burst: The request bucket's capacity.
        tpm: Tokens per minute refilled (None: no token limit). A request is charged its
            prompt tokens (characters / 4) plus ``max_tokens`` (or ``max_completion_tokens``).
        token_burst: The token bucket's capacity (default: one second's worth, ``tpm / 60``).
        headers: Send the ``x-ratelimit-*`` headers (False: only ``Retry-After`` on a 429).
    """

    rps: float | None = 50.0
    burst: int = 10
    tpm: float | None = None
    token_burst: int | None = None
    headers: bool = True

    def __post_init__(self) -> None:
        for name in ("rps", "tpm"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value > 0):
                raise ValueError(
                    f"FakeRateLimit {name} must be a number > 0 or None, got {value!r}"
                )
        if not isinstance(self.burst, int) or self.burst < 1:
            raise ValueError(f"FakeRateLimit burst must be an integer >= 1, got {self.burst!r}")


class _Bucket:
    """A token bucket on `time.monotonic`."""

    def __init__(self, rate: float, capacity: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.level = capacity
        self.stamp = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def shortfall(self, cost: float) -> float:
        """Seconds until ``cost`` fits (0: it fits now)."""
        cost = min(cost, self.capacity)
        return 0.0 if self.level >= cost else (cost - self.level) / self.rate

    def headers(self, kind: str) -> dict[str, str]:
        reset_ms = max(0.0, (self.capacity - self.level) / self.rate * 1000.0)
        return {
            f"x-ratelimit-limit-{kind}": str(int(self.capacity)),
            f"x-ratelimit-remaining-{kind}": str(max(0, int(self.level))),
            f"x-ratelimit-reset-{kind}": f"{reset_ms:.0f}ms",
        }


class _Limiter:
    """The state of a `FakeRateLimit` (rebuilt when the limit is changed)."""

    def __init__(self, limit: FakeRateLimit) -> None:
        self.limit = limit
        self.requests = _Bucket(limit.rps, limit.burst) if limit.rps is not None else None
        tokens: _Bucket | None = None
        if limit.tpm is not None:
            per_second = limit.tpm / 60.0
            tokens = _Bucket(per_second, limit.token_burst or max(1.0, per_second))
        self.tokens = tokens

    def check(self, cost: int) -> tuple[float, dict[str, str]]:
        """Charge one request of ``cost`` tokens; (seconds to wait: 0 = admitted, headers)."""
        now = time.monotonic()
        wait = 0.0
        for bucket, charge in ((self.requests, 1.0), (self.tokens, float(cost))):
            if bucket is not None:
                bucket.refill(now)
                wait = max(wait, bucket.shortfall(charge))
        if wait <= 0:
            if self.requests is not None:
                self.requests.level -= 1.0
            if self.tokens is not None:
                self.tokens.level -= min(float(cost), self.tokens.capacity)
        headers: dict[str, str] = {}
        if self.limit.headers:
            if self.requests is not None:
                headers.update(self.requests.headers("requests"))
            if self.tokens is not None:
                headers.update(self.tokens.headers("tokens"))
        return wait, headers


def _charge(data: dict[str, Any]) -> int:
    """The tokens a request is charged by `FakeRateLimit`: prompt estimate plus max tokens."""
    chars = sum(_prompt_chars(data.get(key)) for key in ("messages", "system", "input"))
    allowance = data.get("max_tokens", data.get("max_completion_tokens"))
    extra = allowance if isinstance(allowance, int) and allowance > 0 else 0
    return _tokens(chars) + extra


Responder: TypeAlias = FakeResponse | Callable[[Any], FakeResponse | Awaitable[FakeResponse]]
"""A fixed `FakeResponse`, or a callable of the request JSON body returning one (maybe async)."""


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server received it.

    Attributes:
        method: The HTTP method.
        path: The request target, e.g. ``"/v1/chat/completions"``.
        headers: Header names in lower case.
        json: The decoded JSON body (None when the body was empty or not JSON).
        time: `time.monotonic` when the whole request had arrived.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    json: Any
    time: float


class FakeModelServer:
    """A scriptable model-API server on a random loopback port (OpenAI, Anthropic, Gemini, Bedrock).

    Bedrock requests must carry a SigV4 signature by a key in ``aws_keys`` (by default the
    test credentials `FAKE_AWS_ACCESS_KEY_ID` / `FAKE_AWS_SECRET_ACCESS_KEY`); others get the
    403 AWS would send. Use it as an async context manager::

        async with FakeModelServer(default=FakeResponse(text="PASS")) as server:
            model = OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="test")
            ...

    Args:
        default: What to answer when the queue is empty: a `FakeResponse`, or a callable
            receiving the request JSON body and returning one (sync or async).
        host: The address to listen on (loopback by default).
        port: The port; 0 picks a free one.
        rate_limit: A hidden provider-like rate limit (see `FakeRateLimit`); None: unlimited.
            Change it mid-run with `set_rate_limit`. Refused requests are recorded too and
            counted in `throttled`.
        record: Keep every request received (`requests`, `received`). False keeps none: for
            long benchmark runs, where each kept request is memory and work for every later
            garbage collection of the server's process.
    """

    def __init__(
        self,
        default: Responder = FakeResponse(text="ok"),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        rate_limit: FakeRateLimit | None = None,
        record: bool = True,
    ) -> None:
        self.default: Responder = default
        self._record = record
        self._limiter = _Limiter(rate_limit) if rate_limit is not None else None
        self.throttled = 0
        """Requests answered 429 by the rate limit."""
        self.host = host
        self._port = port
        self._queue: deque[Responder] = deque()
        self._received: list[ReceivedRequest] = []
        self._ids = itertools.count(1)
        self._task_group: TaskGroup | None = None
        self._listener: Listener[SocketStream] | None = None
        self._bound_port: int | None = None
        # batch APIs (OpenAI files/batches, Anthropic message batches): see _fake_batches
        self.batches = FakeBatches(self._respond, lambda: self.url)
        self.aws_keys: dict[str, str] = {FAKE_AWS_ACCESS_KEY_ID: FAKE_AWS_SECRET_ACCESS_KEY}
        """AWS access key ids and their secret keys whose SigV4 signatures Bedrock routes take."""
        self.bedrock_batch = FakeBedrockBatch(self.batches, lambda: self.aws_keys)
        """Bedrock batch inference: S3 objects and model invocation jobs (_fake_bedrock_batch)."""

    # -- scripting ----------------------------------------------------------------------------

    def enqueue(self, *responses: Responder) -> None:
        """Queue answers for the next requests, first-in first-out, ahead of ``default``."""
        for response in responses:
            if not isinstance(response, FakeResponse) and not callable(response):
                raise TypeError(
                    f"enqueue() takes FakeResponse objects or callables, got {response!r}"
                )
            self._queue.append(response)

    def set_rate_limit(self, rate_limit: FakeRateLimit | None) -> None:
        """Replace the hidden rate limit from now on (full buckets); None removes it."""
        self._limiter = _Limiter(rate_limit) if rate_limit is not None else None

    @property
    def pending(self) -> int:
        """How many queued answers have not been served yet."""
        return len(self._queue)

    @property
    def requests(self) -> list[Any]:
        """The JSON bodies received so far, in arrival order."""
        return [r.json for r in self._received]

    @property
    def received(self) -> list[ReceivedRequest]:
        """Everything received so far (method, path, headers, body, arrival time), in order."""
        return list(self._received)

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only while running)."""
        if self._bound_port is None:
            raise RuntimeError("FakeModelServer is not running: use `async with FakeModelServer()`")
        return self._bound_port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: the ``base_url`` to give a model client."""
        return f"{self.url}/v1"

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise RuntimeError("FakeModelServer is already running")
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self._port)
        self._bound_port = listener.extra(SocketAttribute.local_port)
        self._listener = listener
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        task_group.start_soon(listener.serve, self._handle_connection, task_group)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        task_group, self._task_group = self._task_group, None
        listener, self._listener = self._listener, None
        assert task_group is not None and listener is not None
        task_group.cancel_scope.cancel()
        try:
            return await task_group.__aexit__(exc_type, exc, tb)
        finally:
            self._bound_port = None
            with anyio.CancelScope(shield=True):
                await listener.aclose()  # the port refuses connections from now on

    # -- HTTP ---------------------------------------------------------------------------------

    async def _handle_connection(self, stream: SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        try:
            while True:
                try:
                    head = await reader.receive_until(b"\r\n\r\n", MAX_HEAD)
                except (
                    anyio.EndOfStream,
                    anyio.IncompleteRead,
                    anyio.DelimiterNotFound,
                    anyio.BrokenResourceError,
                    anyio.ClosedResourceError,
                    OSError,
                ):
                    return
                try:
                    method, path, headers = parse_head(head)
                    if expects_continue(headers):
                        await stream.send(CONTINUE)
                    body = await read_body(reader, headers)
                except BadRequest as exc:
                    await stream.send(http_response(400, error_body(400, str(exc)), close=True))
                    return
                keep_alive = headers.get("connection", "").lower() != "close"
                answer = await self._respond(method, path, headers, body)
                if answer is None:  # hang
                    await anyio.sleep_forever()
                    return  # pragma: no cover
                status, payload, extra_headers = answer
                await stream.send(
                    http_response(status, payload, extra_headers, close=not keep_alive)
                )
                if not keep_alive:
                    return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        finally:
            await stream.aclose()

    async def _respond(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, Mapping[str, str]] | None:
        try:
            data: Any = json.loads(body) if body else None
        except ValueError:
            data = None
            invalid_json = True
        else:
            invalid_json = False
        if self._record:
            self._received.append(ReceivedRequest(method, path, headers, data, time.monotonic()))
        target, _, query = path.partition("?")
        route = _AZURE_ROUTE.sub("/v1/chat/completions", target.rstrip("/"))
        if FakeBedrockBatch.handles(method, route, headers):  # S3 and Bedrock jobs
            return await self.bedrock_batch.respond(method, path, headers, body)
        if FakeBatches.handles(route):  # batch APIs: see _fake_batches
            return await self.batches.respond(method, route, headers, body, query)
        wire = self._wire(route)
        if method != "POST" or wire is None:
            return 404, error_body(404, f"no route for {method} {path}"), {}
        error, answer = wire
        refused = "the request body is not a JSON object" if invalid_json else refusal(data)
        if refused is not None:
            return 400, error(400, refused, None), {}
        if not BEDROCK_ROUTE.match(route):
            return await self._scripted(data, error, partial(answer, data))
        denied = signature_refusal(method, path, headers, body, self.aws_keys)  # checked first
        if denied is not None:
            kind, message = denied
            return 403, bedrock_error(403, message, kind), {"x-amzn-ErrorType": kind}
        return with_error_type(await self._scripted(data, error, partial(answer, data)))

    def _wire(self, route: str) -> tuple[_Error, Callable[[Any, FakeResponse], bytes]] | None:
        """How ``route`` answers: (its error body, its answer body); None: no such route."""
        if (gemini := GEMINI_ROUTE.match(route)) is not None:  # see _fake_gemini
            return gemini_error, partial(gemini_body, gemini["model"])
        if BEDROCK_ROUTE.match(route):  # see _fake_bedrock
            return _aws_error, lambda request, response: bedrock_body(request, response, self._ids)
        if route == "/v1/messages":
            return partial(_error, anthropic=True), self._anthropic_body
        if route == "/v1/responses":
            return _error, self._responses_body
        if route == "/v1/chat/completions":
            return _error, self._openai_body
        return None

    async def _scripted(
        self, data: dict[str, Any], error: _Error, answer: Callable[[FakeResponse], bytes]
    ) -> tuple[int, bytes, Mapping[str, str]] | None:
        """The hidden rate limit, then the next scripted answer (None: hang)."""
        wait, limit_headers = self._limiter.check(_charge(data)) if self._limiter else (0, {})
        if wait > 0:
            self.throttled += 1
            limit_headers["retry-after"] = str(max(1, math.ceil(wait)))  # delay-seconds
            limit_headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
            message = "Rate limit reached; please try again later"
            return 429, error(429, message, wait), limit_headers
        responder = self._queue.popleft() if self._queue else self.default
        response = responder if isinstance(responder, FakeResponse) else responder(data)
        if inspect.isawaitable(response):
            response = await response
        if not isinstance(response, FakeResponse):
            raise TypeError(f"a FakeModelServer responder returned {response!r}")
        if response.latency:
            await anyio.sleep(response.latency)
        if response.hang:
            return None
        if response.raw_body is not None:
            raw = response.raw_body
            out = raw.encode() if isinstance(raw, str) else raw
        elif response.status >= 400:
            out = error(response.status, response.text, None)
        else:
            out = answer(response)
        return response.status, out, {**limit_headers, **response.headers}

    def _responses_body(self, request: dict[str, Any], response: FakeResponse) -> bytes:
        text = json.dumps(response.json) if response.json is not None else response.text
        return responses_body(
            request,
            text=text,
            calls=response.tool_calls,
            usage=response.usage,
            finish_reason=response.finish_reason,
            ids=self._ids,
        )

    def _openai_body(self, request: dict[str, Any], response: FakeResponse) -> bytes:
        text = json.dumps(response.json) if response.json is not None else response.text or ""
        prompt_tokens = _tokens(_prompt_chars(request.get("messages")))
        completion_tokens = _tokens(len(text))
        usage: Mapping[str, int] = response.usage or {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        if response.tool_calls:
            message["tool_calls"] = openai_tool_calls(response.tool_calls, self._ids)
            message["content"] = text or None
            finish = "tool_calls"
        body = {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": response.finish_reason or finish,
                }
            ],
            "usage": dict(usage),
        }
        if response.cost is not None:  # OpenRouter's usage accounting
            body["usage"]["cost"] = response.cost
        if request.get("logprobs") is True:
            top = request.get("top_logprobs")
            count = top if isinstance(top, int) and top > 0 else 0
            tokens = response.logprobs
            if tokens is None:
                tokens = _generated_logprobs(text, count)
            body["choices"][0]["logprobs"] = {
                "content": [_openai_token(t, count) for t in tokens],
                "refusal": None,
            }
        return json.dumps(body).encode()

    def _anthropic_body(self, request: dict[str, Any], response: FakeResponse) -> bytes:
        forced = _forced_tool(request)
        tool_input: Any = response.json
        if forced is not None and tool_input is None and response.text is not None:
            try:
                tool_input = json.loads(response.text)
            except ValueError:
                tool_input = None
        content: list[dict[str, Any]]
        if forced is not None and isinstance(tool_input, dict):
            content = [
                {
                    "type": "tool_use",
                    "id": f"toolu_fake_{next(self._ids)}",
                    "name": forced,
                    "input": tool_input,
                }
            ]
            out_text = json.dumps(tool_input)
            stop = "tool_use"
        else:
            if response.json is not None:
                out_text = json.dumps(response.json)
            else:
                out_text = response.text or ""
            content = [{"type": "text", "text": out_text}]
            stop = "end_turn"
            if response.tool_calls:
                content = content if out_text else []
                content += anthropic_tool_blocks(response.tool_calls, self._ids)
                stop = "tool_use"
        chars = _prompt_chars(request.get("messages")) + _prompt_chars(request.get("system"))
        usage: Mapping[str, int] = response.usage or {
            "input_tokens": _tokens(chars),
            "output_tokens": _tokens(len(out_text)),
        }
        body = {
            "id": f"msg_fake_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "fake"),
            "content": content,
            "stop_reason": response.finish_reason or stop,
            "stop_sequence": None,
            "usage": dict(usage),
        }
        return json.dumps(body).encode()


_Error: TypeAlias = Callable[[int, "str | None", "float | None"], bytes]
"""A route's error body: ``(status, message, wait before retrying or None)``."""


def _error(
    status: int, message: str | None, wait: float | None, *, anthropic: bool = False
) -> bytes:
    return error_body(status, message, anthropic=anthropic)


def _aws_error(status: int, message: str | None, wait: float | None) -> bytes:
    return bedrock_error(status, message)


_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s]+)|\s+")
_CHOSEN = math.log(0.9)


def _generated_logprobs(text: str, top: int) -> list[TokenLogprob]:
    """Made-up logprobs for ``text``: each token chosen with p = 0.9, fillers share the rest."""
    fillers = max(0, top - 1)
    rest = math.log(0.1 / fillers) if fillers else 0.0
    return [
        TokenLogprob(
            token=token,
            logprob=_CHOSEN,
            top=((token, _CHOSEN), *((f"<alt{j}>", rest) for j in range(1, fillers + 1))),
        )
        for token in _TOKEN.findall(text)
    ]


def _openai_token(token: TokenLogprob, top: int) -> dict[str, Any]:
    def entry(text: str, logprob: float) -> dict[str, Any]:
        return {"token": text, "logprob": logprob, "bytes": list(text.encode())}

    return {
        **entry(token.token, token.logprob),
        "top_logprobs": [entry(t, lp) for t, lp in token.top[:top]],
    }


_AZURE_ROUTE = re.compile(r"^/openai/deployments/[^/]+/chat/completions$")
"""Azure OpenAI's chat path (``{endpoint}/openai/deployments/<name>/...``): OpenAI's format."""


def _forced_tool(request: Mapping[str, Any]) -> str | None:
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool":
        name = choice.get("name")
        return name if isinstance(name, str) else None
    return None

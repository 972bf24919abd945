"""`OpenAIChat`: any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, LiteLLM)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from agentjudge._retry import RetryPolicy
from agentjudge.core import Message
from agentjudge.models._cache import SqliteCache
from agentjudge.models._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    HTTPModelClient,
    _Reply,
    check_against_schema,
)
from agentjudge.models._ratelimit import RateLimit
from agentjudge.models._schema import decode_json_object, tool_name
from agentjudge.models._types import ModelRequest, Usage
from agentjudge.models._usage import UsageReader

__all__ = ["OpenAIChat"]


class OpenAIChat(HTTPModelClient):
    """A client for ``POST {base_url}/chat/completions``.

    Structured output uses ``response_format={"type": "json_schema", ...}``; the answer is
    decoded and checked against the schema, and re-asked up to ``schema_retries`` times (the
    bad answer and a correction are appended to the conversation). If it still fails, the
    response comes back with ``parsed=None`` and ``schema_error`` set.

    Use it as an async context manager (or call `aclose`) to close the HTTP connections it
    opened; an injected ``client`` is never closed.

    Args:
        model: The model name the server knows, e.g. ``"gpt-4o-mini"``.
        base_url: The API root; default ``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``.
            ``user:password@`` in it is sent as HTTP Basic authentication (and then no API
            key may be set: pass ``api_key=""`` to ignore ``OPENAI_API_KEY``).
        api_key: Sent as a bearer token; default ``OPENAI_API_KEY`` (none sent when unset).
            Never shown: reprs show no key and error texts show ``[REDACTED]`` in its place.
        client: An `httpx.AsyncClient` to send requests with (its transport, proxies and
            hooks apply); by default the client builds one on the fastest available
            transport and owns it.
        max_concurrency: HTTP requests this client keeps in flight at most.
        rate_limit: Request/token budgets shared by every call of this client (and of any
            other client given the same object); default unlimited.
        retry: Retries for 408/409/429/5xx, transport errors and unusable bodies; None = one
            attempt.
        timeout: Seconds allowed for connecting, each read and each write of one attempt;
            None = no limit.
        cache: A `SqliteCache` answering repeated requests; default off.
        schema_retries: Re-asks when a structured answer is not valid JSON for the schema.
        name: The client name (default ``"openai:<model>"``), also the Evaluator resource.
        headers: Extra HTTP headers sent with every request.
        extra_body: Extra top-level JSON fields sent with every request (e.g. ``seed``).
        max_retry_after: Longest ``Retry-After`` honoured, seconds; longer waits fall back to
            the policy's backoff. A wait longer than the time left before the caller's
            deadline fails at once (`ModelHTTPError` saying so).
        max_response_bytes: Largest response body read (default 16 MiB); a larger answer is
            a `ModelResponseError` (not retried), and no more than this is held in memory.
        adaptive: Adapt concurrency and request rate to the provider's rate limits (429s,
            rate-limit headers, latency) beneath ``max_concurrency`` and ``rate_limit``;
            under a deadline, rate-limited answers are retried until it (see
            docs/how-to/cost-and-rate-limits.md). False: fixed concurrency, policy retries.
        strict_schema: Send ``"strict": true`` with the JSON schema (OpenAI requires every
            property to be required and ``additionalProperties: false`` then).
    """

    provider: ClassVar[str] = "openai"
    path: ClassVar[str] = "/chat/completions"
    base_url_env: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_header: ClassVar[str] = "authorization"
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        adaptive: bool = True,
        strict_schema: bool = True,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            client=client,
            max_concurrency=max_concurrency,
            rate_limit=rate_limit,
            retry=retry,
            timeout=timeout,
            cache=cache,
            schema_retries=schema_retries,
            name=name,
            headers=headers,
            extra_body=extra_body,
            max_retry_after=max_retry_after,
            max_response_bytes=max_response_bytes,
            adaptive=adaptive,
        )
        self.strict_schema = strict_schema

    def _auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _cache_params(self) -> dict[str, Any]:
        return {**super()._cache_params(), "strict": self.strict_schema}

    def _body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if schema is not None:
            spec: dict[str, Any] = {"name": tool_name(schema), "schema": schema}
            if self.strict_schema:
                spec["strict"] = True
            body["response_format"] = {"type": "json_schema", "json_schema": spec}
        body.update(self.extra_body)
        return body

    def _parse(self, data: dict[str, Any]) -> _Reply:
        choices = data["choices"]
        if not isinstance(choices, list) or not choices:
            raise ValueError("'choices' is empty")
        choice = choices[0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("'choices[0].message' is not an object")
        content = message.get("content")
        if isinstance(content, list):  # content parts (some compatible servers)
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if content is not None and not isinstance(content, str):
            raise TypeError("'choices[0].message.content' is not a string")
        refusal = message.get("refusal")
        text = content or (refusal if isinstance(refusal, str) else "") or ""
        usage, warnings = self._usage(data.get("usage"))
        billed = usage.total_tokens
        if billed is None and usage.input_tokens is not None:
            billed = usage.input_tokens + (usage.output_tokens or 0)
        finish = choice.get("finish_reason")
        model = data.get("model")
        return _Reply(
            text=text,
            structured=None,
            model=model if isinstance(model, str) else None,
            finish_reason=finish if isinstance(finish, str) else None,
            usage=usage,
            raw=data,
            billed_tokens=billed,
            warnings=warnings,
        )

    def _usage(self, raw: Any) -> tuple[Usage, tuple[str, ...]]:
        if not isinstance(raw, dict):
            return Usage(), ()
        reader = UsageReader(self.name)
        completion = raw.get("completion_tokens_details")
        prompt = raw.get("prompt_tokens_details")
        usage = Usage(
            input_tokens=reader.count(raw.get("prompt_tokens"), "usage.prompt_tokens"),
            output_tokens=reader.count(raw.get("completion_tokens"), "usage.completion_tokens"),
            total_tokens=reader.count(raw.get("total_tokens"), "usage.total_tokens"),
            reasoning_tokens=reader.count(
                completion.get("reasoning_tokens"),
                "usage.completion_tokens_details.reasoning_tokens",
            )
            if isinstance(completion, dict)
            else None,
            cache_read_tokens=reader.count(
                prompt.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens"
            )
            if isinstance(prompt, dict)
            else None,
        )
        return usage, tuple(reader.warnings)

    def _structured(self, reply: _Reply, schema: dict[str, Any]) -> dict[str, Any]:
        return check_against_schema(decode_json_object(reply.text), schema)

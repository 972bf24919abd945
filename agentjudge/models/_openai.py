"""`OpenAIChat`: any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, LiteLLM)."""

from __future__ import annotations

from typing import Any, ClassVar, Unpack

from agentjudge.core import Message
from agentjudge.models._batch_api import BatchAPI, OpenAIBatchAPI
from agentjudge.models._http import HTTPModelClient
from agentjudge.models._options import ClientKeywords
from agentjudge.models._provider import Reply, reply_from
from agentjudge.models._schema import tool_name
from agentjudge.models._types import ModelRequest, ModelResponse, TokenLogprob
from agentjudge.models._usage import read_usage

__all__ = ["USAGE_FIELDS", "OpenAIChat", "read_logprobs"]

USAGE_FIELDS = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "total_tokens": "total_tokens",
    "reasoning_tokens": "completion_tokens_details.reasoning_tokens",
    "cache_read_tokens": "prompt_tokens_details.cached_tokens",
}
"""Where a chat completion's ``usage`` holds each `Usage` count."""


class OpenAIChat(HTTPModelClient):
    """A client for ``POST {base_url}/chat/completions``.

    Structured output uses ``response_format={"type": "json_schema", ...}``; the answer is
    decoded and checked against the schema, and re-asked up to ``schema_retries`` times (the
    bad answer and a correction are appended to the conversation). If it still fails, the
    response comes back with ``parsed=None`` and ``schema_error`` set.

    Use it as an async context manager (or call `aclose`) to close the HTTP connections it
    opened; an injected ``client`` is never closed.

    Two of the shared options matter most here: ``base_url``, the API root (default
    ``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``; ``user:password@`` in it is sent as
    HTTP Basic authentication, and then no API key may be set: pass ``api_key=""`` to ignore
    ``OPENAI_API_KEY``), and ``api_key``, sent as a bearer token (default ``OPENAI_API_KEY``,
    none sent when unset), never shown: reprs show no key and error texts show ``[REDACTED]``.

    Args:
        model: The model name the server knows, e.g. ``"gpt-4o-mini"``.
        **options: The options every client shares (``client``, ``max_concurrency``,
            ``rate_limit``, ``retry``, ``timeout``, ``cache``, ``schema_retries``, ``name``,
            ``headers``, ``extra_body``, ``max_retry_after``, ``max_response_bytes``,
            ``adaptive``, ``base_url``, ``api_key``): see `ClientOptions` for each and its
            default.
        strict_schema: Send ``"strict": true`` with the JSON schema (OpenAI requires every
            property to be required and ``additionalProperties: false`` then).

    A request with ``logprobs=k`` is sent with ``"logprobs": true`` (and ``"top_logprobs": k``
    when k > 0); ``choices[0].logprobs.content`` comes back as `ModelResponse.logprobs`. A
    malformed or missing logprobs list leaves it None with a line in ``warnings`` (the answer
    itself is kept). Answers collected through a `BatchCollector` carry them too.
    """

    supports_logprobs: ClassVar[bool] = True
    """This client can return token log-probabilities (`ModelRequest.logprobs`)."""

    provider: ClassVar[str] = "openai"
    path: ClassVar[str] = "/chat/completions"
    base_url_env: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_header: ClassVar[str] = "authorization"
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    def __init__(
        self, model: str, *, strict_schema: bool = True, **options: Unpack[ClientKeywords]
    ) -> None:
        super().__init__(model, **options)
        self.strict_schema = strict_schema

    def batch_api(self) -> BatchAPI | None:
        """The OpenAI Batch API (``/files`` + ``/batches``) at ``base_url``."""
        return OpenAIBatchAPI.of(self)

    def _cache_params(self) -> dict[str, Any]:
        return {**super()._cache_params(), "strict": self.strict_schema}

    def request_body(
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
        if request.logprobs is not None:
            body["logprobs"] = True
            if request.logprobs:
                body["top_logprobs"] = request.logprobs
        if schema is not None:
            spec: dict[str, Any] = {"name": tool_name(schema), "schema": schema}
            if self.strict_schema:
                spec["strict"] = True
            body["response_format"] = {"type": "json_schema", "json_schema": spec}
        body.update(self.extra_body)
        return body

    def finish_response(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """Attach the token logprobs the request asked for (online and batch answers alike)."""
        if request.logprobs is None:
            return response
        logprobs, problem = read_logprobs(response.raw)
        if problem is None:
            return response.model_copy(update={"logprobs": logprobs})
        warning = f"{self.name}: no token logprobs in the answer: {problem}"
        return response.model_copy(update={"warnings": (*response.warnings, warning)})

    def parse_reply(self, data: dict[str, Any]) -> Reply:
        """``choices[0].message`` (text parts joined; a refusal is the text) and ``usage``."""
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
        usage = read_usage(self.name, data.get("usage"), "usage", USAGE_FIELDS)
        return reply_from(
            data, text, usage, model=data.get("model"), finish=choice.get("finish_reason")
        )


_LOGPROB_SLACK = 1e-6
"""Tiny positive log-probabilities (rounding on some servers) read as 0; larger ones are wrong."""


def _logprob(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} is not a number: {value!r}")
    if not value <= _LOGPROB_SLACK:  # NaN fails this too
        raise ValueError(f"{where} must be a finite number <= 0, got {value!r}")
    if value == float("-inf"):
        raise ValueError(f"{where} must be finite, got {value!r}")
    return min(0.0, float(value))


def _token(entry: Any, where: str) -> tuple[str, float]:
    if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
        raise ValueError(f"{where} has no string 'token'")
    return entry["token"], _logprob(entry.get("logprob"), f"{where}.logprob")


def read_logprobs(raw: Any) -> tuple[tuple[TokenLogprob, ...] | None, str | None]:
    """The tokens of ``choices[0].logprobs.content`` in an OpenAI chat completion.

    Returns:
        ``(tokens, None)``, or ``(None, why)`` when the body carries none or they are malformed.
    """
    try:
        block = raw["choices"][0].get("logprobs")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None, "the body has no choices[0]"
    content = block.get("content") if isinstance(block, dict) else None
    if not isinstance(content, list):
        return None, "choices[0].logprobs.content is missing (the server may not support logprobs)"
    tokens: list[TokenLogprob] = []
    try:
        for i, entry in enumerate(content):
            where = f"choices[0].logprobs.content[{i}]"
            token, logprob = _token(entry, where)
            top_raw = entry.get("top_logprobs") or []
            if not isinstance(top_raw, list):
                raise ValueError(f"{where}.top_logprobs is not a list")
            top = tuple(_token(t, f"{where}.top_logprobs[{j}]") for j, t in enumerate(top_raw))
            tokens.append(TokenLogprob(token=token, logprob=logprob, top=top))
    except ValueError as exc:
        return None, str(exc)
    return tuple(tokens), None

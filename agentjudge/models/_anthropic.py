"""`AnthropicMessages`: the Anthropic Messages API (structured output through a forced tool)."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Unpack

from agentjudge.core import Message
from agentjudge.models._batch_api import AnthropicBatchAPI, BatchAPI
from agentjudge.models._http import HTTPModelClient
from agentjudge.models._options import ClientKeywords
from agentjudge.models._provider import Reply, check_against_schema, reply_from
from agentjudge.models._schema import SchemaViolation, tool_name
from agentjudge.models._types import ModelRequest, ModelResponse
from agentjudge.models._usage import read_usage

__all__ = ["AnthropicMessages"]

ANTHROPIC_VERSION = "2023-06-01"
USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_creation_tokens": "cache_creation_input_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
}
"""Where a message's ``usage`` holds each `Usage` count (cache tokens apart from input)."""


class AnthropicMessages(HTTPModelClient):
    """A client for ``POST {base_url}/messages``.

    System messages are joined into the top-level ``system`` field; every other role is sent
    as ``user`` except ``assistant``. Structured output forces a call of one tool whose
    ``input_schema`` is the requested schema; ``parsed`` is the tool call's input, checked
    against the schema and re-asked up to ``schema_retries`` times.

    ``base_url`` is the API root (default ``ANTHROPIC_BASE_URL`` or
    ``https://api.anthropic.com/v1``; ``user:password@`` in it is sent as HTTP Basic auth);
    ``api_key`` is sent as ``x-api-key`` (default ``ANTHROPIC_API_KEY``) and redacted from every
    error text. Both are among the shared options.

    Args:
        model: The model name, e.g. ``"claude-3-5-haiku-latest"``.
        max_tokens: Output allowance when the request sets none (the API requires one).
        **options: The options every client shares (``client``, ``max_concurrency``,
            ``rate_limit``, ``retry``, ``timeout``, ``cache``, ``schema_retries``, ``name``,
            ``headers``, ``extra_body``, ``max_retry_after``, ``max_response_bytes``,
            ``adaptive``): see `ClientOptions` for each and its default. ``retry`` also
            retries Anthropic's 529 (overloaded).
    """

    provider: ClassVar[str] = "anthropic"
    path: ClassVar[str] = "/messages"
    base_url_env: ClassVar[str] = "ANTHROPIC_BASE_URL"
    api_key_header: ClassVar[str] = "x-api-key"
    api_key_env: ClassVar[str] = "ANTHROPIC_API_KEY"
    default_base_url: ClassVar[str] = "https://api.anthropic.com/v1"
    supports_logprobs: ClassVar[bool] = False
    """The Messages API returns no token log-probabilities: a request asking for them is a
    ValueError (use self-consistency for a confidence instead)."""
    cache_tokens_apart: ClassVar[bool] = True
    """``input_tokens`` exclude cache reads and writes (priced apart)."""

    def __init__(
        self, model: str, *, max_tokens: int = 1024, **options: Unpack[ClientKeywords]
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        super().__init__(model, **options)
        self.max_tokens = max_tokens

    def auth_headers(self) -> dict[str, str]:
        """``x-api-key`` (when a key is set) and ``anthropic-version``."""
        return {"anthropic-version": ANTHROPIC_VERSION, **super().auth_headers()}

    def batch_api(self) -> BatchAPI | None:
        """Message Batches (``/messages/batches``) at ``base_url``."""
        return AnthropicBatchAPI.of(self)

    def _cache_params(self) -> dict[str, Any]:
        return {**super()._cache_params(), "max_tokens": self.max_tokens}

    def _output_allowance(self, request: ModelRequest) -> int:
        return request.max_tokens or self.max_tokens

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request (see `HTTPModelClient.complete`).

        Raises:
            ValueError: the request asks for ``logprobs``, which the Anthropic API does not
                return (never answered silently without them).
        """
        if isinstance(request, ModelRequest) and request.logprobs is not None:
            raise ValueError(
                f"{self.name}: the Anthropic Messages API returns no token log-probabilities, "
                "so a request with logprobs cannot be answered; use "
                "agentjudge.judges.SelfConsistency (or SimulatedAnnotators) for a confidence"
            )
        return await super().complete(request)

    def request_body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._output_allowance(request),
            "messages": [
                {
                    "role": "assistant" if m.role == "assistant" else "user",
                    "content": m.content,
                }
                for m in messages
                if m.role != "system"
            ],
        }
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if schema is not None:
            name = tool_name(schema)
            body["tools"] = [
                {
                    "name": name,
                    "description": "Record the answer in the required structure.",
                    "input_schema": schema,
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": name}
        body.update(self.extra_body)
        return body

    def parse_reply(self, data: dict[str, Any]) -> Reply:
        """The text blocks joined, or the forced tool call's input as the structured answer."""
        content = data["content"]
        if not isinstance(content, list):
            raise TypeError("'content' is not a list")
        texts: list[str] = []
        tool_input: Any = None
        for block in content:
            if not isinstance(block, dict):
                raise TypeError("a content block is not an object")
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block.get("type") == "tool_use" and tool_input is None:
                tool_input = block.get("input")
        text = json.dumps(tool_input) if tool_input is not None else "".join(texts)
        usage = read_usage(self.name, data.get("usage"), "usage", USAGE_FIELDS)
        return reply_from(
            data,
            text,
            usage,
            model=data.get("model"),
            finish=data.get("stop_reason"),
            structured=tool_input,
        )

    def structured_answer(self, reply: Reply, schema: dict[str, Any]) -> dict[str, Any]:
        """The tool call's input, checked against ``schema``.

        Raises:
            SchemaViolation: No tool call, or an input that does not follow ``schema``.
        """
        if reply.structured is None:
            raise SchemaViolation("the answer did not call the tool with the structured result")
        return check_against_schema(reply.structured, schema)

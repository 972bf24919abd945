"""`AnthropicMessages`: the Anthropic Messages API (structured output through a forced tool)."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Unpack

from agentjudge.core import Message
from agentjudge.models._http import HTTPModelClient, _Reply, check_against_schema
from agentjudge.models._options import ClientKeywords
from agentjudge.models._schema import SchemaViolation, tool_name
from agentjudge.models._types import ModelRequest, ModelResponse, Usage
from agentjudge.models._usage import UsageReader

__all__ = ["AnthropicMessages"]

ANTHROPIC_VERSION = "2023-06-01"


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

    def __init__(
        self, model: str, *, max_tokens: int = 1024, **options: Unpack[ClientKeywords]
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        super().__init__(model, **options)
        self.max_tokens = max_tokens

    def _auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

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

    def _body(
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

    def _parse(self, data: dict[str, Any]) -> _Reply:
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
        usage, warnings = self._usage(data.get("usage"))
        billed = None
        if usage.input_tokens is not None or usage.output_tokens is not None:
            billed = (
                (usage.input_tokens or 0)
                + (usage.output_tokens or 0)
                + (usage.cache_creation_tokens or 0)
            )
        text = "".join(texts)
        if tool_input is not None:
            text = json.dumps(tool_input)
        stop = data.get("stop_reason")
        model = data.get("model")
        return _Reply(
            text=text,
            structured=tool_input,
            model=model if isinstance(model, str) else None,
            finish_reason=stop if isinstance(stop, str) else None,
            usage=usage,
            raw=data,
            billed_tokens=billed,
            warnings=warnings,
        )

    def _usage(self, raw: Any) -> tuple[Usage, tuple[str, ...]]:
        if not isinstance(raw, dict):
            return Usage(), ()
        reader = UsageReader(self.name)
        usage = Usage(
            input_tokens=reader.count(raw.get("input_tokens"), "usage.input_tokens"),
            output_tokens=reader.count(raw.get("output_tokens"), "usage.output_tokens"),
            cache_creation_tokens=reader.count(
                raw.get("cache_creation_input_tokens"), "usage.cache_creation_input_tokens"
            ),
            cache_read_tokens=reader.count(
                raw.get("cache_read_input_tokens"), "usage.cache_read_input_tokens"
            ),
        )
        return usage, tuple(reader.warnings)

    def _structured(self, reply: _Reply, schema: dict[str, Any]) -> dict[str, Any]:
        if reply.structured is None:
            raise SchemaViolation("the answer did not call the tool with the structured result")
        return check_against_schema(reply.structured, schema)

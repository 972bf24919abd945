"""Wire shapes of `FakeModelServer` beyond plain text: tool calls and the Responses API.

Scripted `ToolCall` objects become OpenAI chat ``tool_calls``, Anthropic ``tool_use`` blocks or
Responses API ``function_call`` output items; ``POST /v1/responses`` answers a Responses API
``response`` object. Error bodies take each provider's documented shape and error types, so the
official SDKs raise their own error classes for them (tests/testing). Nothing is streamed: a
request with ``"stream": true`` is refused with a 400 saying so (an SDK would otherwise read a
JSON body as an empty event stream).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from http import HTTPStatus
from typing import Any

from agentjudge.core import ToolCall
from agentjudge.core._portable import thaw

__all__ = [
    "STREAM_REFUSED",
    "anthropic_tool_blocks",
    "error_body",
    "openai_tool_calls",
    "prompt_chars",
    "refusal",
    "responses_body",
    "tokens",
]


STREAM_REFUSED = (
    'FakeModelServer does not stream: send the request without "stream": true '
    "(the answer comes back whole)"
)
"""The message of the 400 answering a request that asks for a streamed answer."""

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""Anthropic's documented error types by status (others: ``api_error``)."""

_OPENAI_TYPES = {
    429: ("requests", "rate_limit_exceeded"),
    401: ("invalid_request_error", "invalid_api_key"),
}
"""OpenAI's error ``(type, code)`` where it is not ``invalid_request_error`` / ``server_error``."""


def error_body(status: int, message: str | None, *, anthropic: bool = False) -> bytes:
    """An error body in Anthropic's or OpenAI's shape (the status phrase when no message).

    Anthropic: ``{"type": "error", "error": {"type", "message"}}``; OpenAI:
    ``{"error": {"message", "type", "param", "code"}}``.
    """
    try:
        text = message or HTTPStatus(status).phrase
    except ValueError:
        text = "error"
    if anthropic:
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": text}}).encode()
    default = ("server_error" if status >= 500 else "invalid_request_error", None)
    kind, code = _OPENAI_TYPES.get(status, default)
    error = {"message": text, "type": kind, "param": None, "code": code}
    return json.dumps({"error": error}).encode()


def refusal(data: Any) -> str | None:
    """Why a decoded request body is answered 400 before any script runs, or None."""
    if not isinstance(data, dict):
        return "the request body is not a JSON object"
    return STREAM_REFUSED if data.get("stream") is True else None


def tokens(chars: int) -> int:
    """A token count for ``chars`` characters: a quarter, at least 1 for any text."""
    return max(1, chars // 4) if chars else 0


def prompt_chars(value: Any) -> int:
    """The characters of a prompt (a string, messages, content parts or input items)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(prompt_chars(item) for item in value)
    if isinstance(value, dict):
        for key in ("content", "text", "output"):
            if key in value:
                return prompt_chars(value[key])
    return 0


def _arguments(call: ToolCall) -> str:
    return json.dumps(thaw(call.arguments))


def openai_tool_calls(calls: Sequence[ToolCall], ids: Iterator[int]) -> list[dict[str, Any]]:
    """OpenAI chat ``tool_calls`` entries (arguments as a JSON string; ids made up if unset)."""
    return [
        {
            "id": call.id or f"call_fake_{next(ids)}",
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments(call)},
        }
        for call in calls
    ]


def anthropic_tool_blocks(calls: Sequence[ToolCall], ids: Iterator[int]) -> list[dict[str, Any]]:
    """Anthropic ``tool_use`` content blocks."""
    return [
        {
            "type": "tool_use",
            "id": call.id or f"toolu_fake_{next(ids)}",
            "name": call.name,
            "input": thaw(call.arguments),
        }
        for call in calls
    ]


def responses_body(
    request: Mapping[str, Any],
    *,
    text: str | None,
    calls: Sequence[ToolCall],
    usage: Mapping[str, int] | None,
    finish_reason: str | None,
    ids: Iterator[int],
) -> bytes:
    """A Responses API ``response`` object answering ``request``.

    The output holds a ``message`` item with the text (when there is text, or no tool call)
    and one ``function_call`` item per scripted call. A ``finish_reason`` other than
    ``"completed"`` makes the response ``incomplete`` with that reason (e.g.
    ``"max_output_tokens"``, ``"content_filter"``).
    """
    output: list[dict[str, Any]] = []
    if text is not None or not calls:
        part = {"type": "output_text", "text": text or "", "annotations": []}
        output.append(
            {
                "type": "message",
                "id": f"msg_fake_{next(ids)}",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        )
    for call in calls:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_fake_{next(ids)}",
                "call_id": call.id or f"call_fake_{next(ids)}",
                "name": call.name,
                "arguments": _arguments(call),
                "status": "completed",
            }
        )
    incomplete = finish_reason not in (None, "completed")
    input_tokens = tokens(
        prompt_chars(request.get("input")) + prompt_chars(request.get("instructions"))
    )
    output_tokens = tokens(len(text or "") + sum(len(_arguments(c)) for c in calls))
    body = {
        "id": f"resp_fake_{next(ids)}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": finish_reason} if incomplete else None,
        "instructions": request.get("instructions"),
        "model": request.get("model", "fake"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools", []),
        "usage": dict(usage)
        if usage is not None
        else {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }
    return json.dumps(body).encode()

"""Trajectories (`Message` tuples with tool calls and tool results) from SDK wire shapes.

Duck-typed: each reader accepts the SDK's objects (pydantic models, dataclasses) or their JSON
dicts, and returns the conversation as chat-format dicts for `as_trajectory`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentjudge.core import Message, TrajectoryError, as_trajectory

__all__ = [
    "anthropic_dicts",
    "get",
    "langchain_dicts",
    "openai_chat_dicts",
    "pydantic_ai_dicts",
    "responses_dicts",
    "trajectory",
]

Dicts = list[dict[str, Any]]


def get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a mapping, else ``obj.key``; ``default`` when absent."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _text(content: Any) -> str:
    """Text of a content value: a string, or parts with ``text`` (or ``refusal``) joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts = [p if isinstance(p, str) else get(p, "text", get(p, "refusal")) for p in content]
        return "\n".join(p for p in parts if isinstance(p, str))
    try:
        return json.dumps(content, default=str)
    except (TypeError, ValueError):  # pragma: no cover - default=str handles the rest
        return str(content)


def trajectory(dicts: Dicts, what: str) -> tuple[tuple[Message, ...], str | None]:
    """The messages of ``dicts``, or ``((), problem)`` when one cannot be read."""
    try:
        return as_trajectory(dicts, what) or (), None
    except TrajectoryError as exc:
        return (), str(exc)


def _call(name: Any, arguments: Any, call_id: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments if arguments is not None else {}, "id": call_id}


# -- OpenAI chat completions ------------------------------------------------------------------


def _openai_call(call: Any) -> dict[str, Any]:
    function = get(call, "function") or call  # a bare `ToolCall` has name / arguments itself
    return _call(get(function, "name"), get(function, "arguments"), get(call, "id"))


def openai_chat_dicts(messages: Sequence[Any]) -> Dicts:
    """OpenAI chat messages (dicts or SDK message objects) as chat-format dicts."""
    out: Dicts = []
    for message in messages:
        calls = get(message, "tool_calls") or ()
        item: dict[str, Any] = {
            "role": get(message, "role"),
            "content": _text(get(message, "content")),
            "tool_calls": [_openai_call(c) for c in calls],
        }
        if get(message, "tool_call_id") is not None:
            item["tool_call_id"] = get(message, "tool_call_id")
        out.append(item)
    return out


# -- Anthropic messages -----------------------------------------------------------------------


def anthropic_dicts(messages: Sequence[Any]) -> Dicts:
    """Anthropic messages as chat-format dicts.

    ``tool_use`` blocks become the message's tool calls; each ``tool_result`` block becomes a
    ``tool`` message (before the rest of its user message's text); thinking blocks are dropped.
    """
    out: Dicts = []
    for message in messages:
        role, content = get(message, "role"), get(message, "content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for block in content or ():
            kind = get(block, "type")
            if kind == "text":
                texts.append(str(get(block, "text")))
            elif kind == "tool_use":
                calls.append(_call(get(block, "name"), get(block, "input"), get(block, "id")))
            elif kind == "tool_result":
                result = _text(get(block, "content"))
                out.append(
                    {"role": "tool", "content": result, "tool_call_id": get(block, "tool_use_id")}
                )
        if texts or calls or not content:
            out.append({"role": role, "content": "".join(texts), "tool_calls": calls})
    return out


# -- OpenAI Responses API items ---------------------------------------------------------------


def responses_dicts(items: Any) -> Dicts:
    """Responses API input / output items as chat-format dicts.

    A string is one user message; ``message`` items keep their role and text; consecutive
    ``function_call`` items join the assistant message just before them (or start one);
    ``function_call_output`` items become ``tool`` messages. Other items (reasoning, built-in
    tool calls) are skipped.
    """
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out: Dicts = []
    for item in items or ():
        kind = get(item, "type")
        if kind == "function_call":
            call = _call(get(item, "name"), get(item, "arguments"), get(item, "call_id"))
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append(
                {
                    "role": "tool",
                    "content": _text(get(item, "output")),
                    "tool_call_id": get(item, "call_id"),
                }
            )
        elif kind in (None, "message") and get(item, "role") is not None:
            out.append({"role": get(item, "role"), "content": _text(get(item, "content"))})
    return out


# -- LangChain messages -----------------------------------------------------------------------

_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def langchain_dicts(messages: Sequence[Any]) -> Dicts:
    """LangChain messages (``HumanMessage``, ``AIMessage``, ``ToolMessage``...) as dicts."""
    out: Dicts = []
    for message in messages:
        kind = str(get(message, "type", ""))
        item: dict[str, Any] = {
            "role": _LANGCHAIN_ROLES.get(kind, get(message, "role") or kind),
            "content": _text(get(message, "content")),
            "tool_calls": [
                _call(get(c, "name"), get(c, "args"), get(c, "id"))
                for c in get(message, "tool_calls") or ()
            ],
        }
        if get(message, "tool_call_id") is not None:
            item["tool_call_id"] = get(message, "tool_call_id")
        out.append(item)
    return out


# -- pydantic-ai messages ---------------------------------------------------------------------


def _part_text(part: Any) -> str:
    """What a tool return / retry part tells the model (its own rendering when it has one)."""
    for method in ("model_response_str", "model_response"):
        render = getattr(part, method, None)
        if callable(render):
            text = render()
            if isinstance(text, str):
                return text
    return _text(get(part, "content"))


def _pydantic_ai_request(parts: Sequence[Any]) -> Dicts:
    out: Dicts = []
    for part in parts:
        kind = get(part, "part_kind")
        if kind == "system-prompt":
            out.append({"role": "system", "content": _text(get(part, "content"))})
        elif kind == "user-prompt":
            out.append({"role": "user", "content": _text(get(part, "content"))})
        elif kind in ("tool-return", "retry-prompt") and get(part, "tool_name") is not None:
            content = _part_text(part)
            out.append(
                {"role": "tool", "content": content, "tool_call_id": get(part, "tool_call_id")}
            )
        elif kind == "retry-prompt":
            out.append({"role": "user", "content": _part_text(part)})
    return out


def pydantic_ai_dicts(messages: Sequence[Any]) -> Dicts:
    """pydantic-ai ``ModelRequest`` / ``ModelResponse`` messages as chat-format dicts."""
    out: Dicts = []
    for message in messages:
        parts = get(message, "parts") or ()
        if get(message, "kind") != "response":
            out.extend(_pydantic_ai_request(parts))
            continue
        texts = [str(get(p, "content")) for p in parts if get(p, "part_kind") == "text"]
        calls = [
            _call(get(p, "tool_name"), get(p, "args"), get(p, "tool_call_id"))
            for p in parts
            if get(p, "part_kind") == "tool-call"
        ]
        out.append({"role": "assistant", "content": "".join(texts), "tool_calls": calls})
    return out

"""What a command-line agent printed as JSON: its messages, tool calls, final message and usage.

`AgentEvents` reads the agent's standard output line by line (bounded: lines longer than
`MAX_LINE` bytes and events beyond `MAX_EVENTS` are skipped) and understands:

* OpenAI chat-format messages (``{"role": ..., "content": ..., "tool_calls": [...]}``);
* events carrying a message in the Anthropic / Claude Code shape
  (``{"type": "assistant" | "user", "message": {"content": [...]}}`` whose parts are
  ``text``, ``tool_use`` (a tool call) and ``tool_result`` (the tool's answer));
* single tool-call events (``{"type": "tool_call" | "tool_use" | "function_call", "name",
  "arguments" | "input" | "args"}``);
* a result (``{"type": "result", "result": "..."}``, or any object with a string ``result``,
  ``final_output`` or ``final_message``): the final message;
* ``usage`` on any event (``input_tokens`` / ``prompt_tokens``, ``output_tokens`` /
  ``completion_tokens``, ``total_tokens``): the last one seen is the run's usage.

Lines that are not JSON objects are ignored; a whole output that is one (pretty-printed) JSON
object is read as a single event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agentjudge.core import Message, ToolCall

__all__ = ["MAX_EVENTS", "MAX_LINE", "AgentEvents"]

MAX_LINE = 1 << 20
"""Longest output line parsed as JSON (bytes)."""
MAX_EVENTS = 10_000
"""Most JSON events read from one run."""
_TOOL_EVENTS = ("tool_call", "tool_use", "function_call")
_RESULT_KEYS = ("result", "final_output", "final_message")


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def _arguments(event: Mapping[str, Any]) -> object:
    for key in ("arguments", "input", "args"):
        if key in event:
            return event[key]
    return {}


def _call(name: str, arguments: object, id: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": id if isinstance(id, str) else None}


class AgentEvents:
    """Collects the JSON events of one agent run (feed bytes as they arrive)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.final: str | None = None
        self.usage: dict[str, int] = {}
        self.events = 0
        self.problems: list[str] = []
        self._pending = bytearray()
        self._skipping = False
        self._raw = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of standard output."""
        if len(self._raw) <= MAX_LINE:
            self._raw += chunk[: MAX_LINE + 1 - len(self._raw)]
        self._pending += chunk
        while (end := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[:end])
            del self._pending[: end + 1]
            if not self._skipping:
                self._line(line)
            self._skipping = False
        if len(self._pending) > MAX_LINE:
            self._pending.clear()
            self._skipping = True  # the rest of this line is skipped

    def close(self) -> None:
        """The output ended: read the last line, or the whole output as one JSON document."""
        if self._pending and not self._skipping:
            self._line(bytes(self._pending))
        self._pending.clear()
        if self.events == 0 and len(self._raw) <= MAX_LINE:
            self._line(bytes(self._raw).replace(b"\n", b" "))

    def _line(self, line: bytes) -> None:
        text = line.strip()
        if not text.startswith(b"{") or self.events >= MAX_EVENTS:
            return
        try:
            event = json.loads(text)
        except ValueError:
            return
        if isinstance(event, dict):
            self.events += 1
            self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            self._usage(usage)
        kind = event.get("type")
        if "role" in event:
            self._message(event)
        elif isinstance(event.get("message"), Mapping) and kind in ("assistant", "user"):
            self._parts(str(kind), event["message"])
        elif kind in _TOOL_EVENTS and isinstance(event.get("name"), str):
            self._message(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "name": event["name"],
                            "arguments": _arguments(event),
                            "id": event.get("id"),
                        }
                    ],
                }
            )
        for key in _RESULT_KEYS:
            if isinstance(event.get(key), str):
                self.final = event[key]
                break

    def _message(self, data: Mapping[str, Any]) -> None:
        try:
            self.messages.append(Message.model_validate(dict(data)))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error.get("loc", ()))
            self.problems.append(f"event {self.events}: {where}: {error.get('msg', '')}")

    def _parts(self, role: str, message: Mapping[str, Any]) -> None:
        """An Anthropic-shaped message: text, tool_use and tool_result parts."""
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            self._usage(usage)
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            kind, text, name = part.get("type"), part.get("text"), part.get("name")
            if kind == "text" and isinstance(text, str):
                texts.append(text)
            elif kind == "tool_use" and isinstance(name, str):
                calls.append(_call(name, part.get("input", {}), part.get("id")))
            elif kind == "tool_result":
                self._message(
                    {
                        "role": "tool",
                        "content": _text_of(part.get("content")),
                        "tool_call_id": part.get("tool_use_id"),
                    }
                )
        if texts or calls:
            self._message({"role": role, "content": "\n".join(texts), "tool_calls": calls})

    def _usage(self, usage: Mapping[str, Any]) -> None:
        found: dict[str, int] = {}
        for key, names in (
            ("input_tokens", ("input_tokens", "prompt_tokens")),
            ("output_tokens", ("output_tokens", "completion_tokens")),
            ("total_tokens", ("total_tokens",)),
        ):
            for name in names:
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    found[key] = value
                    break
        if found:
            self.usage = found

    def final_message(self) -> str | None:
        """The result event's text, else the last assistant message with text."""
        if self.final is not None:
            return self.final
        for message in reversed(self.messages):
            if message.role == "assistant" and message.content.strip():
                return message.content
        return None

    def tool_calls(self) -> list[ToolCall]:
        """Every tool call, in order."""
        return [call for m in self.messages for call in m.tool_calls]

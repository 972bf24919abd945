"""Chat messages and the tool calls an assistant message carries: `Message`, `ToolCall`.

Both validate from their own JSON dumps and from the OpenAI chat format: an assistant message's
``tool_calls`` entries ``{"id", "type": "function", "function": {"name", "arguments"}}`` with
``arguments`` a JSON string, ``content`` None (read as ``""``) or a list of content parts (their
``text`` joined), and the optional keys ``name``, ``refusal``, ``annotations``, ``audio`` and
``function_call`` (dropped). LangChain-style calls ``{"name", "args", "id"}`` validate too.

A message dumps as ``{"role", "content"}`` plus ``tool_calls`` / ``tool_call_id`` only when set,
so plain messages keep the wire format they always had.

`as_trajectory` reads a message sequence from a value (a list of messages, a mapping or object
with ``messages``), raising `TrajectoryError` that names the index of a message it cannot read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)

from agentjudge.core._portable import freeze_portable, thaw

__all__ = ["Message", "ToolArguments", "ToolCall", "TrajectoryError", "as_trajectory"]

_OPENAI_EXTRAS = ("name", "refusal", "annotations", "audio", "function_call")
"""Keys of an OpenAI chat message that `Message` does not model (dropped on validation)."""
_MISSING: Any = object()


def _parse_arguments(value: object) -> object:
    """A JSON-string ``arguments`` (the OpenAI wire form) decoded; anything else as given."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return {}
    try:
        return json.loads(value)
    except ValueError as exc:
        raise ValueError(f"arguments are not valid JSON ({exc})") from None


def _freeze_arguments(value: object) -> Mapping[str, Any]:
    value = _parse_arguments(value)
    if not isinstance(value, Mapping):
        kind = "null" if value is None else type(value).__name__
        raise ValueError(f"arguments must be a JSON object, got {kind}")
    frozen = freeze_portable(value, "arguments", nulls=True)
    assert isinstance(frozen, Mapping)
    return frozen


ToolArguments = Annotated[
    Mapping[str, Any],
    PlainValidator(_freeze_arguments),
    PlainSerializer(thaw),
    WithJsonSchema({"type": "object", "additionalProperties": True}),
]
"""A tool call's arguments: a read-only JSON object (a JSON string is decoded; null allowed)."""


class ToolCall(BaseModel):
    """One call of a tool an assistant message requests.

    ``ToolCall(name, arguments={}, id=None)``; ``arguments`` is stored as a read-only copy
    (nested lists become tuples) and may be given as a JSON string.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The tool's name (non-blank)."""
    arguments: ToolArguments = Field(default_factory=lambda: MappingProxyType({}))
    """The arguments, a JSON object."""
    id: str | None = None
    """The call's id, which the tool's result message quotes as ``tool_call_id``."""

    def __init__(self, name: Any = _MISSING, arguments: Any = _MISSING, /, **data: Any) -> None:
        if name is not _MISSING:
            data["name"] = name
        if arguments is not _MISSING:
            data["arguments"] = arguments
        super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _from_wire(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        if "function" in data:  # OpenAI: {"id", "type", "function": {"name", "arguments"}}
            function = data["function"]
            if not isinstance(function, Mapping):
                raise ValueError("function must be an object with name and arguments")
            fields = {"name": function.get("name"), "id": data.get("id")}
            if "arguments" in function:
                fields["arguments"] = function["arguments"]
            return fields
        if "args" in data or data.get("type") == "tool_call":  # LangChain's ToolCall dict
            fields = {k: v for k, v in data.items() if k not in ("args", "type")}
            if "args" in data:
                fields["arguments"] = data["args"]
            return fields
        return data

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("tool call name must be non-blank")
        return v

    def __str__(self) -> str:
        return f"{self.name}({json.dumps(thaw(self.arguments), ensure_ascii=False)})"


def _content_text(content: object) -> object:
    """OpenAI content parts (``[{"type": "text", "text": ...}]``) as one text; None as ""."""
    if content is None:
        return ""
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return content


class Message(BaseModel):
    """One chat message of the conversation being judged.

    ``Message(role=..., content="", tool_calls=(), tool_call_id=None)``, by keyword (a
    positional form would slow every construction). An assistant message may request tool
    calls; a ``tool`` message answers the call named by ``tool_call_id``. Validates from OpenAI
    chat-format dicts too (see the module docs).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str
    """Speaker: ``system``, ``user``, ``assistant``, ``tool``..."""
    content: str = ""
    """Text of the message."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tool calls an assistant message requests, in order."""
    tool_call_id: str | None = None
    """On a tool result: the id of the call it answers."""

    @model_validator(mode="before")
    @classmethod
    def _from_chat_format(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if len(data) == 2 and type(data.get("content")) is str:
            return data  # the common {role, content}: nothing to convert
        data = {k: v for k, v in data.items() if k not in _OPENAI_EXTRAS}
        if "content" in data:
            data["content"] = _content_text(data["content"])
        if data.get("tool_calls", ()) is None:
            data["tool_calls"] = ()
        return data

    @field_validator("role")
    @classmethod
    def _role_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("role must be non-blank")
        return v

    @model_serializer(mode="wrap")
    def _omit_unset_tool_fields(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if not self.tool_calls:
            dumped.pop("tool_calls", None)
        if self.tool_call_id is None:
            dumped.pop("tool_call_id", None)
        return dumped


class TrajectoryError(ValueError):
    """A trajectory that cannot be read (the message names the offending message's index)."""


def _looks_like_message(item: object) -> bool:
    if type(item) is dict or isinstance(item, Mapping):
        return "role" in item
    return isinstance(item, Message) or isinstance(getattr(item, "role", None), str)


_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
"""Types that never hold a trajectory (checked first: the harness asks for every case)."""


def _messages_in(value: object) -> Sequence[Any] | None:
    """The message sequence ``value`` holds, or None when it holds none."""
    kind = type(value)
    if kind in _SCALARS:
        return None
    if kind is dict or isinstance(value, Mapping):
        inner = value.get("messages")  # type: ignore[attr-defined]
        return inner if isinstance(inner, list | tuple) else None
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        items: Sequence[Any] = value  # type: ignore[assignment]
        return items if not items or _looks_like_message(items[0]) else None
    inner = getattr(value, "messages", None)  # e.g. a TaskOutput with messages
    if isinstance(inner, list | tuple) and (not inner or _looks_like_message(inner[0])):
        return inner
    return None


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ()))
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _as_message(item: object, index: int, what: str) -> Message:
    if isinstance(item, Message):
        return item
    if not isinstance(item, Mapping):
        fields = ("role", "content", "tool_calls", "tool_call_id")
        item = {f: getattr(item, f) for f in fields if getattr(item, f, None) is not None}
    try:
        return Message.model_validate(dict(item))
    except ValidationError as exc:
        raise TrajectoryError(f"{what} messages[{index}]: {_first_problem(exc)}") from None


def as_trajectory(value: object, what: str = "trajectory") -> tuple[Message, ...] | None:
    """The messages ``value`` holds (a sequence of messages or a mapping with ``"messages"``).

    Returns:
        The messages, or None when ``value`` is not a trajectory at all.

    Raises:
        TrajectoryError: a message cannot be read (naming ``what`` and its index).
    """
    items = _messages_in(value)
    if items is None:
        return None
    return tuple(_as_message(item, i, what) for i, item in enumerate(items))

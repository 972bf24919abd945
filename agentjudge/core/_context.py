"""What a judge looks at: `Context` and `ExecutionStatus` (messages: ``_messages``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
)

from agentjudge._compat import build_model
from agentjudge.core._fast import check_fast
from agentjudge.core._messages import Message

__all__ = ["Context", "ExecutionStatus", "Message"]


class ExecutionStatus(StrEnum):
    """How the system under test finished."""

    SUCCESS = "success"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    REFUSED = "refused"
    UNKNOWN = "unknown"


def _readonly_mapping(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ValueError(f"metadata key {key!r} is not a string")
    return MappingProxyType(dict(value))


ReadOnlyMapping = Annotated[
    Mapping[str, Any],
    PlainValidator(_readonly_mapping),
    PlainSerializer(lambda m: dict(m)),
    WithJsonSchema({"type": "object", "additionalProperties": True}),
]


class Context(BaseModel):
    """The single argument every judge receives."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    input: Any = None
    """The prompt / question / goal given to the system under test."""
    output: Any = None
    """What the system under test produced."""
    expected: Any = None
    """The reference answer, when there is one."""
    messages: tuple[Message, ...] = ()
    """The conversation, when the output is a chat turn."""
    workspace: Path | None = None
    """Folder the system under test worked in (file and command judges resolve paths here)."""
    status: ExecutionStatus = ExecutionStatus.UNKNOWN
    """How the system under test finished."""
    started_at: datetime | None = None
    """When the system under test started."""
    duration: timedelta | None = None
    """How long the system under test ran."""
    error: str | None = None
    """The error the system under test reported, if any."""
    metadata: ReadOnlyMapping = Field(default_factory=lambda: MappingProxyType({}))
    """Anything else judges need (read-only copy of what was given)."""

    @classmethod
    def fast(
        cls,
        *,
        input: Any,
        output: Any,
        expected: Any,
        messages: tuple[Message, ...],
        workspace: Path | None,
        status: ExecutionStatus,
        started_at: datetime | None,
        duration: timedelta | None,
        error: str | None,
        metadata: Mapping[str, Any],
    ) -> Context:
        """Build from already-valid values without validation (the engine's hot path).

        Every field is a required keyword; the values must be what validation would accept
        unchanged (``metadata`` a read-only mapping; see `agentjudge.core._fast`).
        """
        return build_model(
            cls,
            {
                "input": input,
                "output": output,
                "expected": expected,
                "messages": messages,
                "workspace": workspace,
                "status": status,
                "started_at": started_at,
                "duration": duration,
                "error": error,
                "metadata": metadata,
            },
            _CONTEXT_FIELDS,
        )


_CONTEXT_FIELDS = set(Context.model_fields)
check_fast(Context)

"""Layer 1: the values (pydantic and the standard library only).

Each name loads its module on first use (PEP 562), so a program that reads results files
(``agentjudge report``, ``compare``) imports no case or result model it does not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentjudge._lazy import lazy_attribute

if TYPE_CHECKING:
    from agentjudge.core._context import Context, ExecutionStatus
    from agentjudge.core._judgment import (
        AGGREGATION_KEY,
        Check,
        Judgment,
        PortableMetadata,
        Status,
        judgment_problem,
    )
    from agentjudge.core._messages import (
        Message,
        ToolArguments,
        ToolCall,
        TrajectoryError,
        as_trajectory,
    )
    from agentjudge.core._portable import freeze_metadata, freeze_portable, thaw
    from agentjudge.core._results import (
        CaseResult,
        JudgeResult,
        TierAttempt,
        TierPolicy,
        Verdict,
    )

_EXPORTS: dict[str, tuple[str, ...]] = {
    "agentjudge.core._context": ("Context", "ExecutionStatus"),
    "agentjudge.core._judgment": (
        "AGGREGATION_KEY",
        "Check",
        "Judgment",
        "PortableMetadata",
        "Status",
        "judgment_problem",
    ),
    "agentjudge.core._messages": (
        "Message",
        "ToolArguments",
        "ToolCall",
        "TrajectoryError",
        "as_trajectory",
    ),
    "agentjudge.core._portable": ("freeze_metadata", "freeze_portable", "thaw"),
    "agentjudge.core._results": (
        "CaseResult",
        "JudgeResult",
        "TierAttempt",
        "TierPolicy",
        "Verdict",
    ),
}
_LAZY: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AGGREGATION_KEY",
    "CaseResult",
    "Check",
    "Context",
    "ExecutionStatus",
    "JudgeResult",
    "Judgment",
    "Message",
    "PortableMetadata",
    "Status",
    "TierAttempt",
    "TierPolicy",
    "ToolArguments",
    "ToolCall",
    "TrajectoryError",
    "Verdict",
    "as_trajectory",
    "freeze_metadata",
    "freeze_portable",
    "judgment_problem",
    "thaw",
]

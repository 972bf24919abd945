"""Layer 1: the values (pydantic and the standard library only)."""

from __future__ import annotations

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
from agentjudge.core._results import CaseResult, JudgeResult, TierAttempt, TierPolicy, Verdict

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

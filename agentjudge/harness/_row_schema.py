"""The shape of a ``results.jsonl`` row, as a model for its JSON schema (``schema --results``).

Rows are written by `agentjudge.harness._results.encode_case` (never through this model); the
model documents them and lets tools validate them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.core import JudgeResult, Judgment

__all__ = ["ResultRow", "TierRecord", "results_row_schema"]


class TierRecord(BaseModel):
    """One cascade tier a case entered (its members' results are in the row's ``results``)."""

    name: str
    policy: str
    status: str | None
    """The tier's judgment status; None when the tier failed."""
    label: str | None = None
    confidence: float | None = None
    stopped: bool = False
    skipped: list[str] = Field(default_factory=list)
    failure: str | None = None


class ResultRow(BaseModel):
    """One finished case in ``results.jsonl``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    input: Any
    output: Any
    """What the task returned; null for an error row."""
    expected: Any
    metadata: dict[str, Any]
    extra: dict[str, Any] | None = None
    """The dataset row's other fields, when it had some."""
    human: str | bool | int | float | None = None
    """The person's label, when the case carries one."""
    results: list[JudgeResult]
    """One per judge that ran (a judge that raised has ``error_type`` and ``traceback``)."""
    verdict: Judgment | None
    """The aggregate judgment; null for an error row."""
    tiers: list[TierRecord] | None = None
    """Cascades only: the tiers entered."""
    duration_s: float
    """The task's wall time."""
    error: str | None
    """``"TypeName: message"`` when the task raised or timed out."""
    traceback: list[str] | None = None
    """Where the task raised: the last frames, ``"path:line in function"``, the user's own
    frames prefixed with ``"> "`` (`agentjudge.judging.short_traceback`)."""
    warnings: list[str] | None = None
    """Fields rewritten because UTF-8 could not hold them."""


def results_row_schema() -> dict[str, Any]:
    """The JSON schema of a results row."""
    return ResultRow.model_json_schema(mode="serialization")

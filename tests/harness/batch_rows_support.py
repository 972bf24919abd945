"""Reading a run's rows to compare a ``--batch`` run with an online one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentjudge.harness import iter_rows

__all__ = ["comparable", "rows_by_id"]

_DIFFER = frozenset({"duration_s", "queued_s", "batch"})
"""What may differ between the two runs' rows: timings and the ``batch`` marker."""


def comparable(value: Any) -> Any:
    """A row (or any part of one) without its timings and the ``batch`` marker of batch answers."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in _DIFFER}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def rows_by_id(folder: Path) -> dict[str, dict[str, Any]]:
    """The rows of ``folder/results.jsonl`` by case id (empty when it has none)."""
    return {row["id"]: row for row in iter_rows(folder / "results.jsonl")}

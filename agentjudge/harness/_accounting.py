"""Accounting of a run: every case handed out must come back as a row (`CasesLost`)."""

from __future__ import annotations

from pathlib import Path

from agentjudge.exceptions import AgentJudgeError
from agentjudge.harness._dataset import Dataset
from agentjudge.harness._results import iter_rows
from agentjudge.harness._text import plural

__all__ = ["MISSING_SHOWN", "CasesLost", "lost_message", "missing_ids"]

MISSING_SHOWN = 20
"""Missing case ids named in a `CasesLost` message (the rest are counted)."""


class CasesLost(AgentJudgeError):
    """Fewer rows were written than cases were handed out: the run cannot be trusted.

    A safety net for faults that make a case vanish instead of becoming an error row (e.g. a
    ``CancelledError`` nobody asked for ending a worker). ``missing`` holds every missing id;
    the message names the first `MISSING_SHOWN`.
    """

    def __init__(self, message: str, missing: list[str]) -> None:
        super().__init__(message)
        self.missing = missing


def lost_message(cases_in: int, rows_out: int, missing: list[str], results: Path) -> str:
    """The message of `CasesLost`: counts, then the first missing ids."""
    shown = ", ".join(missing[:MISSING_SHOWN])
    more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
    ids = f"; missing: {shown}{more}" if missing else ""
    return (
        f"{plural(cases_in, 'case')} handed out, {plural(rows_out, 'row')} written to {results}"
        f"{ids}; the run cannot be trusted (run again with --resume to run the missing cases)"
    )


def missing_ids(results: Path, dataset: Dataset, limit: int | None) -> list[str]:
    """Ids of the cases in the run's part of ``dataset`` with no row in ``results``."""
    written = {row["id"] for row in iter_rows(results)}
    missing = []
    for seen, case in enumerate(dataset.iter_cases()):
        if limit is not None and seen >= limit:
            break
        if case.id not in written:
            missing.append(case.id)
    return missing

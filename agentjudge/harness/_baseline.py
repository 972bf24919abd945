"""Comparing a run with a baseline run: mean regressions and cases that flipped."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentjudge.harness._results import iter_rows
from agentjudge.harness._summary import (
    BaselineJudge,
    BaselineOutcome,
    FlippedCase,
    JudgeSummary,
    RunSummary,
)

__all__ = ["MAX_LISTED_FLIPS", "case_statuses", "check_baseline", "find_flips", "load_summary"]

MAX_LISTED_FLIPS = 1000
"""Flipped cases listed in a summary (all are counted)."""
_EPSILON = 1e-12
TASK_ERROR = "task_error"
"""The status a case whose task errored is given in comparisons."""


def summary_path(path: Path) -> Path:
    """``path`` itself, or ``path/summary.json`` when it is a run folder."""
    return path / "summary.json" if path.is_dir() else path


def load_summary(path: str | Path) -> RunSummary:
    """Read a ``summary.json`` (or a run folder holding one).

    Raises:
        ValueError: missing, not JSON or not a summary (the file named).
    """
    file = summary_path(Path(path))
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"summary not found: {file}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        return RunSummary.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ValueError(f"{file}: not an agentjudge summary ({loc}: {first['msg']})") from None


def row_status(row: Mapping[str, Any]) -> str:
    """A case's verdict status, or ``"task_error"``."""
    if row.get("error") is not None:
        return TASK_ERROR
    verdict = row.get("verdict")
    return str(verdict["status"]) if isinstance(verdict, Mapping) else "none"


def case_statuses(results: Path) -> dict[str, str]:
    """Map case id -> verdict status for every row of a results file."""
    return {row["id"]: row_status(row) for row in iter_rows(results)}


def find_flips(
    before: Mapping[str, str], after_rows: Iterable[Mapping[str, Any]]
) -> list[FlippedCase]:
    """Cases whose verdict was PASS in ``before`` and is anything else now, sorted by id."""
    flips = []
    for row in after_rows:
        prior = before.get(row["id"])
        if prior == "pass":
            now = row_status(row)
            if now != "pass":
                flips.append(FlippedCase(id=row["id"], before=prior, after=now))
    flips.sort(key=lambda f: f.id)
    return flips


def compare_means(
    baseline: Mapping[str, JudgeSummary],
    current: Mapping[str, JudgeSummary],
    max_regression: float | None,
) -> dict[str, BaselineJudge]:
    """Per baseline judge: means, delta and whether it regressed.

    A judge whose mean became undefined regressed; a judge the current run no longer has is
    reported (``missing``) but does not fail.
    """
    out: dict[str, BaselineJudge] = {}
    for name, before in baseline.items():
        after = current.get(name)
        if after is None:
            out[name] = BaselineJudge(
                baseline_mean=before.mean, mean=None, delta=None, regressed=False, missing=True
            )
            continue
        delta = None
        if before.mean is not None and after.mean is not None:
            delta = after.mean - before.mean
        regressed = max_regression is not None and (
            (before.mean is not None and after.mean is None)
            or (delta is not None and -delta > max_regression + _EPSILON)
        )
        out[name] = BaselineJudge(
            baseline_mean=before.mean, mean=after.mean, delta=delta, regressed=regressed
        )
    return out


def check_baseline(
    baseline_file: Path,
    baseline: RunSummary,
    judges: Mapping[str, JudgeSummary],
    current_results: Path,
    *,
    max_regression: float | None,
    max_flips: int | None,
) -> BaselineOutcome:
    """The regression check of a run against a baseline.

    Means: a judge's mean dropping by more than ``max_regression`` fails. Flips: cases that
    passed in the baseline and no longer pass are listed (read from the baseline's
    ``results.jsonl`` next to its summary); they fail only beyond ``max_flips``.
    """
    means = compare_means(baseline.judges, judges, max_regression)
    baseline_results = summary_path(baseline_file).parent / "results.jsonl"
    flips: list[FlippedCase] = []
    checked = baseline_results.is_file()
    if checked:
        flips = find_flips(case_statuses(baseline_results), iter_rows(current_results))
    passed = not any(j.regressed for j in means.values())
    if max_flips is not None and len(flips) > max_flips:
        passed = False
    if max_flips is not None and not checked:
        passed = False
    return BaselineOutcome(
        summary=str(summary_path(baseline_file)),
        max_regression=max_regression,
        max_flips=max_flips,
        judges=means,
        flipped=flips[:MAX_LISTED_FLIPS],
        flipped_count=len(flips),
        flips_checked=checked,
        passed=passed,
    )

"""Comparing a run with a baseline run: mean regressions and cases that flipped (per judge too)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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

__all__ = [
    "MAX_LISTED_FLIPS",
    "MAX_REASONED_FLIPS",
    "CaseStatus",
    "Comparison",
    "add_reasons",
    "case_statuses",
    "check_baseline",
    "compare_rows",
    "load_summary",
]

MAX_LISTED_FLIPS = 1000
"""Flipped cases listed in a summary (all are counted)."""
MAX_REASONED_FLIPS = 50
"""Flipped cases of each list (the verdict's, each judge's) recorded with their reasons."""
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


def judge_statuses(row: Mapping[str, Any]) -> dict[str, str]:
    """Each judge's status in a results row (judges that were not sampled or not run: absent)."""
    out: dict[str, str] = {}
    for result in row.get("results") or ():
        judgment = result.get("judgment")
        if isinstance(judgment, Mapping):
            out[result["name"]] = sys.intern(str(judgment["status"]))
    return out


@dataclass(frozen=True, slots=True)
class CaseStatus:
    """One case of a results file: its verdict status and each judge's."""

    verdict: str
    judges: Mapping[str, str]


def case_statuses(results: Path) -> dict[str, CaseStatus]:
    """Map case id -> `CaseStatus` for every row of a results file."""
    return {
        row["id"]: CaseStatus(row_status(row), judge_statuses(row)) for row in iter_rows(results)
    }


@dataclass
class Comparison:
    """How the cases of a run changed against an earlier one (`compare_rows`)."""

    newly_failing: list[FlippedCase] = field(default_factory=list)
    """Verdicts that were PASS before and are not now."""
    newly_passing: list[FlippedCase] = field(default_factory=list)
    """Verdicts that were not PASS before and are now."""
    changed: list[FlippedCase] = field(default_factory=list)
    """Other verdict changes (e.g. FAIL -> ERROR)."""
    only_after: list[str] = field(default_factory=list)
    """Ids only the later run has."""
    only_before: int = 0
    """How many ids only the earlier run has."""
    judges: dict[str, list[FlippedCase]] = field(default_factory=dict)
    """Per judge, the cases whose status from it went from PASS to anything else or back
    (cases the judge judged in both runs only)."""

    def judge_counts(self, name: str) -> tuple[int, int]:
        """``(newly_failing, newly_passing)`` of one judge."""
        flips = self.judges.get(name, [])
        down = sum(1 for f in flips if f.before == "pass")
        return down, len(flips) - down


def _judge_flips(
    comparison: Comparison, case_id: str, before: Mapping[str, str], after: Mapping[str, str]
) -> None:
    for name, now in after.items():
        prior = before.get(name)
        if prior is not None and (prior == "pass") != (now == "pass"):
            flip = FlippedCase(id=case_id, before=prior, after=now)
            comparison.judges.setdefault(name, []).append(flip)


def compare_rows(
    before: dict[str, CaseStatus], after_rows: Iterable[Mapping[str, Any]]
) -> Comparison:
    """Compare a results file's rows with the statuses of an earlier run (``before`` is consumed).

    Every list is sorted by id.
    """
    out = Comparison()
    for row in after_rows:
        prior = before.pop(row["id"], None)
        if prior is None:
            out.only_after.append(row["id"])
            continue
        now = row_status(row)
        if prior.verdict != now:
            flip = FlippedCase(id=row["id"], before=prior.verdict, after=now)
            if prior.verdict == "pass":
                out.newly_failing.append(flip)
            elif now == "pass":
                out.newly_passing.append(flip)
            else:
                out.changed.append(flip)
        _judge_flips(out, row["id"], prior.judges, judge_statuses(row))
    out.only_before = len(before)
    for flips in (out.newly_failing, out.newly_passing, out.changed, *out.judges.values()):
        flips.sort(key=lambda f: f.id)
    out.only_after.sort()
    return out


def add_reasons(
    comparison: Comparison, before: Path, after: Path, limit: int | None = MAX_REASONED_FLIPS
) -> None:
    """Give the first ``limit`` flips of every list their reasons before and after.

    Reads both results files once more, keeping only the reasons of those cases.
    """
    # The failing-cases module (pydantic models) loads for a comparison, not with every run.
    from agentjudge.harness._cases import VERDICT, case_reasons

    lists = [comparison.newly_failing, comparison.newly_passing, comparison.changed]
    named: list[tuple[str, list[FlippedCase]]] = [(VERDICT, flips) for flips in lists]
    named += list(comparison.judges.items())
    ids = {f.id for _, flips in named for f in (flips if limit is None else flips[:limit])}
    if not ids:
        return
    then, now = case_reasons(iter_rows(before), ids), case_reasons(iter_rows(after), ids)
    for who, flips in named:
        for i, flip in enumerate(flips if limit is None else flips[:limit]):
            flips[i] = flip.model_copy(
                update={
                    "before_reason": then.get(flip.id, {}).get(who),
                    "after_reason": now.get(flip.id, {}).get(who),
                }
            )


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


def _with_judge_flips(
    means: dict[str, BaselineJudge], comparison: Comparison
) -> dict[str, BaselineJudge]:
    """``means`` with each judge's flips filled in (judges missing on either side: None)."""
    out = {}
    for name, judge in means.items():
        if judge.missing:
            out[name] = judge
            continue
        down, up = comparison.judge_counts(name)
        out[name] = judge.model_copy(
            update={
                "flips": down + up,
                "newly_failing": down,
                "newly_passing": up,
                "flipped_cases": comparison.judges.get(name, [])[:MAX_LISTED_FLIPS],
            }
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
    ``results.jsonl`` next to its summary); they fail only beyond ``max_flips``. Each judge's
    flips (its own PASS <-> not PASS changes, whatever the verdict did) are counted and listed
    too; gates such as ``correctness.flips<=2`` limit them.
    """
    means = compare_means(baseline.judges, judges, max_regression)
    baseline_results = summary_path(baseline_file).parent / "results.jsonl"
    checked = baseline_results.is_file()
    comparison = Comparison()
    if checked:
        comparison = compare_rows(case_statuses(baseline_results), iter_rows(current_results))
        add_reasons(comparison, baseline_results, current_results)
        means = _with_judge_flips(means, comparison)
    flips = comparison.newly_failing
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
        fixed_count=len(comparison.newly_passing),
        flips_checked=checked,
        passed=passed,
    )

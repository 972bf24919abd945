"""The cases that need a person's attention, most severe first (`failing_cases`).

Severity, from the most severe:

1. ``task_error``: the task raised or timed out (the case was never judged);
2. ``judge_error``: some judge (or the verdict) is ERROR;
3. ``fail``: the verdict is FAIL; then cases whose verdict is not FAIL but some judge's is;
4. ``abstain``: the verdict is ABSTAIN; then cases where only some judge abstained.

Ties: more judges with that status first (a case four judges fail before one a single judge
fails), then by case id. The order depends on the rows only, never on the order the run
finished them. Judges that were not sampled are left out.

One pass over the rows, memory bounded by ``limit``: only the selected rows are kept (plus, per
judge, at most `MAX_REASONS` distinct error reasons). The terminal report, ``report --json``
and ``run`` read this; the HTML report can (one order everywhere).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentjudge.harness._cli_args import DEFAULT_CASES
from agentjudge.harness._tool_diff import tool_diff

__all__ = [
    "DEFAULT_CASES",
    "KINDS",
    "VERDICT",
    "CaseJudge",
    "ErrorReason",
    "FailingCase",
    "FailingCases",
    "case_reasons",
    "case_severity",
    "failing_cases",
    "judge_line",
    "row_tags",
]

MAX_REASONS = 1000
"""Distinct error reasons counted per judge; later new reasons count as `OTHER_REASONS`."""
OTHER_REASONS = "(other reasons)"
REASON_CHARS = 300
"""Error reasons are compared (and shown) up to this many characters."""
TOP_REASONS = 3
"""The most common error reasons kept per judge (and for the task)."""

Kind = Literal["task_error", "judge_error", "fail", "abstain"]
VERDICT = "(verdict)"
"""The key of the verdict's reason in `case_reasons`."""
KINDS: tuple[Kind, ...] = ("task_error", "judge_error", "fail", "abstain")
_RANK_KIND: tuple[Kind, ...] = ("task_error", "judge_error", "fail", "fail", "abstain", "abstain")


class CaseJudge(BaseModel):
    """One judge's judgment on a listed case."""

    name: str
    status: str | None
    """``pass``, ``fail``, ``abstain``, ``error``; None when the judge was not sampled."""
    score: float | None = None
    reasoning: str = ""
    failed_checks: list[dict[str, Any]] = Field(default_factory=list)
    """The judgment's checks that did not pass (``name``, ``message``)."""
    tier: str | None = None
    error_type: str | None = None
    traceback: list[str] | None = None
    """Where the judge raised (see `agentjudge.judging.short_traceback`)."""
    tool_call_diff: dict[str, Any] | None = None
    """A trajectory judge's expected vs actual tool calls (see `agentjudge.harness._tool_diff`)."""


class FailingCase(BaseModel):
    """A case that needs attention: why, and what each judge said."""

    id: str
    kind: Kind
    verdict: str | None
    """The verdict's status; None for a task error."""
    error: str | None = None
    """The task's error (``"TypeName: message"``)."""
    traceback: list[str] | None = None
    """Where the task raised."""
    tags: list[str] = Field(default_factory=list)
    judges: list[CaseJudge] = Field(default_factory=list)


class ErrorReason(BaseModel):
    """One error reason and how many judgments (or cases) gave it."""

    reason: str
    count: int


class FailingCases(BaseModel):
    """What `failing_cases` found in a results file."""

    total: int = 0
    """Cases that need attention (all of them, listed or not)."""
    counts: dict[str, int] = Field(default_factory=lambda: {str(kind): 0 for kind in KINDS})
    """Those cases by kind."""
    cases: list[FailingCase] = Field(default_factory=list)
    """The most severe ones, most severe first (at most the limit)."""
    task_errors: list[ErrorReason] = Field(default_factory=list)
    """The most common task errors."""
    judge_errors: dict[str, list[ErrorReason]] = Field(default_factory=dict)
    """Per judge that errored, its most common error reasons."""
    judge_error_counts: dict[str, int] = Field(default_factory=dict)
    """Per judge that errored, how many of its judgments did."""


def row_tags(row: Mapping[str, Any]) -> list[str]:
    """Tags of a results row: ``metadata.tags`` / ``metadata.tag``, else extra ``tags``/``tag``."""
    found: list[str] = []
    for source in (row.get("metadata"), row.get("extra")):
        if not isinstance(source, Mapping):
            continue
        for key in ("tags", "tag"):
            value = source.get(key)
            if isinstance(value, str) and value.strip():
                found.append(value)
            elif isinstance(value, list):
                found.extend(v for v in value if isinstance(v, str) and v.strip())
    return list(dict.fromkeys(found))


def _statuses(row: Mapping[str, Any]) -> list[str]:
    """The status of every sampled judge of a row."""
    out = []
    for result in row.get("results") or ():
        judgment = result.get("judgment") if isinstance(result, Mapping) else None
        if isinstance(judgment, Mapping):
            out.append(str(judgment.get("status")))
    return out


def case_severity(row: Mapping[str, Any]) -> tuple[int, int, str] | None:
    """The sort key of a results row (smaller is more severe); None when it needs no attention.

    ``(rank, -judges, id)``: rank 0 task error, 1 a judge or verdict ERROR, 2 verdict FAIL,
    3 some judge FAIL, 4 verdict ABSTAIN, 5 some judge ABSTAIN; ``judges`` is how many judges
    have that status. ``_RANK_KIND[rank]`` is the case's kind.
    """
    case_id = str(row.get("id"))
    if row.get("error") is not None:
        return 0, 0, case_id
    verdict = row.get("verdict")
    decided = str(verdict.get("status")) if isinstance(verdict, Mapping) else None
    statuses = _statuses(row)
    for status, rank in (("error", 1), ("fail", 2), ("abstain", 4)):
        count = statuses.count(status)
        if decided == status:
            return rank, -count, case_id
        if count:
            return rank + (status != "error"), -count, case_id
    return None


def judge_line(result: Mapping[str, Any]) -> CaseJudge:
    """What one judge said on a case, from its entry in the row's ``results``."""
    judgment = result.get("judgment")
    if not isinstance(judgment, Mapping):
        return CaseJudge(name=str(result.get("name")), status=None, tier=result.get("tier"))
    checks = judgment.get("checks") or ()
    failed = [
        {"name": c.get("name"), "message": c.get("message", "")}
        for c in checks
        if isinstance(c, Mapping) and not c.get("passed", True)
    ]
    score = judgment.get("score")
    return CaseJudge(
        name=str(result.get("name")),
        status=str(judgment.get("status")),
        score=score if isinstance(score, int | float) and not isinstance(score, bool) else None,
        reasoning=str(judgment.get("reasoning") or ""),
        failed_checks=failed,
        tier=result.get("tier"),
        error_type=result.get("error_type"),
        traceback=_frames(result.get("traceback")),
        tool_call_diff=tool_diff(judgment.get("metadata")),
    )


def _frames(value: Any) -> list[str] | None:
    return [str(v) for v in value] if isinstance(value, list) else None


def _case(rank: int, row: Mapping[str, Any]) -> FailingCase:
    verdict = row.get("verdict")
    error = row.get("error")
    return FailingCase(
        id=str(row.get("id")),
        kind=_RANK_KIND[rank],
        verdict=str(verdict.get("status")) if isinstance(verdict, Mapping) else None,
        error=None if error is None else str(error),
        traceback=_frames(row.get("traceback")),
        tags=row_tags(row),
        judges=[judge_line(r) for r in row.get("results") or () if isinstance(r, Mapping)],
    )


class _Reasons:
    """Error reasons of the task and of each judge, counted (bounded distinct reasons)."""

    def __init__(self) -> None:
        self.task: Counter[str] = Counter()
        self.judges: dict[str, Counter[str]] = {}

    @staticmethod
    def _add(counter: Counter[str], reason: str) -> None:
        reason = _reason(reason) or "(no reason given)"
        if reason in counter or len(counter) < MAX_REASONS:
            counter[reason] += 1
        else:
            counter[OTHER_REASONS] += 1

    def add_row(self, row: Mapping[str, Any]) -> None:
        error = row.get("error")
        if error is not None:
            self._add(self.task, str(error))
            return
        for result in row.get("results") or ():
            judgment = result.get("judgment") if isinstance(result, Mapping) else None
            if isinstance(judgment, Mapping) and judgment.get("status") == "error":
                counter = self.judges.setdefault(str(result.get("name")), Counter())
                self._add(counter, str(judgment.get("reasoning") or ""))

    def fill(self, out: FailingCases) -> None:
        def top(counter: Counter[str]) -> list[ErrorReason]:
            return [ErrorReason(reason=r, count=n) for r, n in counter.most_common(TOP_REASONS)]

        out.task_errors = top(self.task)
        out.judge_errors = {name: top(c) for name, c in self.judges.items()}
        out.judge_error_counts = {name: c.total() for name, c in self.judges.items()}


def failing_cases(
    rows: Iterable[Mapping[str, Any]], limit: int | None = DEFAULT_CASES
) -> FailingCases:
    """The cases of a results file that need attention, most severe first (module docstring).

    Args:
        rows: The results rows (e.g. `agentjudge.harness._results.iter_rows`).
        limit: How many cases to list (all are counted); None lists every one, 0 none.
    """
    out = FailingCases()
    reasons = _Reasons()
    counts = out.counts

    def flagged() -> Iterable[tuple[tuple[int, int, str], int, Mapping[str, Any]]]:
        for index, row in enumerate(rows):
            reasons.add_row(row)
            key = case_severity(row)
            if key is not None:
                counts[_RANK_KIND[key[0]]] += 1
                yield key, index, row

    found = flagged()
    if limit is None:
        chosen = sorted(found, key=lambda item: item[:2])
    elif limit <= 0:
        chosen = []
        for _ in found:  # counted, none kept
            pass
    else:
        chosen = heapq.nsmallest(limit, found, key=lambda item: item[:2])
    out.total = sum(counts.values())
    out.cases = [_case(key[0], row) for key, _, row in chosen]
    reasons.fill(out)
    return out


def _reason(text: Any) -> str:
    return " ".join(str(text or "").split())[:REASON_CHARS]


def row_reasons(row: Mapping[str, Any]) -> dict[str, str]:
    """Why each judge (and, under `VERDICT`, the verdict) said what it said on a row.

    A judge's reasoning; the verdict's reasoning, or the task's error for an error row.
    Each cut to `REASON_CHARS` characters.
    """
    out: dict[str, str] = {}
    if row.get("error") is not None:
        out[VERDICT] = _reason(row["error"])
    elif isinstance(verdict := row.get("verdict"), Mapping):
        out[VERDICT] = _reason(verdict.get("reasoning"))
    for result in row.get("results") or ():
        judgment = result.get("judgment") if isinstance(result, Mapping) else None
        if isinstance(judgment, Mapping):
            out[str(result.get("name"))] = _reason(judgment.get("reasoning"))
    return out


def case_reasons(
    rows: Iterable[Mapping[str, Any]], ids: Collection[str]
) -> dict[str, dict[str, str]]:
    """`row_reasons` of the rows whose id is in ``ids`` (one pass; nothing else is kept)."""
    if not ids:
        return {}
    return {row["id"]: row_reasons(row) for row in rows if row.get("id") in ids}

"""The one shape every tally of a run folds: a finished case as `FoldCase`.

A run's aggregates (`agentjudge.harness._summary.RunAggregate` and the tallies it holds: per
judge, the verdicts, cost, pairwise, agreement, cascade) are folded from two sources: the
finished cases of a live run (engine objects, the hot path) and the rows of a results file (a
resumed run, ``agentjudge report``, a worker's share). Both are turned into a `FoldCase`
here, once per case, and each tally has exactly one fold method reading that shape, so the
two sources cannot drift apart (``tests/harness/test_harness_fold.py`` checks that a verdict
and its written row fold to equal summaries).

Why not fold the row dicts only: turning a live verdict into its row dicts
(`agentjudge.core._rows.judge_result_dict` and friends) costs about as much as the fold itself
(measured: 10 us per 3-judge case, against 2-3 us for a `FoldCase`), on a path that runs
~50 us per case in all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from agentjudge.core import Verdict

__all__ = ["FoldCase", "Judged", "case_from_row", "case_from_verdict", "effective_score"]


class Judged(NamedTuple):
    """One judge's result (or a case's verdict) as the tallies read it."""

    name: str
    """The result's name (``""`` for the verdict)."""
    tier: str | None
    """The cascade tier it ran in (None outside a cascade, and for the verdict)."""
    status: str | None
    """``"pass"``, ``"fail"``, ``"abstain"`` or ``"error"``; None when the judge was not run
    (sampling drew it out)."""
    score: float | None
    """The judgment's own score (None when it gave none)."""
    label: str | None
    """The judgment's label."""
    metadata: Mapping[str, Any] | None
    """The judgment's metadata (model, usage, cost, pairwise records, ...)."""
    error_type: str | None
    """The exception type of a judge that raised (``BudgetExhausted`` when refused)."""


class FoldCase(NamedTuple):
    """A finished case as the tallies read it."""

    error: bool
    """The task raised or timed out (the case was never judged)."""
    results: tuple[Judged, ...]
    """One per judge that ran (in the row's order)."""
    verdict: Judged | None
    """The case's verdict (None for a task error)."""
    tiers: tuple[str, ...]
    """The cascade tiers the case went through, in order (empty outside a cascade)."""
    stopped: str | None
    """The tier that stopped the cascade, if one did."""
    human: Any
    """The dataset row's human label, as written (None: unlabelled)."""


_TASK_ERROR = FoldCase(True, (), None, (), None, None)
_NOT_JUDGED = FoldCase(False, (), None, (), None, None)


def effective_score(judged: Judged) -> float | None:
    """The score if set, else 1.0 for PASS and 0.0 for FAIL (`Judgment.effective_score`)."""
    if judged.score is not None:
        return judged.score
    return 1.0 if judged.status == "pass" else 0.0 if judged.status == "fail" else None


# ----------------------------------------------------------------------------- live cases
def case_from_verdict(verdict: Verdict | None, error: str | None, human: Any = None) -> FoldCase:
    """A finished case of a live run: its verdict, its task error, its human label."""
    if error is not None:
        return _TASK_ERROR
    if verdict is None:
        return _NOT_JUDGED
    results: list[Judged] = []
    add = results.append
    new = tuple.__new__  # `Judged(...)` without its Python-level __new__ (half the cost)
    for r in verdict.results:
        d = r.__dict__  # plain attribute reads: this runs for every judgment of every case
        j = d["judgment"]
        if j is None:
            status = score = label = metadata = None
        else:
            jd = j.__dict__
            # ``_value_``: the plain str of the Status (a StrEnum member hashes at Python level)
            status, score, label = jd["status"]._value_, jd["score"], jd["label"]
            metadata = jd["metadata"]
        add(new(Judged, (d["name"], d["tier"], status, score, label, metadata, d["error_type"])))
    top = verdict.judgment.__dict__
    judged = new(Judged, ("", None, top["status"]._value_, top["score"], top["label"], None, None))
    tiers: tuple[str, ...] = ()
    stopped = None
    if verdict.tiers:
        tiers = tuple(t.name for t in verdict.tiers)
        stopped = next((t.name for t in verdict.tiers if t.stopped), None)
    return new(FoldCase, (False, tuple(results), judged, tiers, stopped, human))


# ----------------------------------------------------------------------------- results rows
def _row_judged(name: str, tier: str | None, j: Mapping[str, Any] | None, error: Any) -> Judged:
    if j is None:
        return Judged(name, tier, None, None, None, None, error)
    metadata = j.get("metadata")
    status = j["status"]
    return Judged(name, tier, str(status), j.get("score"), j.get("label"), metadata, error)


def case_from_row(row: Mapping[str, Any]) -> FoldCase:
    """One row of a results file (what `case_from_verdict` gives for the case it was).

    Raises:
        KeyError, TypeError: a malformed row (`scan_results` names its line).
    """
    if row.get("error") is not None:
        return _TASK_ERROR
    results = tuple(
        _row_judged(r["name"], r.get("tier"), r.get("judgment"), r.get("error_type"))
        for r in row.get("results") or ()
    )
    top = row.get("verdict")
    verdict = None if top is None else _row_judged("", None, top, None)
    records: Sequence[Mapping[str, Any]] = row.get("tiers") or ()
    tiers = tuple(r["name"] for r in records)
    stopped = next((r["name"] for r in records if r.get("stopped")), None)
    return FoldCase(False, results, verdict, tiers, stopped, row.get("human"))

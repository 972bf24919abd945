"""The run summary (``summary.json``) and the streaming aggregates behind it.

Definitions (per judge, over the cases whose results include that judge):

* ``mean``: arithmetic mean of `Judgment.effective_score` over judgments that have one (the
  judge's score, else 1.0 for PASS and 0.0 for FAIL); ABSTAIN and ERROR judgments and unsampled
  results are left out. None (never 0.0) when no judgment had a score.
* ``pass_rate``: PASS / (PASS + FAIL); None when there was neither. ``pass_rate_n`` is that
  denominator and ``pass_rate_ci95`` its 95% Wilson interval (`wilson_interval`).
* ``counts``: pass, fail, abstain, error; ``unsampled`` counts results sampling drew out.
* ``ci95``: a 95% confidence interval for ``mean`` (over ``scored`` values). When every value is
  0.0 or 1.0 (pass/fail judges without scores) the mean is a proportion and the interval is
  Wilson's (from 1 value on): a bootstrap of a constant sample would be the point itself, e.g.
  [1.0, 1.0] for 30 passes out of 30. Otherwise the percentile bootstrap (1,000 resamples,
  seeded, values sorted first so the interval does not depend on completion order) while
  ``scored x resamples <= 1,000,000``; above that the normal interval
  ``mean +- 1.96 * sd / sqrt(n)`` (the bootstrap converges to it, and resampling 100,000 values
  1,000 times in pure Python would take minutes), clipped to the observed range; None below 2
  values. ``ci_method`` says which was used: ``"wilson"``, ``"bootstrap"`` or ``"normal"``.

Agreement (``judges[name].agreement``, ``verdict.agreement``, ``juries``): see
`agentjudge.harness._agreement`.

Cases whose task errored are counted in ``cases.errors`` and never judged, so they appear in no
judge's aggregates. ``cases.error_rate`` = errors / total, None when there were no cases.
`RunAggregate.judged` counts the cases where at least one judge gave PASS or FAIL (the
``judged_cases`` trust check).
"""

from __future__ import annotations

import math
import random
import statistics
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.agreement import wilson_interval
from agentjudge.harness._agreement import AgreementSummary, AgreementTally, JurySummary
from agentjudge.harness._cascade_summary import CascadeSummary, CascadeTally
from agentjudge.harness._cost import BudgetOutcome, CostSummary, CostTally
from agentjudge.harness._fold import FoldCase, Judged, case_from_row, case_from_verdict
from agentjudge.harness._pairwise_summary import PairwiseSummary, PairwiseTally

if TYPE_CHECKING:
    from agentjudge.core import Verdict

__all__ = [
    "BaselineJudge",
    "BaselineOutcome",
    "BudgetOutcome",
    "CasesSummary",
    "CheckOutcome",
    "DatasetInfo",
    "FlippedCase",
    "GateOutcome",
    "JudgeSummary",
    "RunAggregate",
    "RunSummary",
    "bootstrap_ci",
    "normal_ci",
    "resume_warnings",
]

STATUSES = ("pass", "fail", "abstain", "error")
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_MAX_DRAWS = 1_000_000
_Z95 = 1.959963984540054
_DECIDED = frozenset(("pass", "fail"))
"""Statuses that judge a case (`Status` is a StrEnum: its members compare equal too)."""
CiMethod = Literal["wilson", "bootstrap", "normal"]


def bootstrap_ci(
    values: Iterable[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval for the mean of ``values``.

    The values are sorted first, so the result depends only on the multiset of values and the
    seed, never on their order.

    Args:
        values: The sample.
        resamples: Number of bootstrap resamples (>= 1).
        confidence: Coverage, in (0, 1).
        seed: Seed of the `random.Random` used for resampling.

    Returns:
        ``(low, high)``, or None when there are fewer than 2 values.

    Raises:
        ValueError: ``resamples`` < 1 or ``confidence`` outside (0, 1), or a non-finite value.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    data = sorted(values)
    n = len(data)
    if n < 2:
        return None
    if not all(math.isfinite(v) for v in (data[0], data[-1])):
        raise ValueError("bootstrap_ci needs finite values")
    rng = random.Random(seed)
    choices = rng.choices
    means = sorted(sum(choices(data, k=n)) / n for _ in range(resamples))
    alpha = (1.0 - confidence) / 2.0
    lo_index = max(0, min(resamples - 1, math.floor(alpha * resamples)))
    hi_index = max(0, min(resamples - 1, math.ceil((1.0 - alpha) * resamples) - 1))
    low, high = data[0], data[-1]  # float rounding must not push the bounds outside the data
    return min(max(means[lo_index], low), high), min(max(means[hi_index], low), high)


def normal_ci(values: Sequence[float], *, confidence: float = 0.95) -> tuple[float, float] | None:
    """Normal-approximation interval ``mean +- z * sd / sqrt(n)``, clipped to the data's range.

    Returns:
        ``(low, high)``, or None when there are fewer than 2 values.
    """
    n = len(values)
    if n < 2:
        return None
    z = _Z95 if confidence == 0.95 else statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    data = sorted(values)
    mean = math.fsum(data) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in data) / (n - 1))
    half = z * sd / math.sqrt(n)
    low, high = data[0], data[-1]
    mean = min(max(mean, low), high)  # float rounding must not push the mean outside the data
    return max(low, mean - half), min(high, mean + half)


# ----------------------------------------------------------------------------- models
class JudgeSummary(BaseModel):
    """Aggregates of one judge (or of the case verdicts) over a run."""

    model_config = ConfigDict(extra="allow")

    mean: float | None
    """Mean effective score over judgments that have one; None when there were none."""
    pass_rate: float | None
    """PASS / (PASS + FAIL); None when there was neither."""
    counts: dict[str, int]
    """Judgments by status: ``pass``, ``fail``, ``abstain``, ``error``."""
    ci95: tuple[float, float] | None
    """95% confidence interval of ``mean``; None with fewer than 2 scored judgments."""
    scored: int = 0
    """Number of judgments in ``mean``."""
    unsampled: int = 0
    """Results that sampling drew out (the judge was not called)."""
    ci_method: CiMethod | None = None
    """How ``ci95`` was computed: ``"wilson"`` when every scored value is 0.0 or 1.0."""
    pass_rate_ci95: tuple[float, float] | None = None
    """95% Wilson interval of ``pass_rate``; None when there was no PASS or FAIL."""
    pass_rate_n: int = 0
    """PASS + FAIL: the number ``pass_rate`` is over."""
    agreement: AgreementSummary | None = None
    """Agreement with the dataset's human labels; None when no case carries one."""
    pairwise: PairwiseSummary | None = None
    """A pairwise judge's win rates, position consistency and ranking (`_pairwise_summary`)."""

    @property
    def count(self) -> int:
        """All judgments (every status)."""
        return sum(self.counts.values())


class CasesSummary(BaseModel):
    """Case counts of a run."""

    model_config = ConfigDict(extra="allow")

    total: int
    """Cases in the results file."""
    errors: int
    """Cases whose task raised or timed out (never judged)."""
    error_rate: float | None = None
    """``errors / total``; None when there were no cases."""


class DatasetInfo(BaseModel):
    """The dataset a run read."""

    model_config = ConfigDict(extra="allow")

    path: str
    """The dataset file."""
    sha256: str
    """SHA-256 of its bytes."""
    rows: int
    """Cases in the file."""


class GateOutcome(BaseModel):
    """One gate's outcome."""

    model_config = ConfigDict(extra="allow")

    expr: str
    """The gate as written, e.g. ``citation_precision.mean>=0.9``."""
    value: float | None
    """The measured value; None when undefined (such a gate fails)."""
    passed: bool
    """Whether the gate held."""


class FlippedCase(BaseModel):
    """A case whose status (a verdict's, or one judge's) changed against the baseline."""

    model_config = ConfigDict(extra="allow")

    id: str
    before: str
    """The baseline status."""
    after: str
    """The current status, or ``"task_error"`` (a verdict whose task errored)."""
    before_reason: str | None = None
    """Why, in the baseline: the judge's (or verdict's) reasoning, or the task's error; cut to
    300 characters. Recorded for the first `MAX_REASONED_FLIPS` flips of each list only."""
    after_reason: str | None = None
    """Why, now (as ``before_reason``)."""


class BaselineJudge(BaseModel):
    """One judge's mean against the baseline's."""

    model_config = ConfigDict(extra="allow")

    baseline_mean: float | None
    mean: float | None
    delta: float | None
    """``mean - baseline_mean`` (negative is a drop)."""
    regressed: bool
    """True when the drop exceeds the allowed regression (or the mean became undefined)."""
    missing: bool = False
    """True when the current run has no such judge (reported, never a failure)."""
    flips: int | None = None
    """Cases whose status from this judge went from PASS to anything else or back
    (``newly_failing + newly_passing``); None when not compared (no baseline results file, or
    the judge is missing from one side). Only cases the judge judged in both runs count."""
    newly_failing: int | None = None
    """Cases this judge passed in the baseline and no longer passes."""
    newly_passing: int | None = None
    """Cases this judge did not pass in the baseline and passes now."""
    flipped_cases: list[FlippedCase] = Field(default_factory=list)
    """Those cases (both directions; the first 1,000 by id)."""


class BaselineOutcome(BaseModel):
    """The regression check against a baseline run."""

    model_config = ConfigDict(extra="allow")

    summary: str
    """Path of the baseline ``summary.json``."""
    max_regression: float | None
    """Largest allowed drop of a judge's mean; None: means are compared but never fail."""
    max_flips: int | None = None
    """Largest allowed number of PASS -> not-PASS cases; None: listed, never fail."""
    judges: dict[str, BaselineJudge] = Field(default_factory=dict)
    flipped: list[FlippedCase] = Field(default_factory=list)
    """Cases that passed in the baseline and no longer pass (the first 1,000 by id)."""
    flipped_count: int = 0
    """How many cases flipped (all of them, listed or not)."""
    fixed_count: int = 0
    """How many cases did not pass in the baseline and pass now (verdicts)."""
    flips_checked: bool = True
    """False when the baseline's ``results.jsonl`` was not found next to its summary."""
    passed: bool = True


class CheckOutcome(BaseModel):
    """One built-in check that a completed run can be trusted (applied with or without gates)."""

    model_config = ConfigDict(extra="allow")

    name: str
    """``"judged_cases"`` (some case got a PASS or FAIL), ``"judge_errors"`` (no judge
    errored on every judgment it made) or ``"position_consistency"`` (a warning: no pairwise
    judge's position consistency is below `POSITION_CONSISTENCY_WARNING`)."""
    passed: bool
    """Whether the check held."""
    value: int
    """What was counted: cases with a PASS or FAIL (``judged_cases``), judges that errored on
    every judgment (``judge_errors``), pairwise judges below the level
    (``position_consistency``)."""
    message: str
    """What was found, e.g. ``no case produced a judged (PASS/FAIL) result ...``."""
    enforced: bool = True
    """False when ``allow_errors`` is set: a failed check is reported but does not fail the run."""
    warning: bool = False
    """A warning-only check (``position_consistency``): reported, never enforced."""


class RunSummary(BaseModel):
    """The contents of ``summary.json``."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    """Unique per invocation, e.g. ``20250101T120000Z-3f9a1c2b``."""
    status: Literal["running", "completed", "aborted"]
    started_at: str
    """ISO 8601 UTC."""
    completed_at: str | None
    """ISO 8601 UTC; None while running."""
    dataset: DatasetInfo
    config: dict[str, Any]
    judges: dict[str, JudgeSummary]
    verdict: JudgeSummary | None = None
    """Aggregates of the case verdicts (the jury / cascade outcome)."""
    juries: dict[str, JurySummary] = Field(default_factory=dict)
    """Every jury of two or more members, with the agreement among its members."""
    cases: CasesSummary
    gates: list[GateOutcome] = Field(default_factory=list)
    baseline: BaselineOutcome | None = None
    checks: list[CheckOutcome] = Field(default_factory=list)
    """The trust checks of a completed run (see `CheckOutcome`)."""
    passed: bool | None = None
    """True when every gate, the baseline check and every enforced trust check held; None
    until the run completed."""
    resumed: bool = False
    """True when this invocation continued an earlier results file."""
    warnings: list[str] = Field(default_factory=list)
    """Things worth knowing that did not stop the run (e.g. a torn line cut off on resume)."""
    cost: CostSummary | None = None
    """Tokens and dollars of the judges' model calls (see `agentjudge.harness._cost`)."""
    budget: BudgetOutcome | None = None
    """The budget check, for runs with ``max_cost``."""
    cascade: CascadeSummary | None = Field(default=None, exclude_if=lambda v: v is None)
    """A thresholded cascade's coverage and selective agreement (runs with ``thresholds``;
    left out of ``summary.json`` otherwise)."""


# ----------------------------------------------------------------------------- aggregation
class _Stat:
    """Running counts and scores of one judge."""

    __slots__ = ("counts", "fractional", "unsampled", "values")

    def __init__(self) -> None:
        self.counts = dict.fromkeys(STATUSES, 0)
        self.unsampled = 0
        self.values = array("d")
        self.fractional = 0
        """Values other than 0.0 and 1.0 (none: the mean is a proportion)."""

    def add(self, judged: Judged) -> None:
        """Fold in one result (or verdict); a judge that was not run counts as unsampled."""
        status = judged.status
        if status is None:
            self.unsampled += 1
        else:
            self._tally(status, judged.score)

    def merge(self, other: _Stat) -> None:
        """Fold in another tally (of other cases)."""
        for status, count in other.counts.items():
            self.counts[status] += count
        self.unsampled += other.unsampled
        self.values.extend(other.values)
        self.fractional += other.fractional

    def _tally(self, status: str, score: float | None) -> None:
        self.counts[status] += 1
        if score is not None:
            self.values.append(score)
            if score != 0.0 and score != 1.0:
                self.fractional += 1
        elif status == "pass":
            self.values.append(1.0)
        elif status == "fail":
            self.values.append(0.0)

    def mean_ci(self, seed: int) -> tuple[tuple[float, float] | None, CiMethod | None]:
        """The interval of the mean and how it was computed (see the module docstring)."""
        n = len(self.values)
        if n and not self.fractional:
            return wilson_interval(round(math.fsum(self.values)), n), "wilson"
        if n < 2:
            return None, None
        if n * BOOTSTRAP_RESAMPLES <= BOOTSTRAP_MAX_DRAWS:
            return bootstrap_ci(self.values, seed=seed), "bootstrap"
        return normal_ci(self.values), "normal"

    def summary(self, seed: int) -> JudgeSummary:
        n = len(self.values)
        passed = self.counts["pass"]
        decided = passed + self.counts["fail"]
        ci, method = self.mean_ci(seed)
        return JudgeSummary(
            mean=math.fsum(sorted(self.values)) / n if n else None,
            pass_rate=passed / decided if decided else None,
            counts=dict(self.counts),
            ci95=ci,
            scored=n,
            unsampled=self.unsampled,
            ci_method=method,
            pass_rate_ci95=wilson_interval(passed, decided) if decided else None,
            pass_rate_n=decided,
        )


class RunAggregate:
    """Streaming aggregates of results rows (the same code for a live run and a resumed file).

    Memory: the counts, plus 8 bytes per scored judgment (kept for the confidence interval).
    """

    def __init__(self, judge_order: Sequence[str] = (), *, seed: int = 0) -> None:
        self.judge_order = list(judge_order)
        self.seed = seed
        self.total = 0
        self.errors = 0
        self.judged = 0
        self.judges: dict[str, _Stat] = {}
        self.verdict = _Stat()
        self.cost = CostTally()
        self.pairwise = PairwiseTally()
        self.trust = AgreementTally()
        self.cascade = CascadeTally()
        self.root_jury = "jury"
        """The top-level jury's name in `jury_summaries` (`_resolve.root_jury_name`)."""

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Fold one results row in."""
        self.add(case_from_row(row))

    def add_case(self, verdict: Verdict | None, error: str | None, human: Any = None) -> None:
        """Fold one finished case in: what `add_row` does with the row it is written as.

        ``human`` is the case's human label (None: unlabelled).
        """
        self.add(case_from_verdict(verdict, error, human))

    def add(self, case: FoldCase) -> None:
        """Fold one case in (THE fold: live cases and results rows both come through here)."""
        self.total += 1
        if case.error:
            self.errors += 1
            return
        judges = self.judges
        judged = False
        cost, pairwise = self.cost, self.pairwise
        for result in case.results:
            stat = judges.get(result.name)
            if stat is None:
                stat = judges[result.name] = _Stat()
            stat.add(result)
            cost.add(result)
            if result.metadata and "pairwise" in result.metadata:
                pairwise.add(result)
            judged = judged or result.status in _DECIDED
        self.judged += judged
        if case.verdict is not None:
            self.verdict.add(case.verdict)
        self.trust.add(case)
        if case.tiers:
            self.cascade.add(case)

    def merge(self, other: RunAggregate) -> None:
        """Fold in the aggregates of other cases (a worker process's share of a parallel run).

        The result equals folding both sets of rows into one aggregate: counts add up and the
        scores are pooled (the confidence intervals do not depend on their order).
        """
        self.total += other.total
        self.errors += other.errors
        self.judged += other.judged
        for name, stat in other.judges.items():
            mine = self.judges.get(name)
            if mine is None:
                mine = self.judges[name] = _Stat()
            mine.merge(stat)
        self.verdict.merge(other.verdict)
        self.cost.merge(other.cost)
        self.pairwise.merge(other.pairwise)
        self.trust.merge(other.trust)
        self.cascade.merge(other.cascade)

    def names(self) -> list[str]:
        """Judge names: configured order first, then any others sorted."""
        known = [n for n in self.judge_order if n in self.judges]
        return known + sorted(n for n in self.judges if n not in set(self.judge_order))

    def judge_summaries(self) -> dict[str, JudgeSummary]:
        """Per-judge aggregates in `names` order, with agreement and pairwise blocks."""
        names = self.names()
        agreement = self.trust.judge_agreement(names)
        out = {name: self.judges[name].summary(self.seed) for name in names}
        for name, summary in out.items():
            summary.agreement = agreement.get(name)
        for name, block in self.pairwise.blocks().items():
            out[name].pairwise = block
        return out

    def verdict_summary(self) -> JudgeSummary:
        """Aggregates of the case verdicts (with their agreement with human labels)."""
        summary = self.verdict.summary(self.seed)
        summary.agreement = self.trust.verdict_agreement()
        return summary

    def jury_summaries(self) -> dict[str, JurySummary]:
        """Every jury's members and inter-judge agreement."""
        return self.trust.juries(self.names(), self.root_jury)

    def cost_summary(self) -> CostSummary:
        """Tokens and dollars of the judges' model calls."""
        return self.cost.summary()

    def cases_summary(self) -> CasesSummary:
        """Case counts."""
        return CasesSummary(
            total=self.total,
            errors=self.errors,
            error_rate=self.errors / self.total if self.total else None,
        )


def resume_warnings(
    previous: RunSummary, dataset_sha256: str, task: str | None, task_name: str
) -> list[str]:
    """What changed since the run being resumed (its ``previous`` summary), as warnings.

    Args:
        previous: The summary of the results file being continued.
        dataset_sha256: The dataset's SHA-256 now.
        task: The task reference now (the suite's ``task``; None for a task object).
        task_name: The task's name now (`_task.task_name`).
    """
    warnings = []
    if previous.dataset.sha256 != dataset_sha256:
        warnings.append(
            f"resuming a run that read another version of the dataset "
            f"(sha256 {previous.dataset.sha256[:12]}... then, "
            f"{dataset_sha256[:12]}... now); the summary covers rows of both"
        )
    before_ref, before_name = previous.config.get("task"), previous.config.get("task_name")
    then, now = (before_ref, task) if before_ref and task else (before_name, task_name)
    if then is not None and then != now:
        warnings.append(
            f"resuming a run that used another task ({then!r} then, {now!r} now); "
            "the summary covers rows of both"
        )
    return warnings

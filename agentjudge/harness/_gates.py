"""Gates: ``<subject>.<stat><op><number>`` checks on a run summary; and the trust checks.

Subjects: a judge's name, ``verdict`` (the case verdicts), ``errors`` and ``cases``.

* judge and verdict stats: ``mean``, ``pass_rate``, ``ci95_low``, ``ci95_high``,
  ``pass_rate_ci95_low``, ``pass_rate_ci95_high`` (the Wilson interval of ``pass_rate``),
  ``pass_rate_n``, ``count`` (all judgments), ``scored``, ``pass``, ``fail``, ``abstain``,
  ``error``, ``unsampled``;
* against the baseline (the run needs one): ``flips`` (cases whose status went from PASS to
  anything else or back), ``newly_failing`` (PASS before, not now), ``newly_passing``;
* agreement with the dataset's human labels (``<judge>.agreement.<stat>`` and
  ``verdict.agreement.<stat>``): ``n``, ``accuracy``, ``accuracy_ci95_low``,
  ``accuracy_ci95_high``, ``cohen_kappa``, ``krippendorff_alpha``, ``abstain``, ``error``,
  ``not_judged``, ``labelled``. Without any labelled case the value is undefined, so the gate
  fails (a gate on agreement never passes vacuously); so does an undefined coefficient
  (``undefined`` in the summary says why, and so does the gate's ``reason``);
* agreement among a jury's members (``<jury>.inter_judge.<stat>``, the jury as named in the
  summary's ``juries``, e.g. ``jury`` for a list of judges or a cascade tier's name):
  ``n``, ``fleiss_kappa``, ``krippendorff_alpha``, ``alpha_n``, ``pairwise_min`` (the lowest
  pairwise agreement). Juries are known only from the results, so an unknown jury name is not
  refused up front: the gate fails with a reason listing the juries there were;
* a pairwise judge's block (``<judge>.pairwise.<stat>``, see `_pairwise_summary`):
  ``position_consistency`` (the share of swapped pairs with the same answer in both orders),
  ``position_consistency_ci95_low``, ``position_consistency_n``, ``n`` (comparisons in the
  win rates), ``inconsistent``, ``undecided``. Undefined (the gate fails, with a reason) for
  a judge without a pairwise block, and ``position_consistency*`` without swapped pairs;
* ``errors.rate`` (errored cases / cases), ``errors.count``; ``cases.total``.
* the judges' model calls (the summary's ``cost`` block): ``cost.usd`` (None, so the gate
  fails, when some call's model has no price), ``cost.priced_usd``, ``cost.input_tokens``,
  ``cost.output_tokens``, ``cost.cached_tokens``, ``cost.tokens`` (input + output),
  ``cost.calls``, ``cost.unpriced_calls``, ``cost.budget_refused``.

Operators: ``>=``, ``<=``, ``>``, ``<``, ``==``. A gate whose value is undefined (a mean with no
scored judgment, a rate with no cases, flips without the baseline's results file) fails: a gate
never passes on missing data.

The trust checks (`trust_checks`) apply to every completed run, gates or not: a run where no
case got a PASS or FAIL, or where some judge errored on every judgment, fails unless
``allow_errors`` is set. A run with a pairwise judge also gets the warning-only check
``position_consistency``: it does not hold when some pairwise judge's position consistency is
below `POSITION_CONSISTENCY_WARNING` (0.5), and never fails the run (require a level with a
gate).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentjudge.harness._agreement import AgreementSummary, InterJudgeSummary, JurySummary
from agentjudge.harness._cost import COST_STATS, CostSummary
from agentjudge.harness._pairwise_summary import (
    POSITION_CONSISTENCY_WARNING,
    PairwiseRate,
    PairwiseSummary,
    position_warning,
)
from agentjudge.harness._summary import (
    BaselineOutcome,
    CasesSummary,
    CheckOutcome,
    GateOutcome,
    JudgeSummary,
    RunSummary,
)
from agentjudge.harness._text import did_you_mean, plural

__all__ = ["GATE_STATS", "Gate", "conclude", "parse_gate", "resolve_gate_subjects", "trust_checks"]

JUDGE_STATS: dict[str, Callable[[JudgeSummary], float | None]] = {
    "mean": lambda s: s.mean,
    "pass_rate": lambda s: s.pass_rate,
    "ci95_low": lambda s: None if s.ci95 is None else s.ci95[0],
    "ci95_high": lambda s: None if s.ci95 is None else s.ci95[1],
    "pass_rate_ci95_low": lambda s: None if s.pass_rate_ci95 is None else s.pass_rate_ci95[0],
    "pass_rate_ci95_high": lambda s: None if s.pass_rate_ci95 is None else s.pass_rate_ci95[1],
    "pass_rate_n": lambda s: s.pass_rate_n,
    "count": lambda s: s.count,
    "scored": lambda s: s.scored,
    "pass": lambda s: s.counts.get("pass", 0),
    "fail": lambda s: s.counts.get("fail", 0),
    "abstain": lambda s: s.counts.get("abstain", 0),
    "error": lambda s: s.counts.get("error", 0),
    "unsampled": lambda s: s.unsampled,
}
ERRORS_STATS: dict[str, Callable[[CasesSummary], float | None]] = {
    "rate": lambda c: c.error_rate,
    "count": lambda c: c.errors,
}
CASES_STATS: dict[str, Callable[[CasesSummary], float | None]] = {"total": lambda c: c.total}
AGREEMENT_STATS: dict[str, Callable[[AgreementSummary], float | None]] = {
    "n": lambda a: a.n,
    "accuracy": lambda a: a.accuracy,
    "accuracy_ci95_low": lambda a: None if a.accuracy_ci95 is None else a.accuracy_ci95[0],
    "accuracy_ci95_high": lambda a: None if a.accuracy_ci95 is None else a.accuracy_ci95[1],
    "cohen_kappa": lambda a: a.cohen_kappa,
    "krippendorff_alpha": lambda a: a.krippendorff_alpha,
    "abstain": lambda a: a.abstained.get("abstain", 0),
    "error": lambda a: a.abstained.get("error", 0),
    "not_judged": lambda a: a.not_judged,
    "labelled": lambda a: a.labelled,
}
"""Judge and verdict stats of ``<judge>.agreement.<stat>`` gates."""
INTER_JUDGE_STATS: dict[str, Callable[[InterJudgeSummary], float | None]] = {
    "n": lambda i: i.n,
    "fleiss_kappa": lambda i: i.fleiss_kappa,
    "krippendorff_alpha": lambda i: i.krippendorff_alpha,
    "alpha_n": lambda i: i.alpha_n,
    "pairwise_min": lambda i: i.pairwise_min,
}
"""Jury stats of ``<jury>.inter_judge.<stat>`` gates."""
PAIRWISE_STATS: dict[str, Callable[[PairwiseSummary], float | None]] = {
    "position_consistency": lambda b: _consistency(b, lambda r: r.rate),
    "position_consistency_ci95_low": lambda b: _consistency(b, lambda r: r.ci95[0]),
    "position_consistency_n": lambda b: _consistency(b, lambda r: r.n),
    "n": lambda b: b.n,
    "inconsistent": lambda b: b.inconsistent,
    "undecided": lambda b: b.undecided,
}
"""Pairwise judge stats of ``<judge>.pairwise.<stat>`` gates (read from the summary's block)."""
_GROUPED: dict[str, tuple[str, ...]] = {
    "agreement": tuple(AGREEMENT_STATS),
    "inter_judge": tuple(INTER_JUDGE_STATS),
    "pairwise": tuple(PAIRWISE_STATS),
}
_NO_LABELS = (
    "no results row carries a human label (add 'human' to the dataset rows to measure agreement)"
)
BASELINE_STATS: dict[str, Callable[[int, int], int]] = {
    "flips": lambda down, up: down + up,
    "newly_failing": lambda down, up: down,
    "newly_passing": lambda down, up: up,
}
"""Judge and verdict stats read from the baseline check: f(newly_failing, newly_passing)."""
GATE_STATS: Mapping[str, tuple[str, ...]] = {
    "<judge>": (
        *JUDGE_STATS,
        *BASELINE_STATS,
        *(f"agreement.{stat}" for stat in AGREEMENT_STATS),
        *(f"pairwise.{stat}" for stat in PAIRWISE_STATS),
    ),
    "verdict": (
        *JUDGE_STATS,
        *BASELINE_STATS,
        *(f"agreement.{stat}" for stat in AGREEMENT_STATS),
    ),
    "<jury>": tuple(f"inter_judge.{stat}" for stat in INTER_JUDGE_STATS),
    "errors": tuple(ERRORS_STATS),
    "cases": tuple(CASES_STATS),
    "cost": tuple(COST_STATS),
}
"""Valid stats per subject."""

Op = Literal[">=", "<=", ">", "<", "=="]
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
}
_SUBJECTS = ("errors", "cases", "cost")
"""Subjects that are not judges (``verdict`` aside)."""
_SYNTAX = (
    "expected <judge>.<stat><op><number> with op one of >=, <=, >, <, == "
    "(e.g. 'correctness.mean>=0.9' or 'errors.rate<=0.02')"
)
_GATE = re.compile(
    r"^\s*(?P<target>\S(?:.*?\S)?)\s*(?P<op>>=|<=|==|>|<)\s*(?P<number>[^\s<>=]+)\s*$"
)


class Gate(BaseModel):
    """One parsed gate."""

    model_config = ConfigDict(frozen=True)

    expr: str
    """The gate as written."""
    subject: str
    """A judge name, ``verdict``, ``errors`` or ``cases``."""
    stat: str
    """The statistic, e.g. ``mean``."""
    op: Op
    """The comparison."""
    threshold: float
    """The number compared against."""

    def value(
        self,
        judges: Mapping[str, JudgeSummary],
        verdict: JudgeSummary | None,
        cases: CasesSummary,
        baseline: BaselineOutcome | None = None,
        cost: CostSummary | None = None,
    ) -> float | None:
        """The measured value; None when undefined.

        Raises:
            KeyError: the subject is not a judge of this run.
        """
        if self.subject == "errors":
            return ERRORS_STATS[self.stat](cases)
        if self.subject == "cases":
            return CASES_STATS[self.stat](cases)
        if self.subject == "cost":
            return None if cost is None else COST_STATS[self.stat](cost)
        if self.stat in BASELINE_STATS:
            return _baseline_value(self.subject, self.stat, baseline)
        summary = verdict if self.subject == "verdict" else judges[self.subject]
        return None if summary is None else JUDGE_STATS[self.stat](summary)

    def evaluate(
        self,
        judges: Mapping[str, JudgeSummary],
        verdict: JudgeSummary | None,
        cases: CasesSummary,
        baseline: BaselineOutcome | None = None,
        cost: CostSummary | None = None,
        juries: Mapping[str, JurySummary] | None = None,
    ) -> GateOutcome:
        """Check the gate; a judge of the configuration that never ran has undefined values.

        An agreement gate whose value is undefined says why in the outcome's ``reason``.
        """
        reason = None
        if "." in self.stat:
            value, reason = self.agreement_value(judges, verdict, juries or {})
        else:
            known = self.subject in judges or self.subject in (*_SUBJECTS, "verdict")
            value = self.value(judges, verdict, cases, baseline, cost) if known else None
        passed = value is not None and _OPS[self.op](value, self.threshold)
        extra = {} if reason is None else {"reason": reason}
        return GateOutcome(
            expr=self.expr, value=None if value is None else float(value), passed=passed, **extra
        )

    def agreement_value(
        self,
        judges: Mapping[str, JudgeSummary],
        verdict: JudgeSummary | None,
        juries: Mapping[str, JurySummary],
    ) -> tuple[float | None, str | None]:
        """An ``agreement.*``, ``inter_judge.*`` or ``pairwise.*`` stat and, if undefined, why."""
        group, _, stat = self.stat.partition(".")
        if group == "pairwise":
            return _pairwise_value(self.subject, stat, judges.get(self.subject))
        if group == "inter_judge":
            jury = juries.get(self.subject)
            if jury is None:
                known = ", ".join(juries) or "none"
                return None, f"no jury named {self.subject!r} in this run (juries: {known})"
            value = INTER_JUDGE_STATS[stat](jury.inter_judge)
            return value, None if value is not None else _why(jury.inter_judge.undefined, stat)
        summary = verdict if self.subject == "verdict" else judges.get(self.subject)
        if summary is None:
            return None, f"{self.subject!r} gave no judgment in this run"
        if summary.agreement is None:
            return None, _NO_LABELS
        value = AGREEMENT_STATS[stat](summary.agreement)
        return value, None if value is not None else _why(summary.agreement.undefined, stat)


def parse_gate(expr: str) -> Gate:
    """Parse ``<subject>.<stat><op><number>``, e.g. ``citation_precision.mean>=0.9``.

    Judge names may contain dots: the stat is what follows the last dot.

    Raises:
        ValueError: the expression is malformed or names an unknown stat (the message lists
            the valid ones).
    """
    match = _GATE.match(expr)
    if match is None:
        raise ValueError(f"gate {expr!r}: {_SYNTAX}")
    target, op, number = match["target"], match["op"], match["number"]
    subject, dot, stat = target.rpartition(".")
    if dot and not stat.strip().isidentifier():
        raise ValueError(f"gate {expr!r}: {_SYNTAX}")
    if not dot or not subject.strip() or not stat.strip():
        raise ValueError(
            f"gate {expr!r}: {target!r} is not <judge>.<stat> (e.g. 'correctness.mean')"
        )
    subject, stat = subject.strip(), stat.strip()
    try:
        threshold = float(number)
    except ValueError:
        raise ValueError(f"gate {expr!r}: {number!r} is not a number") from None
    if not math.isfinite(threshold):
        raise ValueError(f"gate {expr!r}: the threshold must be a finite number")
    grouped = _grouped_gate(expr, subject, stat, op, threshold)
    if grouped is not None:
        return grouped
    subject_stats: dict[str, Mapping[str, object]] = {
        "errors": ERRORS_STATS,
        "cases": CASES_STATS,
        "cost": COST_STATS,
    }
    valid = subject_stats.get(subject, {**JUDGE_STATS, **BASELINE_STATS})
    if stat not in valid:
        shown = subject if subject in _SUBJECTS else "a judge"
        raise ValueError(
            f"gate {expr!r}: unknown stat {stat!r} for {shown}{did_you_mean(stat, valid)}; "
            f"valid: {', '.join(valid)}"
        )
    return Gate(expr=expr.strip(), subject=subject, stat=stat, op=op, threshold=threshold)


def _grouped_gate(expr: str, subject: str, stat: str, op: str, threshold: float) -> Gate | None:
    """``<judge>.agreement.<stat>`` / ``<jury>.inter_judge.<stat>`` as a Gate (else None).

    Raises:
        ValueError: an unknown agreement or inter-judge stat (the valid ones listed).
    """
    head, dot, group = subject.rpartition(".")
    stats = _GROUPED.get(group)
    if not dot or not head.strip() or stats is None:
        return None
    if stat not in stats:
        raise ValueError(
            f"gate {expr!r}: unknown {group} stat {stat!r}{did_you_mean(stat, stats)}; "
            f"valid: {', '.join(stats)}"
        )
    return Gate(
        expr=expr.strip(),
        subject=head.strip(),
        stat=f"{group}.{stat}",
        op=op,
        threshold=threshold,
    )


def _consistency(block: PairwiseSummary, stat: Callable[[PairwiseRate], float]) -> float | None:
    rate = block.position_consistency
    return None if rate is None else float(stat(rate))


def _pairwise_value(
    judge: str, stat: str, summary: JudgeSummary | None
) -> tuple[float | None, str | None]:
    """A ``pairwise.*`` stat of ``judge`` and, when it is undefined, why."""
    if summary is None:
        return None, f"{judge!r} gave no judgment in this run"
    if summary.pairwise is None:
        return None, f"{judge!r} is not a pairwise judge (its judgments carry no comparison)"
    value = PAIRWISE_STATS[stat](summary.pairwise)
    if value is None:
        return None, "no pair was asked in both orders (swap=False, or no comparison)"
    return value, None


def _why(undefined: Mapping[str, str], stat: str) -> str:
    """Why an agreement stat is undefined (the summary's ``undefined`` entry, or n = 0)."""
    return undefined.get(stat) or "no case to compare (n = 0)"


def resolve_gate_subjects(
    gates: Iterable[Gate],
    judge_names: Iterable[str],
    *,
    baseline: bool = True,
    juries: Iterable[str] | None = None,
    optional: Collection[str] = (),
) -> tuple[list[Gate], list[str]]:
    """The gates with their judges found, or an error for a subject the run does not have.

    A subject that is not a judge's exact name matches the one judge whose name equals it
    ignoring case (``Correctness.mean`` gates ``correctness``); two such judges are an error.

    Args:
        gates: The run's gates.
        judge_names: The run's judges.
        baseline: Whether the run compares with a baseline (``flips`` gates need one).
        juries: The run's juries (`_agreement.jury_groups`), for ``inter_judge`` gates; None:
            not known yet (such a gate on an unknown jury then fails with a reason at the end).
        optional: Gates (as written) that are skipped, with a note, rather than refused when
            their judge or jury is not in the run (a suite's gates when its judges were
            replaced, e.g. by ``--judges``).

    Returns:
        The gates to evaluate (subjects resolved) and a note for each gate skipped.

    Raises:
        ValueError: naming the gate, suggesting the closest subject and listing the valid
            ones, or saying to pass a baseline.
    """
    known_juries = None if juries is None else list(juries)
    names = list(judge_names)
    kept: list[Gate] = []
    notes: list[str] = []
    for gate in gates:
        if not baseline and gate.stat in BASELINE_STATS:
            raise ValueError(
                f"gate {gate.expr!r} compares with a baseline run: pass --baseline SUMMARY "
                '(or set baseline = "..." in the suite file)'
            )
        jury = gate.stat.startswith("inter_judge.")
        exact = gate.subject in (*_SUBJECTS, "verdict", *names)
        if exact or (jury and known_juries is None):
            kept.append(gate)
            continue
        candidates = (known_juries or []) if jury else names
        subject = _match_subject(gate, candidates)
        if subject is not None:
            kept.append(gate.model_copy(update={"subject": subject}))
        elif gate.expr in optional:
            what = "jury" if jury else "judge"
            notes.append(
                f"gate {gate.expr!r} skipped: this run has no {what} {gate.subject!r} (the "
                "gate is the suite's, and the judges were replaced)"
            )
        elif jury:
            valid = ", ".join(candidates) or "none (no jury of two or more judges)"
            raise ValueError(
                f"gate {gate.expr!r}: unknown jury {gate.subject!r}"
                f"{did_you_mean(gate.subject, candidates)}; juries: {valid}"
            )
        else:
            valid = ", ".join([*names, "verdict", *_SUBJECTS])
            raise ValueError(
                f"gate {gate.expr!r}: unknown judge {gate.subject!r}"
                f"{did_you_mean(gate.subject, [*names, 'verdict', *_SUBJECTS])}; valid: {valid}"
            )
    return kept, notes


def _match_subject(gate: Gate, names: Sequence[str]) -> str | None:
    """``gate``'s subject among ``names``: exactly, else the one equal ignoring case.

    Raises:
        ValueError: several names equal it ignoring case.
    """
    if gate.subject in names:
        return gate.subject
    folded = [name for name in names if name.casefold() == gate.subject.casefold()]
    if len(folded) > 1:
        raise ValueError(
            f"gate {gate.expr!r}: {gate.subject!r} matches {', '.join(map(repr, folded))} "
            "ignoring case; write the name exactly"
        )
    return folded[0] if folded else None


def _baseline_value(subject: str, stat: str, baseline: BaselineOutcome | None) -> float | None:
    """A flips stat of the verdict or of one judge; None when not compared."""
    if baseline is None or not baseline.flips_checked:
        return None
    if subject == "verdict":
        down, up = baseline.flipped_count, baseline.fixed_count
    else:
        judge = baseline.judges.get(subject)
        if judge is None or judge.newly_failing is None or judge.newly_passing is None:
            return None
        down, up = judge.newly_failing, judge.newly_passing
    return BASELINE_STATS[stat](down, up)


_ACCEPT = "pass --allow-errors (allow_errors = true) to accept such a run"


def _judged_check(
    judged: int, cases: CasesSummary, enforced: bool, inconsistent: int = 0
) -> CheckOutcome:
    def outcome(passed: bool, message: str) -> CheckOutcome:
        return CheckOutcome(
            name="judged_cases", passed=passed, value=judged, message=message, enforced=enforced
        )

    if judged:
        of = f"{judged} of {plural(cases.total, 'case')}"
        return outcome(True, f"{of} got a PASS or FAIL from a judge")
    if cases.total == 0:
        why = "no case ran"
    elif cases.errors == cases.total:
        why = f"the task errored or timed out on every case ({cases.errors} of {cases.total})"
    else:
        why = (
            f"every judgment of the {cases.total - cases.errors} judged cases was ABSTAIN, "
            f"ERROR or unsampled ({cases.errors} task errors)"
        )
        if inconsistent:
            why += (
                f"; {inconsistent} were pairwise comparisons whose answer changed when the "
                "candidates were swapped (position bias: no decision)"
            )
    return outcome(False, f"no case produced a judged (PASS/FAIL) result: {why}; {_ACCEPT}")


def _position_check(judges: Mapping[str, JudgeSummary]) -> CheckOutcome | None:
    """Warning-only: every pairwise judge's position consistency is at least the level."""
    measured = {
        name: s.pairwise
        for name, s in judges.items()
        if s.pairwise is not None and s.pairwise.position_consistency is not None
    }
    if not measured:
        return None
    low = [w for name, block in measured.items() if (w := position_warning(name, block))]
    message = (
        "; ".join(low)
        if low
        else f"every pairwise judge kept its answer on at least {POSITION_CONSISTENCY_WARNING} "
        "of the swapped pairs"
    )
    return CheckOutcome(
        name="position_consistency",
        passed=not low,
        value=len(low),
        message=message,
        enforced=False,
        warning=True,
    )


def _judge_errors_check(judges: Mapping[str, JudgeSummary], enforced: bool) -> CheckOutcome:
    broken = [
        f"judge {name!r} ({s.count} of {s.count})"
        for name, s in judges.items()
        if s.count and s.counts.get("error", 0) == s.count
    ]
    message = "no judge errored on every judgment it made"
    if broken:
        message = f"every judgment errored for {', '.join(broken)}; {_ACCEPT}"
    return CheckOutcome(
        name="judge_errors",
        passed=not broken,
        value=len(broken),
        message=message,
        enforced=enforced,
    )


def trust_checks(
    judges: Mapping[str, JudgeSummary],
    cases: CasesSummary,
    judged: int,
    *,
    allow_errors: bool = False,
) -> list[CheckOutcome]:
    """Whether a completed run can be trusted at all, whatever its gates say.

    ``judged_cases`` fails when no case got a PASS or FAIL from any judge (every task errored
    or timed out, every judgment errored or abstained, or no case ran; an inconsistent
    pairwise comparison is an ABSTAIN); ``judge_errors`` fails when some judge errored on
    every judgment it made. ``position_consistency`` (only with a pairwise judge asked in
    both orders) is a warning: reported, never enforced.

    Args:
        judges: Per-judge aggregates.
        cases: Case counts.
        judged: Cases where some judge gave PASS or FAIL (`RunAggregate.judged`).
        allow_errors: Report failed checks without enforcing them (``enforced`` False).
    """
    enforced = not allow_errors
    inconsistent = sum(s.pairwise.inconsistent for s in judges.values() if s.pairwise is not None)
    checks = [
        _judged_check(judged, cases, enforced, inconsistent),
        _judge_errors_check(judges, enforced),
    ]
    position = _position_check(judges)
    return checks if position is None else [*checks, position]


def conclude(
    summary: RunSummary, gates: Sequence[Gate], *, judged: int, allow_errors: bool = False
) -> None:
    """Fill in a completed run's gates, trust checks and ``passed`` (in place).

    The baseline check, if any, must already be in ``summary.baseline``: flips gates read it.
    ``passed`` is True when every gate, the baseline check and every enforced check held.

    Args:
        summary: The run's summary (status ``completed``).
        gates: The run's gates.
        judged: Cases where some judge gave PASS or FAIL (`RunAggregate.judged`).
        allow_errors: Whether the trust checks are only reported.
    """
    summary.gates = [
        g.evaluate(
            summary.judges,
            summary.verdict,
            summary.cases,
            summary.baseline,
            summary.cost,
            summary.juries,
        )
        for g in gates
    ]
    checks = trust_checks(summary.judges, summary.cases, judged, allow_errors=allow_errors)
    summary.checks = checks
    summary.passed = (
        all(g.passed for g in summary.gates)
        and (summary.baseline is None or summary.baseline.passed)
        and all(c.passed or not c.enforced for c in checks)
    )

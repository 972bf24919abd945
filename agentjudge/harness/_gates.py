"""Gates: ``<subject>.<stat><op><number>`` checks on a run summary.

Subjects: a judge's name, ``verdict`` (the case verdicts), ``errors`` and ``cases``.

* judge and verdict stats: ``mean``, ``pass_rate``, ``ci95_low``, ``ci95_high``, ``count`` (all
  judgments), ``scored``, ``pass``, ``fail``, ``abstain``, ``error``, ``unsampled``;
* ``errors.rate`` (errored cases / cases), ``errors.count``; ``cases.total``.

Operators: ``>=``, ``<=``, ``>``, ``<``, ``==``. A gate whose value is undefined (a mean with no
scored judgment, a rate with no cases) fails: a gate never passes on missing data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentjudge.harness._summary import CasesSummary, GateOutcome, JudgeSummary

__all__ = ["GATE_STATS", "Gate", "check_gate_subjects", "parse_gate"]

JUDGE_STATS: dict[str, Callable[[JudgeSummary], float | None]] = {
    "mean": lambda s: s.mean,
    "pass_rate": lambda s: s.pass_rate,
    "ci95_low": lambda s: None if s.ci95 is None else s.ci95[0],
    "ci95_high": lambda s: None if s.ci95 is None else s.ci95[1],
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
GATE_STATS: Mapping[str, tuple[str, ...]] = {
    "<judge>": tuple(JUDGE_STATS),
    "verdict": tuple(JUDGE_STATS),
    "errors": tuple(ERRORS_STATS),
    "cases": tuple(CASES_STATS),
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
        self, judges: Mapping[str, JudgeSummary], verdict: JudgeSummary | None, cases: CasesSummary
    ) -> float | None:
        """The measured value; None when undefined.

        Raises:
            KeyError: the subject is not a judge of this run.
        """
        if self.subject == "errors":
            return ERRORS_STATS[self.stat](cases)
        if self.subject == "cases":
            return CASES_STATS[self.stat](cases)
        summary = verdict if self.subject == "verdict" else judges[self.subject]
        return None if summary is None else JUDGE_STATS[self.stat](summary)

    def evaluate(
        self, judges: Mapping[str, JudgeSummary], verdict: JudgeSummary | None, cases: CasesSummary
    ) -> GateOutcome:
        """Check the gate; a judge of the configuration that never ran has undefined values."""
        known = self.subject in judges or self.subject in ("errors", "cases", "verdict")
        value = self.value(judges, verdict, cases) if known else None
        passed = value is not None and _OPS[self.op](value, self.threshold)
        return GateOutcome(
            expr=self.expr, value=None if value is None else float(value), passed=passed
        )


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
    valid = {"errors": ERRORS_STATS, "cases": CASES_STATS}.get(subject, JUDGE_STATS)
    if stat not in valid:
        shown = subject if subject in ("errors", "cases") else "a judge"
        raise ValueError(
            f"gate {expr!r}: unknown stat {stat!r} for {shown}; valid: {', '.join(valid)}"
        )
    return Gate(expr=expr.strip(), subject=subject, stat=stat, op=op, threshold=threshold)


def check_gate_subjects(gates: Iterable[Gate], judge_names: Iterable[str]) -> None:
    """Refuse gates naming a judge the run does not have.

    Raises:
        ValueError: naming the gate and listing the valid subjects.
    """
    names = list(judge_names)
    for gate in gates:
        if gate.subject in ("errors", "cases", "verdict") or gate.subject in names:
            continue
        valid = ", ".join([*names, "verdict", "errors", "cases"])
        raise ValueError(f"gate {gate.expr!r}: unknown judge {gate.subject!r}; valid: {valid}")

"""The session tally: checked outcomes as results rows, folded into per-judge summaries.

Every outcome `assert_passes` checks becomes one results row (the harness's encoding: judge
results and the verdict, no input or output), kept as a JSON line so pytest-xdist workers can
send theirs to the controller as they are. The controller folds all rows with the harness's
`RunAggregate.add_row` (one fold path for runs and tests), so pass rates, their Wilson
intervals and every gate statistic mean exactly what they mean in ``summary.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agentjudge.harness._gates import BASELINE_STATS, Gate, resolve_gate_subjects
from agentjudge.harness._report import _ci, _num, gate_line, table
from agentjudge.harness._summary import GateOutcome, JudgeSummary, RunAggregate
from agentjudge.harness._text import plural

__all__ = ["SessionReport", "conclude", "report_lines"]

_HEADERS = ("judge", "n", "pass_rate", "ci95 (wilson)", "pass", "fail", "abstain", "error")


@dataclass
class SessionReport:
    """What the session's checked outcomes amount to."""

    outcomes: int
    """Outcomes checked (`assert_passes` / `assert_eval` calls), over all xdist workers."""
    judges: dict[str, JudgeSummary]
    """Per-judge aggregates, as in ``summary.json``."""
    verdict: JudgeSummary | None
    """Aggregates of the verdicts (None when only bare results were checked)."""
    gates: list[GateOutcome] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every gate held."""
        return all(g.passed for g in self.gates)


def _gate_outcome(gate: Gate, aggregate: RunAggregate, report: SessionReport) -> GateOutcome:
    """One gate over the session (a gate naming an unknown judge fails, saying why)."""
    if gate.stat in BASELINE_STATS:
        reason = "a test session has no baseline run to count flips against"
        return GateOutcome(expr=gate.expr, value=None, passed=False, reason=reason)
    juries = aggregate.jury_summaries()
    try:
        (resolved,), _ = resolve_gate_subjects([gate], report.judges, baseline=False, juries=juries)
    except ValueError as exc:
        return GateOutcome(expr=gate.expr, value=None, passed=False, reason=str(exc))
    return resolved.evaluate(
        report.judges,
        report.verdict,
        aggregate.cases_summary(),
        cost=aggregate.cost_summary(),
        juries=juries,
    )


def conclude(rows: Iterable[str], gates: Sequence[Gate]) -> SessionReport:
    """Fold the session's rows and check its gates."""
    aggregate = RunAggregate()
    for line in rows:
        aggregate.add_row(json.loads(line))
    verdict = aggregate.verdict_summary()
    report = SessionReport(
        outcomes=aggregate.total,
        judges=aggregate.judge_summaries(),
        verdict=verdict if verdict.count else None,
    )
    report.gates = [_gate_outcome(gate, aggregate, report) for gate in gates]
    return report


def _row(name: str, s: JudgeSummary) -> list[str]:
    c = s.counts
    counts = [str(c.get(status, 0)) for status in ("pass", "fail", "abstain", "error")]
    return [name, str(s.pass_rate_n), _num(s.pass_rate), _ci(s.pass_rate_ci95), *counts]


def report_lines(report: SessionReport) -> list[str]:
    """The terminal summary: per-judge pass rates (n, Wilson interval), then the gates."""
    lines = [
        f"{plural(report.outcomes, 'outcome')} checked with assert_passes / assert_eval; "
        "n = PASS + FAIL (abstain and error counted apart)"
    ]
    rows = [_row(name, s) for name, s in report.judges.items()]
    if report.verdict is not None:
        rows.append(_row("(verdict)", report.verdict))
    if rows:
        lines += table(_HEADERS, rows).splitlines()
    if report.gates:
        lines.append("gates:")
        lines.extend(gate_line(g) for g in report.gates)
        failed = sum(not g.passed for g in report.gates)
        lines.append(
            f"agentjudge gates FAILED ({failed} of {len(report.gates)}): the session fails"
            if failed
            else "agentjudge gates passed"
        )
    return lines

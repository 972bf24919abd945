"""Gates: parsing, evaluation, and failing on undefined values."""

from __future__ import annotations

import pytest

from agentjudge.harness import CasesSummary, JudgeSummary
from agentjudge.harness._gates import parse_gate, resolve_gate_subjects


def judge_summary(mean: float | None = 0.8, pass_rate: float | None = 0.75) -> JudgeSummary:
    return JudgeSummary(
        mean=mean,
        pass_rate=pass_rate,
        counts={"pass": 3, "fail": 1, "abstain": 2, "error": 1},
        ci95=None if mean is None else (0.6, 0.9),
        scored=4,
    )


CASES = CasesSummary(total=10, errors=1, error_rate=0.1)


def test_parse_splits_subject_stat_op_number() -> None:
    """A gate splits into judge, stat, operator and threshold; spaces are allowed."""
    gate = parse_gate(" citation_precision.mean >= 0.9 ")
    assert (gate.subject, gate.stat, gate.op, gate.threshold) == (
        "citation_precision",
        "mean",
        ">=",
        0.9,
    )
    assert gate.expr == "citation_precision.mean >= 0.9"


def test_dotted_judge_names_use_the_last_dot() -> None:
    """Judge names may contain dots and colons; the stat follows the last dot."""
    gate = parse_gate("openai:gpt-4o.v2.pass_rate<0.5")
    assert (gate.subject, gate.stat, gate.op) == ("openai:gpt-4o.v2", "pass_rate", "<")


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("mean>=0.9", "is not <judge>.<stat>"),
        ("x.mean=>0.9", "expected <judge>.<stat><op><number>"),
        ("x.mean>=high", "'high' is not a number"),
        ("x.mean>=nan", "finite"),
        (
            "x.median>=0.5",
            "unknown stat 'median' for a judge (did you mean 'mean'?); valid: mean, pass_rate",
        ),
        ("errors.mean<=0.1", "unknown stat 'mean' for errors; valid: rate, count"),
        ("x.mean", "expected <judge>.<stat><op><number>"),
    ],
)
def test_malformed_gates_explain_themselves(expr: str, fragment: str) -> None:
    """Malformed gates raise ValueError naming the problem and the valid choices."""
    with pytest.raises(ValueError, match="gate") as info:
        parse_gate(expr)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("expr", "value", "passed"),
    [
        ("j.mean>=0.8", 0.8, True),
        ("j.mean>0.8", 0.8, False),
        ("j.mean<=0.8", 0.8, True),
        ("j.mean<0.9", 0.8, True),
        ("j.mean==0.8", 0.8, True),
        ("j.pass_rate>=0.8", 0.75, False),
        ("j.ci95_low>=0.6", 0.6, True),
        ("j.ci95_high<=0.9", 0.9, True),
        ("j.count==7", 7.0, True),
        ("j.error<=0", 1.0, False),
        ("j.abstain==2", 2.0, True),
        ("errors.rate<=0.1", 0.1, True),
        ("errors.count<1", 1.0, False),
        ("cases.total>=10", 10.0, True),
        ("verdict.mean>=0.5", 0.8, True),
    ],
)
def test_evaluate_compares_the_measured_value(expr: str, value: float, passed: bool) -> None:
    """The outcome carries the measured value and whether the comparison held."""
    outcome = parse_gate(expr).evaluate({"j": judge_summary()}, judge_summary(), CASES)
    assert outcome.value == pytest.approx(value)
    assert outcome.passed is passed


def test_undefined_values_fail_the_gate() -> None:
    """No scored judgment, no cases, or a judge that never ran: the gate fails, value None."""
    empty = judge_summary(mean=None, pass_rate=None)
    no_cases = CasesSummary(total=0, errors=0, error_rate=None)
    for expr in ("j.mean>=0", "j.mean<=1", "j.pass_rate>=0", "j.ci95_low>=0"):
        outcome = parse_gate(expr).evaluate({"j": empty}, None, CASES)
        assert (outcome.value, outcome.passed) == (None, False)
    outcome = parse_gate("errors.rate<=1").evaluate({}, None, no_cases)
    assert (outcome.value, outcome.passed) == (None, False)
    outcome = parse_gate("late_tier_judge.mean>=0").evaluate({}, None, CASES)
    assert (outcome.value, outcome.passed) == (None, False)
    outcome = parse_gate("verdict.mean>=0").evaluate({}, None, CASES)
    assert (outcome.value, outcome.passed) == (None, False)


def test_unknown_judge_is_refused_with_valid_names() -> None:
    """A gate naming no configured judge lists the judges and the reserved subjects."""
    gates = [parse_gate("correctnes.mean>=0.9")]
    with pytest.raises(ValueError) as info:
        resolve_gate_subjects(gates, ["correctness", "faithfulness"])
    assert str(info.value) == (
        "gate 'correctnes.mean>=0.9': unknown judge 'correctnes' (did you mean 'correctness'?); "
        "valid: correctness, faithfulness, verdict, errors, cases, cost"
    )
    resolve_gate_subjects([parse_gate("errors.rate<=0"), parse_gate("verdict.mean>=0")], [])


def test_gate_subjects_match_judge_names_ignoring_case_when_unambiguous() -> None:
    """'Correctness.mean' gates the judge 'correctness'; two names differing in case refuse."""
    gates, notes = resolve_gate_subjects([parse_gate("Correctness.mean>=0.9")], ["correctness"])
    assert (gates[0].subject, gates[0].expr, notes) == (
        "correctness",
        "Correctness.mean>=0.9",
        [],
    )
    with pytest.raises(ValueError, match="matches 'Exact', 'exact' ignoring case"):
        resolve_gate_subjects([parse_gate("EXACT.mean>=0.9")], ["Exact", "exact"])


def test_optional_gates_on_missing_judges_are_skipped_with_a_note() -> None:
    """A suite's gate on a judge the replaced judge set lacks is skipped and said so."""
    gates, notes = resolve_gate_subjects(
        [parse_gate("old.mean>=0.9"), parse_gate("new.mean>=0.5")],
        ["new"],
        optional={"old.mean>=0.9", "new.mean>=0.5"},
    )
    assert [g.expr for g in gates] == ["new.mean>=0.5"]
    assert notes == [
        "gate 'old.mean>=0.9' skipped: this run has no judge 'old' (the gate is the suite's, "
        "and the judges were replaced)"
    ]


def test_unknown_stats_suggest_the_closest() -> None:
    """A misspelt stat names the closest valid one."""
    with pytest.raises(ValueError, match=r"unknown stat 'meen' for a judge \(did you mean 'mean'"):
        parse_gate("correctness.meen>=0.9")

"""Gates, report and compare on agreement: judge.agreement.* and <jury>.inter_judge.* paths."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.harness import Suite, render_compare, render_report, run_suite
from agentjudge.harness._gates import parse_gate

JUDGES = """
from agentjudge import Judgment

def _answer(ctx, name):
    return Judgment.passed("p") if ctx.input[name] == "pass" else Judgment.failed("f")

def a(ctx):
    return _answer(ctx, "a")

def b(ctx):
    return _answer(ctx, "b")

pair = [a, b]
"""

ROWS = [
    ({"a": "pass", "b": "pass"}, True),
    ({"a": "fail", "b": "fail"}, False),
    ({"a": "pass", "b": "fail"}, True),
    ({"a": "fail", "b": "fail"}, False),
]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def run(tmp_path: Path, out: str, gates: list[str], *, labelled: bool = True) -> Any:
    rows = [
        {"id": f"q{i}", "input": x, **({"human": h} if labelled else {})}
        for i, (x, h) in enumerate(ROWS)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (tmp_path / "task.py").write_text("def echo(case):\n    return 1\n", "utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), "utf-8")
    suite = Suite(
        dataset=Path("data.jsonl"),
        task="task.py:echo",
        judges="judges.py:pair",
        base_dir=tmp_path,
        gates=gates,
    )
    return anyio.run(lambda: run_suite(suite, out=tmp_path / out))


def test_agreement_gates_read_the_summary(tmp_path: Path) -> None:
    """judge, verdict and jury agreement gates compare the measured values."""
    summary = run(
        tmp_path,
        "out",
        [
            "a.agreement.cohen_kappa>=0.99",
            "b.agreement.accuracy>=0.9",
            "b.agreement.n==4",
            "verdict.agreement.accuracy_ci95_low>0",
            "jury.inter_judge.pairwise_min>=0.75",
            "jury.inter_judge.fleiss_kappa>0.4",
        ],
    )
    outcome = {g.expr: (g.value, g.passed) for g in summary.gates}
    assert outcome["a.agreement.cohen_kappa>=0.99"] == (1.0, True)
    assert outcome["b.agreement.accuracy>=0.9"] == (0.75, False)
    assert outcome["b.agreement.n==4"] == (4.0, True)
    assert outcome["verdict.agreement.accuracy_ci95_low>0"][1] is True
    assert outcome["jury.inter_judge.pairwise_min>=0.75"] == (0.75, True)
    assert outcome["jury.inter_judge.fleiss_kappa>0.4"][1] is True
    assert summary.passed is False


def test_agreement_gate_without_labels_fails_with_a_reason(tmp_path: Path) -> None:
    """No human label anywhere: the agreement gate fails and says why (never vacuous)."""
    summary = run(tmp_path, "out", ["a.agreement.cohen_kappa>=0"], labelled=False)
    [first] = summary.gates
    assert (first.value, first.passed) == (None, False)
    assert "no results row carries a human label" in first.model_extra["reason"]
    report = render_report(tmp_path / "out")
    assert "FAIL  a.agreement.cohen_kappa>=0  (value -)  no results row carries" in report


def test_a_gate_on_an_unknown_jury_is_refused_before_any_case_runs(tmp_path: Path) -> None:
    """A typo in a jury gate stops the run at start (exit 2), naming the run's juries."""
    from agentjudge.harness import RunConfigError

    with pytest.raises(
        RunConfigError, match=r"unknown jury 'juri' \(did you mean 'jury'\?\); juries: jury"
    ):
        run(tmp_path, "out", ["juri.inter_judge.krippendorff_alpha>=0.67"])
    assert not (tmp_path / "out" / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (
            "a.agreement.kappa>=0.6",
            r"unknown agreement stat 'kappa' \(did you mean 'cohen_kappa'\?\); valid: n, accuracy",
        ),
        ("jury.inter_judge.mean>=0.6", "unknown inter_judge stat 'mean'; valid: n, fleiss_kappa"),
    ],
)
def test_unknown_agreement_stats_are_refused(expr: str, message: str) -> None:
    """A typo in an agreement stat is a parse error listing the valid stats."""
    with pytest.raises(ValueError, match=message):
        parse_gate(expr)


def test_dotted_paths_parse_into_subject_and_stat() -> None:
    """The judge (which may contain dots) comes before .agreement / .inter_judge."""
    gate = parse_gate("my.judge.agreement.cohen_kappa>=0.6")
    assert (gate.subject, gate.stat, gate.threshold) == ("my.judge", "agreement.cohen_kappa", 0.6)
    gate = parse_gate("jury.inter_judge.krippendorff_alpha>=0.67")
    assert (gate.subject, gate.stat) == ("jury", "inter_judge.krippendorff_alpha")


def test_report_and_compare_show_agreement_with_n(tmp_path: Path) -> None:
    """report lists agreement with n and Wilson CI; compare shows the change between runs."""
    run(tmp_path, "one", [])
    run(tmp_path, "two", [], labelled=False)
    report = render_report(tmp_path / "one")
    assert "agreement with human labels" in report
    assert "agreement among jury members" in report
    assert "a ~ b: 0.750 (n 4) [0.301, 0.954]" in report
    compare = render_compare(tmp_path / "one", tmp_path / "two")
    assert "agreement with human labels (A -> B):" in compare
    lines = compare.splitlines()
    row = next(line for line in lines if line.startswith("a ") and "1.000" in line)
    assert row.split()[:3] == ["a", "4", "-"]

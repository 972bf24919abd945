"""Runs that cannot be trusted fail; Wilson intervals for rates; per-judge flips and their gates."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_support import cli

from agentjudge.agreement import wilson_interval
from agentjudge.harness import RunConfigError, Suite, render_compare, render_report, run_suite
from agentjudge.harness._summary import RunAggregate

JUDGES = """
from agentjudge import Judgment

def exact(ctx):
    return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("differs")

def broken(ctx):
    raise RuntimeError("judge bug")

def unsure(ctx):
    return Judgment.abstained("cannot tell")

def graded(ctx):
    return Judgment.from_score(0.25 + 0.5 * (int(ctx.metadata["case_id"][1:]) % 3) / 2)

def yes(ctx):
    return True

def picky(ctx):
    return ctx.output == "y"

exact_only = [exact]
with_broken = [exact, broken]
abstaining = [unsure]
scored = [graded]
trio = {"yes": yes, "also_yes": yes, "picky": picky}
"""

TASK = """
import anyio

def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    return case.input.upper()

async def hang(case):
    await anyio.Event().wait()

def y(case):
    return "y"

def x(case):
    return "x"
"""


def make_project(
    folder: Path, n: int = 4, inputs: list[str] | None = None, suite: str = ""
) -> Path:
    inputs = inputs or [f"w{i}" for i in range(n)]
    rows = [{"id": f"q{i}", "input": v, "expected": v.upper()} for i, v in enumerate(inputs)]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "task.py").write_text(textwrap.dedent(TASK))
    (folder / "judges.py").write_text(textwrap.dedent(JUDGES))
    base = 'dataset = "data.jsonl"\ntask = "task:answer"\njudges = "judges:exact_only"\n'
    (folder / "agentjudge.toml").write_text(base + textwrap.dedent(suite))
    return folder


def run(folder: Path, out: str = "out", **settings: Any) -> Any:
    suite = Suite(
        dataset=Path("data.jsonl"),
        task=settings.pop("task", "task.py:answer"),
        judges=settings.pop("judges", "judges.py:exact_only"),
        base_dir=folder,
        **settings,
    )
    return anyio.run(lambda: run_suite(suite, out=folder / out, overwrite=True))


# ----------------------------------------------------------------------------- item 4: trust
def test_all_task_errors_fail_the_run_without_gates(tmp_path: Path) -> None:
    """Every task erroring: exit 1 with a message, gates or not; summary records the check."""
    project = make_project(tmp_path, inputs=["boom"] * 3)
    proc = cli(project, "run", "--out", "out", "--progress", "off")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no case produced a judged (PASS/FAIL) result" in proc.stdout
    assert "the task errored or timed out on every case (3 of 3)" in proc.stdout
    assert "result: FAILED: the run cannot be trusted (judged_cases)" in proc.stdout
    summary = json.loads((project / "out" / "summary.json").read_text())
    assert summary["passed"] is False and summary["gates"] == []
    check = next(c for c in summary["checks"] if c["name"] == "judged_cases")
    assert (check["passed"], check["value"], check["enforced"]) == (False, 0, True)


def test_all_tasks_timing_out_fail_the_run(tmp_path: Path) -> None:
    """Every task timing out is a run with no judged case: exit 1 even with a passing gate."""
    project = make_project(tmp_path, n=2)
    proc = cli(
        project,
        "run",
        "--out",
        "out",
        "--task",
        "task:hang",
        "--task-timeout",
        "0.2",
        "--gate",
        "cases.total>=2",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "PASS  cases.total>=2" in proc.stdout
    assert "no case produced a judged (PASS/FAIL) result" in proc.stdout


def test_allow_errors_keeps_the_old_outcome_and_reports_the_check(tmp_path: Path) -> None:
    """--allow-errors (or allow_errors = true) exits 0 but still records the failed check."""
    project = make_project(tmp_path, inputs=["boom"] * 2)
    proc = cli(project, "run", "--out", "out", "--allow-errors", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["judged_cases"]["passed"] is False
    assert checks["judged_cases"]["enforced"] is False
    make_project(tmp_path, inputs=["boom"] * 2, suite="allow_errors = true\n")
    again = cli(project, "run", "--out", "out2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "FAIL (allowed)  judged_cases" in again.stdout


def test_a_judge_that_always_errors_fails_the_run(tmp_path: Path) -> None:
    """One judge erroring on every case fails the run naming it, while the others judge fine."""
    summary = run(make_project(tmp_path), judges="judges.py:with_broken")
    assert summary.passed is False
    check = next(c for c in summary.checks if c.name == "judge_errors")
    assert not check.passed and check.value == 1
    assert "every judgment errored for judge 'broken' (4 of 4)" in check.message
    assert next(c for c in summary.checks if c.name == "judged_cases").passed


def test_only_abstentions_fail_the_run(tmp_path: Path) -> None:
    """A run whose judges only abstain has no judged case and fails."""
    summary = run(make_project(tmp_path), judges="judges.py:abstaining")
    assert summary.passed is False
    check = next(c for c in summary.checks if c.name == "judged_cases")
    assert "every judgment of the 4 judged cases was ABSTAIN, ERROR or unsampled" in check.message


def test_a_healthy_run_passes_its_checks(tmp_path: Path) -> None:
    """A run with judged cases and no always-erroring judge passes, and says why."""
    summary = run(make_project(tmp_path, inputs=["a", "boom"]))
    assert summary.passed is True
    assert [(c.name, c.passed, c.value) for c in summary.checks] == [
        ("judged_cases", True, 1),
        ("judge_errors", True, 0),
    ]


def test_trust_checks_hold_across_worker_processes(tmp_path: Path) -> None:
    """workers = 2 counts judged cases from every worker (merged aggregates)."""
    project = make_project(tmp_path, inputs=["boom", "boom", "a", "b"])
    summary = run(project, workers=2)
    assert summary.passed is True
    assert next(c for c in summary.checks if c.name == "judged_cases").value == 2
    failing = run(make_project(tmp_path, inputs=["boom"] * 4), out="out2", workers=2)
    assert failing.passed is False


# ----------------------------------------------------------------------------- item 26: Wilson
def test_all_pass_sample_gets_a_wilson_interval_not_a_point(tmp_path: Path) -> None:
    """30 passes out of 30: ci95 is Wilson's [0.886, 1.0], so a ci95_low>=0.9 gate fails."""
    project = make_project(tmp_path, n=30)
    summary = run(project, gates=["exact.ci95_low>=0.9"])
    exact = summary.judges["exact"]
    assert exact.ci_method == "wilson"
    assert exact.ci95 == wilson_interval(30, 30)
    assert exact.ci95[0] == pytest.approx(0.8865, abs=1e-4)
    assert exact.pass_rate_ci95 == wilson_interval(30, 30) and exact.pass_rate_n == 30
    assert summary.gates[0].passed is False and summary.passed is False
    report = render_report(project / "out")
    assert "wilson" in report and "[0.886, 1.000]" in report


def test_pass_rate_interval_counts_only_pass_and_fail(tmp_path: Path) -> None:
    """pass_rate_ci95 is Wilson over PASS / (PASS + FAIL), with its n; gates can read it."""
    project = make_project(tmp_path, inputs=["a", "b", "boom"])
    (project / "judges.py").write_text(
        textwrap.dedent(JUDGES)
        + "\ndef half(ctx):\n"
        + "    return ctx.output == 'A'\n"
        + "pair = [half, unsure]\n"
    )
    summary = run(project, judges="judges.py:pair", gates=["half.pass_rate_ci95_high<=0.95"])
    half = summary.judges["half"]
    assert (half.pass_rate, half.pass_rate_n) == (0.5, 2)
    assert half.pass_rate_ci95 == wilson_interval(1, 2)
    assert summary.gates[0].value == pytest.approx(wilson_interval(1, 2)[1])
    assert summary.judges["unsure"].pass_rate_ci95 is None


def test_continuous_scores_keep_the_bootstrap(tmp_path: Path) -> None:
    """Scores other than 0/1 keep the bootstrap interval of the mean, and say so."""
    summary = run(make_project(tmp_path, n=6), judges="judges.py:scored")
    graded = summary.judges["graded"]
    assert graded.ci_method == "bootstrap"
    assert graded.ci95 is not None and graded.ci95[0] < graded.ci95[1]


def test_merged_aggregates_give_the_same_intervals() -> None:
    """Merging two shares of the rows gives the intervals and methods of one aggregate."""

    def row(i: int) -> dict[str, Any]:
        status = "pass" if i % 3 else "fail"
        score = {"score": 0.3} if i % 7 == 0 else {}
        return {
            "id": str(i),
            "results": [
                {"name": "b", "judgment": {"status": status}},
                {"name": "c", "judgment": {"status": status, **score}},
            ],
            "verdict": {"status": status},
            "error": None,
        }

    whole, left, right = RunAggregate(["b", "c"]), RunAggregate(["b", "c"]), RunAggregate()
    for i in range(40):
        whole.add_row(row(i))
        (left if i < 17 else right).add_row(row(i))
    left.merge(right)
    assert left.judge_summaries() == whole.judge_summaries()
    assert left.judged == whole.judged == 40
    methods = {name: s.ci_method for name, s in left.judge_summaries().items()}
    assert methods == {"b": "wilson", "c": "bootstrap"}


def test_worker_processes_report_wilson_intervals(tmp_path: Path) -> None:
    """workers = 2 gives the same per-judge intervals and methods as one process."""
    project = make_project(tmp_path, n=12)
    one = run(project, out="one")
    two = run(project, out="two", workers=2)
    assert two.judges == one.judges
    assert two.judges["exact"].ci_method == "wilson"


# ----------------------------------------------------------------------------- item 27: flips
def _flip_runs(project: Path, **settings: Any) -> Any:
    """Baseline: picky fails everywhere; now: picky passes everywhere; the verdict stays PASS."""
    base = run(project, out="base", task="task.py:x", judges="judges.py:trio")
    assert base.verdict.counts["pass"] == 4
    return run(
        project,
        out="new",
        task="task.py:y",
        judges="judges.py:trio",
        baseline=project / "base" / "summary.json",
        **settings,
    )


def test_judge_flips_are_counted_when_the_verdict_does_not_change(tmp_path: Path) -> None:
    """4 cases FAIL -> PASS on one judge: its flips are 4 although no verdict flipped."""
    summary = _flip_runs(make_project(tmp_path))
    baseline = summary.baseline
    assert (baseline.flipped_count, baseline.fixed_count) == (0, 0)
    picky = baseline.judges["picky"]
    assert (picky.flips, picky.newly_failing, picky.newly_passing) == (4, 0, 4)
    assert [(f.id, f.before, f.after) for f in picky.flipped_cases][:2] == [
        ("q0", "fail", "pass"),
        ("q1", "fail", "pass"),
    ]
    assert baseline.judges["yes"].flips == 0
    assert "picky: " in render_report(tmp_path / "new")
    assert "flips 4 (0 pass -> not pass, 4 not pass -> pass)" in render_report(tmp_path / "new")


def test_flips_gates_fail_and_pass(tmp_path: Path) -> None:
    """Gates <judge>.flips / newly_failing / newly_passing and verdict.flips decide the run."""
    summary = _flip_runs(
        make_project(tmp_path),
        gates=["picky.flips<=2", "picky.newly_failing==0", "verdict.flips==0", "yes.flips==0"],
    )
    assert [(g.expr, g.value, g.passed) for g in summary.gates] == [
        ("picky.flips<=2", 4.0, False),
        ("picky.newly_failing==0", 0.0, True),
        ("verdict.flips==0", 0.0, True),
        ("yes.flips==0", 0.0, True),
    ]
    assert summary.passed is False


def test_flips_gates_need_a_baseline(tmp_path: Path) -> None:
    """A flips gate without a baseline is a configuration error before anything runs."""
    with pytest.raises(RunConfigError, match="compares with a baseline run"):
        run(make_project(tmp_path), gates=["exact.flips<=2"])


def test_flips_gates_fail_when_the_baseline_rows_are_missing(tmp_path: Path) -> None:
    """Without the baseline's results.jsonl the flips are undefined and the gate fails."""
    project = make_project(tmp_path)
    run(project, out="base")
    (project / "base" / "results.jsonl").unlink()
    summary = run(
        project, out="new", baseline=project / "base" / "summary.json", gates=["exact.flips<=9"]
    )
    assert (summary.gates[0].value, summary.gates[0].passed) == (None, False)
    assert summary.baseline.judges["exact"].flips is None


def test_compare_reports_flips_per_judge_and_exits_0(tmp_path: Path) -> None:
    """compare lists each judge's flips even when no verdict changed."""
    project = make_project(tmp_path)
    _flip_runs(project)
    proc = cli(project, "compare", "base", "new")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "flipped pass -> not pass (A -> B): 0" in lines
    assert any(line.split() == ["picky", "4", "0", "4"] for line in lines)
    assert any(line.split() == ["yes", "0", "0", "0"] for line in lines)
    assert "    q3: fail -> pass" in lines  # under "  picky not pass -> pass: 4"
    assert render_compare(project / "base", project / "new") == proc.stdout.rstrip("\n")

"""The real `agentjudge` entry point in its own process: exit codes, messages, resume, reports."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from cli_support import CliRun, cli, start_cli

TASK = """
import os, signal

def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    if case.input == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
    if case.input == "exit":
        raise SystemExit(5)
    return case.input.upper()

def wrong(case):
    return "wrong"
"""

JUDGES = """
from agentjudge import Judgment

def exact(ctx):
    return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("differs")

def nonempty(ctx):
    return bool(ctx.output)

judges = [exact, nonempty]
"""

SUITE = """
dataset = "data.jsonl"
task = "task:answer"
judges = "judges:judges"
concurrency = 2
gates = ["exact.mean>=0.5", "errors.rate<=0.5"]
"""


def rows(n: int = 4, extra: list[dict[str, object]] | None = None) -> list[dict[str, object]]:
    out: list[dict[str, object]] = [
        {
            "id": f"q{i}",
            "input": f"w{i}",
            "expected": f"W{i}",
            "metadata": {"tags": ["even" if i % 2 == 0 else "odd"]},
        }
        for i in range(n)
    ]
    return out + (extra or [])


# The module fixtures' runs are shared by the tests that read them: those tests are one xdist
# group, so one worker makes each run (xdist hands out ungrouped tests one by one, and each
# worker would make a module fixture's runs again).
SHARED = pytest.mark.xdist_group("harness-cli-shared-runs")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture(scope="module")
def passed(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One passing run of the default project into ``out`` (read-only for the tests that share
    it: they write their own output folders next to it); its folder and process."""
    folder = make_project(tmp_path_factory.mktemp("passed"))
    return folder, cli(folder, "run", "--out", "out", "--progress", "plain")


def write_rows(path: Path, data: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")


def result_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text("utf-8").splitlines() if line]


@SHARED
def test_exit_0_when_gates_pass(passed: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """A passing run exits 0, prints the table and writes both files."""
    project, proc = passed
    assert proc.returncode == 0, proc.stderr
    assert "exact" in proc.stdout and "result: PASSED" in proc.stdout
    assert "PASS  exact.mean>=0.5" in proc.stdout
    assert "agentjudge: 4/4 cases done" in proc.stderr
    assert sorted(result_ids(project / "out" / "results.jsonl")) == ["q0", "q1", "q2", "q3"]
    summary = json.loads((project / "out" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["passed"] is True


def test_exit_1_when_a_gate_fails(project: Path) -> None:
    """A failing --gate (added to the suite's) exits 1 and says which gate failed."""
    proc = cli(
        project, "run", "--out", "out", "--gate", "nonempty.pass_rate>1", "--progress", "off"
    )
    assert proc.returncode == 1, proc.stderr
    assert "FAIL  nonempty.pass_rate>1  (value 1.0000)" in proc.stdout
    assert "result: FAILED" in proc.stdout


def test_exit_1_when_errors_exceed_the_gate(project: Path) -> None:
    """Task errors count against errors.rate and are never scored."""
    write_rows(project / "data.jsonl", rows(2, [{"id": "x", "input": "boom"}] * 1))
    proc = cli(project, "run", "--out", "out", "--gate", "errors.rate<=0.1", "--json")
    assert proc.returncode == 1
    summary = json.loads(proc.stdout)
    assert summary["cases"] == {"total": 3, "errors": 1, "error_rate": pytest.approx(1 / 3)}
    assert summary["judges"]["exact"]["counts"]["pass"] == 2


# The exit-2 scenarios start one process each; they run concurrently (module fixture below)
# and each is still its own test.
BAD_ROWS: list[tuple[str, str]] = [
    (
        '{"id": "a", "input": 1}\n\n{"input": 2}\n',
        "data.jsonl line 3: missing required field 'id'",
    ),
    (
        '{"id": "a", "input": 1}\n{"id": "a", "input": 2}\n',
        "data.jsonl line 2: duplicate id 'a'",
    ),
    ('{"id": "a", "input": 1,}\n', "data.jsonl line 1, column 24: invalid JSON"),
    ('{"id": "a"}\n', "data.jsonl line 1 (id 'a'): missing required field 'input'"),
    ("# no case yet\n\n", "dataset data.jsonl is empty: no line holds a case"),
]

BAD_CONFIG: list[tuple[list[str], str | None, str]] = [
    (
        ["--task", "task:answer", "--judges", "judges:judges"],
        None,
        "no suite: ./agentjudge.toml was not found in ",
    ),
    (["--dataset", "data.jsonl", "--judges", "judges:judges"], None, ") or --task M:F\n"),
    (["--dataset", "data.jsonl", "--task", "task:answer"], None, ") or --judges M:A\n"),
    ([], "concurency = 3\n", "line 1: unknown setting 'concurency' (did you mean 'concurrency'?)"),
    (
        ["--concurency", "3"],
        SUITE,
        "unrecognized arguments: --concurency (did you mean '--concurrency'?)",
    ),
    (["--prices", "nope.json"], SUITE, "error: --prices nope.json: "),
    (
        [],
        'dataset = "missing.jsonl"\ntask = "task:answer"\njudges = "judges:judges"\n',
        "dataset file not found: missing.jsonl",
    ),
    (["--task", "task:nope"], SUITE, "module 'task' has no attribute 'nope'"),
    (["--judges", "nojudges:x"], SUITE, "cannot import module 'nojudges'"),
    (
        ["--gate", "exakt.mean>=1"],
        SUITE,
        "unknown judge 'exakt' (did you mean 'exact'?); valid: exact, nonempty",
    ),
    (["--gate", "exact.median>=1"], SUITE, "unknown stat 'median'"),
    (["--max-regression", "0.1"], SUITE, "need a baseline"),
    (["--baseline", "nowhere/summary.json"], SUITE, "baseline: summary not found"),
]


def make_project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (folder / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    (folder / "agentjudge.toml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    write_rows(folder / "data.jsonl", rows())
    return folder


@pytest.fixture(scope="module")
def exit2_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int, str]]:
    """Run every exit-2 scenario at once; map scenario id -> (folder, exit code, stderr)."""
    root = tmp_path_factory.mktemp("exit2")
    procs: dict[str, tuple[Path, CliRun]] = {}
    for i, (data, _) in enumerate(BAD_ROWS):
        folder = make_project(root / f"rows{i}")
        (folder / "data.jsonl").write_text(data, encoding="utf-8")
        procs[f"rows{i}"] = (folder, start_cli(folder, "run", "--out", "out"))
    for i, (args, suite, _) in enumerate(BAD_CONFIG):
        folder = make_project(root / f"config{i}")
        if suite is None:
            (folder / "agentjudge.toml").unlink()
        else:
            (folder / "agentjudge.toml").write_text(suite, encoding="utf-8")
        procs[f"config{i}"] = (folder, start_cli(folder, "run", "--out", "out", *args))
    results = {}
    for key, (folder, proc) in procs.items():
        done = proc.wait(timeout=120)
        results[key] = (folder, done.returncode, done.stderr)
    return results


@SHARED
@pytest.mark.parametrize("index", range(len(BAD_ROWS)))
def test_exit_2_on_bad_dataset_rows(
    exit2_runs: dict[str, tuple[Path, int, str]], index: int
) -> None:
    """Malformed rows exit 2 naming the file, the line and the field; nothing runs."""
    folder, code, stderr = exit2_runs[f"rows{index}"]
    assert code == 2, stderr
    assert f"agentjudge: error: {BAD_ROWS[index][1]}" in stderr
    assert not (folder / "out" / "results.jsonl").exists()


@SHARED
@pytest.mark.parametrize("index", range(len(BAD_CONFIG)))
def test_exit_2_on_configuration_errors(
    exit2_runs: dict[str, tuple[Path, int, str]], index: int
) -> None:
    """Missing or invalid settings exit 2 with a message naming the setting."""
    _, code, stderr = exit2_runs[f"config{index}"]
    assert code == 2, stderr
    assert BAD_CONFIG[index][2] in stderr


def test_exit_2_on_usage_errors(project: Path) -> None:
    """argparse usage errors exit 2 too (bad numbers, exclusive flags)."""
    bad = cli(project, "run", "--concurrency", "0")
    assert bad.returncode == 2 and "must be >= 1" in bad.stderr
    both = cli(project, "run", "--resume", "--overwrite")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_exit_2_when_results_exist_without_resume(project: Path) -> None:
    """A second run into the same folder needs --resume or --overwrite."""
    assert cli(project, "run", "--out", "out").returncode == 0
    again = cli(project, "run", "--out", "out")
    assert again.returncode == 2
    assert "already exists: pass --resume to continue that run or --overwrite" in again.stderr
    assert cli(project, "run", "--out", "out", "--overwrite").returncode == 0
    assert len(result_ids(project / "out" / "results.jsonl")) == 4


def test_exit_3_on_interrupt_keeps_a_valid_results_file(project: Path) -> None:
    """Ctrl-C mid-run exits 3; finished rows stay, the summary says aborted; resume finishes."""
    data = rows(6)
    data[3] = {"id": "stop", "input": "interrupt", "expected": "INTERRUPT"}
    write_rows(project / "data.jsonl", data)
    proc = cli(project, "run", "--out", "out", "--concurrency", "1")
    assert proc.returncode == 3, proc.stderr
    assert "run aborted (interrupted)" in proc.stderr
    summary = json.loads((project / "out" / "summary.json").read_text())
    assert summary["status"] == "aborted"
    done = result_ids(project / "out" / "results.jsonl")
    assert "q5" not in done and len(done) == summary["cases"]["total"]
    # the interrupting case would interrupt again; make it harmless, then resume
    data[3] = {"id": "stop", "input": "fine", "expected": "FINE"}
    write_rows(project / "data.jsonl", data)
    resumed = cli(project, "run", "--out", "out", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    ids = result_ids(project / "out" / "results.jsonl")
    assert sorted(ids) == sorted(str(r["id"]) for r in data) and len(ids) == len(set(ids))


def test_exit_3_when_the_task_exits(project: Path) -> None:
    """A task raising SystemExit aborts the run with exit code 3, not the task's code."""
    write_rows(project / "data.jsonl", rows(1, [{"id": "x", "input": "exit"}]))
    proc = cli(project, "run", "--out", "out", "--concurrency", "1")
    assert proc.returncode == 3
    assert "run aborted: TaskInterrupted: the task raised SystemExit: 5" in proc.stderr


def test_resume_after_a_torn_last_line(project: Path) -> None:
    """A crash-torn last line is cut off on --resume; every id ends up exactly once."""
    write_rows(project / "data.jsonl", rows(8))
    assert cli(project, "run", "--out", "out", "--limit", "5").returncode == 0
    results = project / "out" / "results.jsonl"
    lines = results.read_text("utf-8").splitlines(keepends=True)
    results.write_text("".join(lines[:4]) + lines[4][: len(lines[4]) // 2], encoding="utf-8")
    proc = cli(project, "run", "--out", "out", "--resume", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "agentjudge: warning: out/results.jsonl line 5 was cut short" in proc.stderr
    ids = result_ids(results)
    assert sorted(ids) == [f"q{i}" for i in range(8)] and len(ids) == 8
    summary = json.loads(proc.stdout)
    assert summary["cases"]["total"] == 8 and summary["resumed"] is True


@SHARED
def test_baseline_regression_fails_and_lists_flips(
    passed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """A mean drop beyond --max-regression exits 1 and lists the cases that flipped."""
    project, base = passed
    assert base.returncode == 0
    proc = cli(
        project,
        "run",
        "--out",
        "new",
        "--task",
        "task:wrong",
        "--baseline",
        "out/summary.json",
        "--max-regression",
        "0.05",
    )
    assert proc.returncode == 1, proc.stderr
    assert "exact: 1.000 -> 0.000 (-1.000)  REGRESSED" in proc.stdout
    assert "flipped pass -> not pass: 4" in proc.stdout
    assert "q0: pass -> fail" in proc.stdout
    ok = cli(project, "run", "--out", "same", "--baseline", "out", "--max-regression", "0.05")
    assert ok.returncode == 0, ok.stdout


@SHARED
def test_report_prints_judges_and_tag_slices(
    passed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """report shows per-judge stats, gates and per-tag slices."""
    project, run = passed
    assert run.returncode == 0
    proc = cli(project, "report", "out")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert any(line.split()[:3] == ["exact", "1.000", "1.000"] for line in lines)
    assert "by tag:" in proc.stdout
    header = next(line for line in lines if "even" in line and "odd" in line)
    assert header.split() == ["even", "odd"]
    assert any(line.split() == ["cases", "2", "2"] for line in lines)
    missing = cli(project, "report", "nowhere")
    assert missing.returncode == 2 and "summary not found" in missing.stderr


@SHARED
def test_compare_prints_deltas_and_flips_and_exits_0(
    passed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """compare lists per-judge deltas and flipped cases, and always exits 0."""
    project, a = passed
    assert a.returncode == 0
    assert cli(project, "run", "--out", "b", "--task", "task:wrong").returncode == 1
    proc = cli(project, "compare", "out", "b")
    assert proc.returncode == 0, proc.stderr
    assert any(
        line.split()[:4] == ["exact", "1.000", "0.000", "-1.000"]
        for line in proc.stdout.splitlines()
    )
    assert "flipped pass -> not pass (A -> B): 4" in proc.stdout
    assert "  q0: pass -> fail" in proc.stdout


def test_schema_prints_the_row_schema(project: Path) -> None:
    """schema prints the JSON schema of a dataset row."""
    proc = cli(project, "schema")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["required"] == ["id", "input"]

"""CLI polish: --version, help without arguments, suggestions, --judges and the suite's gates,
resuming with another task, ``make run`` printing once, and counts with their noun."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import anyio
import pytest
from cli_support import cli

from agentjudge.harness import Suite, run_suite
from agentjudge.harness._loading import load_object
from agentjudge.harness._progress import ProgressState
from agentjudge.harness._text import plural

ROOT = Path(__file__).resolve().parents[2]

JUDGES = """
from agentjudge import Judgment

def exact(ctx):
    return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("differs")

def nonempty(ctx):
    return bool(ctx.output)

judges = [exact, nonempty]
"""
TASK = """
def answer(case):
    return case.input.upper()

def shout(case):
    return case.input.upper() + "!"
"""
SUITE = """
dataset = "data.jsonl"
task = "task:answer"
judges = "judges:judges"
gates = ["Exact.mean>=0.5", "nonempty.mean>=0.5"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    (tmp_path / "agentjudge.toml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    rows = [{"id": f"q{i}", "input": f"w{i}", "expected": f"W{i}"} for i in range(3)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return tmp_path


def test_version_and_help_without_arguments(tmp_path: Path) -> None:
    """--version prints the version (exit 0); no arguments prints the whole help (exit 2)."""
    version = cli(tmp_path, "--version")
    assert version.returncode == 0
    assert re.fullmatch(r"agentjudge \S+ \(Python 3\.\d+\.\d+\)\n", version.stdout)
    bare = cli(tmp_path)
    assert bare.returncode == 2
    assert "usage: agentjudge" in bare.stderr
    assert "calibrate" in bare.stderr  # every command is listed, not just the usage line
    assert "Exit codes:" in bare.stderr


def test_unknown_commands_and_import_targets_suggest_the_closest(project: Path) -> None:
    """A misspelt command, module or attribute names the closest existing one."""
    wrong = cli(project, "rn")
    assert wrong.returncode == 2
    assert "(did you mean 'run'?)" in wrong.stderr
    with pytest.raises(ValueError, match=r"no attribute 'answr' \(did you mean 'answer'\?\)"):
        load_object("task:answr", what="task", base_dir=project)
    with pytest.raises(ValueError, match=r"cannot import module 'tsk' \(did you mean 'task'\?\)"):
        load_object("tsk:answer", what="task", base_dir=project)


def test_gates_match_judges_ignoring_case_and_judges_flag_skips_the_suites_gates(
    project: Path,
) -> None:
    """'Exact.mean' gates 'exact'; with --judges the suite's gates on gone judges are skipped."""
    first = cli(project, "run", "--out", "a", "--progress", "off", "--quiet")
    assert first.returncode == 0, first.stderr
    summary = json.loads((project / "a" / "summary.json").read_text("utf-8"))
    assert [g["expr"] for g in summary["gates"]] == ["Exact.mean>=0.5", "nonempty.mean>=0.5"]
    other = cli(project, "run", "--out", "b", "--progress", "off", "--judges", "judges:nonempty")
    assert other.returncode == 0, other.stderr
    assert (
        "agentjudge: warning: gate 'Exact.mean>=0.5' skipped: this run has no judge 'Exact' "
        "(the gate is the suite's, and the judges were replaced)"
    ) in other.stderr
    summary = json.loads((project / "b" / "summary.json").read_text("utf-8"))
    assert [g["expr"] for g in summary["gates"]] == ["nonempty.mean>=0.5"]
    flagged = cli(
        project, "run", "--out", "c", "--judges", "judges:nonempty", "--gate", "ex.mean>0"
    )
    assert flagged.returncode == 2
    assert "unknown judge 'ex'" in flagged.stderr  # a gate given as a flag is never skipped


def test_resuming_with_another_task_warns(project: Path) -> None:
    """Resuming a results file written by another task says so, as a changed dataset does."""
    suite = Suite(
        dataset=Path("data.jsonl"),
        task="task:answer",
        judges="judges:judges",
        limit=1,
        base_dir=project,
    )
    anyio.run(lambda: run_suite(suite, out=project / "o"))
    shout = suite.with_overrides(task="task:shout", limit=2)
    again = anyio.run(lambda: run_suite(shout, out=project / "o", resume=True))
    assert (
        "resuming a run that used another task ('task:answer' then, 'task:shout' now); "
        "the summary covers rows of both"
    ) in again.warnings
    same = anyio.run(lambda: run_suite(shout, out=project / "o", resume=True))
    assert not any("another task" in w for w in same.warnings)


def test_make_run_prints_its_table_once(project: Path) -> None:
    """`make run` runs quietly and then prints the report; --quiet prints no summary table."""
    recipe = (ROOT / "Makefile").read_text("utf-8").split("\nrun:", 1)[1].split("\n\n", 1)[0]
    commands = [line.strip() for line in recipe.splitlines()[1:]]
    assert len(commands) == 2
    assert "agentjudge run " in commands[0] and "--quiet" in commands[0]
    assert "agentjudge report " in commands[1]
    quiet = cli(project, "run", "--out", "q", "--progress", "off", "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "results: q/results.jsonl\nsummary: q/summary.json\n"


def test_counts_agree_with_their_noun() -> None:
    """'1 error', never '1 errors', in progress lines and messages."""
    assert [plural(n, "error") for n in (0, 1, 2)] == ["0 errors", "1 error", "2 errors"]
    state = ProgressState(3)
    state.done, state.errors = 2, 1
    assert ", 1 error, " in state.line()

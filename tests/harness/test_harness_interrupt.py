"""Ctrl-C at each point of a CLI run: exit 3 and an "aborted" summary, or a completed run.

The rule (docs/reference/cli.md, exit codes): a run that SIGINT reaches before it starts
writing its final summary is aborted (exit 3, every finished row kept, summary "aborted",
``--resume`` goes on); once that write has begun the run has completed, and the signal changes
nothing but a note on stderr. The task module below sends the signal itself at one chosen
point of the run (``INTERRUPT_AT``), from the thread or task that is there at that moment, so
each window is hit every time, whatever the load.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from cli_support import cli, ignore_sigint
from test_harness_cli import make_project, result_ids, rows, write_rows

from agentjudge.harness import load_suite, run_suite
from agentjudge.harness._writer import SpaceReserve, SummaryFile

HOOKS = """
import os, signal, threading
from agentjudge.harness import _run, _writer

AT = os.environ.get("INTERRUPT_AT", "")
SENT = threading.Event()

def interrupt():
    os.kill(os.getpid(), signal.SIGINT)
    SENT.set()

def hook(owner, name, when):
    original = getattr(owner, name)
    fired = []
    def hooked(*args):
        if not fired and when(*args):
            fired.append(True)
            interrupt()
        return original(*args)
    setattr(owner, name, hooked)

if AT == "before-first-case":  # the "running" summary is built just before it is written
    hook(_run._Run, "summary", lambda run, status: status == "running")
elif AT == "writer-flush":  # on the writer's thread, as it appends the first rows
    hook(_writer.ResultsWriter, "write", lambda writer, lines: True)
elif AT == "after-last-case":  # every row written; the final summary is being computed
    hook(_run._Run, "summary", lambda run, status: status == "completed")
elif AT == "summary-write":  # on the thread writing the final summary
    hook(_writer.SummaryFile, "write", lambda file, text, version: '"completed"' in text)
elif AT == "after-summary":  # the summary is written; the run tidies up
    hook(_writer.SpaceReserve, "release", lambda reserve: True)
elif AT == "twice":  # Ctrl-C, and again once the first one was seen, on the writer's thread
    def twice(writer, lines):
        interrupt()
        while signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            pass  # the first one was seen when the run puts Python's handler back
        interrupt()
        return False
    hook(_writer.ResultsWriter, "write", twice)

def answer(case):
    if AT == "sync-task" and case.input == "w3":  # on the task's worker thread
        interrupt()
    if AT == "writer-flush" and case.input != "w0":
        # no case after the first ends before the writer has taken the first rows (and sent
        # the signal): else a loaded machine could finish all six first (every row kept)
        SENT.wait(60)
    return case.input.upper()
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = make_project(tmp_path)
    (folder / "task.py").write_text(textwrap.dedent(HOOKS), encoding="utf-8")
    write_rows(folder / "data.jsonl", rows(6))
    return folder


def run_at(
    project: Path, window: str, *args: str, prepare: Callable[[], object] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INTERRUPT_AT": window}
    return cli(
        project, "run", "--out", "out", "--concurrency", "1", *args, env=env, prepare=prepare
    )


def summary_of(project: Path) -> dict[str, object]:
    return json.loads((project / "out" / "summary.json").read_text("utf-8"))  # type: ignore[no-any-return]


def assert_resume_finishes(project: Path) -> None:
    resumed = run_at(project, "", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    ids = result_ids(project / "out" / "results.jsonl")
    assert sorted(ids) == [f"q{i}" for i in range(6)]
    assert summary_of(project)["status"] == "completed"


ABORTED = ["before-first-case", "sync-task", "writer-flush", "after-last-case"]


@pytest.mark.parametrize("window", ABORTED)
def test_ctrl_c_before_the_final_summary_aborts_the_run(project: Path, window: str) -> None:
    """Exit 3, "run aborted (interrupted)", summary "aborted" counting every row; resume."""
    proc = run_at(project, window)
    assert proc.returncode == 3, proc.stderr
    assert "agentjudge: run aborted (interrupted); finished cases are kept in" in proc.stderr
    summary = summary_of(project)
    assert summary["status"] == "aborted"
    results = project / "out" / "results.jsonl"
    done = result_ids(results) if window != "before-first-case" else []
    assert window != "before-first-case" or not results.exists()  # no row: no file yet
    assert len(done) == summary["cases"]["total"]  # type: ignore[index]
    expected = {"before-first-case": 0, "after-last-case": 6}
    if window in expected:
        assert len(done) == expected[window]
    else:
        assert 1 <= len(done) < 6
    assert not (project / "out" / ".agentjudge-reserve").exists()
    assert_resume_finishes(project)


@pytest.mark.parametrize("window", ["summary-write", "after-summary"])
def test_ctrl_c_once_the_final_summary_is_written_changes_nothing(
    project: Path, window: str
) -> None:
    """The run completed: its summary stands, the exit code is the gates' (0), a note says so."""
    proc = run_at(project, window)
    assert proc.returncode == 0, proc.stderr
    assert "the run had completed when it was interrupted; its summary stands" in proc.stderr
    assert "result: PASSED" in proc.stdout
    summary = summary_of(project)
    assert summary["status"] == "completed" and summary["cases"]["total"] == 6  # type: ignore[index]
    assert len(result_ids(project / "out" / "results.jsonl")) == 6
    assert not (project / "out" / ".agentjudge-reserve").exists()


def test_an_inherited_ignored_sigint_stays_ignored(project: Path) -> None:
    """Started with SIGINT ignored (a background job, nohup), the run is not stopped by it.

    The process starts with SIGINT ignored as a shell's background job does (`ignore_sigint`
    before the entry point), then the task sends it one.
    """
    proc = run_at(project, "sync-task", prepare=ignore_sigint)
    assert proc.returncode == 0, proc.stderr
    assert summary_of(project)["status"] == "completed"
    assert len(result_ids(project / "out" / "results.jsonl")) == 6


# --------------------------------------------------------------- run_suite cancelled natively


def test_the_summary_version_asked_for_last_is_the_one_left(tmp_path: Path) -> None:
    """A write that finishes late (its caller was cancelled) never replaces a later one."""
    file = SummaryFile(tmp_path / "summary.json", SpaceReserve(tmp_path / "reserve"))
    completed, aborted = file.ask(), file.ask()
    file.write('{"status": "aborted"}\n', aborted)
    file.write('{"status": "completed"}\n', completed)  # the abandoned thread, finishing
    assert json.loads((tmp_path / "summary.json").read_text())["status"] == "aborted"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


async def test_task_cancel_during_the_final_summary_write_leaves_it_aborted(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Task.cancel()`` (asyncio's own Ctrl-C) while "completed" is written: "aborted" stays.

    The cancellation cuts the shielded write short for the caller, not for its thread. Here
    the "completed" write even finishes after the "aborted" one (it is held until then), as
    an abandoned thread may: the file still ends "aborted", and nothing else is left behind.
    """
    monkeypatch.chdir(project)
    writing, aborted, late = threading.Event(), threading.Event(), threading.Event()
    write = SummaryFile.write

    def held_write(file: SummaryFile, text: str, version: int) -> None:
        if '"completed"' in text:
            writing.set()
            assert aborted.wait(60)  # a bound for a hang, not an ordering
            write(file, text, version)
            late.set()
            return
        write(file, text, version)
        if '"aborted"' in text:
            aborted.set()

    monkeypatch.setattr(SummaryFile, "write", held_write)
    suite = load_suite(project / "agentjudge.toml")
    running = asyncio.ensure_future(run_suite(suite, out=project / "out"))
    assert await anyio.to_thread.run_sync(writing.wait, 60)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await anyio.to_thread.run_sync(late.wait, 60)
    assert summary_of(project)["status"] == "aborted"
    assert sorted(p.name for p in (project / "out").iterdir()) == ["results.jsonl", "summary.json"]


def test_a_second_ctrl_c_stops_at_once(project: Path) -> None:
    """Ctrl-C twice: the second raises KeyboardInterrupt at once; exit 3, and resume works."""
    proc = run_at(project, "twice")
    assert proc.returncode == 3, proc.stderr
    assert "agentjudge: run aborted (interrupted); finished cases are kept in" in proc.stderr
    assert_resume_finishes(project)

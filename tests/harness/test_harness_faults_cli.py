"""Issue 12 through the real program: exit codes, prompt exits.

Every run is the program's entry point in its own process forked from `cli_support`'s
preloaded interpreter (a fresh interpreter's imports cost more CPU than most of these runs;
kill -9 of the program as a shell starts it, with workers, is in test_harness_kill), with what
a shell would set up first set up in the child: a file size limit (``ulimit -f``). A thread
that must not keep the program alive is checked there too: a forked child's exit waits for
non-daemon threads as the interpreter's does (multiprocessing's process bootstrap joins them),
so a run that left it to the exit would hang.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_support import limit_file_size, start_cli

TASK = """
import os
import threading

import anyio

_never = threading.Event()

async def slow(case):
    # 10 ms for the first 100 cases, then 1 s: a run of 200 cases is well under way after 20
    # rows and still far from done (>= 25 s with 4 cases at a time) when a signal arrives.
    await anyio.sleep(0.01 if int(case.id[1:]) < 100 else 1)
    return {"text": case.input.upper(), "pid": os.getpid()}

def deadlock(case):
    if case.input == "stuck":
        _never.wait()  # never set: the thread outlives the run
    return case.input.upper()

def echo(case):
    return case.input.upper()
"""

JUDGES = """
import asyncio

def fine(ctx):
    return True

async def stray(ctx):
    # A stray CancelledError: a future someone else cancelled, nobody cancelled the run.
    if ctx.input.startswith("stray"):
        fut = asyncio.get_running_loop().create_future()
        fut.cancel()
        await fut
    return True

async def exiting(ctx):
    if ctx.input == "last":
        raise SystemExit(4)
    return True

def interrupting(ctx):
    if ctx.input == "last":
        raise KeyboardInterrupt
    return True
"""

# Generous bound for "exits promptly" (a hang fails the test instead of blocking the suite).
EXIT_WITHIN = 20


def project(tmp_path: Path, data: list[dict[str, Any]]) -> Path:
    (tmp_path / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in data), encoding="utf-8"
    )
    return tmp_path


def words(n: int, special: dict[int, str] | None = None) -> list[dict[str, Any]]:
    special = special or {}
    return [{"id": f"c{i:03d}", "input": special.get(i, f"w{i}")} for i in range(n)]


def run_args(task: str, judges: str, *extra: str) -> list[str]:
    return [
        "run", "--dataset", "data.jsonl", "--task", f"task:{task}",
        "--judges", f"judges:{judges}", "--out", "out", "--progress", "off", *extra,
    ]  # fmt: skip


def forked(
    cwd: Path,
    args: list[str],
    timeout: float = EXIT_WITHIN,
    prepare: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``agentjudge ARGS`` in its own process forked from `cli_support`'s interpreter."""
    return start_cli(cwd, *args, prepare=prepare).wait(timeout)


def ids(out: Path) -> list[str]:
    lines = (out / "results.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line)["id"] for line in lines]


def status(out: Path) -> str:
    return str(json.loads((out / "summary.json").read_text())["status"])


def complete_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


# ----------------------------------------------------------------------------- item 1
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_run_never_completes_with_cases_missing(tmp_path: Path, workers: str) -> None:
    """Judges cancelling themselves: every case has a row, or the run aborts naming the rest."""
    data = words(100, {7: "stray-a", 57: "stray-b"})
    root = project(tmp_path, data)
    proc = forked(root, run_args("echo", "stray", "--workers", workers, "--concurrency", "2"))
    written = ids(root / "out")
    if proc.returncode == 3:  # the accounting caught the cases the judges took with them
        assert status(root / "out") == "aborted"
        missing = sorted({r["id"] for r in data} - set(written))
        assert missing, "aborted although every case has a row"
        assert f"missing: {', '.join(missing[:20])}" in proc.stderr
    else:  # the judges' CancelledError became ERROR results
        assert proc.returncode == 0, proc.stderr
        assert sorted(written) == [r["id"] for r in data]
        assert status(root / "out") == "completed"


LOSING_TASK = """
import asyncio

from agentjudge.harness._pipeline import CaseRunner

_finish = CaseRunner.finish_case

async def _losing(self, case, *args):
    if case.id == "c005":  # a worker ends without a row, as if a stray CancelledError hit it
        fut = asyncio.get_running_loop().create_future()
        fut.cancel()
        await fut
    return await _finish(self, case, *args)

CaseRunner.finish_case = _losing  # fault injection, in every process that imports this task

def echo(case):
    return case.input
"""


def test_cases_lost_in_a_worker_process_abort_the_run(tmp_path: Path) -> None:
    """With --workers, rows a worker never sent are counted too: exit 3 naming the ids."""
    data = words(60)
    root = project(tmp_path, data)
    (root / "losing.py").write_text(LOSING_TASK, encoding="utf-8")
    args = run_args("echo", "fine", "--workers", "2", "--concurrency", "1")
    args[args.index("task:echo")] = "losing:echo"
    proc = forked(root, args)
    assert proc.returncode == 3, proc.stderr
    assert "run aborted: CasesLost: 60 cases handed out, " in proc.stderr
    assert "missing: c005" in proc.stderr
    assert "c005" not in ids(root / "out") and status(root / "out") == "aborted"
    resumed = forked(root, [*run_args("echo", "fine", "--workers", "2"), "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(ids(root / "out")) == [r["id"] for r in data]


# ----------------------------------------------------------------------------- item 2
def test_a_lone_surrogate_in_the_dataset_exits_2_naming_line_and_field(tmp_path: Path) -> None:
    """A row with "\\ud800" is a dataset error (exit 2) before any case runs."""
    root = project(tmp_path, words(3))
    with (root / "data.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"id": "bad", "input": "x\\ud800"}\n')
    proc = forked(root, run_args("echo", "fine"))
    assert proc.returncode == 2, proc.stderr
    assert "agentjudge: error: data.jsonl line 4: field 'input' holds a lone surrogate" in (
        proc.stderr
    )
    assert not (root / "out" / "results.jsonl").exists()


# ----------------------------------------------------------------------------- item 3
@pytest.mark.parametrize("judge", ["exiting", "interrupting"])
def test_a_judge_exiting_aborts_promptly_with_finished_rows(tmp_path: Path, judge: str) -> None:
    """SystemExit / KeyboardInterrupt in a judge: exit 3 promptly, every finished row written."""
    data = [*words(30), {"id": "z", "input": "last"}]
    root = project(tmp_path, data)
    proc = forked(root, run_args("echo", judge, "--concurrency", "1"))
    assert proc.returncode == 3, proc.stderr
    assert "run aborted" in proc.stderr and "on case 'z'" in proc.stderr
    assert sorted(ids(root / "out")) == [r["id"] for r in data[:-1]]
    assert status(root / "out") == "aborted"


# ----------------------------------------------------------------------------- item 5
def test_a_full_results_file_exits_3_with_one_line_and_resumes(tmp_path: Path) -> None:
    """A write refused mid-run: exit 3, one line naming the file, summary aborted, resumable."""
    data = words(200)
    root = project(tmp_path, data)
    proc = forked(
        root, run_args("echo", "fine"), prepare=functools.partial(limit_file_size, 30_000)
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.splitlines()[0] == (
        "agentjudge: run aborted: file too large (the process's file size limit, ulimit -f, "
        "was reached) writing out/results.jsonl"
    )
    assert "Traceback" not in proc.stderr
    assert status(root / "out") == "aborted"
    assert sorted(p.name for p in (root / "out").iterdir()) == ["results.jsonl", "summary.json"]
    resumed = forked(root, [*run_args("echo", "fine"), "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(ids(root / "out")) == sorted(r["id"] for r in data)


def test_an_unwritable_summary_exits_3_and_leaves_no_temp_file(tmp_path: Path) -> None:
    """Even summary.json cannot be written: exit 3 naming it, no temp file left behind."""
    root = project(tmp_path, words(5))
    proc = forked(root, run_args("echo", "fine"), prepare=functools.partial(limit_file_size, 300))
    assert proc.returncode == 3, proc.stderr
    assert "writing out/summary.json" in proc.stderr.splitlines()[0]
    assert "Traceback" not in proc.stderr
    assert list((root / "out").iterdir()) == []


# ----------------------------------------------------------------------------- item 6
def _gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting to be reaped counts as exited)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] in ("Z", "X")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to watch worker processes")
@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_is_handled_like_ctrl_c(tmp_path: Path, workers: str) -> None:
    """SIGTERM mid-run: rows kept, summary aborted, exit 3, workers stopped; resume finishes.

    The run is the entry point forked from `cli_support`'s interpreter (a shell's ``python -m
    agentjudge`` cost ~0.7 s of CPU more, and its worker forkserver ~0.6 s): the signal reaches
    the run's own process as it would, and the workers it must stop are the same `worker_main`
    processes (forked from `cli_support`'s forkserver rather than one of the run's own; the
    program with workers as a shell starts it is killed in test_harness_kill). 200 cases whose
    second half takes 1 s each keep the run going as long as 2,000 cases of 10 ms did (the
    resume runs a tenth of the cases).
    """
    data = words(200)
    root = project(tmp_path, data)
    results = root / "out" / "results.jsonl"
    run = start_cli(root, *run_args("slow", "fine", "--workers", workers, "--concurrency", "2"))
    try:
        deadline = time.monotonic() + 60
        while complete_lines(results) < 20 and run.process.is_alive():  # well under way
            assert time.monotonic() < deadline, "the run never wrote 20 rows"
            time.sleep(0.01)
        if run.process.is_alive():  # (a run that ended by itself was waited for)
            os.kill(run.process.pid, signal.SIGTERM)
        done = run.wait(EXIT_WITHIN)  # killed past it
    finally:
        if run.process.is_alive():  # the poll failed
            run.process.kill()
            run.wait()
    assert done.returncode == 3, done.stderr
    assert "run aborted (terminated by SIGTERM)" in done.stderr
    assert status(root / "out") == "aborted"
    rows = [json.loads(line) for line in results.read_text("utf-8").splitlines()]
    assert 20 <= len(rows) < len(data)
    pids = {row["output"]["pid"] for row in rows}
    deadline = time.monotonic() + EXIT_WITHIN
    while not all(_gone(pid) for pid in pids):
        assert time.monotonic() < deadline, "worker processes outlived the run"
        time.sleep(0.05)
    resumed = forked(root, [*run_args("echo", "fine"), "--resume"], timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(ids(root / "out")) == sorted(r["id"] for r in data)


# ----------------------------------------------------------------------------- item 10
def test_a_deadlocked_sync_task_does_not_keep_the_program_alive(tmp_path: Path) -> None:
    """The abandoned thread of a task past its timeout never delays the exit (it never ends)."""
    root = project(tmp_path, words(6, {2: "stuck"}))
    proc = forked(root, run_args("deadlock", "fine", "--task-timeout", "0.5"))
    assert proc.returncode == 0, proc.stderr
    assert status(root / "out") == "completed"
    rows = {json.loads(line)["id"]: json.loads(line) for line in
            (root / "out" / "results.jsonl").read_text("utf-8").splitlines()}  # fmt: skip
    assert rows["c002"]["error"] == "TimeoutError: the task did not finish within 0.5s"
    assert len(rows) == 6

"""kill -9 in the middle of a run, then --resume: every case appears exactly once.

With workers, the killed run is the program as a shell starts it (``python -m agentjudge``, its
own process and the workers of its own forkserver, left without their run). In one process it is
the same entry point forked from `cli_support`'s interpreter (the run's process dies alike; the
interpreter's start-up cost ~0.7 s of CPU), as is the resume.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import cli, start_cli

TASK = """
import anyio

async def answer(case):
    await anyio.sleep(0.005)
    return case.input

async def slow(case):
    # The killed run's task: 5 ms for the first 100 cases, then 1 s, so the run is well under
    # way after 40 rows and still far from done when the kill lands, however late it lands
    # (400 cases of 5 ms made that likely; the resume runs the rest with `answer`).
    await anyio.sleep(0.005 if case.input < 100 else 1)
    return case.input
"""

JUDGES = """
def same(ctx):
    return ctx.output == ctx.expected

judges = [same]
"""


def complete_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.parametrize("workers", [1, 2])
def test_kill_9_then_resume_gives_every_case_exactly_once(tmp_path: Path, workers: int) -> None:
    """A SIGKILLed run (in process or with workers) resumes to each id once, torn tail or not."""
    n = 200
    (tmp_path / "task.py").write_text(TASK, encoding="utf-8")
    (tmp_path / "judges.py").write_text(JUDGES, encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(
        "".join(
            json.dumps({"id": f"c{i:04d}", "input": i, "expected": i}) + "\n" for i in range(n)
        ),
        encoding="utf-8",
    )
    args = [
        sys.executable, "-m", "agentjudge", "run",
        "--dataset", "data.jsonl", "--task", "task:slow", "--judges", "judges:judges",
        "--concurrency", "4", "--out", "out", "--progress", "off", "--workers", str(workers),
    ]  # fmt: skip
    results = tmp_path / "out" / "results.jsonl"
    if workers == 1:
        forked = start_cli(tmp_path, *args[3:])
        pid, alive = forked.process.pid, forked.process.is_alive
    else:
        proc = subprocess.Popen(
            args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        pid, alive = proc.pid, lambda: proc.poll() is None
    try:
        deadline = time.monotonic() + 30
        while complete_lines(results) < 40 and alive():  # poll until the run is well under way
            assert time.monotonic() < deadline, "the run never wrote 40 rows"
            time.sleep(0.01)
    finally:
        if alive():  # (a run that ended by itself was waited for: its pid may be reused)
            os.kill(pid, signal.SIGKILL)
        if workers == 1:
            done = forked.wait(10)
            code, stderr = done.returncode, done.stderr
        else:
            stderr = proc.communicate(timeout=10)[1].decode()
            code = proc.returncode
    assert code == -signal.SIGKILL, f"the run ended by itself ({code}): {stderr}"
    written = complete_lines(results)
    assert 40 <= written < n, "the kill should land mid-run"

    # The resume is not about the kill: the same entry point, forked from cli_support's server.
    resume = [arg if arg != "task:slow" else "task:answer" for arg in args[3:]]
    resumed = cli(tmp_path, *resume, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    ids = [json.loads(line)["id"] for line in results.read_text("utf-8").splitlines()]
    assert len(ids) == n
    assert sorted(ids) == [f"c{i:04d}" for i in range(n)]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["cases"]["total"] == n
    assert summary["judges"]["same"]["counts"]["pass"] == n

"""kill -9 in the middle of a run, then --resume: every case appears exactly once.

The killed run is the program as a shell starts it (``python -m agentjudge``, its own process
and workers); the resume runs the same entry point forked from `cli_support`'s interpreter.
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
from cli_support import cli

TASK = """
import anyio

async def answer(case):
    await anyio.sleep(0.005)
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
    n = 400
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
        "--dataset", "data.jsonl", "--task", "task:answer", "--judges", "judges:judges",
        "--concurrency", "4", "--out", "out", "--progress", "off", "--workers", str(workers),
    ]  # fmt: skip
    results = tmp_path / "out" / "results.jsonl"
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while complete_lines(results) < 40:  # poll until the run is well under way
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the run never wrote 40 rows"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stderr:
            proc.stderr.close()
    written = complete_lines(results)
    assert 40 <= written < n, "the kill should land mid-run"

    # The resume is not about the kill: the same entry point, forked from cli_support's server.
    resumed = cli(tmp_path, *args[3:], "--resume")
    assert resumed.returncode == 0, resumed.stderr
    ids = [json.loads(line)["id"] for line in results.read_text("utf-8").splitlines()]
    assert len(ids) == n
    assert sorted(ids) == [f"c{i:04d}" for i in range(n)]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["cases"]["total"] == n
    assert summary["judges"]["same"]["counts"]["pass"] == n

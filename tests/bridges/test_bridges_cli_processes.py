"""run_cli_agent's processes: the same runner as command judges, with and without a subreaper.

Linux runs the agent under the subreaper launcher (an orphaned daemon is killed too). Where the
kernel refuses ``PR_SET_CHILD_SUBREAPER`` (simulated by a launcher whose flag call fails) or no
launcher is used (not Linux), agents still run, keep their standard error apart, get their
input and are killed with their session and descendants on a timeout.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentjudge import Context, ExecutionStatus, Status
from agentjudge.bridges import run_cli_agent
from agentjudge.judges import CommandJudge, _process
from tests.judges.process_support import has_text, past_timeout, process_gone, wait_until_gone

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
needs_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs PR_SET_CHILD_SUBREAPER (Linux)"
)

REFUSING_LAUNCHER = """
import sys
sys.path.insert(0, {folder!r})
import _launcher
_launcher.become_subreaper = lambda: False  # as where prctl is unavailable or forbidden
open({marker!r}, "a").write("launched\\n")
sys.exit(_launcher.main(sys.argv[1:]))
"""

AGENT = """
import json, subprocess, sys, time
task = sys.stdin.read()
print("thinking about " + task, file=sys.stderr, flush=True)
if task == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(json.dumps({"type": "child", "pid": child.pid}), flush=True)
    time.sleep(60)
print(json.dumps({"type": "result", "result": "did " + task}), flush=True)
"""


def kill_leftover(pid: int) -> None:
    """Clean up after a failing run: an escaped process must not outlive the test."""
    if not process_gone(pid):
        os.kill(pid, 9)


@pytest.fixture(params=["subreaper refused", "no launcher"])
def without_subreaper(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path | None]:
    """Yields the launcher's marker file (None: the agent is started directly)."""
    if request.param == "no launcher":
        monkeypatch.setattr(_process, "_use_launcher", lambda: False)
        yield None
        return
    if not sys.platform.startswith("linux"):
        pytest.skip("the launcher runs on Linux only")
    marker = tmp_path / "launched.txt"
    script = tmp_path / "refusing_launcher.py"
    folder = str(Path(_process.__file__).parent)
    script.write_text(REFUSING_LAUNCHER.format(folder=folder, marker=str(marker)))
    monkeypatch.setattr(_process, "_LAUNCHER", script)
    yield marker


async def test_agents_run_without_a_subreaper(
    tmp_path: Path, without_subreaper: Path | None
) -> None:
    """Output, standard error apart, input, exit status: as with the subreaper."""
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(AGENT))
    ctx = await run_cli_agent([sys.executable, str(script)], workspace=tmp_path, input="the task")
    assert ctx.status is ExecutionStatus.SUCCESS, ctx.error
    assert ctx.output == "did the task"
    assert ctx.metadata["cli.stderr"] == "thinking about the task\n"
    missing = await run_cli_agent(["/nonexistent/agent"], workspace=tmp_path)
    assert missing.status is ExecutionStatus.FAILED
    assert missing.error is not None and "No such file or directory" in missing.error
    judged = await CommandJudge("echo out; echo err >&2")(Context(workspace=tmp_path))
    assert judged.status is Status.PASS and judged.metadata["output"] == "out\nerr\n"
    if without_subreaper is not None:  # the commands really went through the launcher
        assert without_subreaper.read_text() == "launched\n" * 3


@needs_proc
async def test_timeout_kills_the_agents_children_without_a_subreaper(
    tmp_path: Path, without_subreaper: Path | None
) -> None:
    """The agent and its child die on the timeout (session and descendants are still found)."""
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(AGENT))
    ctx, _, _ = await past_timeout(
        lambda timeout, ws: run_cli_agent(
            [sys.executable, str(script)], workspace=ws, input="hang", timeout=timeout
        ),
        lambda ctx, _: '"pid": ' in ctx.metadata["cli.stdout"],  # the child was started
        tmp_path,
    )
    assert ctx.status is ExecutionStatus.TIMEOUT
    child = int(ctx.metadata["cli.stdout"].split('"pid": ')[1].split("}")[0])
    try:
        assert await wait_until_gone(child), "the agent's child survived the timeout"
    finally:
        kill_leftover(child)


@needs_proc
@needs_linux
async def test_timeout_kills_a_daemon_the_agent_orphaned(tmp_path: Path) -> None:
    """With the subreaper launcher, a ``setsid -f`` daemon whose parent exited dies too."""
    command = (
        "setsid -f sh -c 'echo $$ > daemon.pid; exec sleep 1000'; "
        "while [ ! -s daemon.pid ]; do sleep 0.01; done; exec sleep 1000"
    )
    ctx, workspace, _ = await past_timeout(
        lambda timeout, ws: run_cli_agent(command, workspace=ws, timeout=timeout),
        lambda _, ws: has_text(ws / "daemon.pid"),
        tmp_path,
    )
    assert ctx.status is ExecutionStatus.TIMEOUT
    daemon = int((workspace / "daemon.pid").read_text())
    try:
        assert await wait_until_gone(daemon), "the orphaned daemon survived the timeout"
    finally:
        kill_leftover(daemon)

"""run_cli_agent: fake command-line agents (Python scripts) run in a workspace, then judged."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from agentjudge import Evaluator, ExecutionStatus, Status, TrajectoryMatch
from agentjudge.bridges import run_cli_agent
from agentjudge.bridges._cli_events import AgentEvents
from agentjudge.judges import FileContent, StepEfficiency
from tests.judges.process_support import past_timeout

CLAUDE_LIKE = r"""
import json, pathlib, sys
task = sys.stdin.read()
def emit(event): print(json.dumps(event), flush=True)
emit({"type": "system", "subtype": "init"})
emit({"type": "assistant", "message": {"content": [
    {"type": "text", "text": "I will write the file."},
    {"type": "tool_use", "id": "t1", "name": "Write",
     "input": {"file_path": "hello.txt", "content": "hi"}}]}})
pathlib.Path("hello.txt").write_text("hi")
pathlib.Path("old.txt").unlink()
emit({"type": "user", "message": {"content": [
    {"type": "tool_result", "tool_use_id": "t1", "content": "written"}]}})
print("a log line that is not JSON", file=sys.stderr)
emit({"type": "result", "result": "Wrote hello.txt for: " + task.strip(),
      "usage": {"input_tokens": 120, "output_tokens": 30}})
"""


def agent(tmp_path: Path, code: str) -> list[str]:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    return [sys.executable, str(script)]


def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir(parents=True)
    (folder / "old.txt").write_text("bye")
    (folder / "keep.txt").write_text("same")
    return folder


async def test_json_lines_agent_gives_trajectory_files_usage(tmp_path: Path) -> None:
    """Stream-JSON events become messages with tool calls; result, usage and files are kept."""
    ws = workspace(tmp_path)
    ctx = await run_cli_agent(agent(tmp_path, CLAUDE_LIKE), workspace=ws, input="say hi")
    assert ctx.status is ExecutionStatus.SUCCESS and ctx.error is None
    assert ctx.output == "Wrote hello.txt for: say hi"
    assert [m.role for m in ctx.messages] == ["assistant", "tool"]
    call = ctx.messages[0].tool_calls[0]
    assert (call.name, call.arguments["file_path"], call.id) == ("Write", "hello.txt", "t1")
    assert ctx.messages[1].tool_call_id == "t1" and ctx.messages[1].content == "written"
    assert ctx.metadata["cli.changed_files"] == {
        "added": ["hello.txt"],
        "modified": [],
        "deleted": ["old.txt"],
    }
    assert ctx.metadata["cli.usage.input_tokens"] == 120
    assert "not JSON" in ctx.metadata["cli.stderr"]
    assert ctx.workspace == ws and ctx.duration is not None


async def test_workspace_and_trajectory_judges_evaluate_the_run(tmp_path: Path) -> None:
    """The context feeds file judges, trajectory judges and the token budget together."""
    ws = workspace(tmp_path)
    ctx = await run_cli_agent(agent(tmp_path, CLAUDE_LIKE), workspace=ws, input="say hi")
    reference = [
        {"role": "assistant", "tool_calls": [{"name": "Write", "arguments": {}}]},
        {"role": "tool", "content": "..."},
    ]
    ctx = ctx.model_copy(update={"expected": reference})
    judges = {
        "file": FileContent("hello.txt", "hi"),
        "calls": TrajectoryMatch(args="ignore"),
        "tokens": StepEfficiency(max_tokens=100),
    }
    results = {r.name: r.status for r in await Evaluator(judges).evaluate(ctx)}
    assert results == {"file": Status.PASS, "calls": Status.PASS, "tokens": Status.FAIL}


async def test_plain_output_failure_and_openai_messages(tmp_path: Path) -> None:
    """No JSON: output is stdout; a non-zero exit is FAILED with stderr's end in the error."""
    code = """
    import json, sys
    print(json.dumps({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}))
    print("plain words")
    print("compile error: x", file=sys.stderr)
    sys.exit(3)
    """
    ctx = await run_cli_agent(agent(tmp_path, code), workspace=workspace(tmp_path))
    assert ctx.status is ExecutionStatus.FAILED
    assert ctx.error is not None and ctx.error.startswith("exit code 3: ")
    assert ctx.error.endswith("compile error: x")
    assert ctx.messages[0].tool_calls[0].name == "ls"
    plain = await run_cli_agent("echo just text", workspace=workspace(tmp_path / "b"))
    assert plain.output == "just text" and plain.messages == ()


async def test_timeout_kills_the_agent_and_its_children(tmp_path: Path) -> None:
    """Past the timeout the process tree is killed: TIMEOUT, and the child never writes."""
    code = """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print("started", child.pid, flush=True)
    time.sleep(60)
    """
    # The timeout must fire after the agent printed its child's pid: two interpreters start
    # first, which took more than 0.5 s on a loaded machine (make test runs this at idle
    # priority); past_timeout grows the timeout until it fired after that.
    ctx, _, timeout = await past_timeout(
        lambda timeout, ws: run_cli_agent(
            agent(ws, code), workspace=workspace(ws), timeout=timeout
        ),
        lambda ctx, _: "started" in ctx.metadata["cli.stdout"],
        tmp_path,
    )
    assert ctx.status is ExecutionStatus.TIMEOUT
    assert ctx.error is not None and ctx.error.startswith(f"timed out after {timeout:g} s")
    child = int(ctx.metadata["cli.stdout"].split()[-1])
    assert await gone(child)


async def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie awaiting its reaper counts), polling up to 10 s."""
    for _ in range(200):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        await anyio.sleep(0.05)
    return False


async def test_secrets_do_not_reach_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent gets the scrubbed environment plus `env`, like command judges."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    code = """
    import os
    print(os.environ.get("OPENAI_API_KEY", "absent"), os.environ.get("MODE"))
    """
    ctx = await run_cli_agent(
        agent(tmp_path, code), workspace=workspace(tmp_path), env={"MODE": "test"}
    )
    assert ctx.output == "absent test"


async def test_bad_arguments_and_missing_program(tmp_path: Path) -> None:
    """Bad settings are ValueErrors; a program that does not exist is FAILED, not raised."""
    with pytest.raises(ValueError, match="workspace"):
        await run_cli_agent(["true"], workspace=tmp_path / "missing")
    with pytest.raises(ValueError, match="timeout"):
        await run_cli_agent(["true"], workspace=tmp_path, timeout=0)
    ctx = await run_cli_agent(["/nonexistent/agent"], workspace=tmp_path)
    assert ctx.status is ExecutionStatus.FAILED
    assert ctx.error is not None and ctx.error.startswith("cannot start /nonexistent/agent")


def test_events_parser_edge_cases() -> None:
    """Split chunks, an overlong line, a single pretty-printed JSON result, bad tool calls."""
    events = AgentEvents()
    line = json.dumps({"type": "tool_call", "name": "grep", "arguments": {"q": "x"}}) + "\n"
    for i in range(0, len(line), 7):
        events.feed(line[i : i + 7].encode())
    events.feed(b"{" + b"x" * (2 << 20) + b"}\n")
    events.feed(json.dumps({"role": "assistant", "tool_calls": [{"function": {}}]}).encode())
    events.close()
    assert [c.name for c in events.tool_calls()] == ["grep"]
    assert events.problems and "tool_calls.0.name" in events.problems[0]
    pretty = AgentEvents()
    pretty.feed(json.dumps({"result": "done", "usage": {"prompt_tokens": 5}}, indent=2).encode())
    pretty.close()
    assert (pretty.final_message(), pretty.usage) == ("done", {"input_tokens": 5})

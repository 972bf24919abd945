"""`run_cli_agent`: run a command-line agent in a workspace and describe the run as a `Context`.

Any executable works: a coding agent's non-interactive mode, a script. The command runs in the
workspace folder as the leader of a new session, with the scrubbed environment command judges
use (`agentjudge.judges.CommandJudge`: no API keys or tokens unless given in ``env`` or with
``inherit_env=True``), the task on standard input when given, and a timeout after which its
whole process tree is killed: it runs through the same runner as command judges
(`agentjudge.judges._process.run_command`), under the subreaper launcher on Linux, so even a
daemon it orphaned dies; where the kernel refuses the subreaper flag only such a daemon
escapes. What it printed is kept bounded, its JSON output is read for the
trajectory (`agentjudge.bridges._cli_events`), and the workspace is compared before and after.
"""

from __future__ import annotations

import hashlib
import math
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from agentjudge.bridges._cli_events import AgentEvents
from agentjudge.core import Context, ExecutionStatus
from agentjudge.judges._commands import _scrubbed_environment, _Tail
from agentjudge.judges._process import run_command

__all__ = ["MAX_SNAPSHOT_FILES", "run_cli_agent", "workspace_changes"]

MAX_SNAPSHOT_FILES = 20_000
"""Most files compared before and after a run (beyond it, changes are not listed)."""
_HASH_LIMIT = 8 << 20
_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".venv", "node_modules"})

Snapshot = dict[str, tuple[int, str]]


def _snapshot(root: Path) -> Snapshot | None:
    """``{relative POSIX path: (size, sha256)}`` of the workspace's files (None: too many)."""
    files: Snapshot = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in names:
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file():
                continue
            if len(files) >= MAX_SNAPSHOT_FILES:
                return None
            info = path.stat()
            if info.st_size <= _HASH_LIMIT:
                with path.open("rb") as handle:
                    digest = hashlib.file_digest(handle, "sha256").hexdigest()
            else:  # large files: compared by size and modification time
                digest = f"mtime:{info.st_mtime_ns}"
            files[path.relative_to(root).as_posix()] = (info.st_size, digest)
    return files


def workspace_changes(before: Snapshot | None, after: Snapshot | None) -> dict[str, list[str]]:
    """``{"added", "modified", "deleted"}`` relative paths between two snapshots (sorted).

    Empty lists when either snapshot is missing (too many files to compare).
    """
    if before is None or after is None:
        return {"added": [], "modified": [], "deleted": []}
    return {
        "added": sorted(set(after) - set(before)),
        "modified": sorted(p for p in after.keys() & before.keys() if after[p] != before[p]),
        "deleted": sorted(set(before) - set(after)),
    }


def _check(command: object, timeout: object, output_limit: object) -> list[str] | str:
    if isinstance(command, str):
        if not command.strip():
            raise ValueError("command must be non-blank")
    elif isinstance(command, Sequence) and command and all(isinstance(a, str) for a in command):
        command = list(command)
    else:
        raise ValueError(f"command must be a str or a non-empty sequence of str, got {command!r}")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(f"timeout must be finite and > 0 seconds, or None; got {timeout!r}")
    if isinstance(output_limit, bool) or not isinstance(output_limit, int) or output_limit < 0:
        raise ValueError(f"output_limit must be an int >= 0, got {output_limit!r}")
    return command


class _Run:
    """The process facts of one run."""

    def __init__(self, output_limit: int) -> None:
        self.stdout = _Tail(output_limit)
        self.stderr = _Tail(output_limit)
        self.events = AgentEvents()
        self.exit_code: int | None = None
        self.timed_out = False
        self.not_started: str | None = None

    def out(self, chunk: bytes) -> None:
        self.stdout.feed(chunk)
        self.events.feed(chunk)

    async def execute(
        self,
        argv: str | list[str],
        workspace: Path,
        env: dict[str, str],
        stdin: bytes | None,
        timeout: float | None,  # noqa: ASYNC109 - the agent's deadline
    ) -> None:
        done = await run_command(
            argv,
            cwd=workspace,
            env=env,
            timeout=timeout,
            stdout=self.out,
            stderr=self.stderr.feed,
            stdin=stdin,
        )
        self.exit_code, self.timed_out = done.exit_code, done.timed_out
        if done.not_started is not None:
            exc = done.not_started
            self.not_started = f"{type(exc).__name__}: {exc}"
        self.events.close()


async def run_cli_agent(
    command: str | Sequence[str],
    *,
    workspace: str | os.PathLike[str],
    input: Any = None,
    stdin: str | bytes | None = None,
    expected: Any = None,
    timeout: float | None = 600.0,  # noqa: ASYNC109 - a deadline for the agent, not this call
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    output_limit: int = 1 << 20,
    metadata: Mapping[str, Any] | None = None,
) -> Context:
    """Run a command-line agent in ``workspace`` and return the `Context` judges need.

    A ``str`` command runs through ``/bin/sh -c``, a sequence directly. The returned context:

    * ``input``, ``expected``: as given; ``workspace``: the folder;
    * ``output``: the agent's final message when it printed JSON (a result line, or the last
      assistant message of its JSON Lines events), else its standard output (stripped);
    * ``messages``: the trajectory its JSON output describes (tool calls included);
    * ``status``: SUCCESS on exit code 0, FAILED on another code or when it cannot start,
      TIMEOUT when it ran past ``timeout`` (its process tree is then killed);
      ``started_at``, ``duration``; ``error``: what went wrong, with the end of standard error;
    * ``metadata`` (after the caller's ``metadata``, which it overrides): ``cli.command``,
      ``cli.exit_code``, ``cli.stdout`` / ``cli.stderr`` (the last ``output_limit`` bytes
      each, marked when truncated), ``cli.changed_files`` (``added`` / ``modified`` /
      ``deleted`` relative paths, ``.git``, ``.venv``, ``node_modules`` and ``__pycache__``
      folders ignored), ``cli.json_events`` (how many JSON events it printed) and
      ``cli.usage.input_tokens`` / ``output_tokens`` / ``total_tokens`` when it reported
      usage (read by `StepEfficiency`).

    Cancelling the caller kills the agent's process tree and propagates.

    Args:
        command: The agent command.
        workspace: The folder it works in (must exist).
        input: The task, recorded as ``ctx.input`` (and sent on standard input when ``stdin``
            is None and ``input`` is a str).
        stdin: Text sent on standard input (None: ``input`` when it is a str, else nothing).
        expected: The reference, recorded as ``ctx.expected``.
        timeout: Seconds before the agent's process tree is killed (None: no limit).
        env: Variables added to the scrubbed environment.
        inherit_env: Pass this process's whole environment (then ``env`` on top).
        output_limit: Bytes of standard output and of standard error kept, each.
        metadata: Caller facts for ``ctx.metadata``.

    Raises:
        ValueError: a bad command, timeout or output limit, or a workspace that is not a folder.
    """
    argv = _check(command, timeout, output_limit)
    root = Path(workspace)
    if not await anyio.Path(root).is_dir():
        raise ValueError(f"workspace {str(root)!r} is not an existing folder")
    if stdin is None and isinstance(input, str):
        stdin = input
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    base = dict(os.environ) if inherit_env else _scrubbed_environment(os.environ)
    run = _Run(output_limit)
    before = await anyio.to_thread.run_sync(_snapshot, root)
    started, t0 = datetime.now(UTC), time.monotonic()
    await run.execute(argv, root, {**base, **(env or {})}, data, timeout)
    duration = timedelta(seconds=time.monotonic() - t0)
    after = await anyio.to_thread.run_sync(_snapshot, root)
    shown = command if isinstance(command, str) else shlex.join(command)
    stdout, _ = run.stdout.text()
    stderr, _ = run.stderr.text()
    facts: dict[str, Any] = {
        "cli.command": shown,
        "cli.exit_code": run.exit_code,
        "cli.stdout": stdout,
        "cli.stderr": stderr,
        "cli.changed_files": workspace_changes(before, after),
        "cli.json_events": run.events.events,
    }
    for key, value in run.events.usage.items():
        facts[f"cli.usage.{key}"] = value
    if run.events.problems:
        facts["cli.json_problems"] = run.events.problems[:20]
    status, error = _outcome(run, shown, stderr, timeout)
    final = run.events.final_message()
    return Context(
        input=input,
        output=final if final is not None else stdout.strip(),
        expected=expected,
        messages=tuple(run.events.messages),
        workspace=root,
        status=status,
        started_at=started,
        duration=duration,
        error=error,
        metadata={**(metadata or {}), **facts},
    )


def _outcome(
    run: _Run, shown: str, stderr: str, timeout: float | None
) -> tuple[ExecutionStatus, str | None]:
    last = "\n".join(stderr.strip().splitlines()[-5:])
    detail = f"\n{last}" if last else ""
    if run.not_started is not None:
        return ExecutionStatus.FAILED, f"cannot start {shown}: {run.not_started}"
    if run.timed_out:
        return ExecutionStatus.TIMEOUT, f"timed out after {timeout:g} s: {shown}{detail}"
    if run.exit_code == 0:
        return ExecutionStatus.SUCCESS, None
    return ExecutionStatus.FAILED, f"exit code {run.exit_code}: {shown}{detail}"

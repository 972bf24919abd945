"""Running a command as a killable process tree: the one runner of command judges and CLI agents.

`run_command` starts a command in its own session, in a folder, with an environment, optional
standard input and a timeout; it streams what the command prints to callbacks, and after a
timeout -- or the caller's cancellation -- kills the command with everything it started
(`agentjudge.judges._proctree.kill_tree`). `agentjudge.judges.CommandJudge` and
`agentjudge.bridges.run_cli_agent` both run through it.

On Linux the command runs under a small launcher (`agentjudge.judges._launcher`, this
interpreter) that makes itself a child subreaper, so a daemon the command orphaned (``setsid
-f``, a double fork) is re-parented to the launcher and killed with the rest. The launcher says
on a status pipe whether the command started (or why not). Where the launcher is not used (not
Linux, no known interpreter) or the kernel refuses the subreaper flag (``prctl`` unavailable or
forbidden, e.g. by a seccomp policy), commands still run and are still killed with their
session, process group and descendants; only such an orphan escapes.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from agentjudge.judges._proctree import kill_tree

__all__ = ["Command", "Finished", "last_lines", "run_command"]

Command = str | Sequence[str]
"""A shell command line (run by ``/bin/sh -c``) or an argument vector."""
Sink = Callable[[bytes], None]
"""Receives each chunk a command prints."""

_LAUNCHER = Path(__file__).with_name("_launcher.py")
_REPORT_LIMIT = 4096


@dataclass
class Finished:
    """How a command ended."""

    exit_code: int | None = None
    """Its exit code (negative: the signal that killed it); None when it timed out or did not
    start."""
    timed_out: bool = False
    """It ran past the timeout and its process tree was killed."""
    not_started: OSError | None = None
    """Why it could not be started (FileNotFoundError, PermissionError, a launcher failure)."""


def _use_launcher() -> bool:
    """Whether commands run under the subreaper launcher (Linux, a known interpreter)."""
    return sys.platform.startswith("linux") and bool(sys.executable)


def _argv(command: Command, status_fd: int | None) -> str | list[str]:
    """What to start: the command itself, or the launcher (see `_launcher`) running it."""
    if status_fd is None:
        return command if isinstance(command, str) else list(command)
    mode, args = ("shell", [command]) if isinstance(command, str) else ("exec", list(command))
    return [sys.executable, "-I", "-S", str(_LAUNCHER), str(status_fd), mode, *args]


def last_lines(text: str, count: int = 5, limit: int = 600) -> str:
    """The last ``count`` non-blank lines of ``text``, cut to about ``limit`` characters."""
    lines = [line for line in text.splitlines() if line.strip()][-count:]
    joined = "\n".join(lines)
    return joined if len(joined) <= limit else "..." + joined[-limit:]


async def _read_report(fd: int) -> bytes:
    """What the launcher wrote on its status pipe, up to end of file (bounded)."""
    report = bytearray()
    while len(report) <= _REPORT_LIMIT:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, _REPORT_LIMIT)
        except BlockingIOError:
            continue
        if not chunk:
            break
        report += chunk
    return bytes(report[:_REPORT_LIMIT])


async def _launch_problem(fd: int, proc: Process) -> OSError | None:
    """None once the launcher started the command, else why it could not."""
    text = (await _read_report(fd)).decode("utf-8", errors="replace").strip()
    number, _, message = text.partition("\t")
    if number == "0":
        return None
    if number.isdigit():
        return OSError(int(number), message)  # FileNotFoundError, PermissionError, ...
    # The launcher died before reporting: what it printed says why.
    output = bytearray()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            async for chunk in stream:
                output += chunk[: _REPORT_LIMIT - len(output)]
    said = last_lines(output.decode("utf-8", errors="replace") or text or "no output")
    return OSError(f"the command launcher failed: {said}")


async def _drain(stream: ByteReceiveStream | None, sink: Sink) -> None:
    if stream is not None:
        async for chunk in stream:
            sink(chunk)


async def _feed(stream: ByteSendStream, data: bytes) -> None:
    async with stream:
        # A command that does not read its input closes the pipe early.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(data)


async def _start(
    command: Command, cwd: Path, env: Mapping[str, str], stdin: bytes | None, merged: bool
) -> tuple[Process, int | None]:
    """The started process and the read end of the launcher's status pipe (None: no launcher).

    Raises:
        OSError: the process cannot be started.
    """
    status_r, status_w = os.pipe() if _use_launcher() else (None, None)
    try:
        proc = await anyio.open_process(
            _argv(command, status_w),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            pass_fds=() if status_w is None else (status_w,),
        )
    except BaseException:
        if status_r is not None:
            os.close(status_r)
        raise
    finally:
        if status_w is not None:
            os.close(status_w)  # the launcher holds its own copy
    if status_r is not None:
        os.set_blocking(status_r, False)
    return proc, status_r


async def run_command(
    command: Command,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,  # noqa: ASYNC109 - the command's deadline, applied with move_on_after
    stdout: Sink,
    stderr: Sink | None = None,
    stdin: bytes | None = None,
) -> Finished:
    """Run ``command`` to its end or its timeout; its whole process tree is gone on return.

    Args:
        command: A shell command line or an argument vector.
        cwd: The folder it runs in.
        env: Its whole environment.
        timeout: Seconds before its process tree is killed (None: no limit); the launcher's
            start-up counts.
        stdout: Receives its standard output as it comes.
        stderr: Receives its standard error (None: merged into ``stdout``).
        stdin: Sent on its standard input, then closed (None: no input).

    Cancelling the caller kills the process tree and propagates.
    """
    try:
        # Shielded: a cancellation arriving while the process starts must not leak it; it is
        # delivered at the next checkpoint, where the finally clause below kills it.
        with anyio.CancelScope(shield=True):
            proc, status = await _start(command, cwd, env, stdin, stderr is None)
    except OSError as exc:
        return Finished(not_started=exc)
    done = Finished()
    finished = False
    try:
        with anyio.move_on_after(timeout) as scope:
            if status is not None:
                done.not_started = await _launch_problem(status, proc)
            if done.not_started is None:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_drain, proc.stdout, stdout)
                    if stderr is not None:
                        tg.start_soon(_drain, proc.stderr, stderr)
                    if proc.stdin is not None:
                        tg.start_soon(_feed, proc.stdin, stdin or b"")
                    await proc.wait()
        done.timed_out = scope.cancelled_caught
        finished = not done.timed_out
    finally:
        if status is not None:
            os.close(status)
        if not finished:
            kill_tree(proc.pid, alive=proc.returncode is None)
        with anyio.CancelScope(shield=True):
            await proc.wait()
            await proc.aclose()
    if not done.timed_out and done.not_started is None:
        done.exit_code = proc.returncode
    return done

"""Killing a command with everything it started: its session, its process group, its descendants.

A command runs as the leader of a new session (so its process id is also its session and process
group id). `kill_tree` removes, on Linux:

- every descendant of the leader (children, grandchildren...), even one that called ``setsid``
  or ``setpgid`` to leave the group, as long as its parent chain still leads to the leader;
- every process of the leader's session (a process whose parent died but that stayed in the
  session), and their descendants;
- the leader's process group (``killpg``).

Processes are found through ``/proc`` and frozen with SIGSTOP as they are found (a stopped process
cannot fork or exit to escape), the search repeats until it finds nothing new, then all of them
get SIGKILL. A process that left the session (``setsid``) *and* whose parent exited before the
kill, e.g. ``setsid -f`` or a double-forking daemon, is found only because commands (command
judges, `agentjudge.bridges.run_cli_agent`) run under a launcher that is a child subreaper
(`agentjudge.judges._process`, `agentjudge.judges._launcher`): the orphan is re-parented to
the launcher, the leader, instead of to init. Where that is not available (not Linux, or the
kernel refuses the flag) such an orphan escapes. Without ``/proc`` (macOS) only the process
group is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable

__all__ = ["kill_tree"]

_PROC = "/proc"
_MAX_ROUNDS = 50


def _table() -> list[tuple[int, int, int]]:
    """``(pid, parent pid, session id)`` of every process readable in ``/proc``."""
    rows: list[tuple[int, int, int]] = []
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as fh:
                text = fh.read()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
        fields = text[text.rfind(b")") + 2 :].split()
        if len(fields) >= 4:
            rows.append((int(name), int(fields[1]), int(fields[3])))
    return rows


def _members(table: Iterable[tuple[int, int, int]], leader: int, alive: bool) -> set[int]:
    """The leader's session members and the descendants of the leader and of those."""
    children: dict[int, list[int]] = {}
    found: set[int] = set()
    for pid, ppid, sid in table:
        children.setdefault(ppid, []).append(pid)
        if sid == leader:
            found.add(pid)
    # A reaped leader's pid may belong to someone else by now: only follow its children while
    # it is still ours (running or a zombie we have not waited for).
    queue = list(found) + ([leader] if alive else [])
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found:
                found.add(child)
                queue.append(child)
    found.discard(os.getpid())
    return found


def _signal(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def kill_tree(leader: int, *, alive: bool) -> None:
    """SIGKILL the session and process group led by ``leader`` and all their descendants.

    ``alive`` is False once the leader has been waited for: its pid may have been reused, so
    only its session and group are searched, not its children.
    """
    doomed: set[int] = set()
    if os.path.isdir(_PROC):
        for _ in range(_MAX_ROUNDS):
            fresh = _members(_table(), leader, alive) - doomed
            if not fresh:
                break
            _signal(fresh, signal.SIGSTOP)
            doomed |= fresh
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
    _signal(doomed, signal.SIGKILL)

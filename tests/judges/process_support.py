"""Helpers for tests of command judges: is a process gone, wait for it, wait for a file,
run a command past a timeout that fired after it started."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio

T = TypeVar("T")


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (gone, or a zombie waiting only for its reaper)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # killed; a zombie waits only for its reaper


async def wait_until_gone(pid: int) -> bool:
    """Whether ``pid`` is gone within 10 s (killing is asynchronous: a bound, not an order)."""
    with anyio.move_on_after(10):
        while not process_gone(pid):
            await anyio.sleep(0.02)
    return process_gone(pid)


async def wait_for_file(path: Path) -> None:
    """Wait (at most 10 s) until ``path`` exists and holds non-blank text."""
    with anyio.fail_after(10):
        while not has_text(path):
            await anyio.sleep(0.01)


TIMEOUTS = (0.4, 0.8, 1.6, 3.2, 6.4)
"""The timeouts `past_timeout` tries, shortest first (the last is above the 3 s the tests used)."""


async def past_timeout(
    run: Callable[[float, Path], Awaitable[T]],
    started: Callable[[T, Path], bool],
    folder: Path,
) -> tuple[T, Path, float]:
    """Run a command that outlives its timeout, with a timeout that fired after it started.

    A test of what a timeout kills needs the command's processes to exist when it fires, and
    starting them (interpreters among them) takes ~0.05 s on an idle machine but over a second
    under ``make test``'s load. Rather than one timeout long enough for the worst case, which
    every run then waits out, ``run(timeout, workspace)`` runs in a fresh folder under
    ``folder`` with the timeouts of `TIMEOUTS` until ``started(result, workspace)`` says the
    processes had started before it fired. Only a run that proves it is asserted on: an
    earlier one, killed before the processes the test is about existed, proves nothing.

    Returns:
        The last run's result, its workspace and its timeout.
    """
    for attempt, timeout in enumerate(TIMEOUTS):
        workspace = folder / f"attempt-{attempt}"
        workspace.mkdir()
        result = await run(timeout, workspace)
        if started(result, workspace):
            break
    return result, workspace, timeout


def has_text(path: Path) -> bool:
    """Whether ``path`` exists and holds non-blank text."""
    return path.exists() and bool(path.read_text().strip())

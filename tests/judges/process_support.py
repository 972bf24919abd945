"""Helpers for tests of command judges: is a process gone, wait for it, wait for a file."""

from __future__ import annotations

import os
from pathlib import Path

import anyio


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
        while not path.exists() or not path.read_text().strip():
            await anyio.sleep(0.01)

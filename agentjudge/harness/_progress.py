"""Run progress: a rich live bar on a terminal, plain lines on stderr otherwise.

Workers only bump two integers (`ProgressState`); a separate task renders them periodically, so
progress costs nothing per case.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import anyio

from agentjudge.harness._text import plural

__all__ = ["ProgressState", "clock", "render_progress"]


class ProgressState:
    """Counters the run updates and the renderer reads."""

    __slots__ = ("done", "errors", "started", "total")

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.errors = 0
        self.started = time.monotonic()

    def line(self, now: float | None = None) -> str:
        """``agentjudge: 120/300 cases (40%), 2 errors, 350.0 cases/s, ETA 1s``.

        The ETA assumes the rate so far holds; it is left out until a case finished.
        """
        elapsed = max((time.monotonic() if now is None else now) - self.started, 1e-9)
        rate = self.done / elapsed
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        eta = f", ETA {clock(self.remaining / rate)}" if rate > 0 and self.remaining else ""
        return (
            f"agentjudge: {self.done}/{self.total} cases{pct}, {plural(self.errors, 'error')}, "
            f"{rate:.1f} cases/s{eta}"
        )

    @property
    def remaining(self) -> int:
        """Cases not finished yet."""
        return max(0, self.total - self.done)


def clock(seconds: float) -> str:
    """A duration to read at a glance: ``"42s"``, ``"3m05s"``, ``"2h07m"``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


async def _plain(state: ProgressState, done: anyio.Event, stream: TextIO, interval: float) -> None:
    while not done.is_set():
        with anyio.move_on_after(interval):
            await done.wait()
        if not done.is_set():
            print(state.line(), file=stream, flush=True)
    elapsed = time.monotonic() - state.started
    print(
        f"agentjudge: {state.done}/{state.total} cases done in {elapsed:.1f}s "
        f"({plural(state.errors, 'error')})",
        file=stream,
        flush=True,
    )


async def _rich(state: ProgressState, done: anyio.Event, stream: TextIO) -> None:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [
        TextColumn("[bold]agentjudge"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[errors]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    ]
    console = Console(file=stream)
    with Progress(*columns, console=console, auto_refresh=False) as bar:
        task = bar.add_task("cases", total=state.total or None, errors=plural(0, "error"))
        while not done.is_set():
            bar.update(
                task, completed=state.done, errors=plural(state.errors, "error"), refresh=True
            )
            with anyio.move_on_after(0.1):
                await done.wait()
        bar.update(task, completed=state.done, errors=plural(state.errors, "error"), refresh=True)


async def render_progress(
    state: ProgressState,
    done: anyio.Event,
    *,
    mode: str = "auto",
    stream: TextIO | None = None,
    interval: float = 5.0,
) -> None:
    """Render ``state`` until ``done`` is set.

    Args:
        state: The counters.
        done: Set when the run finished.
        mode: ``"auto"`` (rich on a terminal when rich is installed, plain otherwise),
            ``"rich"``, ``"plain"`` or ``"off"``.
        stream: Where to write (default stderr).
        interval: Seconds between plain lines.
    """
    out = stream if stream is not None else sys.stderr
    if mode == "off":
        await done.wait()
        return
    if mode in ("auto", "rich"):
        tty = mode == "rich" or (hasattr(out, "isatty") and out.isatty())
        if tty:
            try:
                import rich.progress  # noqa: F401
            except ImportError:
                pass
            else:
                await _rich(state, done, out)
                return
    await _plain(state, done, out, interval)

"""Run async code on an asyncio loop whose clock jumps: sleeps and timeouts take no real time.

Whenever the loop would block waiting for a timer, the virtual clock advances to that timer
instead. When it would block with no timer at all (everything waits for something that never
comes: a wedge), `Wedged` is raised. Only for code that does no real I/O (e.g. the adaptive
controller driven directly).
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


class Wedged(Exception):
    """Every task waits and no timer is pending: nothing can ever run again."""


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Wedged("every task waits and no timer is pending")
        self.now += timeout
        return ready


class _VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._jumping = _JumpingSelector()
        super().__init__(self._jumping)

    def time(self) -> float:
        return self._jumping.now


def run_virtual(main: Callable[[], Awaitable[T]]) -> T:
    """``main()`` on a virtual-time asyncio loop (see the module docstring)."""
    return anyio.run(main, backend="asyncio", backend_options={"loop_factory": _VirtualLoop})

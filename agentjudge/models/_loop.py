"""Per-event-loop state: objects (locks, limiters, HTTP clients) that must not cross loops."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, TypeVar

import anyio

from agentjudge._compat import running_loop

if TYPE_CHECKING:
    import asyncio

__all__ = ["LoopLocal", "Wake", "current_loop", "new_wake", "thread_busy_time"]

T = TypeVar("T")


def current_loop() -> object:
    """An object identifying the running event loop (the asyncio loop, the trio token...)."""
    return running_loop()


class LoopLocal(Generic[T]):
    """Holds one value per event loop: made by ``factory`` the first time a loop asks.

    Only the most recent loop's value is kept; a client reused by a later ``anyio.run`` gets
    fresh locks and limiters instead of ones bound to a closed loop. A pickled copy keeps only
    the factory (which must be picklable itself, e.g. a class).
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._loop: object | None = None
        self._value: T | None = None

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its value: a copy in another process makes its own on first use."""
        return {"_factory": self._factory, "_loop": None, "_value": None}

    def get(self) -> T:
        """The value for the running loop."""
        loop = running_loop()  # current_loop(), one call fewer (one per request)
        if self._loop is not loop or self._value is None:
            self._value = self._factory()
            self._loop = loop
        return self._value

    def peek(self) -> T | None:
        """The value made for the last loop that asked, if any (no loop needed)."""
        return self._value

    def is_current(self) -> bool:
        """True when the held value belongs to the running loop."""
        return self._value is not None and self._loop is current_loop()

    def clear(self) -> None:
        """Forget the held value."""
        self._loop = None
        self._value = None


class Wake:
    """One waiter's wake-up on asyncio: `anyio.Event`'s ``set`` and ``wait``, on a future.

    An `anyio.Event` wraps an ``asyncio.Event``, a deque of waiters and two coroutines per wait:
    a bare future leaves fewer objects alive per waiting request (fewer for the collector to
    count). For one waiter that awaits it at most once (make a new one to wait again).
    """

    __slots__ = ("_future",)

    def __init__(self, future: asyncio.Future[None]) -> None:
        self._future = future

    def set(self) -> None:
        """Wake the waiter (once; a cancelled wait stays cancelled)."""
        if not self._future.done():
            self._future.set_result(None)

    def wait(self) -> Awaitable[None]:
        """Awaitable until `set` (cancelling the waiter cancels the future, as the event's)."""
        return self._future


def new_wake() -> Wake | anyio.Event:
    """A wake-up for one waiter: a `Wake` on asyncio, else an `anyio.Event` (e.g. on trio)."""
    import asyncio  # here, not at the top: importing the models starts no event loop

    loop = running_loop()
    if isinstance(loop, asyncio.AbstractEventLoop):
        return Wake(loop.create_future())
    return anyio.Event()


_SCHEDSTAT = "/proc/thread-self/schedstat"
_schedstat_readable = True
"""False once reading `_SCHEDSTAT` failed: `thread_busy_time` falls back to CPU time for good."""


def thread_busy_time() -> float:
    """Seconds the calling thread has been busy: running, or ready to run and waiting for a core.

    An event loop's thread is idle only while it waits for I/O or a timer; the rest of the
    time its callbacks run or wait for a core (a loaded machine delays a busy loop as much as
    its own work does). On Linux both parts come from ``/proc/thread-self/schedstat`` (CPU time
    and run-queue delay, in ns); elsewhere, or when it cannot be read, only the CPU time
    (`time.thread_time`). One reading costs tens of microseconds (a file read): the adaptive
    controller reads it a few times a second, never per request.
    """
    global _schedstat_readable
    if _schedstat_readable:
        try:
            fd = os.open(_SCHEDSTAT, os.O_RDONLY)
            try:
                ran, waited = os.read(fd, 128).split()[:2]
            finally:
                os.close(fd)
            return (int(ran) + int(waited)) * 1e-9
        except (OSError, ValueError):
            _schedstat_readable = False
    return time.thread_time()

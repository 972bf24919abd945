"""Telling real cancellation from a judge's own, and bounding threads that outlive their timeout.

Two faults every failure boundary must handle the same way:

* **A stray ``CancelledError``.** A judge (or task) may raise the backend's cancellation
  exception although nobody cancelled the caller, e.g. by awaiting a future someone else
  cancelled. The exception type cannot tell the two apart; the cancel-scope state can:
  `is_stray_cancellation` is true when no enclosing scope of the current task was cancelled
  (``anyio.current_effective_deadline()`` is ``-inf`` once one was) and, on asyncio, nobody
  called ``Task.cancel()`` on the current task (``Task.cancelling()`` is 0; anyio's scopes and
  plain asyncio cancellation both raise it). A stray one is a failure of the judge
  (`StrayCancellation`, reported with ``error_type="CancelledError"``); a real one propagates.
* **Sync calls stuck past their timeout.** Python cannot stop a thread: a sync judge or task
  that times out is abandoned and its thread runs on. `run_sync_bounded` counts abandoned
  threads process-wide (only threads really running the call: each leaves the count when it
  returns, and a call cancelled before a thread took it up never runs); while
  `MAX_ABANDONED_THREADS` of them are still running, further sync calls fail at once with
  `ThreadsExhausted` instead of piling up threads without bound.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

__all__ = [
    "MAX_ABANDONED_THREADS",
    "StrayCancellation",
    "ThreadsExhausted",
    "abandoned_threads",
    "cancel_requested",
    "error_type_name",
    "is_stray_cancellation",
    "run_sync_bounded",
]

T = TypeVar("T")

MAX_ABANDONED_THREADS = 32
"""Threads of timed-out sync calls that may still be running before new sync calls are refused."""


class StrayCancellation(Exception):
    """A judge or task raised ``CancelledError`` although its caller was not cancelled.

    Reported as ``error_type="CancelledError"`` (see `error_type_name`); the original
    exception is chained as ``__cause__``.
    """


class ThreadsExhausted(RuntimeError):
    """Too many sync calls are stuck past their timeout; no further thread is started."""


def cancel_requested(scope: anyio.CancelScope | None = None) -> bool:
    """Whether the running code is being cancelled: the truth behind a caught ``CancelledError``.

    The cancel scopes are the truth, not the exception's type: ``scope`` (or an enclosing scope
    up to a shield) was cancelled or its deadline has passed, or (asyncio) the task has a
    cancellation request pending (`asyncio.Task.cancelling`). A coroutine that awaited a future
    cancelled by someone else raises ``CancelledError`` with none of these true.

    Args:
        scope: A scope the caller entered around the call (its ``cancel_called`` counts).
    """
    if scope is not None and scope.cancel_called:
        return True
    if anyio.current_effective_deadline() <= anyio.current_time():
        return True  # an enclosing scope was cancelled (-inf) or its deadline passed
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not running on asyncio: the scopes above are all there is
        return False
    return task is not None and task.cancelling() > 0


def is_stray_cancellation(exc: BaseException, scope: anyio.CancelScope | None = None) -> bool:
    """True when ``exc`` is the backend's cancellation exception but nobody cancelled us.

    Must be called in the task that caught ``exc``, before anything else awaits (see
    `cancel_requested`).
    """
    return isinstance(exc, anyio.get_cancelled_exc_class()) and not cancel_requested(scope)


def error_type_name(exc: BaseException) -> str:
    """The ``error_type`` recorded for ``exc`` (a stray cancellation reads "CancelledError")."""
    if isinstance(exc, StrayCancellation):
        return "CancelledError"
    return type(exc).__name__


class _Abandoned:
    """Process-wide count of timed-out sync calls whose threads are still running."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.count = 0


_ABANDONED = _Abandoned()


class _NotStarted(Exception):
    """A worker picked up a call whose caller had already left; nothing was run."""


def abandoned_threads() -> int:
    """How many threads of timed-out (abandoned) sync calls are still running in this process."""
    return _ABANDONED.count


def wait_abandoned_threads(at_most: int, timeout: float) -> bool:
    """Block until at most ``at_most`` abandoned threads run; False if ``timeout`` passed first."""
    with _ABANDONED.changed:
        return _ABANDONED.changed.wait_for(lambda: _ABANDONED.count <= at_most, timeout)


async def run_sync_bounded(
    fn: Callable[..., T], *args: object, limiter: anyio.CapacityLimiter, what: str
) -> T:
    """Run ``fn(*args)`` on a worker thread; cancellation abandons the thread (bounded).

    Only a thread that is really running ``fn`` when the caller is cancelled counts as
    abandoned, and it leaves the count when ``fn`` returns. A call cancelled before a worker
    started it (waiting for a ``limiter`` token, or queued for a worker) never runs ``fn``.

    Args:
        fn: The blocking callable.
        *args: Its positional arguments.
        limiter: Caps the threads running at once (abandoned ones no longer hold a token).
        what: Names the caller in the `ThreadsExhausted` message, e.g. ``"judge 'x'"``.

    Raises:
        ThreadsExhausted: `MAX_ABANDONED_THREADS` abandoned threads are still running.
    """
    state = _ABANDONED
    if state.count >= MAX_ABANDONED_THREADS:
        raise ThreadsExhausted(
            f"{what} was not started: {state.count} threads of earlier sync calls are still "
            f"running past their timeout (limit {MAX_ABANDONED_THREADS}); a blocking call "
            "ignores timeouts, so make it return or make it async"
        )
    started = finished = left = False

    def call() -> T:
        nonlocal started, finished
        with state.changed:
            if left:  # the caller is gone: running fn now would be a thread nobody waits for
                raise _NotStarted
            started = True
        try:
            return fn(*args)
        finally:
            with state.changed:
                finished = True
                if left:
                    state.count -= 1
                    state.changed.notify_all()

    try:
        return await anyio.to_thread.run_sync(call, limiter=limiter, abandon_on_cancel=True)
    except BaseException:
        with state.changed:
            left = True
            if started and not finished:
                state.count += 1
        raise

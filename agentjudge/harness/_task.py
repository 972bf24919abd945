"""The task: the system under test, called once per case.

A task is any callable ``task(case)``, async or sync, returning any value or a `TaskOutput`.
Sync tasks run on worker threads (at most ``threads`` at once), never on the event loop. A task
that raises, or runs past the per-case timeout, makes that case an error row; the run goes on.
Cancellation (Ctrl-C, an aborted run) is never turned into an error row, and a task raising
KeyboardInterrupt or SystemExit stops the run (`TaskInterrupted`).

Whether a ``CancelledError`` is a cancellation is decided by the cancel scopes around the call,
not by the exception's type (`agentjudge.judging.cancel_requested`): a task that awaited a
future someone else cancelled raises ``CancelledError`` although nobody cancelled the run, and
that is the task's own failure, an error row naming ``CancelledError``. A sync task runs on a
worker thread; one stuck past its timeout is abandoned, and the abandoned threads are bounded
process-wide (`agentjudge.judging.run_sync_bounded`: past the bound, a case's sync task is not
started and its row is an error naming ``ThreadsExhausted``).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from agentjudge.engine import await_armed
from agentjudge.exceptions import AgentJudgeError
from agentjudge.harness._case import Case
from agentjudge.judging import cancel_requested, run_sync_bounded, short_traceback

__all__ = [
    "TaskError",
    "TaskInterrupted",
    "TaskRunner",
    "describe_error",
    "task_error",
]


class TaskInterrupted(AgentJudgeError):
    """The task raised KeyboardInterrupt or SystemExit: the run stops (chained as the cause).

    Re-raised as an ordinary exception because asyncio lets those two escape the event loop
    without unwinding the other tasks, which would leave finished rows unwritten.
    """


def describe_error(exc: BaseException) -> str:
    """``"TypeName: message"`` (just the type name when the message is empty)."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class TaskError(str):
    """A task's failure: the row's ``error`` text, carrying where the task raised.

    A `str` (everything that reads the error reads the text); ``traceback`` is the task's
    short traceback (`agentjudge.judging.short_traceback`), None for a timeout.
    """

    __slots__ = ("traceback",)
    traceback: tuple[str, ...] | None

    def __new__(cls, text: str, traceback: tuple[str, ...] | None = None) -> TaskError:
        """The error ``text`` with its ``traceback``."""
        made = super().__new__(cls, text)
        made.traceback = traceback
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return (TaskError, (str(self), self.traceback))


def task_error(exc: BaseException) -> TaskError:
    """The error of a task that raised ``exc``: ``"TypeName: message"`` and its traceback."""
    return TaskError(describe_error(exc), short_traceback(exc))


def _stray_cancel_error(exc: BaseException) -> TaskError:
    """The error of a task that raised ``CancelledError`` nobody asked for."""
    message = str(exc).strip()
    detail = f"{message} " if message else ""
    return TaskError(
        f"CancelledError: {detail}(raised by the task although the run was not cancelled, "
        "e.g. it awaited a future that was cancelled elsewhere)",
        short_traceback(exc),
    )


def _is_async(fn: object) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's, not the instance's
    return call is not None and inspect.iscoroutinefunction(call)


def task_name(fn: object) -> str:
    """A readable name for a task callable."""
    name = getattr(fn, "name", None)
    if isinstance(name, str) and name:
        return name
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{qualname}" if module else str(qualname)


class TaskRunner:
    """Calls a task on one case with a timeout and turns its failure into an error string.

    Args:
        fn: The task, ``fn(case)``; async or sync.
        timeout: Seconds per case (None: no limit). A sync task past its timeout is abandoned
            (its thread finishes in the background; Python cannot stop it).
        threads: Worker threads for a sync task.
    """

    def __init__(self, fn: Callable[[Case], Any], *, timeout: float | None, threads: int) -> None:
        if not callable(fn):
            raise ValueError(f"task must be callable, got {type(fn).__name__}")
        if timeout is not None and (
            isinstance(timeout, bool) or not math.isfinite(timeout) or timeout <= 0
        ):
            raise ValueError(f"task timeout must be finite and > 0 seconds, got {timeout!r}")
        self.fn = fn
        self.timeout = timeout
        self.is_async = _is_async(fn)
        self.name = task_name(fn)
        self._limiter = anyio.CapacityLimiter(max(1, threads))

    async def _call(self, case: Case) -> Any:
        if self.is_async:
            return await self.fn(case)
        value = await run_sync_bounded(
            self.fn, case, limiter=self._limiter, what=f"task {self.name!r}"
        )
        if inspect.isawaitable(value):
            value = await value
        return value

    async def call_guarded(self, case: Case, guard: anyio.CancelScope) -> tuple[Any, str | None]:
        """`__call__` for a caller that runs many cases inside one scope, ``guard``.

        ``guard`` must have been entered by the caller without a deadline. The task's timeout
        becomes ``guard``'s deadline only while the task runs, and only once it suspends (a
        task that completes in its first step needs no timer); it is taken off again when the
        task returns. When the timeout strikes, the cancellation propagates out of this call
        to ``guard``, which catches it: the caller then records the case as timed out (also
        when the task swallowed the cancellation and returned: check ``guard.cancel_called``).
        """
        try:
            if self.timeout is None:
                return await self._call(case), None
            try:
                return await await_armed(self._call(case), guard, self.timeout), None
            finally:
                guard.deadline = math.inf
        except anyio.get_cancelled_exc_class() as exc:
            if cancel_requested(guard):
                raise
            return None, _stray_cancel_error(exc)
        except Exception as exc:
            return None, task_error(exc)
        except (KeyboardInterrupt, SystemExit) as exc:
            raise TaskInterrupted(f"the task raised {describe_error(exc)}") from exc

    def timeout_error(self) -> str:
        """The error string of a case whose task ran past the timeout."""
        return f"TimeoutError: the task did not finish within {self.timeout:g}s"

    async def __call__(self, case: Case) -> tuple[Any, str | None]:
        """Run the task on ``case``: ``(output, None)`` or ``(None, "TypeName: message")``."""
        try:
            if self.timeout is None:
                return await self._call(case), None
            # The deadline is armed only if the task suspends (an instant task needs no timer).
            with anyio.CancelScope() as scope:
                return await await_armed(self._call(case), scope, self.timeout), None
        except anyio.get_cancelled_exc_class() as exc:
            if cancel_requested():
                raise
            return None, _stray_cancel_error(exc)
        except Exception as exc:
            return None, task_error(exc)
        except (KeyboardInterrupt, SystemExit) as exc:
            raise TaskInterrupted(f"the task raised {describe_error(exc)}") from exc
        return None, self.timeout_error()

"""Time a judge spends waiting for capacity inside its own call (e.g. a model client's rate limit).

The engine measures the time a leaf waits for its slots (``JudgeResult.queued_s``) and the time
the judge works (``duration_s``). A model client that waits for rate-limit capacity inside the
judge's call reports that wait with `add_queued`; the engine then counts it as queueing, not as
the judge's working time. Outside an engine attempt `add_queued` does nothing.

The engine brackets each attempt with `start_attempt` / `end_attempt`. On asyncio a task
keeps its clock between attempts and the next attempt in the same task resets and reuses it,
so a task running many attempts one after another (a `run()` worker) sets the context
variable once, not once per attempt (a context variable set makes a new context mapping, a
token and a clock, all alive while the judge waits for its model). An attempt nested in
another one of the same task (a judge that evaluates with another evaluator) gets a clock of
its own and restores the outer one when it ends; a task that inherited another task's clock
(a child task) sets its own. `tests/test_judging_queue_clock.py` pins the queued
seconds to one fresh clock per attempt.
"""

from __future__ import annotations

import weakref
from contextvars import ContextVar, Token
from typing import Any

__all__ = ["QueueClock", "add_queued", "end_attempt", "queue_clock", "start_attempt"]


class QueueClock:
    """Seconds reported as queueing during one attempt.

    Args:
        owner: The task whose attempts may reuse it (None, or an object without weak
            references: not reused).
    """

    __slots__ = ("busy", "owner", "seconds")

    def __init__(self, owner: object = None) -> None:
        self.seconds = 0.0
        self.owner = _weak(owner)
        """The owner, held weakly: the clock sits in the task's own context, so a strong
        reference would make a cycle (task -> context -> clock -> task) that only the
        garbage collector frees, with the task's frames and everything they held (a jury
        member's task per case: ~80 objects per case left to the collector)."""
        self.busy = True

    def owned_by(self, owner: object) -> bool:
        """True if ``owner`` (not None) is the task this clock belongs to."""
        ref = self.owner
        return ref is not None and ref() is owner


def _weak(owner: object) -> weakref.ref[Any] | None:
    if owner is None:
        return None
    try:
        return weakref.ref(owner)
    except TypeError:  # no weak references to it: the clock is not reused
        return None


queue_clock: ContextVar[QueueClock | None] = ContextVar("agentjudge_queue_clock", default=None)
"""The clock of the attempt running in this task (set by the engine around each attempt)."""


def add_queued(seconds: float) -> None:
    """Report ``seconds`` spent waiting for capacity inside the current judge call."""
    clock = queue_clock.get()
    if clock is not None and seconds > 0:
        clock.seconds += seconds


_current_task: Any = None
"""``asyncio.current_task`` (bound on first use: importing this module starts no event loop)."""


def _task() -> object:
    """The running asyncio task (None elsewhere: clocks are then never reused)."""
    global _current_task
    if _current_task is None:
        import asyncio

        _current_task = asyncio.current_task
    try:
        return _current_task()
    except RuntimeError:  # no asyncio loop running here (another backend)
        return None


current_owner = _task
"""The task an attempt starting now runs in (what `start_attempt` reuses clocks within)."""

_FIND: Any = object()


def start_attempt(owner: object = _FIND) -> tuple[QueueClock, Token[QueueClock | None] | None]:
    """The clock of an attempt starting now, and what `end_attempt` needs to close it.

    ``owner``: the running task when the caller knows it (`current_owner` of a task whose
    attempts all run in it: an `Evaluator.run` worker's); by default it is looked up.
    """
    held = queue_clock.get()
    if owner is _FIND:
        owner = _task()
    if held is not None and not held.busy and owner is not None and held.owned_by(owner):
        held.busy = True
        held.seconds = 0.0
        return held, None
    clock = QueueClock(owner)
    return clock, queue_clock.set(clock)


def end_attempt(clock: QueueClock, token: Token[QueueClock | None] | None) -> float:
    """Close the attempt `start_attempt` opened; the seconds reported as queueing during it.

    The clock stays set for the task's next attempt, except where it cannot be reused (no
    task) or it hides an outer attempt's clock of the same task, which comes back.
    """
    clock.busy = False
    if token is not None:
        outer = token.old_value
        ref = clock.owner
        if ref is None or (type(outer) is QueueClock and outer.owned_by(ref())):
            queue_clock.reset(token)
    return clock.seconds

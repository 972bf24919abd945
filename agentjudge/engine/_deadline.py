"""Time limits: per-judge attempt timeouts and per-evaluation deadlines (one place for both).

* **Timeouts** bound each attempt of one judge. A judge's timeout is, first match wins: the
  Evaluator's ``timeouts[name]``, the judge's own ``attempt_timeout`` attribute, the
  Evaluator's ``timeout``. `resolve_timeouts` fixes them per leaf when the Evaluator is built
  (unknown names are a ValueError, as for ``limits``); the leaf boundary
  (`agentjudge.engine._leaf`) arms them.
* **Deadlines** bound a whole evaluation (``evaluate(..., deadline=)``, ``verdict(...,
  deadline=)``, ``submit(..., deadline=)``, ``offer(..., deadline=)``): no attempt, retry
  wait, rate-limit wait or slot wait outlives it. Each judge still running when it passes is
  ERROR ``TimeoutError`` saying the evaluation's deadline fired (the leaf boundary's deadline
  scope); `execute_until` bounds what is left (voting, callbacks) ``BACKSTOP_S`` later (or,
  for an evaluation that starts after its deadline, ``BACKSTOP_S`` after it starts) and, if
  it had to cut the evaluation itself short, returns an ERROR verdict saying so, with the
  results recorded by then.

Both errors name the limit that fired: ``judge 'x' timed out after 2 s (timeouts['x'],
attempt 1)`` or ``judge 'x' ran out of the evaluation's deadline (5 s) after 2 attempts``.

* **Attempt timers** (`arm`, `disarm`): an attempt's timeout is its anyio cancel scope's
  deadline, so the judge and its model client see it (``anyio.current_effective_deadline()``
  bounds their waits). On asyncio the scope gets the deadline without a loop timer of its own
  (`agentjudge._compat.untimed_deadline`): attempts of the same length are queued in arming
  order under one loop timer per length and thread, which cancels each scope whose deadline
  passed while its attempt runs (`_Queue`; one append and one pop per attempt instead of a
  timer handle pushed on and removed from the loop's heap, ~5 us and two objects alive per
  attempt in W4). An attempt armed out of order (its first step ran longer than the one armed
  before it), on another backend, or past `_MAX_LENGTHS` lengths armed at once in a thread,
  sets the scope's deadline through anyio as before.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from time import perf_counter
from typing import Any

import anyio

from agentjudge._compat import clear_deadline, expire, loop_time, untimed_deadline_in
from agentjudge.core import Judgment, Verdict
from agentjudge.engine._knobs import check_seconds
from agentjudge.engine._plan import Leaf
from agentjudge.engine._state import RunState

__all__ = [
    "BACKSTOP_S",
    "Armed",
    "arm",
    "clear_deadline",
    "deadline_error",
    "disarm",
    "execute_until",
    "resolve_timeouts",
]

BACKSTOP_S = 0.05
"""How long after the deadline the evaluation as a whole is cancelled (see `execute_until`)."""


def resolve_timeouts(
    leaves: Sequence[Leaf],
    default: float | None,
    timeouts: Mapping[str, float | None] | None,
) -> tuple[tuple[float | None, ...], tuple[str, ...]]:
    """Each leaf's attempt timeout (None: none) and where it came from, in leaf order.

    Args:
        leaves: The plan's leaves (each carries its judge's ``attempt_timeout``).
        default: The Evaluator's ``timeout``.
        timeouts: The Evaluator's ``timeouts`` (judge name -> seconds, None: no timeout).

    Raises:
        ValueError: ``timeouts`` names an unknown judge, or a value is not seconds > 0.
    """
    timeouts = dict(timeouts or {})
    names = [leaf.name for leaf in leaves]
    unknown = sorted(set(timeouts) - set(names))
    if unknown:
        raise ValueError(
            f"timeouts names unknown judges {unknown}; known judges: {sorted(names) or 'none'}"
        )
    values: list[float | None] = []
    sources: list[str] = []
    for leaf in leaves:
        if leaf.name in timeouts:
            where = f"timeouts[{leaf.name!r}]"
            given = timeouts[leaf.name]
            values.append(None if given is None else check_seconds(where, given))
            sources.append(where)
            continue
        if leaf.attempt_timeout is not None:
            where = f"judge {leaf.name!r}: attempt_timeout"
            values.append(check_seconds(where, leaf.attempt_timeout))
            sources.append("its attempt_timeout")
            continue
        values.append(default)
        sources.append("the evaluator's timeout")
    return tuple(values), tuple(sources)


def deadline_error(leaf: Leaf, run: RunState, attempts: int) -> TimeoutError:
    """The failure of a judge cut short by its evaluation's deadline."""
    made = "before its first attempt" if attempts == 0 else f"after {_attempts(attempts)}"
    return TimeoutError(
        f"judge {leaf.name!r} ran out of the evaluation's deadline ({run.deadline_s:g} s) {made}"
    )


def _attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


async def execute_until(
    execute: Callable[[RunState], Awaitable[Verdict]], run: RunState, at: float, seconds: float
) -> Verdict:
    """Run ``execute(run)`` with the deadline ``at`` (``anyio.current_time()`` clock).

    ``seconds`` is the deadline as the caller gave it (for messages).
    """
    run.deadline, run.deadline_s = at, seconds
    # Every judge (and its wait for a slot) runs in a scope with the deadline itself and
    # records its TimeoutError; this scope is a backstop for the rest, a moment later so that
    # those records are made first. An evaluation that starts late (a background offer whose
    # worker was busy past the deadline) still gives its judges that moment to record theirs.
    with anyio.CancelScope(deadline=max(at, anyio.current_time()) + BACKSTOP_S):
        return await execute(run)
    return Verdict.fast(  # the deadline cut the evaluation itself short
        judgment=Judgment.errored(
            f"TimeoutError: the evaluation's deadline ({seconds:g} s) expired before it finished"
        ),
        results=tuple(r for r in run.results if r is not None),
        tiers=tuple(run.tiers),
    )


# -- attempt timers ------------------------------------------------------------------------------

Armed = list[Any]
"""One queued attempt: ``[deadline, its scope (None once ended or expired), its _Queue]``."""

_COMPACT_AT = 64
"""Ended attempts left behind a running one before `_Queue` rebuilds its queue."""

_MAX_LENGTHS = 64
"""Timeout lengths with a queue per thread (more at once: anyio's own timer per attempt)."""


class _Queue:
    """The armed attempts of one timeout length on one loop, deadlines in arming order.

    One loop timer at the earliest deadline not yet passed; when it fires, every scope whose
    deadline passed and whose attempt still runs is cancelled (`agentjudge._compat.expire`).
    An attempt that ends leaves at once when it is the oldest (attempts of one length mostly
    end in the order they started); otherwise it is marked ended, and the queue is rebuilt
    without the ended ones once they outnumber the running ones (one stuck attempt cannot
    make it grow with every attempt after it).
    """

    __slots__ = ("ended", "entries", "handle", "loop")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.entries: deque[Armed] = deque()
        self.handle: Any = None
        self.ended = 0

    def add(self, at: float, scope: anyio.CancelScope) -> Armed | None:
        """Queue ``scope`` to expire at ``at``; None when ``at`` is before the last deadline."""
        entries = self.entries
        if entries and entries[-1][0] > at:
            return None
        armed = [at, scope, self]
        entries.append(armed)
        if self.handle is None:
            self.handle = self.loop.call_at(at, self.fire)
        return armed

    def fire(self) -> None:
        """Expire the scopes whose deadline passed; the timer again at the next deadline."""
        self.handle = None
        entries = self.entries
        now = self.loop.time()
        while entries:
            armed = entries[0]
            scope = armed[1]
            if scope is None:
                self.ended -= 1
            elif armed[0] > now:
                self.handle = self.loop.call_at(armed[0], self.fire)
                return
            else:
                armed[1] = None
                expire(scope)
            entries.popleft()

    def remove(self, armed: Armed) -> None:
        """The attempt of ``armed`` ended (its scope exited): it can no longer expire."""
        if armed[1] is None:  # expired: already left the queue
            return
        armed[1] = None
        entries = self.entries
        if entries[0] is armed:
            entries.popleft()
            while entries and entries[0][1] is None:
                entries.popleft()
                self.ended -= 1
            return
        self.ended += 1
        if self.ended > _COMPACT_AT and 2 * self.ended > len(entries):
            self.entries = deque(e for e in entries if e[1] is not None)
            self.ended = 0


class _Queues(threading.local):
    """Per thread: the loop its queues belong to and its queue per timeout length."""

    loop: Any = None
    by_length: dict[float, _Queue]


_QUEUES = _Queues()


def arm(scope: anyio.CancelScope, seconds: float, began: float) -> Armed | None:
    """Give the entered ``scope`` the deadline ``seconds`` after ``began`` (`perf_counter`).

    Returns what to `disarm` when the scope exits (None: nothing to undo). On asyncio the
    deadline is queued (see the module docs); a deadline already passed, one out of order, or
    another backend goes through anyio's own ``scope.deadline``, which cancels at once when it
    passed and otherwise arms a timer of the scope's own.
    """
    left = seconds - (perf_counter() - began)
    found = untimed_deadline_in(scope, left)
    if found is None:
        scope.deadline = loop_time() + left
        return None
    loop, at = found
    queues = _QUEUES
    if queues.loop is not loop:
        queues.loop, queues.by_length = loop, {}
    try:
        queue: _Queue | None = queues.by_length[seconds]
    except KeyError:
        queue = _new_queue(queues.by_length, seconds, loop)
    armed = None if queue is None else queue.add(at, scope)
    if armed is None:
        scope.deadline = at
    return armed


def _new_queue(by_length: dict[float, _Queue], seconds: float, loop: Any) -> _Queue | None:
    """A queue for a new timeout length; None past `_MAX_LENGTHS` lengths with attempts armed.

    Queues with nothing armed are dropped first, so lengths that come and go (a timeout
    computed per request) cannot grow the dict; past the bound, anyio's own timers serve.
    """
    if len(by_length) >= _MAX_LENGTHS:
        for length in [k for k, queue in by_length.items() if not queue.entries]:
            del by_length[length]
        if len(by_length) >= _MAX_LENGTHS:
            return None
    queue = by_length[seconds] = _Queue(loop)
    return queue


def disarm(armed: Armed) -> None:
    """The attempt `arm` queued ended: its scope exited, and must never be cancelled now."""
    armed[2].remove(armed)

"""The fast path: a flat group's instant judges run one after another in the calling task.

A judge that completed its first step without suspending several times in a row (*instant*,
see `agentjudge.engine._learned`) holds its slots for no time at all, so the fast path takes
none: it only checks that they are free and that nobody is queued for them. It needs no task
per member and no cancel scope. Results are
recorded through the leaf boundary (`LeafRunner.record`), exactly as the general way records
them; `tests/engine/test_engine_equivalence.py` checks that both ways give identical results.

Invariants (asserted where they can break):

1. Between the slot check of a member and its call nothing awaits, so no other task can take
   the slots. The only awaits inside the loop are result callbacks (after which the slots are
   checked again) and a member that suspends after all. Such a member takes its slots then,
   *without waiting*; if they are gone the engine raises ``RuntimeError`` (an engine bug),
   never an ERROR judgment of the judge.
2. A member whose first step suspends after all is demoted for good (`Learned.suspended`),
   takes its slots at once and is handed, mid-attempt, to the general way (`Carried`), which
   drives it in this task while the members after it start concurrently: exactly what the
   general way does with a member that suspends, so both ways decide the same (early stop,
   tier short-circuits) and skip the same members.
3. The loop needs no cancel scope: an instant member cannot be interrupted (it completes in
   one step); one that blocked past the timeout is a TimeoutError all the same.
4. Metered judges (a `Budget` admits each call) and judges not yet instant go the general way.

Timing on this path: an instant judge never waits for a slot, so ``queued_s`` is 0. The clock
is read once per member, when it completes: ``duration_s`` runs from the previous member's
completion (or the loop's start) to this one's.

`FastPath.enabled` is the switch: ``Evaluator(fast_path=False)`` or the environment variable
``AGENTJUDGE_FAST_PATH=0`` turns it off, so any workload can be run both ways.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from time import perf_counter
from typing import Any, cast

from anyio.lowlevel import checkpoint_if_cancelled

from agentjudge.core import Context, Judgment
from agentjudge.engine._admission import Admission
from agentjudge.engine._leaf import LeafRunner, stray
from agentjudge.engine._plan import Group, Leaf
from agentjudge.engine._state import Carried, LeafStats, RunState
from agentjudge.judging import coerce_judgment, is_stray_cancellation

__all__ = ["FastPath", "OnDone", "fast_path_default"]

OnDone = Callable[[int, Judgment | None], bool]
"""Called as each member finishes (None: unsampled); True cancels the rest of the group."""


def fast_path_default() -> bool:
    """Whether the fast path is on unless the Evaluator says: ``AGENTJUDGE_FAST_PATH`` != 0."""
    return os.environ.get("AGENTJUDGE_FAST_PATH", "1").strip().lower() not in ("0", "false", "no")


class FastPath:
    """The inline loop of one evaluator (see the module docstring)."""

    __slots__ = ("admission", "enabled", "leaves")

    def __init__(self, leaves: LeafRunner, admission: Admission, *, enabled: bool) -> None:
        self.leaves = leaves
        self.admission = admission
        self.enabled = enabled

    def starts(self, group: Group, run: RunState) -> bool:
        """Whether the loop should start ``group``.

        Yes when it is flat, its first member is instant or unsampled, and slots are free for
        all its sampled members at once (the general way reserves them all up front).
        """
        if not self.enabled or not group.flat or run.deadline is not None:
            return False  # under a deadline every member runs in the leaf's deadline scope
        first = group.leaves[0]
        if not (self.leaves.learned.instant(first.index) or not run.sampled[first.index]):
            return False
        return self.admission.fits(group.leaves, run.sampled)

    def _eligible(self, leaf: Leaf) -> bool:
        """Instant, and not metered by a budget (each metered call must be admitted)."""
        if self.leaves.budget is not None and leaf.metered:
            return False
        return self.leaves.learned.instant(leaf.index)

    async def gather(
        self,
        leaves: tuple[Leaf, ...],
        run: RunState,
        out: list[Any],
        on_done: OnDone | None,
        stats: list[LeafStats | None],
    ) -> tuple[int, Exception | None, bool, Carried | None]:
        """Run the group's leaves inline from the first, as long as they are instant.

        Returns:
            ``(k, failure, stopped, carried)``: members before ``k`` are done; the caller runs
            the others the general way, member ``k`` retrying from ``failure`` when that is
            set (its first attempt raised something the retry policy retries; ``stats[k]``
            counts it), or continuing ``carried`` (its first step suspended after all).
            ``stopped``: ``on_done`` asked to stop.
        """
        await checkpoint_if_cancelled()
        runner, notify, retry = self.leaves, self.leaves.on_result is not None, self.leaves.retry
        # Slots are checked, not taken (invariant 1): checked again only after a callback.
        check_slots = True
        mark = perf_counter()
        for i, leaf in enumerate(leaves):
            if not run.sampled[leaf.index]:
                continue  # recorded before the group started

            if not self._eligible(leaf):
                return i, None, False, None  # not instant (yet, or any more): the general way
            if check_slots or leaf.resource is not None:
                if not self.admission.free(leaf):
                    return i, None, False, None  # the general way queues for them
                check_slots = notify
            step, coro = self._first_step(leaf, run.ctx, mark)
            if coro is not None:
                return i, None, False, self._carry(leaf, i, coro, step, mark)
            outcome = cast(Judgment | Exception, step)
            if isinstance(outcome, Exception) and retry is not None:  # noqa: SIM102
                if retry.is_retryable(outcome):
                    _failed_first(stats, i, mark)
                    return i, outcome, False, None
            now = perf_counter()
            result = runner.record(leaf, run, outcome, 1, now - mark, 0.0)
            if notify:
                await runner.notify(leaf, result)
                now = perf_counter()
            mark = now
            out[i] = result.judgment
            if on_done is not None and on_done(i, result.judgment):
                return i + 1, None, True, None
        return len(leaves), None, False, None

    def _carry(
        self, leaf: Leaf, i: int, coro: Coroutine[Any, Any, object], first: object, began: float
    ) -> Carried:
        """Hand over a member whose first step suspended after all (invariant 2)."""
        self.leaves.learned.suspended(leaf.index)
        st = LeafStats()
        st.attempts = 1
        try:
            self.admission.take(leaf, st)  # outside the judge's boundary: a race is loud
        except RuntimeError:
            coro.close()
            raise
        return Carried(i, coro, first, st, began)

    def _first_step(
        self, leaf: Leaf, ctx: Context, mark: float
    ) -> tuple[Judgment | Exception, None] | tuple[object, Coroutine[Any, Any, object]]:
        """Step one instant leaf once, synchronously (no coroutine of our own per member).

        Returns ``(outcome, None)`` when it completed (its judgment or the exception it ended
        with), or ``(what it yielded, its coroutine)`` when it suspended after all.
        """
        coro = leaf.step(ctx)
        try:
            first = coro.send(None)
        except StopIteration as done:
            try:
                return self._accept(leaf, done.value, mark), None
            except Exception as exc:
                return exc, None
        except Exception as exc:
            return exc, None
        except BaseException as exc:
            if is_stray_cancellation(exc):
                return stray(leaf, exc), None
            raise
        return first, coro

    def _accept(self, leaf: Leaf, value: object, began: float) -> Judgment:
        """The judgment of a leaf that completed in its first step (overrun: TimeoutError)."""
        judgment = value if leaf.coerce_as is None else coerce_judgment(value, leaf.coerce_as)
        timeout = self.leaves.timeouts[leaf.index]
        if timeout is not None and perf_counter() - began > timeout:
            raise self.leaves.timed_out(leaf, 1)
        assert isinstance(judgment, Judgment)
        return judgment


def _failed_first(stats: list[LeafStats | None], i: int, mark: float) -> None:
    """Record a first attempt that raised in its first step (the retry counts it)."""
    failed = stats[i] = LeafStats()
    failed.attempts = 1
    failed.working = perf_counter() - mark

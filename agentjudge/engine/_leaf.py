"""The leaf boundary: one judge call's attempts, timeout, retries, and its one result record.

Failure is data here and only here: `LeafRunner.record` is the one place that turns a judge's
exception (after retries) or an attempt past its timeout into an ERROR `JudgeResult`, and the
one place that builds any `JudgeResult` (the fast path records through it too). Cancellation of
the caller propagates; a judge's own stray ``CancelledError`` is its failure
(`agentjudge.judging.is_stray_cancellation`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from time import perf_counter
from typing import Any, cast

import anyio

from agentjudge._retry import RetryPolicy, call_with_retry
from agentjudge.core import Context, JudgeResult, Judgment, Verdict, judgment_problem
from agentjudge.engine._admission import Admission, acquire
from agentjudge.engine._budget import Budget, BudgetExhausted
from agentjudge.engine._deadline import Armed, arm, clear_deadline, deadline_error, disarm
from agentjudge.engine._inline import Resume, cancel_scope, checkpoint_if_cancelled
from agentjudge.engine._learned import Learned
from agentjudge.engine._plan import Leaf
from agentjudge.engine._state import Carried, Lane, LeafStats, RunState
from agentjudge.judging import (
    StrayCancellation,
    coerce_judgment,
    end_attempt,
    error_type_name,
    is_stray_cancellation,
    short_traceback,
    spend_gate,
    start_attempt,
)

__all__ = ["LeafRunner", "ResultCallback", "stray"]

logger = logging.getLogger("agentjudge")

_SUSPENDED: Any = object()
"""`LeafRunner._first_step`'s mark for a judge that suspended in its first step."""

_UNSTEPPED: Any = object()
"""The first step of a judge known to suspend: not taken inline, the judge is awaited whole."""

ResultCallback = Callable[[JudgeResult], Awaitable[None] | None]
"""Called once per completed JudgeResult (unsampled ones included), in completion order."""


def _failure(exc: BaseException, leaf: Leaf) -> tuple[Judgment, str, tuple[str, ...] | None]:
    """The ERROR judgment, ``error_type`` and short traceback recording ``exc``."""
    kind = error_type_name(exc)
    text = str(exc).strip()
    judgment = Judgment.errored(f"{kind}: {text}" if text else f"judge {leaf.name!r} raised {kind}")
    return judgment, kind, short_traceback(exc)


def _entered(lane: Lane | None) -> anyio.CancelScope:
    """An attempt's entered timeout scope: its own, or its lane's (entered now if it has none)."""
    if lane is None:
        scope = cancel_scope()
        scope.__enter__()
        return scope
    if lane.scope is None:
        lane.scope = cancel_scope()
        lane.scope.__enter__()
    return lane.scope


def _leave(
    scope: anyio.CancelScope | None,
    lane: Lane | None,
    exc: BaseException | None,
    armed: Armed | None,
) -> bool:
    """Exit an attempt's timeout scope as its attempt ends; True: it swallowed ``exc``.

    An attempt without a timeout (``scope`` None) has nothing to exit and swallows nothing.

    The deadline `arm` queued (``armed``) is taken off first: the timer never sees the scope
    again. A `Lane`'s scope that was not cancelled stays entered for the worker's next attempt,
    without a deadline till then (an exception then propagates as the scope's exit would have
    let it); a cancelled one is exited here, where the attempt's own scope would have been,
    and leaves the lane.
    """
    if scope is None:
        return False
    if armed is not None:
        disarm(armed)
    if lane is not None:
        if not scope.cancel_called:
            clear_deadline(scope)
            return False
        lane.scope = None
    if exc is None:
        scope.__exit__(None, None, None)
        return False
    return bool(scope.__exit__(type(exc), exc, exc.__traceback__))


def stray(leaf: Leaf, exc: BaseException) -> StrayCancellation:
    """The failure recorded for a judge that raised CancelledError nobody asked for."""
    return StrayCancellation(
        f"judge {leaf.name!r} raised CancelledError although the evaluation was not cancelled"
    )


class LeafRunner:
    """Runs leaves to their results under one evaluator's settings.

    Args:
        admission: The evaluator's slots.
        learned: Where instant-or-not facts are recorded.
        timeouts: Per leaf index, the attempt timeout in seconds (None: none).
        sources: Per leaf index, where its timeout came from (named when it fires).
        retry: The retry policy (None: no retries).
        budget: Spending limit of model-backed judges (None: none).
        on_result: Called with each result.
    """

    __slots__ = ("admission", "budget", "learned", "on_result", "retry", "sources", "timeouts")

    def __init__(
        self,
        admission: Admission,
        learned: Learned,
        *,
        timeouts: tuple[float | None, ...],
        sources: tuple[str, ...],
        retry: RetryPolicy | None,
        budget: Budget | None,
        on_result: ResultCallback | None,
    ) -> None:
        self.admission = admission
        self.learned = learned
        self.timeouts = timeouts
        self.sources = sources
        self.retry = retry
        self.budget = budget
        self.on_result = on_result

    # ------------------------------------------------------------------ results
    def record(
        self,
        leaf: Leaf,
        run: RunState,
        outcome: Judgment | BaseException | None,
        attempts: int,
        working: float,
        queued: float,
    ) -> JudgeResult:
        """Build the leaf's result from its outcome and store it in the run (the one place).

        ``outcome`` is the judgment, None (not sampled), or the exception that ended the last
        attempt, which becomes an ERROR judgment with ``error_type`` its class name and
        ``traceback`` its last frames.
        """
        error_type: str | None = None
        frames: tuple[str, ...] | None = None
        if type(outcome) is not Judgment and isinstance(outcome, BaseException):
            outcome, error_type, frames = _failure(outcome, leaf)
        result = JudgeResult.fast(
            name=leaf.name,
            judgment=outcome,
            sampled=run.sampled[leaf.index],
            metric_key=leaf.metric_key,
            tier=leaf.tier,
            attempts=attempts,
            duration_s=working,
            queued_s=queued,
            error_type=error_type,
            traceback=frames,
        )
        run.add(leaf.index, result)
        return result

    async def notify(self, leaf: Leaf, result: JudgeResult) -> None:
        """Hand one result to the ``on_result`` callback (its failures are logged, not raised)."""
        callback = self.on_result
        assert callback is not None
        try:
            value = callback(result)
            if inspect.isawaitable(value):
                await value
        except Exception:
            logger.exception("on_result callback failed for judge %r", leaf.name)

    def timed_out(self, leaf: Leaf, attempt: int) -> TimeoutError:
        """The exception of an attempt past the timeout."""
        return TimeoutError(
            f"judge {leaf.name!r} timed out after {self.timeouts[leaf.index]:g} s "
            f"({self.sources[leaf.index]}, attempt {attempt})"
        )

    # ------------------------------------------------------------------ the general way
    def run(
        self,
        leaf: Leaf,
        run: RunState,
        stats: LeafStats | None = None,
        failed: Exception | None = None,
    ) -> Coroutine[Any, Any, JudgeResult]:
        """Run one leaf to its result; ``failed``: its first attempt already raised this."""
        return self._run(leaf, run, stats, failed, False)  # type: ignore[return-value]

    def verdict(self, leaf: Leaf, run: RunState) -> Coroutine[Any, Any, Verdict]:
        """Run the plan's root leaf to the evaluation's verdict (`run` and the verdict in one).

        The evaluation's own coroutine is then the leaf's: one frame fewer alive while the
        judge waits than a scheduler coroutine awaiting `run`.
        """
        return self._run(leaf, run, None, None, True)  # type: ignore[return-value]

    async def _run(
        self,
        leaf: Leaf,
        run: RunState,
        stats: LeafStats | None,
        failed: Exception | None,
        verdict: bool,
    ) -> JudgeResult | Verdict:
        """`run`, or with ``verdict`` `verdict`: the leaf's result, else the verdict it gives."""
        if stats is None:
            stats = LeafStats()
        outcome: Judgment | BaseException | None = None
        if run.sampled[leaf.index] and run.deadline is not None:
            outcome = await self._before_deadline(leaf, run, stats, failed)
        elif run.sampled[leaf.index]:
            if failed is None:
                try:
                    outcome = await self.attempt(leaf, run, stats)
                except Exception as exc:
                    failed = exc
            if failed is not None:
                outcome = await self._recover(leaf, run, stats, failed)
        result = self.record(leaf, run, outcome, stats.attempts, stats.working, stats.queued)
        # an exception held here holds its traceback, which holds this frame: dropped, the
        # failure's frames are freed now instead of by the garbage collector
        outcome = failed = None
        if self.on_result is not None:
            await self.notify(leaf, result)
        if verdict:
            return run.verdict_of(
                result.judgment or Judgment.abstained(f"judge {leaf.name!r} was not sampled")
            )
        return result

    async def _before_deadline(
        self, leaf: Leaf, run: RunState, stats: LeafStats, failed: Exception | None
    ) -> Judgment | Exception:
        """Attempts and retries under the evaluation's deadline (`agentjudge.engine._deadline`)."""
        with anyio.CancelScope(deadline=cast(float, run.deadline)):
            if failed is None:
                try:
                    return await self.attempt(leaf, run, stats)
                except Exception as exc:
                    failed = exc
            return await self._recover(leaf, run, stats, failed)
        return deadline_error(leaf, run, stats.attempts)  # the deadline cancelled the block

    async def _recover(
        self, leaf: Leaf, run: RunState, stats: LeafStats, exc: Exception
    ) -> Judgment | Exception:
        """Retry a failed first attempt as the policy allows; the last exception if all fail."""
        retry = self.retry
        if retry is None or not retry.is_retryable(exc) or isinstance(exc, BudgetExhausted):
            return exc
        try:
            judgment, _ = await call_with_retry(
                retry,
                lambda: self.attempt(leaf, run, stats),
                attempts_made=1,
                last_error=exc,
            )
        except Exception as final:
            return final
        return judgment

    def attempt(self, leaf: Leaf, run: RunState, stats: LeafStats) -> Awaitable[Judgment]:
        """One attempt, admitted by the budget first when the leaf is metered.

        A plain function returning the attempt's coroutine: one frame less per attempt than an
        ``async def`` that awaits it (everything still happens when it is awaited).
        """
        budget = self.budget
        if budget is None or not leaf.metered:
            return self._guarded(leaf, stats, run, None)
        return self._metered(budget, leaf, run, stats)

    async def _metered(
        self, budget: Budget, leaf: Leaf, run: RunState, stats: LeafStats
    ) -> Judgment:
        try:
            budget.admit(leaf.name)
        except BudgetExhausted:
            self.admission.unreserve(leaf, stats)  # slots taken ahead go back now
            raise
        token = spend_gate.set(budget.gate(leaf.name))  # its model requests reserve there
        try:
            return await self._guarded(leaf, stats, run, None)
        finally:
            spend_gate.reset(token)

    async def _admit(self, leaf: Leaf, stats: LeafStats) -> None:
        """Take an attempt's slots that were not free at once: the resource's, then a global one.

        Waits (in the FIFO queue for a global slot); a resource slot taken is given back if
        the wait for the global one ends in an exception.
        """
        admission = self.admission
        resource = admission.limiters(leaf)[0]
        if resource is not None:
            await acquire(resource, stats)
        try:
            if not admission.take_global(stats):
                await admission.acquire_global(stats)
        except BaseException:
            if resource is not None:
                resource.release_on_behalf_of(stats)
            raise

    async def _guarded(
        self,
        leaf: Leaf,
        stats: LeafStats,
        run: RunState,
        carried: Carried | None,
    ) -> Judgment:
        """One attempt: take its slots, call the judge under the timeout, give the slots back.

        A fresh attempt (``carried`` None) counts itself, checks that its evaluation was not
        cancelled and takes the leaf's slots (those the group reserved for it, else free
        ones at once, else it waits in `_admit`); a carried one holds the slots the fast path
        took. Both give them back when they end, after the attempt's timing is recorded. One
        coroutine from the slots to the judge, so the only frames alive while the judge waits
        for its model are the evaluation's, this one and the judge's. The timeout's scope is
        the attempt's own, or the run worker's `Lane` (kept entered when the attempt ends
        without its scope being cancelled).
        """
        if carried is None:
            stats.attempts += 1
            started, stats.since = stats.since or perf_counter(), 0.0
            # A member started after its group was cancelled must not reach the judge
            # just because a slot is free (acquiring without waiting is no checkpoint). A
            # reservation still held here is released by the group if this raises.
            await checkpoint_if_cancelled()
            waiting = self._slots(leaf, stats)
            if waiting is not None:
                await waiting  # a resource slot first, or wait for one
        else:
            started = carried.began
        try:
            timeout = self.timeouts[leaf.index]
            lane = None if timeout is None else run.lane
            clock, token = start_attempt() if lane is None else start_attempt(lane.owner)
            began = perf_counter()
            stats.queued += began - started
            scope: anyio.CancelScope | None = None
            armed: Armed | None = None
            ended = 0.0
            try:
                # ``with scope`` written out: a ``with`` keeps the bound ``__exit__`` alive
                # for as long as the judge waits (one object per case every collection walks)
                scope = (
                    None
                    if timeout is None
                    else (lane.scope if lane is not None and lane.scope else _entered(lane))
                )
                try:
                    coro, first, value = self._begin(leaf, run.ctx, carried)
                    if value is _SUSPENDED:
                        # a scope is made only for a timeout
                        armed = None if scope is None else arm(scope, timeout, began)  # type: ignore[arg-type]
                        try:
                            value = await (coro if first is _UNSTEPPED else Resume(coro, first))
                        except BaseException as exc:
                            if is_stray_cancellation(exc):
                                raise stray(leaf, exc) from exc
                            raise
                    # a sound Judgment is what `coerce_judgment` returns: it is
                    # checked without that call (anything else goes through it)
                    judgment = (
                        value
                        if leaf.coerce_as is None
                        or (type(value) is Judgment and judgment_problem(value) is None)
                        else coerce_judgment(value, leaf.coerce_as)
                    )
                except BaseException as exc:  # the scope swallows its own cancellation
                    if not _leave(scope, lane, exc, armed):
                        raise
                else:
                    _leave(scope, lane, None, armed)
                # Also when the judge swallowed the deadline's cancellation and returned, or
                # blocked past the deadline without suspending: an attempt that overran its
                # timeout is a TimeoutError whatever the judge returned.
                if scope is not None and (
                    scope.cancel_called or (ended := perf_counter()) - began > timeout  # type: ignore[operator]
                ):
                    raise self.timed_out(leaf, stats.attempts)
            finally:
                queued = end_attempt(clock, token)
                # the clock read for the timeout check when there was one (the same end)
                stats.working += (ended or perf_counter()) - began - queued
                stats.queued += queued
        finally:
            self.admission.release(leaf, stats)
        return judgment  # a judgment, coerced or returned

    def _slots(self, leaf: Leaf, stats: LeafStats) -> Awaitable[None] | None:
        """Take a fresh attempt's slots at once, or return the wait for them (`_admit`).

        The slots the group reserved for it, else free ones at once (a resource with a limit
        always goes through `_admit`: a resource slot first).
        """
        reserved, stats.reserved = stats.reserved, False
        admission = self.admission
        if reserved or (leaf.resource not in admission.limits and admission.take_global(stats)):
            return None
        return self._admit(leaf, stats)

    def _begin(
        self, leaf: Leaf, ctx: Context, carried: Carried | None
    ) -> tuple[Coroutine[Any, Any, object], object, Any]:
        """The judge's coroutine, what it first yielded and its value (`_SUSPENDED`: none yet).

        A fresh attempt calls ``leaf.step(ctx)`` and steps it once inline to learn whether it
        suspends; a carried one continues the coroutine the fast path stepped. The scope gets
        its deadline only once the judge suspends: one that completes in its first step
        cannot be interrupted anyway, and a scope without a deadline costs half as much (no
        timer). A judge already known to suspend (`Learned.suspends`) is not stepped: the
        deadline (the same instant, counted from the attempt's start) is set first and the
        judge is awaited whole (`_UNSTEPPED`), without `Resume` relaying each of its steps;
        `tests/engine/test_engine_known_suspend.py` pins both ways to the same results.
        """
        if carried is not None:
            return carried.coro, carried.first, _SUSPENDED
        if self.learned.suspends[leaf.index]:  # it suspends: no step to learn it
            return leaf.step(ctx), _UNSTEPPED, _SUSPENDED
        coro = leaf.step(ctx)
        first, value = self._first_step(leaf, coro)
        return coro, first, value

    def _first_step(self, leaf: Leaf, coro: Coroutine[Any, Any, object]) -> tuple[object, object]:
        """Step a fresh judge coroutine once: (what it yielded, `_SUSPENDED`) or (None, value)."""
        learned, index = self.learned, leaf.index
        try:
            first = coro.send(None)
        except StopIteration as done:
            learned.completed_inline(index)
            return None, done.value
        except Exception:
            learned.completed_inline(index)  # raising in the first step is not suspending
            raise
        except BaseException as exc:
            if is_stray_cancellation(exc):
                learned.completed_inline(index)
                raise stray(leaf, exc) from exc
            raise
        learned.suspended(index)
        return first, _SUSPENDED

    # ------------------------------------------------------------------ carried over
    async def carry(self, leaf: Leaf, run: RunState, carried: Carried) -> JudgeResult:
        """Finish an attempt the fast path started: its first step suspended after all.

        The fast path took the leaf's slots (``carried.stats``) and hands the attempt over
        here, so it ends exactly as on the general way: timeout, retries, the one record.
        """
        stats = carried.stats
        outcome: Judgment | BaseException
        if run.deadline is not None:  # the fast path never starts under a deadline
            raise AssertionError("agentjudge engine: a carried attempt under a deadline")
        try:
            outcome = await self._guarded(leaf, stats, run, carried)
        except Exception as exc:
            outcome = await self._recover(leaf, run, stats, exc)
        result = self.record(leaf, run, outcome, stats.attempts, stats.working, stats.queued)
        if self.on_result is not None:
            await self.notify(leaf, result)
        return result

"""Attempt timeouts share one loop timer per length (`agentjudge.engine._deadline`).

An attempt's timeout is its anyio cancel scope's deadline. On asyncio the scope gets the
deadline without a loop timer of its own; attempts of the same length queue in arming order
under one timer that cancels every scope whose deadline passed while its attempt runs. The
property: on a virtual clock, for any arming, ending and clock schedule, every scope is
cancelled exactly when a scope with anyio's own timer would be (the first moment the clock
reaches its deadline while its attempt runs), never after its attempt ended, at most once, and
the queue stays bounded by the attempts running. The rest checks the real engine: one timer for
many attempts, the deadline visible to the judge and its client, timeouts that still fire, and
a cancelled caller leaving nothing queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import inspect
import itertools
import math
from collections.abc import Callable
from time import perf_counter
from typing import Any

import anyio
import pytest
from engine_support import new_objects_only
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentjudge import Context, Evaluator, Judgment
from agentjudge._compat import cancel_scope
from agentjudge.engine import _deadline
from agentjudge.engine._deadline import _COMPACT_AT, _Queue, arm, disarm

CTX = Context(input="q", output="a")


class Clock:
    """A virtual event loop: ``time()``, ``call_at`` and running what is due."""

    def __init__(self) -> None:
        self.now = 0.0
        self.due: list[tuple[float, int, Handle]] = []
        self.order = itertools.count()

    def time(self) -> float:
        return self.now

    def call_at(self, at: float, callback: Callable[[], None]) -> Handle:
        handle = Handle(callback)
        heapq.heappush(self.due, (at, next(self.order), handle))
        return handle

    def advance(self, to: float) -> None:
        self.now = to
        while self.due and self.due[0][0] <= to:
            handle = heapq.heappop(self.due)[2]
            if not handle.cancelled:
                handle.callback()


class Handle:
    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Scope:
    """Records when it was cancelled (on the virtual clock)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.cancelled_at: list[float] = []

    def cancel(self, reason: str | None = None) -> None:
        self.cancelled_at.append(self.clock.now)


steps = st.lists(
    st.one_of(
        st.tuples(st.just("arm"), st.sampled_from([1.0, 2.5]), st.floats(0.0, 0.3)),
        st.tuples(st.just("end"), st.integers(0, 200), st.just(0.0)),
        st.tuples(st.just("tick"), st.floats(0.0, 1.5), st.just(0.0)),
    ),
    max_size=120,
)


@hsettings(max_examples=60, deadline=None)
@given(steps)
def test_queued_timers_cancel_exactly_when_own_timers_would(script: list[Any]) -> None:
    clock = Clock()
    queues: dict[float, _Queue] = {}
    running: list[tuple[float, Scope, Any]] = []  # (deadline, scope, armed or own handle)
    ended: list[tuple[float, Scope]] = []  # (end time, scope)
    deadlines: dict[int, float] = {}
    for kind, a, b in script:
        if kind == "arm":
            at = clock.now + a - b  # a first step that ran b seconds: out of order at times
            scope = Scope(clock)
            deadlines[id(scope)] = at
            queue = queues.setdefault(a, _Queue(clock))
            armed: Any = queue.add(at, scope)  # type: ignore[arg-type]
            if armed is None:  # out of order: the scope's own timer, as anyio arms it
                armed = clock.call_at(at, scope.cancel)
            running.append((at, scope, armed))
        elif kind == "end" and running:
            at, scope, armed = running.pop(a % len(running))
            if isinstance(armed, Handle):
                armed.cancel()
            else:
                disarm(armed)
            ended.append((clock.now, scope))
        elif kind == "tick":
            clock.advance(clock.now + a)
        for queue in queues.values():
            live = sum(1 for e in queue.entries if e[1] is not None)
            assert len(queue.entries) <= 2 * live + _COMPACT_AT + 1
    for at, scope, _ in running:  # still running: cancelled iff the clock reached its deadline
        assert scope.cancelled_at == (
            [_first_tick_at_or_after(at, script)] if clock.now >= at else []
        )
    for end, scope in ended:
        at = deadlines[id(scope)]
        assert scope.cancelled_at == ([_first_tick_at_or_after(at, script)] if end >= at else [])


def _first_tick_at_or_after(at: float, script: list[Any]) -> float:
    """The first clock reading (after a tick) at or past ``at``."""
    now = 0.0
    for kind, a, _ in script:
        if kind == "tick":
            now += float(a)
            if now >= at:
                return now
    raise AssertionError("never reached")  # pragma: no cover


class Waiting:
    """A judge that waits until released (or for ever)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0
        self.all_started = asyncio.Event()
        self.expected = 0
        self.seen: list[float] = []

    async def __call__(self, ctx: Context) -> Judgment:
        await asyncio.sleep(0)  # suspends first: the attempt's deadline is armed here
        self.seen.append(anyio.current_effective_deadline() - anyio.current_time())
        self.started += 1
        if self.started == self.expected:
            self.all_started.set()
        await self.release.wait()
        return Judgment.passed("ok")


def test_many_attempts_share_one_loop_timer_and_see_their_deadline() -> None:
    async def main() -> tuple[int, int, list[float]]:
        judge = Waiting()
        judge.expected = 50
        evaluator = Evaluator(judge, max_concurrency=100, timeout=30.0)
        loop = asyncio.get_running_loop()
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(evaluator.evaluate, CTX)
            await judge.all_started.wait()
            during = len(loop._scheduled)  # type: ignore[attr-defined]
            judge.release.set()
        return before, during, judge.seen

    before, during, seen = anyio.run(main)
    assert during - before <= 2  # one timer for the 50 attempts (before: one each)
    assert len(seen) == 50
    assert all(29.0 < left <= 30.0 for left in seen)  # the client sees the attempt's deadline


def test_timeouts_still_fire_for_every_queued_attempt() -> None:
    async def main() -> list[Any]:
        judge = Waiting()  # never released
        evaluator = Evaluator(judge, max_concurrency=100, timeout=0.05, retry=None)
        results: list[Any] = []

        async def one() -> None:
            results.extend(await evaluator.evaluate(CTX))

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(one)
        return results

    results = anyio.run(main)
    assert len(results) == 20
    assert {r.error_type for r in results} == {"TimeoutError"}
    assert all("timed out after 0.05 s" in (r.judgment.reasoning or "") for r in results)


def test_a_cancelled_caller_propagates_and_leaves_nothing_queued() -> None:
    async def main() -> list[Any]:
        judge = Waiting()
        judge.expected = 10
        evaluator = Evaluator(judge, max_concurrency=100, timeout=45.0)
        with anyio.CancelScope() as outer:
            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(evaluator.evaluate, CTX)
                await judge.all_started.wait()
                outer.cancel()
        assert outer.cancelled_caught
        queue = _deadline._QUEUES.by_length[45.0]
        return [e for e in queue.entries if e[1] is not None]

    assert anyio.run(main) == []


def test_arm_falls_back_to_the_scopes_own_deadline() -> None:
    """Out of order (a first step that ran long) or already past: anyio's own way."""

    async def main() -> tuple[Any, float, Any, bool]:
        with cancel_scope() as first, cancel_scope() as late:
            armed = arm(first, 20.0, perf_counter())
            assert armed is not None
            early = arm(late, 20.0, perf_counter() - 5.0)  # due before the one queued
            deadline_ok = math.isclose(late.deadline, anyio.current_time() + 15.0, abs_tol=0.5)
            disarm(armed)
        with cancel_scope() as past:
            missed = arm(past, 1.0, perf_counter() - 2.0)
            cancelled = past.cancel_called
            await anyio.lowlevel.checkpoint()  # the cancellation is delivered here
        return early, deadline_ok, missed, cancelled and past.cancelled_caught

    early, deadline_ok, missed, cancelled = anyio.run(main)
    assert early is None and deadline_ok
    assert missed is None and cancelled


@pytest.mark.parametrize("queued", [True, False])
def test_a_judge_that_swallows_the_timeout_is_still_cut_at_its_next_wait(queued: bool) -> None:
    """Cancellation stays level-triggered (anyio's scope delivers it again)."""

    async def stubborn(ctx: Context) -> Judgment:
        with contextlib.suppress(asyncio.CancelledError):  # swallowed
            await asyncio.Event().wait()
        await asyncio.Event().wait()  # cut here too
        return Judgment.passed("never")

    async def main() -> Any:
        evaluator = Evaluator(stubborn, timeout=0.05, retry=None)
        if not queued:  # an out-of-order attempt: the scope's own timer
            with cancel_scope() as other:
                arm(other, 0.05, perf_counter() + 1.0)
                return await evaluator.evaluate(CTX)
        return await evaluator.evaluate(CTX)

    [result] = anyio.run(main)
    assert result.error_type == "TimeoutError"


def test_objects_the_engine_keeps_per_case_while_the_judge_waits() -> None:
    """What `Evaluator.run` keeps alive per case in flight, over the judge awaited directly.

    Every collection walks these (issue 19.11): about 23 per case before the attempt timers, the
    reused queue clock, the worker judging in its own frame and the lazy completion list;
    19-20 after (the attempt's scope and its two sets, its queue entry, the worker's clock,
    the run and leaf state and the engine's coroutines).
    """
    count = 40

    async def held(through_engine: bool) -> int:
        release, full, started = asyncio.Event(), asyncio.Event(), [0]

        async def judge(ctx: Context) -> Judgment:
            await asyncio.sleep(0)
            started[0] += 1
            if started[0] == count:
                full.set()
            await release.wait()
            return Judgment.passed("ok")

        evaluator = Evaluator(judge, max_concurrency=count, timeout=30.0)
        contexts = [Context(input=str(i), output="a") for i in range(count)]

        async def read() -> None:
            async for _ in evaluator.run(contexts, concurrency=count):
                pass

        async with anyio.create_task_group() as tg:
            if through_engine:
                tg.start_soon(read)
            else:
                for ctx in contexts:
                    tg.start_soon(judge, ctx)
            await full.wait()
            gc.collect()
            alive = len(gc.get_objects())
            release.set()
        return alive

    async def main() -> float:
        await held(True)  # warm: everything imported and cached
        await held(False)
        return (await held(True) - await held(False)) / count

    with new_objects_only():  # the counts are of what the runs make; the collections cheap
        assert anyio.run(main) <= 19.0  # 23, then 19-20 (two engine coroutines more) before


def _awaiting(coro: Any) -> list[str]:
    """The coroutines from ``coro`` down its ``cr_await`` chain (their qualified names)."""
    names = []
    while inspect.iscoroutine(coro):
        names.append(coro.cr_code.co_qualname.rpartition("<locals>.")[2])
        coro = coro.cr_await
    return names


@pytest.mark.parametrize("resource_limit", [False, True])
def test_the_engine_awaits_a_root_judge_through_two_coroutines(resource_limit: bool) -> None:
    """While a judge of `Evaluator.run` waits, the engine's frames are the leaf boundary's two.

    Each coroutine suspended across the judge's wait is an object every garbage collection
    walks (issue 19.11): the evaluation of a root leaf is the leaf boundary's own coroutine
    (``LeafRunner._run``), and an attempt takes its slots and calls the judge in one
    (``_guarded``; before: the scheduler's ``execute``, ``LeafRunner.run`` and
    ``_attempt_now`` too). For a while the first attempt was the evaluation's own coroutine,
    one frame fewer: ~1.5% of the instructions per case, which W4 could not show, for a second
    copy of the leaf's result and verdict in ``_guarded``; it was taken back. With a resource
    limit the slot is still taken first (one judge waits at a time). A judge not yet known
    to suspend is stepped once inline first and then relayed by `Resume` (not a coroutine).
    """
    release, waiting, started = asyncio.Event(), asyncio.Event(), [0]
    expected = 1 if resource_limit else 2  # judges waiting at once

    class Judge:
        resource = "model"

        async def __call__(self, ctx: Context) -> Judgment:
            await asyncio.sleep(0)  # it suspends, also when released
            started[0] += 1
            if started[0] == expected:
                waiting.set()
            await release.wait()
            return Judgment.passed("ok")

    async def main() -> list[list[str]]:
        limits = {"model": 1} if resource_limit else None
        evaluator = Evaluator(Judge(), max_concurrency=2, limits=limits)
        contexts = [Context(input=str(i), output="a") for i in range(3)]
        chains = []
        release.set()  # one evaluation first: the engine learns that the judge suspends
        await evaluator.evaluate(contexts[0])
        release.clear()
        waiting.clear()
        started[0] = 0

        async def read() -> None:
            async for case in evaluator.run(contexts, concurrency=2):
                assert case.verdict.judgment.is_pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await waiting.wait()
            for task in asyncio.all_tasks():
                chain = _awaiting(task.get_coro())
                if chain[-2:-1] == ["Judge.__call__"]:
                    chains.append(chain)
            release.set()
        return chains

    chains = anyio.run(main)
    assert len(chains) == expected
    for chain in chains:
        start = chain.index("worker") + 1
        engine = chain[start : chain.index("Judge.__call__")]
        assert engine == ["LeafRunner._run", "LeafRunner._guarded"], chain


def test_timeout_lengths_that_come_and_go_keep_few_queues() -> None:
    """A timeout computed per call (a new length each time) does not grow the queues."""

    async def main() -> tuple[int, list[bool]]:
        cancelled = []
        for i in range(3 * _deadline._MAX_LENGTHS):
            with cancel_scope() as scope:
                armed = arm(scope, 10.0 + i / 1000, perf_counter())
                if armed is not None:
                    disarm(armed)
            cancelled.append(scope.cancel_called)
        held = []  # lengths with an attempt armed at once: past the bound, anyio's own timers
        with contextlib.ExitStack() as stack:
            for i in range(_deadline._MAX_LENGTHS + 5):
                scope = stack.enter_context(cancel_scope())
                held.append((scope, arm(scope, 20.0 + i / 1000, perf_counter())))
            fallback = [armed is None for _, armed in held]
            assert fallback[-5:] == [True] * 5 and not any(fallback[:-5])
            assert all(not math.isinf(scope.deadline) for scope, _ in held)
            for _, armed in held:
                if armed is not None:
                    disarm(armed)
        return len(_deadline._QUEUES.by_length), cancelled

    lengths, cancelled = anyio.run(main)
    assert lengths <= _deadline._MAX_LENGTHS
    assert not any(cancelled)

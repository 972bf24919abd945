"""The feed's handoff (`Handoff`): what the memory object stream promised, without checkpoints.

`Evaluator.run` and `Evaluator.stream` hand each result to the reader through a `Handoff`
(before: ``anyio.create_memory_object_stream(0)``, whose checkpoints and events cost about a
third of the engine's CPU per case in `Evaluator.run`). Random schedules of publishers, a
reader, cancellations and an early close check the stream's promises: every item a publish
returned for was taken exactly once, nothing else was, each publisher's items arrive in its
order, a closed reader refuses every later publish, and the reader sees the end only after the
producer ended. The same schedules run against the memory stream, which keeps the same
promises (so the test describes the contract, not the implementation).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentjudge import Context, Evaluator, Judgment
from agentjudge.engine._detached import Feed, Handoff, _StreamOutlet


@dataclass
class Outcome:
    """What one schedule did: items taken, and each publish's fate per publisher."""

    taken: list[tuple[int, int]] = field(default_factory=list)
    attempted: list[tuple[int, int]] = field(default_factory=list)
    returned: list[tuple[int, int]] = field(default_factory=list)
    broken: list[tuple[int, int]] = field(default_factory=list)
    ended: bool = False


@dataclass(frozen=True)
class Schedule:
    items: tuple[int, ...]  # items per publisher
    pauses: tuple[int, ...]  # checkpoints each publisher makes before each publish
    cancel_after: tuple[int | None, ...]  # checkpoints before a publisher is cancelled
    take: int | None  # items the reader takes before closing (None: until the end)
    reader_pause: int  # checkpoints between two takes


class _Stream:
    """The memory object stream behind the same three calls."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[Any](0)

    async def publish(self, item: Any) -> None:
        await self.send.send(item)

    async def take(self) -> Any:
        return await self.receive.receive()

    def end(self) -> None:
        self.send.close()

    def close(self) -> None:
        self.receive.close()


async def _pause(n: int) -> None:
    for _ in range(n):
        await anyio.lowlevel.checkpoint()


async def _play(schedule: Schedule, channel: Any) -> Outcome:
    out = Outcome()

    async def publisher(p: int, scope: anyio.CancelScope) -> None:
        with scope:
            for k in range(schedule.items[p]):
                await _pause(schedule.pauses[p])
                out.attempted.append((p, k))
                try:
                    await channel.publish((p, k))
                except anyio.BrokenResourceError:
                    out.broken.append((p, k))
                    return
                out.returned.append((p, k))

    await _drive(schedule, channel, publisher, out)
    return out


async def _drive(
    schedule: Schedule,
    channel: Any,
    publisher: Callable[[int, anyio.CancelScope], Coroutine[Any, Any, None]],
    out: Outcome,
    *,
    after_take: Callable[[], None] = lambda: None,
    stop_on_close: bool = False,
) -> None:
    """Run one publisher per schedule entry (some cancelled) against a reader that may close.

    A watchdog fails the play if every task is blocked before it ends (a lost item or slot).
    """
    producing = anyio.CancelScope()

    async def producer() -> None:
        try:
            with producing:
                async with anyio.create_task_group() as tg:
                    for p in range(len(schedule.items)):
                        scope = anyio.CancelScope()
                        tg.start_soon(publisher, p, scope)
                        after = schedule.cancel_after[p]
                        if after is not None:
                            tg.start_soon(_cancel_later, scope, after)
        finally:
            channel.end()

    async def reader() -> None:
        try:
            while schedule.take is None or len(out.taken) < schedule.take:
                try:
                    out.taken.append(await channel.take())
                except anyio.EndOfStream:
                    out.ended = True
                    return
                after_take()
                await _pause(schedule.reader_pause)
        finally:
            channel.close()
            if stop_on_close:
                producing.cancel()  # what closing a `Feed` does

    async def watchdog() -> None:
        await anyio.wait_all_tasks_blocked()
        raise AssertionError("the hand-over stalled")

    async with anyio.create_task_group() as tg:
        tg.start_soon(watchdog)
        async with anyio.create_task_group() as play:
            play.start_soon(producer)
            play.start_soon(reader)
        tg.cancel_scope.cancel()


async def _cancel_later(scope: anyio.CancelScope, after: int) -> None:
    await _pause(after)
    scope.cancel()


def _schedules(
    kind: type[Schedule], publishers: int, reader_pause: int, **more: Any
) -> st.SearchStrategy[Any]:
    # One strategy per publisher count, built here rather than by `flatmap` at every example
    # (building them each time was a large share of these property tests' CPU).
    by_count = {
        n: st.builds(
            kind,
            items=st.tuples(*[st.integers(0, 4)] * n),
            pauses=st.tuples(*[st.integers(0, 2)] * n),
            cancel_after=st.tuples(*[st.none() | st.integers(0, 6)] * n),
            take=st.none() | st.integers(0, 6),
            reader_pause=st.integers(0, reader_pause),
            **more,
        )
        for n in range(1, publishers + 1)
    }
    return st.integers(1, publishers).flatmap(by_count.__getitem__)


schedules = _schedules(Schedule, 3, 2)


def _check(schedule: Schedule, out: Outcome) -> None:
    # every item whose publish returned was taken, each once; nothing refused or never
    # published was (a publisher cancelled just after its item was taken sees the cancellation)
    assert set(out.returned) <= set(out.taken) <= set(out.attempted) - set(out.broken)
    assert len(set(out.taken)) == len(out.taken)
    for p in range(len(schedule.items)):  # each publisher's items in its order
        mine = [k for q, k in out.taken if q == p]
        assert mine == sorted(mine)
    if schedule.take is None:
        assert out.ended and not out.broken
        if all(c is None for c in schedule.cancel_after):
            assert len(out.taken) == sum(schedule.items) == len(out.returned)
    else:  # closed: nothing was taken after the close, every later publish was refused
        assert len(out.taken) <= schedule.take


@hsettings(max_examples=120, deadline=None)
@given(schedules)
def test_handoff_keeps_the_memory_streams_promises(schedule: Schedule) -> None:
    _both_keep(schedule, _play, _check, 0, _Stream)


def _both_keep(
    schedule: Any,
    play: Callable[[Any, Any], Coroutine[Any, Any, Any]],
    check: Callable[[Any, Any], None],
    slots: int,
    stream: Callable[[], Any],
) -> None:
    """``check`` holds for a `Handoff` and the memory stream, and both deliver the same."""

    async def main() -> tuple[Any, Any]:
        handoff = Handoff[Any](asyncio.get_running_loop(), slots)
        return await play(schedule, handoff), await play(schedule, stream())

    ours, streams = anyio.run(main)
    check(schedule, ours)
    check(schedule, streams)
    if schedule.take is None and all(c is None for c in schedule.cancel_after):
        assert sorted(ours.taken) == sorted(streams.taken)


async def test_a_publish_refused_after_close_and_withdrawn_when_cancelled() -> None:
    handoff = Handoff[int](asyncio.get_running_loop())
    with anyio.move_on_after(0):  # cancelled while waiting: the item is withdrawn
        await handoff.publish(1)
    with pytest.raises(anyio.WouldBlock):
        handoff.take_nowait()
    handoff.close()
    with pytest.raises(anyio.BrokenResourceError):
        await handoff.publish(2)


async def test_run_hands_every_case_to_the_reader_once() -> None:
    async def judge(ctx: Context) -> Judgment:
        await anyio.lowlevel.checkpoint()
        return Judgment.passed("ok")

    contexts = [Context(input=str(i), output="a") for i in range(300)]
    seen = [case.context.input async for case in Evaluator(judge).run(contexts, concurrency=7)]
    assert sorted(seen, key=int) == [str(i) for i in range(300)]


# ---------------------------------------------------------------- slots: run()'s hand-over
@dataclass(frozen=True)
class SlotSchedule(Schedule):
    slots: int  # items started and not yet taken, at most (pauses: per item, while making it)


class _SlotStream:
    """The portable path (`Feed` off asyncio): a memory stream of ``slots`` and a semaphore."""

    def __init__(self, slots: int) -> None:
        send, self.receive = anyio.create_memory_object_stream[Any](slots)
        self.outlet = _StreamOutlet(send, slots)
        self.reserve, self.put, self.release = (
            self.outlet.reserve,
            self.outlet.put,
            self.outlet.release,
        )
        self.end = send.close
        self.close = self.receive.close

    async def take(self) -> Any:
        item = await self.receive.receive()
        self.outlet.release()
        return item


@dataclass
class SlotOutcome(Outcome):
    started: int = 0
    worst_ahead: int = 0  # started and not yet taken, seen by the reader after each take


async def _play_slots(schedule: SlotSchedule, channel: Any) -> SlotOutcome:
    """Workers as `Evaluator._run_cases` drives them; a reader as `Feed` (closing stops them)."""
    out = SlotOutcome()

    async def worker(p: int, scope: anyio.CancelScope) -> None:
        holding = making = False
        try:
            with scope:
                for k in range(schedule.items[p]):
                    if not holding:
                        await channel.reserve()
                        holding = True
                    out.started += 1
                    making = True
                    out.attempted.append((p, k))
                    await _pause(schedule.pauses[p])
                    holding, making = channel.put((p, k)), False
                    out.returned.append((p, k))
        except anyio.BrokenResourceError:  # the reader closed its end
            out.broken.append((p, -1))
        finally:
            out.started -= making  # cancelled while making an item: abandoned
            if holding:
                channel.release()

    def seen_by_reader() -> None:
        out.worst_ahead = max(out.worst_ahead, out.started - len(out.taken))

    await _drive(schedule, channel, worker, out, after_take=seen_by_reader, stop_on_close=True)
    return out


slot_schedules = _schedules(SlotSchedule, 4, 3, slots=st.integers(1, 3))


def _check_slots(schedule: SlotSchedule, out: SlotOutcome) -> None:
    assert set(out.taken) <= set(out.attempted)  # only what was made, each once
    assert len(set(out.taken)) == len(out.taken)
    assert set(out.returned) - set(out.taken) == set() or schedule.take is not None
    for p in range(len(schedule.items)):  # each worker's items in its order
        mine = [k for q, k in out.taken if q == p]
        assert mine == sorted(mine)
    assert out.worst_ahead <= schedule.slots  # the read-ahead bound, exactly
    if schedule.take is None:
        assert out.ended and not out.broken
        if all(c is None for c in schedule.cancel_after):
            assert len(out.taken) == sum(schedule.items)
    else:
        assert len(out.taken) <= schedule.take


@hsettings(max_examples=60, deadline=None)
@given(slot_schedules)
def test_slots_deliver_what_the_portable_stream_delivers(schedule: SlotSchedule) -> None:
    """`reserve`/`put` against the memory stream `Feed` uses off asyncio, on random schedules.

    Both keep at most ``slots`` items started and not yet read (as the reader sees it after
    each take), lose no slot (the watchdog: no schedule stalls), deliver each item once and
    in each worker's order, and deliver the same items when the reader reads to the end.
    """

    _both_keep(
        schedule, _play_slots, _check_slots, schedule.slots, lambda: _SlotStream(schedule.slots)
    )


async def test_a_slot_granted_to_a_cancelled_waiter_passes_on() -> None:
    """A waiter given a slot and cancelled before it resumed hands the slot to the next."""
    handoff = Handoff[int](asyncio.get_running_loop(), 1)
    await handoff.reserve()
    assert handoff.put(1) is False  # nobody reads: buffered with its slot
    first = asyncio.ensure_future(handoff.reserve())
    second = asyncio.ensure_future(handoff.reserve())
    await anyio.wait_all_tasks_blocked()
    assert handoff.take_nowait() == 1  # the slot goes to the first waiter...
    first.cancel()  # ...cancelled before it resumed: the second gets it
    await second
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_closing_refuses_waiting_and_later_producers() -> None:
    handoff = Handoff[int](asyncio.get_running_loop(), 1)
    await handoff.reserve()
    handoff.put(1)
    refused: list[str] = []

    async def waiter() -> None:
        with pytest.raises(anyio.BrokenResourceError):
            await handoff.reserve()
        refused.append("reserve")

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        handoff.close()
    with pytest.raises(anyio.BrokenResourceError):
        handoff.put(2)
    with pytest.raises(anyio.BrokenResourceError):
        await handoff.reserve()
    assert refused == ["reserve"]


# ---------------------------------------------------------------- Evaluator.run end to end
async def _stalled_reader_sees(
    contexts: Any, concurrency: int, total: int
) -> tuple[list[int], int]:
    """Cases pulled minus cases read, each time every worker has stopped (a stalled reader),
    and the most cases judged at once."""
    pulled = [0]
    running = [0, 0]  # now, most

    async def judge(ctx: Context) -> Judgment:
        running[0] += 1
        running[1] = max(running)
        await anyio.lowlevel.checkpoint()
        running[0] -= 1
        return Judgment.passed("ok")

    ahead = []
    async with Evaluator(judge).run(contexts(pulled), concurrency=concurrency) as cases:
        read = 0
        async for _ in cases:
            read += 1
            await anyio.wait_all_tasks_blocked()  # the workers went as far as they may
            ahead.append(pulled[0] - read)
    assert read == total
    return ahead, running[1]


@pytest.mark.parametrize("path", ["handoff", "portable"])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_run_reads_exactly_twice_concurrency_cases_ahead_of_a_stalled_reader(
    kind: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finished cases wait for the reader with their slots: with the reader stalled, exactly
    ``2 * concurrency`` cases are pulled ahead of what it read (never more, and no fewer while
    input remains: the workers did not stop early), and never more than ``concurrency`` are
    judged at once. ``portable``: the memory-stream path `Feed` takes off asyncio, forced
    here."""
    if path == "portable":

        def portable(feed: Feed[Any]) -> None:
            feed._fallback = feed._grouped()

        monkeypatch.setattr(Feed, "_start", portable)
    total, concurrency = 12, 3

    def plain(pulled: list[int]) -> Any:
        for i in range(total):
            pulled[0] += 1
            yield Context(input=i, output="a")

    async def lazy(pulled: list[int]) -> Any:
        for i in range(total):
            pulled[0] += 1
            yield Context(input=i, output="a")

    ahead, most = await _stalled_reader_sees(plain if kind == "sync" else lazy, concurrency, total)
    assert ahead == [min(2 * concurrency, total - read) for read in range(1, total + 1)]
    assert most <= concurrency


async def test_a_read_case_is_not_kept_alive_by_its_worker() -> None:
    """A worker leaves its finished case with the reader and keeps no reference to it.

    Before, the worker's frame held the case and its verdict until its next case finished
    (it waited in the hand-over with them): a case the reader had read and dropped stayed
    alive one case longer (issue 19.11).
    """
    total = 3
    gates = [anyio.Event() for _ in range(total)]
    started = [anyio.Event() for _ in range(total)]

    async def judge(ctx: Context) -> Judgment:
        started[ctx.input].set()
        await gates[ctx.input].wait()
        return Judgment.passed("ok")

    gates[0].set()
    alive: list[bool] = []
    contexts = [Context(input=i, output="a") for i in range(total)]
    async with Evaluator(judge).run(contexts, concurrency=1) as cases:
        async for case in cases:
            i = case.context.input
            verdict = weakref.ref(case.verdict)
            del case
            if i + 1 < total:
                await started[i + 1].wait()  # the worker is inside its next case
                alive.append(verdict() is not None)
                gates[i + 1].set()
    assert alive == [False, False]


@hsettings(max_examples=40, deadline=None)
@given(
    st.integers(1, 4),
    st.lists(st.integers(0, 3), max_size=12),
    st.lists(st.integers(0, 3), min_size=1, max_size=5),
)
def test_run_yields_what_evaluate_gives_on_random_schedules(
    concurrency: int, steps: list[int], reader_pauses: list[int]
) -> None:
    """`run` against `evaluate` per case, judges and reader pausing at random: the same
    judgments, every case once, and never more than ``2 * concurrency`` cases ahead of the
    reader."""

    async def judge(ctx: Context) -> Judgment:
        await _pause(steps[ctx.input])
        return Judgment.passed(f"case {ctx.input}") if ctx.input % 2 else Judgment.failed("odd")

    async def main() -> None:
        evaluator = Evaluator(judge)
        pulled = 0

        def contexts() -> Any:
            nonlocal pulled
            for i in range(len(steps)):
                pulled += 1
                yield Context(input=i, output="a")

        got: dict[int, Any] = {}
        async with evaluator.run(contexts(), concurrency=concurrency) as cases:
            async for case in cases:
                assert case.context.input not in got
                got[case.context.input] = case.verdict.judgment
                assert pulled - len(got) <= 2 * concurrency
                await _pause(reader_pauses[len(got) % len(reader_pauses)])
        expected = {
            i: (await evaluator.evaluate(Context(input=i, output="a")))[0].judgment
            for i in range(len(steps))
        }
        assert got == expected

    anyio.run(main)

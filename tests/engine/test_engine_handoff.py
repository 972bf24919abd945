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
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentjudge import Context, Evaluator, Judgment
from agentjudge.engine._detached import Handoff


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

    async def producer() -> None:
        try:
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
                await _pause(schedule.reader_pause)
        finally:
            channel.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(producer)
        tg.start_soon(reader)
    return out


async def _cancel_later(scope: anyio.CancelScope, after: int) -> None:
    await _pause(after)
    scope.cancel()


schedules = st.integers(1, 3).flatmap(
    lambda n: st.builds(
        Schedule,
        items=st.tuples(*[st.integers(0, 4)] * n),
        pauses=st.tuples(*[st.integers(0, 2)] * n),
        cancel_after=st.tuples(*[st.none() | st.integers(0, 6)] * n),
        take=st.none() | st.integers(0, 6),
        reader_pause=st.integers(0, 2),
    )
)


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
    async def main() -> tuple[Outcome, Outcome]:
        handoff = Handoff[Any](asyncio.get_running_loop())
        return await _play(schedule, handoff), await _play(schedule, _Stream())

    ours, streams = anyio.run(main)
    _check(schedule, ours)
    _check(schedule, streams)
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

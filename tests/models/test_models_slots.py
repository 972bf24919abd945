"""A client's concurrency slots: first come first served, never more than allowed, none leaked.

`Slots` replaced `anyio.CapacityLimiter` as the client's ``max_concurrency`` limit (issue
19.11: the limiter's acquire and release cost ~4-12 us per request, most of it tracking which
task holds a slot). These property tests hold it to what the client relied on the limiter for,
on random schedules on a virtual clock, with waiters that give up at any moment (cancelled
while waiting, or just after a slot was handed to them): no more than ``total`` slots held at
once, slots handed in arrival order, every patient request served, and every slot free again
at the end.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from unittest import mock

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from virtual_clock import run_virtual

from agentjudge.models import _transport
from agentjudge.models._loop import Wake, new_wake
from agentjudge.models._transport import Slots


@dataclass(frozen=True)
class Holder:
    """One scripted request: when it arrives, how long it holds a slot, when it gives up."""

    arrival: float
    hold: float
    patience: float | None


HOLDERS = st.lists(
    st.builds(
        Holder,
        arrival=st.sampled_from([0.0, 0.0, 0.001, 0.01, 0.05]),
        hold=st.sampled_from([0.0, 0.001, 0.02, 0.1]),
        patience=st.one_of(st.none(), st.sampled_from([0.0, 0.001, 0.02, 0.1])),
    ),
    min_size=1,
    max_size=30,
)


def drive(slots: Slots, total: int, holders: list[Holder]) -> list[int]:
    """Run ``holders`` on a virtual clock; the order in which they got a slot."""
    order: list[int] = []
    held = [0]

    async def request(i: int, holder: Holder) -> None:
        got = False
        if holder.patience is None:
            await slots.take()
            got = True
        else:
            with anyio.move_on_after(holder.patience):
                await slots.take()
                got = True
        if not got:
            return
        held[0] += 1
        assert held[0] <= total
        order.append(i)
        try:
            await anyio.sleep(holder.hold)
        finally:
            held[0] -= 1
            slots.release()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i, holder in enumerate(holders):
                if holder.arrival:
                    await anyio.sleep(holder.arrival)
                tg.start_soon(request, i, holder)

    run_virtual(main)
    return order


@settings(max_examples=80, deadline=None)
@given(holders=HOLDERS, total=st.integers(1, 6), event=st.booleans())
def test_slots_are_handed_in_order_never_exceeded_and_never_leaked(
    holders: list[Holder], total: int, event: bool
) -> None:
    """At most ``total`` held; arrival order; every patient request served; all free after.

    With a bare future per waiter (asyncio) or an `anyio.Event` (other backends).
    """
    slots = Slots(total)
    with mock.patch.object(_transport, "new_wake", anyio.Event if event else new_wake):
        order = drive(slots, total, holders)
    assert order == sorted(order)
    assert {i for i, h in enumerate(holders) if h.patience is None} <= set(order)
    assert slots.free == total
    assert not slots._queue


async def test_a_slot_handed_to_a_cancelled_waiter_goes_to_the_next() -> None:
    """Released to a waiter that is cancelled before it runs again: the next one gets it."""
    slots = Slots(1)
    assert slots.take_now()
    first = asyncio.ensure_future(slots.take())
    second = asyncio.ensure_future(slots.take())
    await anyio.wait_all_tasks_blocked()
    assert isinstance(slots._queue[0].event, Wake)  # asyncio: a bare future per waiter
    slots.release()  # handed to the first waiter...
    first.cancel()  # ...which is cancelled before it resumes
    with pytest.raises(asyncio.CancelledError):
        await first
    await second  # the slot went on to the second
    assert slots.free == 0
    assert not slots.take_now()
    slots.release()
    assert slots.free == 1

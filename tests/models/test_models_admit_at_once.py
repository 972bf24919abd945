"""A client takes free capacity without reading its deadline: equal to ``admit`` (issue 19.11).

`admit_at_once` is the client's first step for every request; when it admits, ``admit`` with
any deadline would have admitted at the same time with the same effect, and when it does not,
it changed nothing (the caller then awaits ``admit``). Pinned on a virtual clock over
controller states of every kind: paused or not, window full or not, paced or not, a queue or
none, and deadlines before, at and after the pause's end.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from virtual_clock import run_virtual

from agentjudge._compat import loop_time
from agentjudge.models._adaptive import (
    AdaptiveController,
    CapacityDeadline,
    _Waiter,
    admit_at_once,
)

OFFSETS = st.sampled_from([-math.inf, -1.0, -0.001, 0.0, 0.001, 0.5, 3.0])
STATE = st.fixed_dictionaries(
    {
        "paused": OFFSETS,
        "window": st.sampled_from([1.0, 2.5, 4.0, 16.0]),
        "in_flight": st.integers(min_value=0, max_value=5),
        "rate": st.sampled_from([None, 0.2, 10.0, 1e6]),
        "next_start": OFFSETS,
        "queued": st.booleans(),
    }
)


def _controller(state: dict[str, Any], now: float) -> AdaptiveController:
    control = AdaptiveController(16)
    control.paused_until = now + state["paused"]
    control.window = state["window"]
    control.in_flight = state["in_flight"]
    control.rate = state["rate"]
    control._next_start = now + state["next_start"]
    if state["queued"]:
        control._queue.append(_Waiter())
    return control


def _state(control: AdaptiveController) -> tuple[Any, ...]:
    return (
        control.in_flight,
        control._next_start,
        control._first_admit,
        control.paused_until,
        len(control._queue),
        list(control.trace),
    )


@settings(max_examples=200)
@given(state=STATE, deadline=OFFSETS, given_now=st.booleans())
def test_admit_at_once_equals_admit_whatever_the_deadline(
    state: dict[str, Any], deadline: float, given_now: bool
) -> None:
    """Admitted: same start and state as admit(deadline). Not admitted: nothing changed.

    Either reading the clock itself or given the time the caller read in the same step.
    """

    async def main() -> None:
        now = loop_time()
        fast, general = _controller(state, now), _controller(state, now)
        before = _state(fast)
        start = admit_at_once(fast, now if given_now else None)
        if start is None:
            assert _state(fast) == before
            return
        with anyio.fail_after(0):  # admit must not wait either
            try:
                admitted = await general.admit(now + deadline)
            except CapacityDeadline as exc:  # pragma: no cover - would be a difference
                raise AssertionError(f"admit refused what admit_at_once took: {exc}") from None
        assert admitted == start
        assert _state(fast) == _state(general)

    run_virtual(main)


def test_admit_at_once_leaves_other_controllers_to_admit() -> None:
    """A controller of another kind (e.g. shared across processes) is always awaited."""
    assert admit_at_once(object()) is None  # type: ignore[arg-type]

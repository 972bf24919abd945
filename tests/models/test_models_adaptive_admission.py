"""The adaptive controller's admission: batched, first come first served, nothing leaked.

Capacity that comes back is taken for every queued request it allows in one pass through the
event loop (issue 19.11: one admission per pass slowed W4 whenever the window was below the
concurrency), the fast path for free capacity admits exactly as the queued way would, and a
request cancelled at any moment of its wait never keeps capacity.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass
from unittest import mock

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from virtual_clock import run_virtual

from agentjudge.models import _adaptive
from agentjudge.models._adaptive import AdaptiveController, CapacityDeadline, feedback
from agentjudge.models._headers import (
    _INTEGER,
    RateHints,
    _number,
    header_signals,
    parse_rate_hints,
    parse_reset,
)
from agentjudge.models._loop import Wake

MAX_WAIT = 2.0
HEADERS = [
    {},
    {"retry-after-ms": "30"},
    {"Retry-After": "1"},
    {
        "x-ratelimit-limit-requests": "100",
        "x-ratelimit-remaining-requests": "20",
        "x-ratelimit-reset-requests": "1s",
    },
    {
        "x-ratelimit-limit-requests": "100",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "300ms",
    },
]


@dataclass(frozen=True)
class Call:
    """One scripted request: when it arrives, how long the provider takes, what it answers."""

    arrival: float
    latency: float
    status: int
    headers: int
    patience: float | None = None
    """Seconds it waits for capacity before its caller gives up (cancellation)."""


ARRIVALS = (0.0, 0.0, 0.001, 0.01, 0.05, 0.3)
LATENCIES = (0.0, 0.005, 0.02, 0.1)
STATUSES = (200, 200, 200, 429, 503, 500)
PATIENCES = (None, None, None, None, 0.0, 0.001, 0.02, 0.2)  # half the callers never give up


def _call(raw: bytes) -> Call:
    """A call from five bytes: its arrival, latency, status, headers and patience, each a byte
    modulo the number of choices (one draw per call, where one per field made drawing most of
    these tests' time)."""
    arrival, latency, status, headers, patience = raw
    return Call(
        arrival=ARRIVALS[arrival % len(ARRIVALS)],
        latency=LATENCIES[latency % len(LATENCIES)],
        status=STATUSES[status % len(STATUSES)],
        headers=headers % len(HEADERS),
        patience=PATIENCES[patience % len(PATIENCES)],
    )


CALLS = st.lists(st.binary(min_size=5, max_size=5).map(_call), min_size=1, max_size=30)


class GeneralOnly(AdaptiveController):
    """The controller with its fast path switched off: every request takes the queued way."""

    def _admit_now(self, now: float | None = None) -> float | None:
        return None


class Checked(AdaptiveController):
    """The controller, checking at every admission that the capacity was really free."""

    def _take(self, now: float) -> float:
        assert self.in_flight < max(1, int(self.window)), (self.in_flight, self.window)
        assert self.paused_until <= now
        assert self.rate is None or self._next_start <= now
        return super()._take(now)


def drive(
    control: AdaptiveController, calls: list[Call]
) -> tuple[list[tuple[int, float]], list[object]]:
    """Run ``calls`` against ``control`` on a virtual clock (each arrival after the previous).

    Returns (index, start time) per admitted request in admission order, and the controller's
    trace.
    """
    admitted: list[tuple[int, float]] = []

    async def request(i: int, call: Call) -> None:
        begun: float | None = None
        if call.patience is None:
            begun = await control.admit()
        else:  # a caller that gives up: cancelled, or refused at once by a longer pause
            with anyio.move_on_after(call.patience), contextlib.suppress(CapacityDeadline):
                begun = await control.admit()
        if begun is None:
            return
        admitted.append((i, begun))
        await anyio.sleep(call.latency)
        feedback(control, begun, call.status, header_signals(HEADERS[call.headers]), MAX_WAIT)

    async def main() -> None:
        random.seed(1)  # the pause's jitter: the same in every run compared
        async with anyio.create_task_group() as tg:
            for i, call in enumerate(calls):
                if call.arrival:
                    await anyio.sleep(call.arrival)
                tg.start_soon(request, i, call)

    run_virtual(main)
    return admitted, list(control.trace)


@settings(max_examples=60, deadline=None)
@given(calls=CALLS, ceiling=st.integers(1, 8), initial=st.integers(1, 8))
def test_the_fast_path_admits_exactly_as_the_queued_way(
    calls: list[Call], ceiling: int, initial: int
) -> None:
    """Same requests admitted, in the same order, at the same times; same controller state."""
    fast = AdaptiveController(ceiling, initial=initial)
    general = GeneralOnly(ceiling, initial=initial)
    assert drive(fast, calls) == drive(general, calls)
    assert (fast.window, fast.rate, fast.in_flight) == (general.window, general.rate, 0)


@settings(max_examples=60, deadline=None)
@given(calls=CALLS, ceiling=st.integers(1, 8), initial=st.integers(1, 8))
def test_a_queued_request_woken_by_a_future_is_admitted_as_by_an_anyio_event(
    calls: list[Call], ceiling: int, initial: int
) -> None:
    """Same admissions, order, times and state whether a queued request waits on a bare future
    (`Wake`, asyncio) or on an `anyio.Event` (as before, and on other backends), callers giving
    up at any moment included."""
    fast = AdaptiveController(ceiling, initial=initial)
    general = AdaptiveController(ceiling, initial=initial)
    woken = drive(fast, calls)
    with mock.patch.object(_adaptive, "new_wake", anyio.Event):
        assert drive(general, calls) == woken
    assert (fast.window, fast.rate, fast.in_flight) == (general.window, general.rate, 0)
    assert not fast._queue and not general._queue


@settings(max_examples=60, deadline=None)
@given(calls=CALLS, ceiling=st.integers(1, 8), initial=st.integers(1, 8))
def test_admission_is_first_come_first_served_and_never_leaks(
    calls: list[Call], ceiling: int, initial: int
) -> None:
    """Admitted in arrival order, only into free capacity, and in-flight returns to 0, even
    when callers give up while waiting (at any moment, capacity already taken for them too)."""
    control = Checked(ceiling, initial=initial)
    admitted, _ = drive(control, calls)
    order = [i for i, _ in admitted]
    assert order == sorted(order)
    assert {i for i, c in enumerate(calls) if c.patience is None} <= set(order)
    assert control.in_flight == 0
    assert not control._queue


async def test_capacity_freed_at_once_admits_every_waiter_in_one_pass() -> None:
    """50 releases in a row admit the 50 queued requests in the next pass through the loop.

    The controller admitted one queued request per pass (its lock handed over once per
    pass), so a window below the concurrency serialised admissions (issue 19.11).
    """
    control = AdaptiveController(100, initial=100)
    for _ in range(100):
        await control.admit()
    passes: list[int] = []
    admitted_at: list[int] = []

    async def request() -> None:
        await control.admit()
        admitted_at.append(len(passes))

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(request)
        await anyio.wait_all_tasks_blocked()
        for _ in range(50):
            control.finished()
        asyncio.get_running_loop().call_soon(passes.append, 1)
    assert admitted_at == [0] * 50
    assert control.in_flight == 100


async def test_a_request_cancelled_after_its_capacity_was_taken_gives_it_back() -> None:
    """Capacity taken for a queued request that is cancelled before it resumes comes back."""
    control = AdaptiveController(1, initial=1)
    await control.admit()
    waiting = asyncio.ensure_future(control.admit())
    await anyio.wait_all_tasks_blocked()
    assert isinstance(control._queue[0].event, Wake)  # asyncio: a bare future
    control.finished()  # takes the slot for the queued request...
    assert control.in_flight == 1
    waiting.cancel()  # ...which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert control.in_flight == 0
    assert not control._queue
    await control.admit()  # the slot is free for the next
    assert control.in_flight == 1


# -- the per-answer bookkeeping: cheaper, the same results -----------------------------------------

_FAMILY_PATTERNS = (
    ("x-ratelimit-{}-requests", "x-ratelimit-{}-tokens"),
    ("anthropic-ratelimit-requests-{}", "anthropic-ratelimit-tokens-{}"),
    ("ratelimit-{}", None),
)


def reference_rate_hints(headers: dict[str, str]) -> RateHints | None:
    """The straightforward reading (names formatted per answer), as the parser read before."""
    lowered = {k.lower(): v for k, v in headers.items()}

    def integer(pattern: str | None, field: str) -> float | None:
        if pattern is None:
            return None
        text = lowered.get(pattern.format(field))
        if text is None:
            return None
        return _number(pattern.format(field), text, _INTEGER)

    def reset(pattern: str | None) -> float | None:
        if pattern is None:
            return None
        text = lowered.get(pattern.format("reset"))
        return None if text is None else parse_reset(text, name=pattern.format("reset"))

    for requests, tokens in _FAMILY_PATTERNS:
        limit, token_limit = integer(requests, "limit"), integer(tokens, "limit")
        if limit is None and token_limit is None:
            continue
        return RateHints(
            limit=limit,
            remaining=integer(requests, "remaining"),
            reset=reset(requests),
            token_limit=token_limit,
            token_remaining=integer(tokens, "remaining"),
            token_reset=reset(tokens),
        )
    return None


HEADER_NAMES = st.sampled_from(
    [
        f"{case(prefix.format(field))}"
        for requests, tokens in _FAMILY_PATTERNS
        for prefix in (requests, tokens)
        if prefix is not None
        for field in ("limit", "remaining", "reset")
        for case in (str.lower, str.title)
    ]
    + ["content-type", "retry-after", "Server"]
)
HEADER_VALUES = st.sampled_from(["0", "5", "100", "1_0", "1e3", "6ms", "1m30s", "-1", "", "x"])


@settings(max_examples=100, deadline=None)
@given(headers=st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=8))
def test_rate_hints_read_as_the_straightforward_reading(headers: dict[str, str]) -> None:
    """The parser with its header names computed once reads every answer as before."""
    assert parse_rate_hints(headers) == reference_rate_hints(headers)

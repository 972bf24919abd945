"""`AdaptiveController`: a model client's own, self-tuning limit on concurrency and request rate.

Each client (one provider endpoint and API key) owns one controller per event loop (it lives in
the client's `Session`). It works beneath the client's ``max_concurrency`` and any static
`RateLimit` the user set, which stay hard ceilings. It is driven by:

- **Throttling** (429, 503, 529): every request of the controller waits for a shared pause
  (the wait the provider asked for: ``Retry-After`` / ``retry-after-ms``, or what its
  ``capacity_signals`` read from the body, e.g. Gemini's ``RetryInfo``; up to ``max_wait``;
  else a growing backoff with jitter; one backoff step per congestion event, see `_pause`),
  not only the one that was refused. Once per congestion event (a throttle of a request that
  started after the last cut; once paced, at most one cut a second) the concurrency window is
  halved and the request rate is cut to 90% of the rate the provider accepted over the last
  second (never below a quarter of the previous rate; halved when fewer than 5 answers came
  back in that second, and not paced at all before the first such measurement).
- **Success**: additive increase. Before the first throttle the window grows by one per success
  (slow start); afterwards by ``1 / window`` per success, and the paced rate by 3% of the rate at
  the last cut (at least 1 request/s) per second.
- **Rate-limit headers** (OpenAI ``x-ratelimit-*``, Anthropic ``anthropic-ratelimit-*``,
  generic ``ratelimit-*``, read strictly by `agentjudge.models._headers`): the provider's
  refill rate is estimated as
  ``(limit - remaining) / reset`` (the smallest recent estimate, to discount rounding); once
  fewer than half the requests remain the rate is capped there (and, a second after a cut and
  while tokens are not low, drawn back up to it), and when fewer than 10% of the requests or
  tokens remain, growth stops.
- **Token headers** (``x-ratelimit-*-tokens``, ``anthropic-ratelimit-tokens-*``): the token
  refill rate, and the tokens one request costs (measured from how the remaining tokens change
  between answers), give a second cap, ``token rate / tokens per request``; the tighter of the
  two caps applies.
- **Noise**: a throttle cuts only when it shows a real limit (headers: request budget at 0 or
  tokens under 10%; no headers: see `AdaptiveController._judge_last_cut`, which learns random
  429s as noise when cuts do not reduce them, and undoes those cuts).
- **Latency**: when the recent latency exceeds three times its minimum, growth stops (the
  provider is queueing). It does not shrink the window: LLM latency also varies with answer
  length, and a shrinking window would then starve a healthy provider. Latency is measured in
  this process, so it includes the time an answer waited for the client's own event loop: when
  the loop's thread was busy (running, or waiting for a core: `thread_busy_time`, read at most
  every 0.1 s) for 2/3 (``1 - 1 / _LATENCY_FACTOR``) of the last 0.1 s, its backlog alone could
  have tripled every latency, so answers neither count as samples nor hold growth. A latency
  that grows with the window would not tell a queueing provider from a CPU-bound client (whose
  throughput is fixed, so its latency grows too); holding a busy client's window only queued
  every call in the controller (W4, issue 19.11).

Whatever the headers say, the paced rate stays within [`MIN_RATE`, `MAX_RATE`] (so pacing
spaces requests at most 5 s apart), the window within [1, ceiling], and every admitted request
releases its capacity (`succeeded` and `throttled` release in ``finally``; `feedback` never
raises).

`trace` keeps a bounded history of (time, window, rate, in flight, throttles) for benchmarks and
for debugging a run.
"""

from __future__ import annotations

import logging
import math
import random
from collections import deque
from collections.abc import Callable
from typing import NamedTuple, Protocol

import anyio

from agentjudge._compat import loop_time
from agentjudge.models._headers import CapacitySignals, RateHints, fraction
from agentjudge.models._loop import new_wake, thread_busy_time

__all__ = [
    "MAX_RATE",
    "MIN_RATE",
    "THROTTLE_STATUSES",
    "AdaptiveController",
    "CapacityDeadline",
    "Controller",
    "ControllerSource",
    "TracePoint",
    "admit_at_once",
    "feedback",
    "new_controller",
    "share_controllers",
]

logger = logging.getLogger("agentjudge.models")

THROTTLE_STATUSES = frozenset({429, 503, 529})
"""Statuses that mean "slow down": they drive the controller and its shared pause."""

_BETA = 0.9
"""A cut sets the rate to this share of the rate the provider accepted recently."""
_GROWTH = 0.03
"""After a cut the rate grows by this share of the rate before the cut, per second."""
_CUT_SPACING = 1.0
"""Seconds between two cuts of a paced rate: scattered 429s must not spiral it down."""
MIN_RATE = 0.2
"""The slowest paced rate, requests per second: pacing never spaces requests over 5 s apart."""
MAX_RATE = 1e6
"""The fastest paced rate (in effect unpaced); with `MIN_RATE` the rate's bounds."""
_MIN_STEP = 1.0
"""The smallest additive increase of the rate, requests per second per second."""
_MIN_SAMPLE = 5
"""Answers needed in the last second to measure the accepted rate."""
_MIN_SPAN = 0.25
"""Seconds after the first throttle before the accepted rate is measured (the burst is over)."""
_OUTCOMES = 50
"""Answers whose throttle share tells a real limit from random refusals (no headers)."""
_JUDGED = 20
"""Answers (of requests started after a paced cut) needed to judge whether it helped."""
_HELPED = 0.1
"""A cut helped when fewer than this share of the requests started after it were throttled."""
_NOISE_CUTS = 2
"""Paced cuts in a row that did not help: the throttles are noise, the cuts are undone."""
_NOISE_FACTOR = 2.0
"""Once noise is known, a throttle cuts only when the share exceeds this many times it."""
_TOKEN_PAIRS = 32
"""Successive answers whose token headers give the tokens a request costs (a mean)."""
_TOKEN_MIN_PAIRS = 4
_HINT_APPROACH = 0.05
"""Below the headers' refill rate (after a cut), each answer closes this share of the gap."""
_HINT_ENGAGES = 0.5
_LATENCY_FACTOR = 3.0
_BUSY_SHARE = 1.0 - 1.0 / _LATENCY_FACTOR
"""A loop busy this share of the time may triple latencies alone: they are not the provider's."""
_BUSY_SPAN = 0.1
"""Seconds of loop time between two readings of the loop thread's busy clock."""
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 5.0
_TRACE_POINTS = 4096
_new_tuple = tuple.__new__


# -- the controller -------------------------------------------------------------------------------


class TracePoint(NamedTuple):
    """The controller's state after one event (a named tuple: one is recorded per request).

    Attributes:
        time: `anyio.current_time` of the event.
        window: Requests allowed in flight.
        rate: Paced requests per second (None: not paced).
        in_flight: Requests in flight.
        throttles: Throttled responses so far.
    """

    time: float
    window: float
    rate: float | None
    in_flight: int
    throttles: int


class CapacityDeadline(Exception):
    """Waiting for capacity would outlast the caller's deadline.

    Attributes:
        wait: Seconds the shared pause still lasts.
        left: Seconds left before the deadline.
        status: The throttling status (429, 503, 529) that set the pause.
        asked: True when the provider asked for the pause (``Retry-After``); False for the
            controller's own backoff.
    """

    def __init__(self, wait: float, left: float, status: int, asked: bool) -> None:
        super().__init__(wait, left, status, asked)
        self.wait = wait
        self.left = left
        self.status = status
        self.asked = asked


class Controller(Protocol):
    """What a client asks of its controller (an `AdaptiveController`, or a shared one).

    A controller shared with other processes comes from ``share_controllers``. Every `admit`
    is followed by exactly one of the other three calls.
    """

    async def admit(self, deadline: float = math.inf) -> float:
        """Wait for capacity and take it; returns the start time to report back."""
        ...

    def succeeded(self, started: float, hints: RateHints | None) -> None:
        """The request was answered (``hints``: the rate-limit budget it reported)."""

    def throttled(
        self, started: float, signals: CapacitySignals, *, status: int, max_wait: float
    ) -> None:
        """The request was refused with a throttling status (``signals``: what it said)."""

    def finished(self) -> None:
        """The request ended without telling anything about capacity."""


ControllerSource = Callable[[str, int], Controller]
"""Makes the controller of a client: ``(key, ceiling) -> Controller`` (see `new_controller`)."""

_source: ControllerSource | None = None


def share_controllers(source: ControllerSource | None) -> None:
    """Make the controllers of this process's clients come from ``source`` (None: their own).

    A Ray actor sets it so that every actor's clients of one provider endpoint obey one
    controller (``agentjudge.harness._ray_rates``); it applies to sessions made afterwards.
    """
    global _source
    _source = source


def new_controller(key: str, ceiling: int) -> Controller:
    """The controller of a new session of the client ``key`` (name and endpoint)."""
    if _source is None:
        return AdaptiveController(ceiling)
    return _source(key, ceiling)


class _Waiter:
    """One request queued for a controller's capacity."""

    __slots__ = ("event", "start")

    def __init__(self) -> None:
        self.event = new_wake()
        self.start: float | None = None
        """The start time once capacity was taken for it (by `AdaptiveController._dispatch`)."""


class AdaptiveController:
    """AIMD control of one client's concurrency and request rate (see the module docstring).

    Create it inside the event loop that uses it. Every `admit` must be followed by exactly one
    of `succeeded`, `throttled` or `finished`.

    Args:
        ceiling: The client's ``max_concurrency``: the window never exceeds it.
        initial: The window before any feedback (slow start grows it from there).
    """

    def __init__(self, ceiling: int, *, initial: int = 4) -> None:
        self.ceiling = ceiling
        self.window = float(min(ceiling, initial))
        self.rate: float | None = None
        self.in_flight = 0
        self.throttles = 0
        self.paused_until = -math.inf
        self.pause_cause = (429, False)
        """(status, asked by Retry-After) of the throttle that set `paused_until`."""
        self.trace: deque[TracePoint] = deque(maxlen=_TRACE_POINTS)
        self._slow_start = True
        self._next_start = -math.inf
        self._cut_at = -math.inf
        self._base = 0.0
        self._streak = 0
        self._step_at = -math.inf
        self._accepted: deque[float] = deque()
        self._first_admit: float | None = None
        self._first_throttle: float | None = None
        self._provisional = False
        self._hints: deque[float] = deque(maxlen=32)
        self._outcomes: deque[tuple[float, bool]] = deque(maxlen=_OUTCOMES)
        self._unhelpful: list[float] = []
        self._undo: tuple[float, float | None, float] | None = None
        self.noise = 0.0
        self._token_rates: deque[float] = deque(maxlen=32)
        self._token_costs: deque[float] = deque(maxlen=_TOKEN_PAIRS)
        self._token_last: tuple[float, float] | None = None
        self._latency = 0.0
        self._min_latency = math.inf
        self._busy = False
        self._busy_from = (math.inf, 0.0)
        """(loop time, `thread_busy_time`) at the last reading (first: the first admission)."""
        self._queue: deque[_Waiter] = deque()
        """Requests waiting for capacity, in arrival order (see `admit`)."""

    def __repr__(self) -> str:
        rate = "unpaced" if self.rate is None else f"{self.rate:.1f}/s"
        return f"AdaptiveController(window={self.window:.1f}, rate={rate})"

    # -- admission --------------------------------------------------------------------------------

    async def admit(self, deadline: float = math.inf) -> float:
        """Wait for capacity (pause, window, pacing) and take it; returns the start time.

        Requests are admitted first come, first served. One with capacity free and nobody
        queued ahead is admitted at once, without a trip through the event loop (`_admit_now`,
        the fast path); the others queue (`_queued`), and whenever capacity comes back
        (`_dispatch`) it is taken for as many of them as it allows, all in the same pass
        through the loop. A pause already known to last beyond ``deadline`` fails at once,
        without queueing behind requests that wait for it.

        Raises:
            CapacityDeadline: The shared pause lasts beyond ``deadline``.
        """
        if self.paused_until >= deadline:
            self._check_pause(loop_time(), deadline)
        start = self._admit_now()
        if start is not None:
            return start
        return await self._queued(deadline)

    def _admit_now(self, now: float | None = None) -> float | None:
        """The fast path: take capacity when it is free and nobody is queued (None: queue).

        The queued way admits such a request without suspending too, at the same time and
        with the same effect (pinned by a property test); this only skips its bookkeeping.
        ``now``: the loop's time, when the caller read it in this same step.
        """
        if self._queue:
            return None
        if now is None:
            now = loop_time()
        return self._take(now) if self._wait_needed(now) <= 0 else None

    async def _queued(self, deadline: float) -> float:
        """Queue for capacity; returns the start time when it was taken for this request.

        The first request in the queue waits out a pause or the pacing itself (a timed wait),
        and checks the pause against its ``deadline``; the others wait until `_dispatch`
        takes capacity for them. A request cancelled after capacity was taken for it gives
        the capacity back (release in ``finally``: nothing leaks).
        """
        waiter = _Waiter()
        queue = self._queue
        queue.append(waiter)
        try:
            while waiter.start is None:
                if queue[0] is waiter:
                    now = loop_time()
                    wait = self._wait_needed(now)
                    if wait <= 0:
                        queue.popleft()
                        start = self._take(now)
                        self._dispatch(now)  # the next in line: admitted too, or it times
                        return start
                    self._check_pause(now, deadline)
                    if wait < math.inf:
                        with anyio.move_on_after(wait):
                            await waiter.event.wait()
                    else:
                        await waiter.event.wait()
                else:
                    await waiter.event.wait()
                if waiter.start is None:
                    waiter.event = new_wake()
            return waiter.start
        except BaseException:
            if waiter.start is not None:  # capacity was taken for it, but it will not send
                self._release()
            else:
                queue.remove(waiter)
                if queue:
                    self._dispatch(loop_time())  # it may have been first: the next takes over
            raise

    def _dispatch(self, now: float) -> None:
        """Take capacity for queued requests in arrival order, as much as there is now.

        All of them resume in the next pass through the event loop (one admission per pass
        serialised a burst of releases). The first that must still wait is woken when its
        wait is timed (a pause or pacing, which it waits out itself); never raises.
        """
        queue = self._queue
        while queue:
            wait = self._wait_needed(now)
            if wait > 0:
                if wait < math.inf:
                    queue[0].event.set()
                return
            waiter = queue.popleft()
            waiter.start = self._take(now)
            waiter.event.set()

    def _check_pause(self, now: float, deadline: float) -> None:
        if self.paused_until > now and self.paused_until >= deadline:
            raise CapacityDeadline(self.paused_until - now, deadline - now, *self.pause_cause)

    def _wait_needed(self, now: float) -> float:
        """0 when a request may start now, else how long until it might (inf: a release)."""
        if self.paused_until > now:
            return self.paused_until - now
        if self.in_flight >= max(1, int(self.window)):
            return math.inf
        if self.rate is not None and self._next_start > now:
            return self._next_start - now
        return 0.0

    def _take(self, now: float) -> float:
        self.in_flight += 1
        if self._first_admit is None:
            self._first_admit = now
            self._busy_from = (now, thread_busy_time())
        if self.rate is not None:
            self._next_start = max(self._next_start, now - 1.0 / self.rate) + 1.0 / self.rate
        return now

    def _release(self, now: float | None = None) -> None:
        """Give one request's capacity back (``now``: the time of the event, if read already)."""
        self.in_flight -= 1
        now = loop_time() if now is None else now
        # the trace point, its tuple made directly: TracePoint(...) is the same value through
        # a Python frame
        point = (now, self.window, self.rate, self.in_flight, self.throttles)
        self.trace.append(_new_tuple(TracePoint, point))
        if self._queue:
            self._dispatch(now)

    # -- feedback ---------------------------------------------------------------------------------

    def finished(self) -> None:
        """The request ended without telling anything about capacity (e.g. a transport error)."""
        self._release()

    def succeeded(self, started: float, hints: RateHints | None) -> None:
        """The request was answered (not throttled) after starting at ``started``.

        ``hints`` is the rate-limit budget the answer reported, if any.
        """
        now = loop_time()
        try:
            self._streak = 0
            self._accepted.append(now)
            while self._accepted[0] <= now - 1.0:
                self._accepted.popleft()
            self._outcomes.append((started, False))
            if now - self._busy_from[0] >= _BUSY_SPAN:
                self._measure_busy(now)
            hold = False
            if not self._busy:  # else the latency is the client's own backlog, not evidence
                latency = now - started
                if latency > 0:  # its minimum and moving mean (inline: once per answer)
                    if latency < self._min_latency:
                        self._min_latency = latency
                    mean = self._latency
                    self._latency = latency if mean == 0 else 0.8 * mean + 0.2 * latency
                hold = self._latency > _LATENCY_FACTOR * self._min_latency
            if hints is not None:
                self._observe_tokens(started, hints)
                hold = self._apply_hints(hints) or hold
            if not hold:
                self._grow()
        finally:
            self._release(now)

    def throttled(
        self,
        started: float,
        signals: CapacitySignals,
        *,
        status: int,
        max_wait: float,
    ) -> None:
        """The request was refused with a throttling status; everyone pauses, and maybe a cut.

        The pause is the wait the answer asked for (``signals.retry_after``) when it is at most
        ``max_wait`` seconds, else the backoff (see `_pause`). The cut happens only for a
        throttle that looks like a real limit (see `_congested`).
        """
        now = loop_time()
        try:
            self.throttles += 1
            self._outcomes.append((started, True))
            if self._first_throttle is None:
                self._first_throttle = now
            asked = signals.retry_after
            if asked is not None and asked > max_wait:
                asked = None  # not honoured: the backoff applies
            self._pause(now, started, status, asked, max_wait)
            spaced = self.rate is None or self._provisional or now - self._cut_at >= _CUT_SPACING
            if started >= self._cut_at and spaced and self._congested(signals.rates):
                self._cut(now)
        finally:
            self._release(now)

    def _pause(
        self, now: float, started: float, status: int, asked: float | None, max_wait: float
    ) -> None:
        """Pause every request: ``asked`` seconds, else one step of the backoff.

        Up to 20% jitter is added (within ``max_wait`` for an ``asked`` wait), so the queue does
        not restart in lock-step.

        One congestion event is one backoff step: a throttle of a request sent after the
        current step began (the pause did not help) takes the next step, 50 ms doubling up to
        5 s; one sent before it (a burst of answers to requests in flight) takes none, and
        pauses only when it asks for a wait of its own.
        """
        if started > self._step_at:
            self._streak += 1
            self._step_at = now
        elif asked is None:
            return
        if asked is None:
            wait = min(_BACKOFF_MAX, _BACKOFF_FIRST * 2.0 ** min(self._streak - 1, 16))
            wait *= random.uniform(1.0, 1.2)
        else:
            wait = min(asked * random.uniform(1.0, 1.2), max(asked, max_wait))
        until = now + wait
        if until > self.paused_until:
            self.paused_until = until
            self.pause_cause = (status, asked is not None)

    def _share(self, since: float = -math.inf) -> tuple[float, int]:
        """(throttled share, answers) of the recent requests started at or after ``since``."""
        outcomes = [throttled for started, throttled in self._outcomes if started >= since]
        return (sum(outcomes) / len(outcomes) if outcomes else 0.0), len(outcomes)

    def _judge_last_cut(self) -> bool:
        """Judge the last paced cut by its effect before cutting again; False: do not cut now.

        Against a real limit a cut removes the throttles (fewer than 10% of the requests
        started after it are refused; 20 answers are needed to judge). When 2 paced cuts in a
        row did not (a flaky proxy answering 429 to one call in five, whatever the rate), the
        throttles are noise (their mean share): the window and rate go back to where they were
        before that streak of cuts (the window in slow start again), and from then on (without
        headers) a throttle cuts only when the share of refusals is above twice that noise.
        """
        if self._undo is None:
            self._undo = (self.window, self.rate, self._base)
        if self.rate is None or self._provisional:
            return True  # still finding the limit: cut at once
        share, answers = self._share(since=self._cut_at)
        if answers < _JUDGED:
            return False  # too early to tell whether the last cut helped
        if share < _HELPED:
            self._unhelpful.clear()
            self._undo = (self.window, self.rate, self._base)
            return True
        self._unhelpful.append(share)
        if len(self._unhelpful) < _NOISE_CUTS:
            return True
        self.noise = sum(self._unhelpful) / len(self._unhelpful)
        self.window, self.rate, self._base = self._undo
        self._slow_start = True  # the refusals are noise: grow back quickly
        self._unhelpful.clear()
        self._undo = None
        return False

    def _congested(self, hints: RateHints | None) -> bool:
        """Does this throttle mean "you exceed my limit" (cut) rather than a random refusal?

        With rate-limit headers, they say it: a request budget at 0 or tokens below 10%.
        Without them, a throttle cuts when the share of refusals among the last 50 answers is
        above twice the learned noise (0 until learned) and the last cut was judged (see
        `_judge_last_cut`). Every throttle still pauses every request (see `throttled`).
        """
        if hints is not None and (hints.limit is not None or hints.token_limit is not None):
            return hints.exhausted
        return self._share()[0] > _NOISE_FACTOR * self.noise and self._judge_last_cut()

    def _cut(self, now: float) -> None:
        """One multiplicative decrease per congestion event."""
        self._cut_at = now
        self._slow_start = False
        self.window = max(1.0, self.window / 2.0)
        self._next_start = now
        accepted = self._accepted_rate(now)
        if accepted is None and self.rate is None:
            return  # too few answers yet to measure a rate: the pause and the window act
        previous = self.rate if self.rate is not None else accepted
        assert previous is not None
        if accepted is None:  # too few answers to measure (e.g. after a long pause): halve
            target = max(0.5 * previous, MIN_RATE)
        else:
            target = max(_BETA * accepted, 0.25 * previous, MIN_RATE)
        self._base = max(previous, accepted or 0.0)
        target = _bounded(target)
        self.rate = target if self.rate is None else min(self.rate, target)

    def _accepted_rate(self, now: float) -> float | None:
        """Requests the provider answered per second over the last second (None: too few).

        Time spent in the shared pause counts: against a token bucket the pauses are the
        limit itself, so leaving them out would overestimate what the provider accepts. Answers
        before the first throttle include the provider's burst allowance, which inflates the
        rate it seems to accept: once `_MIN_SPAN` has passed since the first throttle only
        answers after it count; before, the measurement is provisional (the next throttle may
        cut again at once, without waiting `_CUT_SPACING`).
        """
        first = self._first_throttle if self._first_throttle is not None else now
        self._provisional = now - first < _MIN_SPAN
        if self._provisional:
            first = self._first_admit if self._first_admit is not None else now
        start = max(now - 1.0, first)
        accepted = self._accepted
        while accepted and accepted[0] <= now - 1.0:
            accepted.popleft()
        count = sum(1 for t in accepted if t > start)
        if count < _MIN_SAMPLE:
            return None
        return count / max(now - start, 0.05)

    def _grow(self) -> None:
        if self.window < self.ceiling:
            step = 1.0 if self._slow_start else 1.0 / self.window
            self.window = min(float(self.ceiling), self.window + step)
        if self.rate is not None:
            per_second = max(_GROWTH * max(self._base, self.rate), _MIN_STEP)
            # one success each 1 / rate seconds
            self.rate = min(self.rate + per_second / self.rate, MAX_RATE)

    def _observe_tokens(self, started: float, hints: RateHints) -> None:
        """Learn the token refill rate and what one request costs from the token headers.

        The headers are computed when the provider admits a request (about ``started``), after
        charging it, so between two answers the budget refilled at its rate (up to its limit)
        and lost one request's charge: ``min(before + rate * dt, limit) - after``. The mean
        over the last pairs telescopes, so answers arriving out of order do not bias it.
        """
        rate = hints.token_rate
        if rate is not None:
            self._token_rates.append(rate)
        level, limit = hints.token_remaining, hints.token_limit
        if level is None or limit is None or not self._token_rates:
            return
        if self._token_last is not None:
            then, before = self._token_last
            refill = min(self._token_rates) * max(0.0, started - then)
            self._token_costs.append(min(before + refill, limit) - level)
        self._token_last = (started, level)

    def _token_cap(self) -> float | None:
        """Requests per second the token budget allows (None: not known yet)."""
        if len(self._token_costs) < _TOKEN_MIN_PAIRS:
            return None
        cost = sum(self._token_costs) / len(self._token_costs)
        return min(self._token_rates) / cost if cost > 0 else None

    def _binding_cap(self, hints: RateHints) -> tuple[float, float] | None:
        """(requests per second, fraction left) of the tighter budget: requests or tokens."""
        caps: list[tuple[float, float]] = []
        if self._hints:
            caps.append((_bounded(min(self._hints)), fraction(hints.remaining, hints.limit)))
        tokens = self._token_cap()
        if tokens is not None:
            caps.append((_bounded(tokens), fraction(hints.token_remaining, hints.token_limit)))
        return min(caps) if caps else None

    def _apply_hints(self, hints: RateHints) -> bool:
        """Cap the rate at the provider's refill rate; True when growth must stop."""
        estimate = hints.request_rate
        if estimate is not None:
            self._hints.append(estimate)
        binding = self._binding_cap(hints)
        if binding is None:
            return hints.low
        cap, left = binding
        self._base = max(self._base, cap)
        if left < _HINT_ENGAGES and (self.rate is None or self.rate > cap):
            self.rate = cap
        elif (
            self.rate is not None
            and not hints.low  # another budget (tokens) binds: stay below it
            and self.rate < cap
            and loop_time() - self._cut_at >= _CUT_SPACING
        ):
            self.rate += (cap - self.rate) * _HINT_APPROACH  # back to the provider's rate
        return hints.low

    def _measure_busy(self, now: float) -> None:
        """`_busy`: the loop's thread was busy `_BUSY_SHARE` of the time since the last reading."""
        then, before = self._busy_from
        spent = thread_busy_time()
        self._busy = spent - before >= _BUSY_SHARE * (now - then)
        self._busy_from = (now, spent)


def admit_at_once(control: Controller, now: float | None = None) -> float | None:
    """The start time ``control.admit(deadline)`` returns at once for any deadline, or None.

    An `AdaptiveController` with capacity free and nobody queued admits without suspending and
    whatever the deadline (a deadline only refuses a pause, and there is none): the caller
    then need not read its deadline (~2 us) nor await ``admit``. None: call ``admit`` (nothing
    was taken). ``now`` is the loop's time when the caller read it in the same step (not
    read again); None reads it. Equal to ``admit`` pinned by a property test
    (``tests/models/test_models_admit_at_once.py``).
    """
    if isinstance(control, AdaptiveController):
        return control._admit_now(now)
    return None


def feedback(
    control: Controller,
    begun: float,
    status: int,
    signals: CapacitySignals,
    max_wait: float,
) -> None:
    """Tell ``control`` what an answer (``status``, its provider's ``signals``) says about capacity.

    A requested wait longer than ``max_wait`` is not honoured (the backoff applies). The
    request's capacity is released whatever happens, and a failure reading the answer is
    logged, never raised: it must not turn an answer into an error.
    """
    try:
        if status in THROTTLE_STATUSES:
            control.throttled(begun, signals, status=status, max_wait=max_wait)
        elif 200 <= status < 300:
            control.succeeded(begun, signals.rates)
        else:
            control.finished()
    except Exception:  # a bug here must cost the controller an update, not the request
        logger.warning("the adaptive controller failed to read an answer", exc_info=True)


def _bounded(rate: float) -> float:
    """``rate`` within [`MIN_RATE`, `MAX_RATE`] (NaN: `MIN_RATE`)."""
    return min(rate, MAX_RATE) if rate >= MIN_RATE else MIN_RATE

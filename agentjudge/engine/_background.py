"""Online evaluation: a bounded background front on an Evaluator (`BackgroundEvaluator`).

Request handlers ``offer()`` contexts and return at once; a fixed pool of worker tasks takes
them from a bounded backlog (a deque, no task per offer) and evaluates them with the
evaluator's judges and limits. The accounting is exact: every offered context ends in exactly
one of ``sampled_out``, ``shed``, ``completed``, ``errored`` or ``cancelled`` (while it is
waiting or running it is counted in ``backlog`` or ``running``), so at any moment::

    offered == sampled_out + shed + backlog + running + completed + errored + cancelled

Shedding policies, when the backlog is full (``max_backlog`` contexts, or
``max_backlog_bytes`` by the ``size_of`` estimate):

* ``"drop_newest"``: the new context is shed (``offer`` returns False);
* ``"drop_oldest"``: the oldest waiting context is shed (also counted in ``evicted``) and the
  new one accepted;
* ``"adaptive"``: like drop_newest when full, and before that the effective sample rate is
  halved each time the backlog stays at or above ``high_water`` for another
  ``high_water - low_water`` offers and pickups, and doubled back (up to the configured rate)
  each time it stays at or below ``low_water`` for as many (a factor of 1/1024 at least).
  With keys, a lowered rate samples a subset of the keys sampled before
  (`agentjudge.engine._sampling`).

Workers take turns to begin evaluations: at most one begins per pass through the event loop
(a burst of offers that woke many idle workers used to begin them all in one pass, and a
request handler ready in that pass waited for all of them).

Shutdown (leaving ``async with``): ``offer`` returns False at once (counted as shed), the
workers drain the backlog for at most ``drain_timeout`` seconds, then what is left is cancelled
(running evaluations and waiting ones, all counted in ``cancelled``), the sinks get the rest of
``drain_timeout`` (at least one second) to write their buffers, and one log line reports the
counters. If the block raised, nothing is drained: everything left is cancelled at once.
"""

from __future__ import annotations

import logging
import math
import random
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from time import perf_counter, time
from typing import TYPE_CHECKING, Any

import anyio
from anyio.lowlevel import cancel_shielded_checkpoint

from agentjudge.core import Context, Status, Verdict
from agentjudge.engine._knobs import check_seconds, positive_int
from agentjudge.engine._sampling import Sampler
from agentjudge.engine._sinks import OnlineResult, SinkPump, as_sink
from agentjudge.engine._state import RunState

if TYPE_CHECKING:
    from agentjudge.engine._evaluator import Evaluator

__all__ = ["POLICIES", "BackgroundEvaluator", "approximate_size"]

logger = logging.getLogger("agentjudge")

POLICIES = ("drop_newest", "drop_oldest", "adaptive")
"""The shedding policies."""

_MIN_FACTOR = 1.0 / 1024.0
_COUNTERS = ("offered", "sampled_out", "accepted", "shed", "evicted", "completed", "errored")


def approximate_size(ctx: Context) -> int:
    """A cheap estimate of a context's bytes: its text fields' lengths plus a fixed overhead.

    Strings and bytes count their length; other values their shallow ``sys.getsizeof``.
    Pass ``size_of=`` to `Evaluator.background` for a better measure of your own contexts.
    """
    total = 512
    for value in (ctx.input, ctx.output, ctx.expected, ctx.error):
        if value is None:
            continue
        total += len(value) if isinstance(value, str | bytes) else sys.getsizeof(value)
    for message in ctx.messages:
        total += 64 + len(message.content)
    return total


class _Item:
    """One accepted context waiting in the backlog."""

    __slots__ = (
        "ctx",
        "deadline",
        "judges",
        "key",
        "offered",
        "route",
        "seq",
        "size",
        "trace",
        "wall",
    )

    def __init__(
        self,
        ctx: Context,
        key: str | None,
        route: str | None,
        judges: tuple[bool, ...] | None,
        size: int,
        deadline: tuple[float, float] | None,
        trace: Any,
        seq: int,
    ) -> None:
        self.ctx = ctx
        self.key = key
        self.route = route
        self.judges = judges
        self.size = size
        self.deadline = deadline
        self.trace = trace
        self.seq = seq
        self.offered = perf_counter()
        self.wall = time()


def _waters(max_backlog: int, high: object, low: object) -> tuple[int, int]:
    high_w = max(1, math.ceil(0.8 * max_backlog)) if high is None else high
    low_w = max_backlog // 2 if low is None else low
    for name, value in (("high_water", high_w), ("low_water", low_w)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    assert isinstance(high_w, int) and isinstance(low_w, int)
    if not low_w < high_w <= max_backlog:
        raise ValueError(
            f"need 0 <= low_water < high_water <= max_backlog, got low_water={low_w}, "
            f"high_water={high_w}, max_backlog={max_backlog}"
        )
    return high_w, low_w


class BackgroundEvaluator:
    """Evaluates offered contexts in the background, with a bounded backlog that sheds load.

    Build it with `Evaluator.background` and enter it with ``async with`` (or a web
    framework's lifespan, see `lifespan`). See `agentjudge.engine._background` for the
    accounting, the shedding policies and shutdown.

    Args:
        evaluator: The evaluator whose judges and limits run the evaluations.
        max_backlog: Contexts waiting at most.
        policy: ``"drop_newest"``, ``"drop_oldest"`` or ``"adaptive"``.
        max_backlog_bytes: Also bound the waiting contexts' size (None: count only).
        size_of: The size estimate of a context (default `approximate_size`).
        workers: Evaluations running at once (default: the evaluator's ``max_concurrency``).
        drain_timeout: Seconds shutdown waits for the backlog to drain.
        sample_rate: Fraction of offered requests evaluated.
        route_rates: Per route (``offer(..., route=)``), its own rate.
        judge_rates: Per judge name, the fraction of sampled requests it runs on.
        sampling_salt: Mixed into the key hash (another salt, another subset).
        rng: Random source for requests offered without a key.
        high_water: Backlog length above which ``"adaptive"`` lowers the rate (default 80%).
        low_water: Backlog length below which it restores the rate (default 50%).
        deadline: Seconds from ``offer`` by which each evaluation must be done (None: none);
            what runs out of time is ERROR ``TimeoutError`` naming the deadline.
        sinks: Where results go: sink objects or plain callables (see
            `agentjudge.engine._sinks`).
        sink_buffer: Results each sink may have waiting at most.
        trace_context: Capture the caller's OpenTelemetry context at ``offer`` and restore it
            around the evaluation (None: when a sink wants it, e.g. `OtelEventSink`).
        meter_provider: An OpenTelemetry meter provider: the counters are exported as
            observable instruments ``agentjudge.online.*`` (the ``otel`` extra). None: the
            global one when a real (SDK) provider is installed; False: never.

    Raises:
        ValueError: Any invalid option, naming it.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        *,
        max_backlog: int = 1000,
        policy: str = "drop_newest",
        max_backlog_bytes: int | None = None,
        size_of: Callable[[Context], int] | None = None,
        workers: int | None = None,
        drain_timeout: float = 30.0,
        sample_rate: float = 1.0,
        route_rates: Mapping[str, float] | None = None,
        judge_rates: Mapping[str, float] | None = None,
        sampling_salt: str | bytes = b"",
        rng: random.Random | None = None,
        high_water: int | None = None,
        low_water: int | None = None,
        deadline: float | None = None,
        sinks: Sequence[object] = (),
        sink_buffer: int = 10_000,
        trace_context: bool | None = None,
        meter_provider: Any = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {list(POLICIES)}, got {policy!r}")
        self._evaluator = evaluator
        self.max_backlog: int = positive_int("max_backlog", max_backlog)
        self.policy = policy
        self.max_backlog_bytes: int | None = (
            None
            if max_backlog_bytes is None
            else positive_int("max_backlog_bytes", max_backlog_bytes)
        )
        self._size_of = size_of or (approximate_size if max_backlog_bytes is not None else None)
        if size_of is not None and not callable(size_of):
            raise ValueError(f"size_of must be callable, got {size_of!r}")
        self.workers = positive_int(
            "workers", evaluator.max_concurrency if workers is None else workers
        )
        self.drain_timeout = check_seconds("drain_timeout", drain_timeout)
        self.deadline = None if deadline is None else check_seconds("deadline", deadline)
        self._high, self._low = _waters(self.max_backlog, high_water, low_water)
        self._sampler = Sampler(
            evaluator.judge_names,
            sample_rate=sample_rate,
            route_rates=route_rates,
            judge_rates=judge_rates,
            salt=sampling_salt,
            rng=rng,
        )
        self._sinks = SinkPump(
            [as_sink(s) for s in sinks], positive_int("sink_buffer", sink_buffer)
        )
        self._trace = self._sinks.wants_trace_context if trace_context is None else trace_context
        self._meter_provider = meter_provider
        self._backlog: deque[_Item] = deque()
        self._bytes = 0
        self._parked: deque[anyio.Event] = deque()
        self._open = False
        self._started = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._workers_scope = anyio.CancelScope()
        self._factor = 1.0
        self._since_change = 0
        self._seq = 0
        self._high_mark = 0
        self.offered = self.sampled_out = self.accepted = self.shed = self.evicted = 0
        self.running = self.completed = self.errored = self.cancelled = 0

    # ------------------------------------------------------------------ the request path
    def offer(
        self,
        context: Context | None = None,
        /,
        *,
        key: str | None = None,
        route: str | None = None,
        deadline: float | None = None,
        **context_fields: Any,
    ) -> bool:
        """Offer one context for background evaluation; never waits, never raises on overload.

        Call it from any task of the event loop the background evaluator runs in (request
        handlers do); it is not thread-safe. With a trace context to capture (see
        ``trace_context``), the caller's current OpenTelemetry context is kept with the offer.

        Args:
            context: The context (or give its fields as keyword arguments).
            key: The sampling key (trace id, conversation id...): the same keys are sampled
                in every process. None: a random draw.
            route: Selects the route's rate (``route_rates``).
            deadline: Seconds from now by which the evaluation must be done (overrides the
                background evaluator's ``deadline``).
            **context_fields: `Context` fields, merged over ``context``.

        Returns:
            True when the context was accepted into the backlog; False when it was sampled
            out, shed (backlog full, or not running) -- `statistics` says which.

        Raises:
            TypeError, ValueError: invalid context fields or deadline (programmer errors; the
                context of a request that is sampled out or shed is never built).
        """
        if deadline is not None:
            deadline = check_seconds("deadline", deadline)
        self.offered += 1
        if not self._open:
            self.shed += 1
            return False
        if self.policy == "adaptive":
            self._adapt()
        rate = self._sampler.route_rate(route) * self._factor
        judges = None
        if rate < 1.0 or self._sampler.per_judge:
            u = self._sampler.point(key)
            if u >= rate:
                self.sampled_out += 1
                return False
            judges = self._sampler.judges(u, rate)
        backlog = self._backlog
        if len(backlog) >= self.max_backlog and self.policy != "drop_oldest":
            self.shed += 1
            return False
        try:
            ctx = self._evaluator._context(context, context_fields)
            size = 0 if self._size_of is None else int(self._size_of(ctx))
        except BaseException:
            self.offered -= 1  # a call that raised offered nothing (the accounting stays exact)
            raise
        if not self._fits(size):
            self.shed += 1
            return False
        seconds = self.deadline if deadline is None else deadline
        self._seq += 1
        item = _Item(
            ctx,
            key,
            route,
            judges,
            size,
            None if seconds is None else (anyio.current_time() + seconds, seconds),
            _current_trace() if self._trace else None,
            self._seq,
        )
        backlog.append(item)
        self._bytes += size
        self.accepted += 1
        if len(backlog) > self._high_mark:
            self._high_mark = len(backlog)
        if self._parked:
            self._parked.popleft().set()
        return True

    def _fits(self, size: int) -> bool:
        """Make room for a new context (drop_oldest evicts); False: shed the new one."""
        limit = self.max_backlog_bytes
        if limit is not None and size > limit:
            return False
        backlog = self._backlog
        while len(backlog) >= self.max_backlog or (
            limit is not None and self._bytes + size > limit
        ):
            if self.policy != "drop_oldest" or not backlog:
                return False
            old = backlog.popleft()
            self._bytes -= old.size
            self.shed += 1
            self.evicted += 1
        return True

    def _adapt(self) -> None:
        """The adaptive policy's rate control (see the module docstring)."""
        self._since_change += 1
        if self._since_change < self._high - self._low:
            return
        length = len(self._backlog)
        if length >= self._high and self._factor > _MIN_FACTOR:
            self._factor = max(_MIN_FACTOR, self._factor / 2)
            self._since_change = 0
        elif length <= self._low and self._factor < 1.0:
            self._factor = min(1.0, self._factor * 2)
            self._since_change = 0

    # ------------------------------------------------------------------ counters
    @property
    def effective_sample_rate(self) -> float:
        """The sample rate applied now (``sample_rate`` times the adaptive factor)."""
        return self._sampler.rate * self._factor

    def statistics(self) -> dict[str, Any]:
        """The counters now (a fresh dict; integers unless named otherwise).

        Keys: ``offered``, ``sampled_out``, ``accepted``, ``shed`` (``evicted`` of them
        pushed out by drop_oldest), ``running``, ``completed``, ``errored``, ``cancelled``,
        ``backlog``, ``backlog_bytes``, ``backlog_high_water`` (the longest backlog seen),
        ``effective_sample_rate`` (a float), ``sink_written``, ``sink_dropped``,
        ``sink_errors``.
        """
        stats = {name: getattr(self, name) for name in _COUNTERS}
        stats.update(
            running=self.running,
            cancelled=self.cancelled,
            backlog=len(self._backlog),
            backlog_bytes=self._bytes,
            backlog_high_water=self._high_mark,
            effective_sample_rate=self.effective_sample_rate,
            sink_written=self._sinks.written,
            sink_dropped=self._sinks.dropped,
            sink_errors=self._sinks.errors,
        )
        return stats

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> BackgroundEvaluator:
        if self._started:
            raise RuntimeError("a BackgroundEvaluator can be entered once")
        self._started = True
        self._export_counters()
        self._workers_done = anyio.Event()
        self._turn = anyio.Lock(fast_acquire=True)
        self._sinks_done = anyio.Event()
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._run_workers)
        tg.start_soon(self._run_sinks)
        self._open = True
        return self

    def _export_counters(self) -> None:
        from agentjudge.engine._otel import export_counters, global_meter_provider

        provider = self._meter_provider
        if provider is None:
            provider = global_meter_provider()
        if provider is not None and provider is not False:
            export_counters(self, provider)

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        tg = self._tg
        assert tg is not None
        self._open = False
        began = perf_counter()
        try:
            if len(exc_info) < 2 or exc_info[1] is None:  # if the block raised, cancel at once
                self._wake_all()  # idle workers return once the backlog is empty
                with anyio.move_on_after(self.drain_timeout):
                    await self._workers_done.wait()
                self._workers_scope.cancel()
                await self._workers_done.wait()
                self._sinks.close()
                with anyio.move_on_after(max(1.0, self.drain_timeout - (perf_counter() - began))):
                    await self._sinks_done.wait()
        finally:
            self._workers_scope.cancel()
            tg.cancel_scope.cancel()
            try:
                result = await _exit_group(tg, exc_info)
            finally:
                self._account_leftovers()
                await self._sinks.aclose_sinks()
                self._report(perf_counter() - began)
        return result

    def _wake_all(self) -> None:
        while self._parked:
            self._parked.popleft().set()

    def _account_leftovers(self) -> None:
        """What never ran is cancelled; what sinks never got is dropped."""
        self.cancelled += len(self._backlog)
        self._backlog.clear()
        self._bytes = 0
        self._sinks.abandon()

    def _report(self, seconds: float) -> None:
        s = self.statistics()
        logger.info(
            "agentjudge background evaluator stopped after %.2f s: offered %d, sampled out %d, "
            "shed %d, completed %d, errored %d, cancelled %d; sinks dropped %d, failed %d",
            seconds,
            s["offered"],
            s["sampled_out"],
            s["shed"],
            s["completed"],
            s["errored"],
            s["cancelled"],
            s["sink_dropped"],
            s["sink_errors"],
        )

    @asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[dict[str, Any]]:
        """A Starlette / FastAPI lifespan: ``FastAPI(lifespan=background.lifespan)``.

        Server startup enters the background evaluator, shutdown drains and stops it (see
        the module docstring). It yields the lifespan state ``{"background": self}``, so
        handlers reach it as ``request.state.background``. To start more (model clients,
        the evaluator's own scope), enter ``background.lifespan(app)`` in your own lifespan.
        """
        async with self:
            yield {"background": self}

    # ------------------------------------------------------------------ workers
    async def _run_workers(self) -> None:
        try:
            with self._workers_scope:
                async with anyio.create_task_group() as tg:
                    for _ in range(self.workers):
                        tg.start_soon(self._worker)
        finally:
            self._workers_done.set()

    async def _run_sinks(self) -> None:
        try:
            await self._sinks.run()
        finally:
            self._sinks_done.set()

    async def _worker(self) -> None:
        backlog = self._backlog
        while True:
            if not backlog:
                if not self._open:
                    return
                wake = anyio.Event()
                self._parked.append(wake)
                await wake.wait()
                continue
            item = await self._take_turn()
            if item is None:
                continue
            try:
                result = await self._evaluate(item)
            except BaseException:
                self.running -= 1
                self.cancelled += 1
                raise
            self.running -= 1
            if result.verdict is None or result.verdict.judgment.status is Status.ERROR:
                self.errored += 1
            else:
                self.completed += 1
            self._sinks.put(result)
            # Instant judges finish without suspending: let the server and the sinks run.
            await cancel_shielded_checkpoint()

    async def _take_turn(self) -> _Item | None:
        """The next waiting context (now running), at most one per pass through the event loop.

        Workers take turns: the worker holding the turn begins its evaluation in a later pass
        than the one before it (a worker that did not wait for the turn yields one pass first),
        so a burst of offers that woke many workers never begins them all in one pass. None:
        the backlog emptied while waiting.
        """
        turn = self._turn
        waited = turn.locked()  # then the holder releases it in an earlier pass than ours
        async with turn:
            if not waited:
                await cancel_shielded_checkpoint()
            if not self._backlog:
                return None
            item = self._backlog.popleft()
            self._bytes -= item.size
            if self.policy == "adaptive":
                self._adapt()
            self.running += 1
            return item

    async def _evaluate(self, item: _Item) -> OnlineResult:
        started = perf_counter()
        verdict: Verdict | None = None
        error: str | None = None
        token = _attach(item.trace)
        try:
            run = self._evaluator._new_run(item.ctx)
            if item.judges is not None:
                both = zip(run.sampled, item.judges, strict=True)
                run = RunState(run.ctx, tuple([a and b for a, b in both]))
            at, seconds = item.deadline or (None, 0.0)
            verdict = await self._evaluator._execute_until(run, at, seconds)
        except Exception as exc:  # an engine or setup bug: logged and counted, never raised
            error = f"{type(exc).__name__}: {exc}"
            logger.exception("an online evaluation raised")
        finally:
            _detach(token)
        ended = perf_counter()
        return OnlineResult(
            context=item.ctx,
            verdict=verdict,
            key=item.key,
            route=item.route,
            offered_at=datetime.fromtimestamp(item.wall, UTC),
            queued_s=started - item.offered,
            duration_s=ended - started,
            sequence=item.seq,
            error=error,
            trace_context=item.trace,
        )


async def _exit_group(tg: anyio.abc.TaskGroup, exc_info: tuple[Any, ...]) -> bool | None:
    """Leave ``tg``; the block's own exception propagates unwrapped (as `Evaluator` does)."""
    error = exc_info[1] if len(exc_info) > 1 else None
    try:
        return await tg.__aexit__(*exc_info)
    except BaseExceptionGroup as group:
        if error is not None and len(group.exceptions) == 1 and group.exceptions[0] is error:
            return False
        raise


def _current_trace() -> Any:
    """The caller's OpenTelemetry context (None without OpenTelemetry)."""
    try:
        from opentelemetry import context
    except ImportError:  # pragma: no cover - the otel extra is not installed
        return None
    return context.get_current()


def _attach(trace: Any) -> Any:
    if trace is None:
        return None
    from opentelemetry import context

    return context.attach(trace)


def _detach(token: Any) -> None:
    if token is not None:
        from opentelemetry import context

        context.detach(token)

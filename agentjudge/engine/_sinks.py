"""Where online evaluations go: sinks, each fed through its own bounded buffer.

A sink is any object with ``async def write(self, batch: Sequence[OnlineResult]) -> None``
(and optionally ``async def aclose(self) -> None``). `SinkPump` gives every sink of a
`agentjudge.BackgroundEvaluator` a buffer of at most ``buffer`` results and one task that hands
it whatever accumulated while the previous write ran, so a slow sink gets bigger batches, never
blocks the evaluation workers (let alone ``offer()``), and never slows the other sinks. What a
sink cannot take is counted, never lost silently: a result that finds its sink's buffer full is
``sink_dropped``; a batch whose write raised is ``sink_errors`` (one per result, logged).

A big batch must not hold the event loop either (the request handlers share it): the built-in
sinks do their Python work per result through `in_slices`, which yields to the loop after each
``SLICE_S`` of work, and leave only the blocking I/O (files, SQLite) to a worker thread.

Built in: `CallbackSink` (a function per result), `JsonlSink` (the harness's ``results.jsonl``
rows, rotated by size; `agentjudge.engine._jsonl`), `SqliteSink` (stdlib sqlite3, WAL,
batched inserts; `agentjudge.engine._sqlite`) and `OtelEventSink` (``gen_ai.evaluation.result``
events; `agentjudge.engine._otel`).
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from time import perf_counter
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio
from anyio.lowlevel import checkpoint

from agentjudge.core import Context, Verdict

__all__ = ["SLICE_S", "CallbackSink", "OnlineResult", "Sink", "SinkPump", "in_slices"]

logger = logging.getLogger("agentjudge")

T = TypeVar("T")
R = TypeVar("R")

SLICE_S = 0.0005
"""Seconds of sink work on the event loop between two yields to it (see `in_slices`)."""


async def in_slices(items: Iterable[T], fn: Callable[[T], R]) -> list[R]:
    """``[fn(item) for item in items]`` on the event loop, yielding to it every ``SLICE_S``.

    So a batch of thousands of results never holds the loop for more than about one item's
    work past ``SLICE_S``: requests keep being served while a sink encodes.
    """
    out: list[R] = []
    began = perf_counter()
    for item in items:
        out.append(fn(item))
        if perf_counter() - began >= SLICE_S:
            await checkpoint()
            began = perf_counter()
    return out


@dataclass(frozen=True, slots=True)
class OnlineResult:
    """One finished online evaluation, as sinks receive it."""

    context: Context
    """What was evaluated."""
    verdict: Verdict | None
    """The verdict (None when the evaluation raised: see ``error``)."""
    key: str | None
    """The sampling key given to ``offer``."""
    route: str | None
    """The route given to ``offer``."""
    offered_at: datetime
    """When ``offer`` accepted it (UTC)."""
    queued_s: float
    """Seconds it waited in the backlog."""
    duration_s: float
    """Seconds the evaluation ran."""
    sequence: int
    """The offer's number in this background evaluator (1-based): a unique row id."""
    error: str | None = None
    """``"TypeName: message"`` when the evaluation itself raised (an engine or setup bug)."""
    trace_context: Any = None
    """The OpenTelemetry context captured at ``offer`` time (None when not captured)."""

    @property
    def id(self) -> str:
        """The row id: the key, else ``online-<sequence>``, suffixed when the key repeats."""
        return f"online-{self.sequence}" if self.key is None else f"{self.key}#{self.sequence}"


@runtime_checkable
class Sink(Protocol):
    """Receives batches of finished online evaluations."""

    async def write(self, batch: Sequence[OnlineResult], /) -> None:
        """Store or forward the batch (raising counts its results as ``sink_errors``)."""


class CallbackSink:
    """Calls ``fn(result)`` for each result (sync or async; a sync one runs on the event loop).

    Args:
        fn: The callback. Keep a sync one quick: it runs on the event loop.
    """

    def __init__(self, fn: Callable[[OnlineResult], Awaitable[None] | None]) -> None:
        if not callable(fn):
            raise ValueError(f"CallbackSink needs a callable, got {fn!r}")
        self.fn = fn

    async def write(self, batch: Sequence[OnlineResult], /) -> None:
        """Call the callback once per result, in order (yielding between slices of work)."""
        began = perf_counter()
        for result in batch:
            value = self.fn(result)
            if inspect.isawaitable(value):
                await value
            elif perf_counter() - began >= SLICE_S:
                await checkpoint()
            else:
                continue
            began = perf_counter()


def as_sink(obj: object) -> Sink:
    """A sink object, or a plain callable wrapped in `CallbackSink`."""
    if isinstance(obj, Sink):
        return obj
    if callable(obj):
        return CallbackSink(obj)
    raise ValueError(f"a sink must have an async write(batch) method or be callable, got {obj!r}")


class _Lane:
    """One sink, its buffer and its wake-up."""

    __slots__ = ("buffer", "closed", "sink", "wake")

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.buffer: deque[OnlineResult] = deque()
        self.wake: anyio.Event | None = None
        self.closed = False


class SinkPump:
    """Feeds every sink from its own bounded buffer (see the module docstring).

    Args:
        sinks: The sinks.
        buffer: Results each sink's buffer holds at most.
    """

    def __init__(self, sinks: Sequence[Sink], buffer: int) -> None:
        self._lanes = [_Lane(s) for s in sinks]
        self._cap = buffer
        self.dropped = 0
        """Results a full buffer (or a stop before they were written) turned away."""
        self.errors = 0
        """Results in batches whose write raised."""
        self.written = 0
        """Results handed to sinks without an error (summed over sinks)."""

    @property
    def wants_trace_context(self) -> bool:
        """Whether some sink needs the caller's trace context (captured at offer time)."""
        return any(getattr(lane.sink, "wants_trace_context", False) for lane in self._lanes)

    def put(self, result: OnlineResult) -> None:
        """Hand one result to every sink's buffer (never waits)."""
        for lane in self._lanes:
            if lane.closed or len(lane.buffer) >= self._cap:
                self.dropped += 1
                continue
            lane.buffer.append(result)
            if lane.wake is not None:
                lane.wake.set()
                lane.wake = None

    async def run(self) -> None:
        """Run one writer per sink until `close` was called and every buffer is written."""
        async with anyio.create_task_group() as tg:
            for lane in self._lanes:
                tg.start_soon(self._pump, lane)

    def close(self) -> None:
        """Accept no more results; writers finish their buffers, then return."""
        for lane in self._lanes:
            lane.closed = True
            if lane.wake is not None:
                lane.wake.set()
                lane.wake = None

    def abandon(self) -> None:
        """Count what is still buffered as dropped (after the writers were cancelled)."""
        for lane in self._lanes:
            self.dropped += len(lane.buffer)
            lane.buffer.clear()

    async def aclose_sinks(self) -> None:
        """Close every sink that has ``aclose`` (its errors are logged)."""
        for lane in self._lanes:
            closer = getattr(lane.sink, "aclose", None)
            if closer is None:
                continue
            try:
                await closer()
            except Exception:
                logger.exception("closing the sink %r failed", lane.sink)

    async def _pump(self, lane: _Lane) -> None:
        while True:
            if not lane.buffer:
                if lane.closed:
                    return
                lane.wake = anyio.Event()
                await lane.wake.wait()
                continue
            batch = list(lane.buffer)
            lane.buffer.clear()
            try:
                await lane.sink.write(batch)
            except anyio.get_cancelled_exc_class():
                self.dropped += len(batch)
                raise
            except Exception:
                self.errors += len(batch)
                logger.exception(
                    "the sink %r failed to write %d online evaluation result(s)",
                    lane.sink,
                    len(batch),
                )
            else:
                self.written += len(batch)

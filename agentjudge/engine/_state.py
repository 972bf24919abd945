"""The state one evaluation carries through the engine's parts (never shared between runs).

`RunState` holds one evaluation's context, sampling draws and results; `LeafStats` is one
leaf's bookkeeping (and the borrower identity for its limiter tokens); `Queued` is a member
waiting for a global slot without a task; `PENDING` marks a member that has not finished.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

import anyio

from agentjudge.core import Context, JudgeResult, Judgment, TierAttempt, Verdict
from agentjudge.exceptions import EvaluationCancelled

__all__ = [
    "PENDING",
    "Carried",
    "CompositeFailure",
    "Lane",
    "LeafStats",
    "Queued",
    "RunState",
]

PENDING: Any = object()
"""A group member that is still running, was cancelled or never started."""


class CompositeFailure(Exception):
    """A composite could not produce a judgment (its voting or a nested composite raised)."""


class LeafStats:
    """Per-leaf bookkeeping; also the borrower identity for limiter tokens."""

    __slots__ = ("attempts", "queued", "reserved", "since", "working")

    def __init__(self, since: float = 0.0) -> None:
        self.attempts = 0
        self.queued = 0.0
        self.working = 0.0
        self.reserved = False
        self.since = since  # when the first attempt started waiting (0: when it is made)


class Carried:
    """An attempt the fast path started whose first step suspended: handed to the general way.

    ``coro`` yielded ``first``; ``stats`` holds the slots the fast path took for it (one
    attempt); ``began`` is when the attempt started (a `perf_counter` reading).
    """

    __slots__ = ("began", "coro", "first", "index", "stats")

    def __init__(
        self,
        index: int,
        coro: Coroutine[Any, Any, object],
        first: object,
        stats: LeafStats,
        began: float,
    ) -> None:
        self.index = index
        self.coro = coro
        self.first = first
        self.stats = stats
        self.began = began


class Queued:
    """A group member waiting for a global slot: no task exists until one is free."""

    __slots__ = ("dead", "launch", "stats")

    def __init__(self, stats: LeafStats, launch: Callable[[], None]) -> None:
        self.stats = stats
        self.launch = launch
        self.dead = False


class Lane:
    """One `Evaluator.run` worker's attempt timeout scope, kept entered across its cases.

    An attempt with a timeout needs an anyio cancel scope: the judge and its model client see
    the deadline through it. Creating, entering and exiting a scope per attempt costs the
    worker's cases about a third of the engine's own CPU in `Evaluator.run`, so the attempts of
    a root leaf share one scope, entered by the first of them and kept (with no deadline)
    between attempts while the worker runs. An attempt gives it its deadline as it would give
    its own scope one, and takes it away when it ends; a scope whose deadline fired (or that
    was cancelled by anything else) is exited by that attempt exactly where its own scope
    would have been, and the next attempt enters a new one. The worker exits the scope when
    it stops (`close`). Only attempts made in the worker's own task, with nothing entered
    between the worker and the attempt, use it (a root leaf of a run without a deadline).
    """

    __slots__ = ("owner", "scope")

    def __init__(self, owner: object = None) -> None:
        self.scope: anyio.CancelScope | None = None
        self.owner = owner
        """The worker's task (`agentjudge.judging.current_owner`): its attempts' queue clock
        is reused within it without looking the task up per attempt."""

    def close(self, exc: BaseException | None) -> None:
        """The worker stops (``exc``: the exception it stops with): exit the scope if entered."""
        scope, self.scope = self.scope, None
        if scope is not None:
            scope.__exit__(None if exc is None else type(exc), exc, None)


_NO_RESULTS: dict[int, tuple[None, ...]] = {}
"""``(None,) * n`` per plan size ``n`` seen (a few sizes per process; bounded below)."""


def no_results(count: int) -> tuple[None, ...]:
    """``(None,) * count``, shared by every evaluation of a plan of ``count`` leaves."""
    nones = _NO_RESULTS.get(count)
    if nones is None:
        nones = (None,) * count
        if len(_NO_RESULTS) < 64:
            _NO_RESULTS[count] = nones
    return nones


class RunState:
    """State of one evaluation: its context, draws, results as they land, and its verdict."""

    __slots__ = (
        "_changed",
        "_done",
        "completed",
        "ctx",
        "deadline",
        "deadline_s",
        "finished",
        "lane",
        "results",
        "sampled",
        "tiers",
        "verdict",
    )

    def __init__(
        self, ctx: Context, sampled: tuple[bool, ...], nones: tuple[None, ...] | None = None
    ) -> None:
        self.ctx = ctx
        self.sampled = sampled
        # no list until the first result: an evaluation waiting for its model holds a shared
        # tuple of Nones (one per plan size; ``nones``: the caller's, of ``len(sampled)``), not
        # a list per case for the collector to walk
        self.results: list[JudgeResult | None] | tuple[None, ...] = (
            no_results(len(sampled)) if nones is None else nones
        )
        # made by the first result, so a one-judge evaluation waiting for its model holds no
        # list for it
        self.completed: list[JudgeResult] | tuple[()] = ()
        self.tiers: Sequence[TierAttempt] = ()  # a list only once a cascade records a tier
        self.verdict: Verdict | None = None
        self.finished = False
        self.deadline: float | None = None
        """When the evaluation must be done (``anyio.current_time()`` clock; None: never)."""
        self.deadline_s = 0.0
        """The deadline as the caller gave it, in seconds (for messages)."""
        self._done: anyio.Event | None = None
        self._changed: anyio.Event | None = None
        self.lane: Lane | None = None
        """The `Evaluator.run` worker's attempt scope its root leaf's attempts share (None:
        each attempt makes its own; see `Lane`)."""

    def add(self, index: int, result: JudgeResult) -> None:
        """Store the result of leaf ``index`` (and wake readers of `completions`)."""
        results = self.results
        if type(results) is tuple:
            self.results = results = list(results)
        results[index] = result  # type: ignore[index]  # a list here
        completed = self.completed
        if completed:
            completed.append(result)  # a list once not empty
        else:
            self.completed = [result]
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def verdict_of(self, judgment: Judgment) -> Verdict:
        """The evaluation's `Verdict`: ``judgment`` and the results stored so far, leaf order."""
        results = self.results
        return Verdict.fast(
            judgment=judgment,
            # Every leaf stored a result (the common case) when as many completed.
            results=tuple(results)  # type: ignore[arg-type]  # no None left
            if len(self.completed) == len(results)
            else tuple(r for r in results if r is not None),
            tiers=tuple(self.tiers) if self.tiers else (),
        )

    def add_tier(self, attempt: TierAttempt) -> None:
        """Record a cascade tier's attempt (most evaluations have none: no list per case)."""
        self.tiers = [*self.tiers, attempt]

    def finish(self) -> None:
        """Mark the evaluation over (finished or cancelled)."""
        self.finished = True
        if self._done is not None:
            self._done.set()
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait(self) -> None:
        """Wait until `finish` was called."""
        if not self.finished:
            if self._done is None:
                self._done = anyio.Event()
            await self._done.wait()

    async def completions(self) -> AsyncIterator[JudgeResult]:
        """Results in completion order; raises `EvaluationCancelled` if it ends without verdict."""
        i = 0
        while True:
            while i < len(self.completed):
                yield self.completed[i]
                i += 1
            if self.finished:
                break
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()
        if self.verdict is None:
            raise EvaluationCancelled("the evaluation was cancelled")

"""The Evaluator: schedules judges, juries and cascades under shared limits.

Design notes (see docs/concepts/engine.md):

* One evaluation runs in the task that asked for it (`evaluate`, `verdict`, each `run` worker)
  or in one driver task of the evaluator's task group (`submit`). Members of a jury or tier run
  concurrently through `start_all`, which spends a task only on members that suspend.
* A leaf (one judge call) draws a slot from its resource limiter, then from the global limiter,
  only while an attempt runs; composites never hold slots, so nesting cannot deadlock.
* Failure is data at exactly one boundary, `_run_leaf`: an exception escaping a judge (after
  retries) or an attempt past the timeout becomes an ERROR result. Cancellation propagates.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import random
from collections import deque
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Mapping,
)
from contextlib import AbstractContextManager, nullcontext
from time import perf_counter
from typing import Any, TypeVar, cast

import anyio
from anyio import WouldBlock
from anyio.lowlevel import checkpoint_if_cancelled
from pydantic import BaseModel

from agentjudge.core import (
    CaseResult,
    Context,
    JudgeResult,
    Judgment,
    Status,
    TierAttempt,
    TierPolicy,
    Verdict,
    construct,
)
from agentjudge.engine._budget import Budget, BudgetExhausted
from agentjudge.engine._detached import Feed, single_exception
from agentjudge.engine._inline import Resume, arm, new_scope, start_all
from agentjudge.engine._plan import (
    INSTANT_AFTER,
    CascadeNode,
    Group,
    Leaf,
    Node,
    Plan,
    TierNode,
    compile_plan,
)
from agentjudge.engine._retry import RetryPolicy, call_with_retry
from agentjudge.exceptions import EvaluationCancelled
from agentjudge.judging import (
    QueueClock,
    StrayCancellation,
    coerce_judgment,
    error_type_name,
    is_stray_cancellation,
    queue_clock,
)

__all__ = ["EvaluationHandle", "Evaluator", "ResultCallback"]

logger = logging.getLogger("agentjudge")

ResultCallback = Callable[[JudgeResult], Awaitable[None] | None]
"""Called once per completed JudgeResult (unsampled ones included), in completion order."""

_DEFAULT_RETRY = RetryPolicy()
_NO_GUARD: AbstractContextManager[None] = nullcontext()
"""The inline loop's guard when there is no timeout (reusable: it holds no state)."""
_PENDING: Any = object()
_M = TypeVar("_M", bound=BaseModel)


class _CompositeFailure(Exception):
    """A composite could not produce a judgment (its voting or a nested composite raised)."""


class _InlineTimeout(Exception):
    """An inline member that suspended ran past its timeout (see `Evaluator._inline_resume`)."""


class _Stats:
    """Per-leaf bookkeeping; also the borrower identity for limiter tokens."""

    __slots__ = ("attempts", "queued", "reserved", "since", "working")

    def __init__(self, since: float = 0.0) -> None:
        self.attempts = 0
        self.queued = 0.0
        self.working = 0.0
        self.reserved = False
        self.since = since  # when the first attempt started waiting (0: when it is made)


class _Queued:
    """A group member waiting for a global slot: no task exists until one is free."""

    __slots__ = ("dead", "launch", "stats")

    def __init__(self, stats: _Stats, launch: Callable[[], None]) -> None:
        self.stats = stats
        self.launch = launch
        self.dead = False


class _Run:
    """State of one evaluation."""

    __slots__ = (
        "_changed",
        "_done",
        "completed",
        "ctx",
        "finished",
        "results",
        "sampled",
        "tiers",
        "verdict",
    )

    def __init__(self, ctx: Context, sampled: tuple[bool, ...]) -> None:
        self.ctx = ctx
        self.sampled = sampled
        self.results: list[JudgeResult | None] = [None] * len(sampled)
        self.completed: list[JudgeResult] = []
        self.tiers: list[TierAttempt] = []
        self.verdict: Verdict | None = None
        self.finished = False
        self._done: anyio.Event | None = None
        self._changed: anyio.Event | None = None

    def add(self, index: int, result: JudgeResult) -> None:
        self.results[index] = result
        self.completed.append(result)
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def finish(self) -> None:
        self.finished = True
        if self._done is not None:
            self._done.set()
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait(self) -> None:
        if not self.finished:
            if self._done is None:
                self._done = anyio.Event()
            await self._done.wait()

    async def completions(self) -> AsyncIterator[JudgeResult]:
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


class EvaluationHandle:
    """The future of one evaluation, returned by `Evaluator.submit`.

    ``await handle`` gives the results in configured order (cancelled and skipped judges
    excluded); ``async for result in handle`` gives them as they complete; ``await
    handle.verdict()`` gives the `Verdict`. Cancelling the task that awaits the handle cancels
    the evaluation too. Awaiting a cancelled evaluation raises `EvaluationCancelled`.
    """

    __slots__ = ("_run", "_scope")

    def __init__(self, run: _Run, scope: anyio.CancelScope) -> None:
        self._run = run
        self._scope = scope

    def done(self) -> bool:
        """True once the evaluation finished or was cancelled."""
        return self._run.finished

    def cancel(self) -> None:
        """Cancel the evaluation (running judges are cancelled; nothing more starts)."""
        self._scope.cancel()

    async def _wait(self) -> Verdict:
        try:
            await self._run.wait()
        except anyio.get_cancelled_exc_class():
            self.cancel()
            raise
        if self._run.verdict is None:
            raise EvaluationCancelled("the evaluation was cancelled")
        return self._run.verdict

    async def _results(self) -> list[JudgeResult]:
        return list((await self._wait()).results)

    def __await__(self) -> Generator[Any, None, list[JudgeResult]]:
        return self._results().__await__()

    def __aiter__(self) -> AsyncIterator[JudgeResult]:
        return self._run.completions()

    async def verdict(self) -> Verdict:
        """Wait for the evaluation and return its `Verdict`."""
        return await self._wait()


def _new(cls: type[_M], **values: Any) -> _M:
    return construct(cls, values)


def _never(i: int, judgment: Judgment | None) -> bool:
    return False


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _failure(exc: BaseException, leaf: Leaf) -> tuple[Judgment, str]:
    """The ERROR judgment and ``error_type`` recording ``exc`` (the one place that words them)."""
    kind = error_type_name(exc)
    text = str(exc).strip()
    judgment = Judgment.errored(f"{kind}: {text}" if text else f"judge {leaf.name!r} raised {kind}")
    return judgment, kind


def _stray(leaf: Leaf, exc: BaseException) -> StrayCancellation:
    """The failure recorded for a judge that raised CancelledError nobody asked for."""
    return StrayCancellation(
        f"judge {leaf.name!r} raised CancelledError although the evaluation was not cancelled"
    )


class Evaluator:
    """Schedules judges, juries and cascades concurrently under bounded concurrency.

    Args:
        judges: A judge, a sequence or mapping name -> judge (evaluated as ``Jury(judges)``
            with Majority voting), a `Jury` or a `Cascade`. None evaluates to ``[]``.
        max_concurrency: Judge calls in flight across everything this evaluator runs.
        limits: Per-resource caps (judges name theirs with a ``resource`` attribute),
            shared by all submissions.
        timeout: Per judge attempt, seconds (None: no timeout).
        retry: Retry policy for judge attempts (None: no retries).
        sampling: Per judge name, the fraction of evaluations it runs in (0..1).
        rng: The random source for sampling draws (seed it for reproducible runs).
        on_result: Called once per completed JudgeResult, in completion order.
        budget: A spending limit on the model calls of model-backed judges (see `Budget`);
            an attempt it refuses is an ERROR result with ``error_type="BudgetExhausted"``.

    Raises:
        ValueError: Before anything starts, for any invalid knob (naming it).
    """

    def __init__(
        self,
        judges: object = None,
        *,
        max_concurrency: int = 64,
        limits: Mapping[str, int] | None = None,
        timeout: float | None = 60.0,
        retry: RetryPolicy | None = _DEFAULT_RETRY,
        sampling: Mapping[str, float] | None = None,
        rng: random.Random | None = None,
        on_result: ResultCallback | None = None,
        budget: Budget | None = None,
    ) -> None:
        if budget is not None and not isinstance(budget, Budget):
            raise ValueError(f"budget must be a Budget or None, got {budget!r}")
        self.budget = budget
        self._max_concurrency = _positive_int("max_concurrency", max_concurrency)
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float):
                raise ValueError(f"timeout must be a number of seconds or None, got {timeout!r}")
            if not math.isfinite(timeout) or timeout <= 0:
                raise ValueError(f"timeout must be finite and > 0, got {timeout!r}")
        self._timeout = None if timeout is None else float(timeout)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ValueError(f"retry must be a RetryPolicy or None, got {retry!r}")
        self._retry = retry if retry is not None and retry.attempts > 1 else None
        self._plan: Plan = compile_plan(judges, sampling)
        self._limits = {k: _positive_int(f"limits[{k!r}]", v) for k, v in (limits or {}).items()}
        unknown = sorted(set(self._limits) - self._plan.resources)
        if unknown:
            raise ValueError(
                f"limits names unknown resources {unknown}; resources used by the judges: "
                f"{sorted(self._plan.resources) or 'none'}"
            )
        self._rng = rng if rng is not None else random.Random()
        # Every run shares one (immutable) draw when no judge is sampled below 1: none is made.
        self._all_sampled: tuple[bool, ...] | None = None
        if all(leaf.rate >= 1.0 for leaf in self._plan.leaves):
            self._all_sampled = (True,) * len(self._plan.leaves)
        if on_result is not None and not callable(on_result):
            raise ValueError(f"on_result must be callable, got {on_result!r}")
        self._on_result = on_result
        self._global: anyio.CapacityLimiter | None = None
        self._resource_limiters: dict[str, anyio.CapacityLimiter] = {}
        self._waiting: deque[_Queued] = deque()
        self._tg: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def noop(cls) -> Evaluator:
        """An evaluator with no judges: every evaluation returns ``[]`` at once."""
        return cls(None)

    @property
    def judge_names(self) -> tuple[str, ...]:
        """Names of every judge, configured order (later cascade tiers included)."""
        return tuple(leaf.name for leaf in self._plan.leaves)

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The global limiter (``max_concurrency`` tokens)."""
        if self._global is None:
            self._global = anyio.CapacityLimiter(self._max_concurrency)
        return self._global

    def resource_limiter(self, resource: str) -> anyio.CapacityLimiter | None:
        """The limiter of one resource named in ``limits`` (None if it has no limit)."""
        limiter = self._resource_limiters.get(resource)
        if limiter is None and resource in self._limits:
            limiter = anyio.CapacityLimiter(self._limits[resource])
            self._resource_limiters[resource] = limiter
        return limiter

    async def __aenter__(self) -> Evaluator:
        if self._tg is not None:
            raise RuntimeError("this Evaluator is already running (`async with` entered twice)")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        tg, self._tg = self._tg, None
        assert tg is not None
        error = exc_info[1] if len(exc_info) > 1 else None
        try:
            return await tg.__aexit__(*exc_info)
        except BaseExceptionGroup as group:
            # The block's own exception comes back wrapped by the task group: let the
            # original propagate unchanged (``except ValueError`` keeps working).
            if error is not None and len(group.exceptions) == 1 and group.exceptions[0] is error:
                return False
            raise

    # ------------------------------------------------------------------ public API
    def _context(self, context: Context | None, fields: dict[str, Any]) -> Context:
        if context is None:
            return Context(**fields)
        if not isinstance(context, Context):
            raise TypeError(f"expected a Context, got {type(context).__name__}")
        if fields:
            return Context.model_validate({**dict(context), **fields})
        return context

    def _new_run(self, ctx: Context) -> _Run:
        sampled = self._all_sampled
        if sampled is None:
            rng = self._rng
            sampled = tuple(
                [
                    rate >= 1.0 or (rate > 0.0 and rng.random() < rate)
                    for rate in (leaf.rate for leaf in self._plan.leaves)
                ]
            )
        return _Run(ctx, sampled)

    def submit(self, context: Context | None = None, /, **context_fields: Any) -> EvaluationHandle:
        """Start an evaluation in the evaluator's task group and return its handle at once.

        Raises:
            RuntimeError: outside ``async with evaluator``.
        """
        if self._tg is None:
            raise RuntimeError(
                "submit() needs a running evaluator: use `async with evaluator:` first, "
                "or `await evaluator.evaluate(...)` which needs no scope"
            )
        run = self._new_run(self._context(context, context_fields))
        scope = anyio.CancelScope()
        self._tg.start_soon(self._drive, run, scope)
        return EvaluationHandle(run, scope)

    async def evaluate(
        self, context: Context | None = None, /, **context_fields: Any
    ) -> list[JudgeResult]:
        """Evaluate one context in the calling task; results in configured order."""
        return list((await self.verdict(context, **context_fields)).results)

    async def verdict(self, context: Context | None = None, /, **context_fields: Any) -> Verdict:
        """Evaluate one context in the calling task and return the `Verdict`."""
        if context_fields or type(context) is not Context:
            context = self._context(context, context_fields)
        return await self._execute(self._new_run(context))

    def stream(self, context: Context | None = None, /, **context_fields: Any) -> Feed[JudgeResult]:
        """Evaluate one context, yielding results in completion order.

        Use it as ``async for result in evaluator.stream(ctx)`` or, to cancel the judges
        still running as soon as you stop reading, ``async with evaluator.stream(ctx) as
        results: async for result in results: ...`` (``contextlib.aclosing`` works too).
        Breaking out without closing is safe as well: the evaluation is then cancelled when
        the iterator is garbage-collected, and never the caller (see `Feed`). Sampling draws
        are made here, when the stream is created.
        """
        run = self._new_run(self._context(context, context_fields))
        return Feed(lambda publish: self._stream_run(run, publish))

    async def _stream_run(
        self, run: _Run, publish: Callable[[JudgeResult], Awaitable[None]]
    ) -> None:
        """The producer behind `stream`: drive ``run`` and publish each result as it lands."""
        if self._tg is not None:
            scope = anyio.CancelScope()
            self._tg.start_soon(self._drive, run, scope)
            handle = EvaluationHandle(run, scope)
            try:
                async for result in handle:
                    await publish(result)
            finally:
                if not handle.done():
                    handle.cancel()
            return
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._drive, run, None)
                async for result in run.completions():
                    await publish(result)
        except BaseExceptionGroup as group:
            raise single_exception(group) from None

    def run(
        self,
        contexts: Iterable[Context] | AsyncIterable[Context],
        *,
        concurrency: int = 16,
    ) -> Feed[CaseResult]:
        """Evaluate many contexts, yielding `CaseResult`s in completion order.

        The input is pulled lazily and at most ``concurrency`` cases are in flight, so memory
        stays flat however long the input is. Nothing is accumulated. Closing the iterator
        early (``async with``, ``aclosing``, or just breaking out) cancels the cases in
        flight, never the caller (see `stream`).
        """
        concurrency = _positive_int("concurrency", concurrency)
        return Feed(lambda publish: self._run_cases(contexts, concurrency, publish))

    async def _run_cases(
        self,
        contexts: Iterable[Context] | AsyncIterable[Context],
        concurrency: int,
        publish: Callable[[CaseResult], Awaitable[None]],
    ) -> None:
        """The producer behind `run`: ``concurrency`` workers pulling contexts lazily.

        ``publish`` waits until the consumer takes the case (no buffer), so at most
        ``concurrency`` cases are pulled from the input ahead of what was read.
        """
        if isinstance(contexts, AsyncIterable):
            source: Any = aiter(contexts)
            lock: anyio.Lock | None = anyio.Lock()
        else:
            source, lock = iter(contexts), None

        async def worker() -> None:
            while True:
                if lock is None:
                    ctx = next(source, _PENDING)
                else:
                    async with lock:
                        ctx = await anext(source, _PENDING)
                if ctx is _PENDING:
                    return
                if not isinstance(ctx, Context):
                    ctx = Context.model_validate(ctx)
                verdict = await self._execute(self._new_run(ctx))
                await publish(
                    _new(CaseResult, context=ctx, results=verdict.results, verdict=verdict)
                )

        try:
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker)
        except BaseExceptionGroup as group:
            raise single_exception(group) from None

    def evaluate_sync(
        self, context: Context | None = None, /, **context_fields: Any
    ) -> list[JudgeResult]:
        """Blocking `evaluate` for scripts and notebooks without a running loop.

        Raises:
            RuntimeError: inside a running event loop (use ``await evaluator.evaluate()``).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "evaluate_sync() cannot run inside a running event loop; "
                "use `await evaluator.evaluate(...)` instead"
            )
        ctx = self._context(context, context_fields)
        return anyio.run(self.evaluate, ctx)

    # ------------------------------------------------------------------ execution
    async def _drive(self, run: _Run, scope: anyio.CancelScope | None) -> None:
        try:
            if scope is None:
                run.verdict = await self._execute(run)
            else:
                with scope:
                    # handle.cancel() may come before this task starts, and judges that never
                    # suspend reach no checkpoint: check first, and never publish a verdict
                    # once cancel() was called.
                    await checkpoint_if_cancelled()
                    verdict = await self._execute(run)
                    if not scope.cancel_called:
                        run.verdict = verdict
        finally:
            run.finish()

    async def _execute(self, run: _Run) -> Verdict:
        root = self._plan.root
        try:
            if type(root) is Group:
                judgment = await self._run_group(root, run)
            elif root is None:
                judgment = Judgment.abstained("no judges are configured")
            elif type(root) is Leaf:
                result = await self._run_leaf(root, run)
                judgment = result.judgment or Judgment.abstained(
                    f"judge {root.name!r} was not sampled"
                )
            else:
                assert isinstance(root, CascadeNode)
                judgment = await self._run_cascade(root, run, record=True)
        except _CompositeFailure as exc:
            judgment = Judgment.errored(str(exc))
        results = run.results
        return construct(
            Verdict,
            {
                "judgment": judgment,
                # Every leaf stored a result (the common case) when as many completed.
                "results": tuple(results)
                if len(run.completed) == len(results)
                else tuple(r for r in results if r is not None),
                "tiers": tuple(run.tiers) if run.tiers else (),
            },
        )

    async def _run_node(
        self, node: Node, run: _Run, stats: _Stats | None = None
    ) -> Judgment | None:
        if type(node) is Leaf:
            return (await self._run_leaf(node, run, stats)).judgment
        if type(node) is Group:
            return await self._run_group(node, run)
        assert isinstance(node, CascadeNode)
        return await self._run_cascade(node, run, record=False)

    async def _notify(self, leaf: Leaf, result: JudgeResult) -> None:
        """Hand one result to the ``on_result`` callback (its failures are logged, not raised)."""
        callback = self._on_result
        assert callback is not None
        try:
            value = callback(result)
            if inspect.isawaitable(value):
                await value
        except Exception:
            logger.exception("on_result callback failed for judge %r", leaf.name)

    def _store(
        self,
        leaf: Leaf,
        run: _Run,
        attempts: int,
        working: float,
        queued: float,
        judgment: Judgment | None,
        error_type: str | None,
    ) -> JudgeResult:
        """Build the leaf's result and store it in the run."""
        result = construct(
            JudgeResult,
            {
                "name": leaf.name,
                "judgment": judgment,
                "sampled": run.sampled[leaf.index],
                "metric_key": leaf.metric_key,
                "tier": leaf.tier,
                "attempts": attempts,
                "duration_s": working,
                "queued_s": queued,
                "error_type": error_type,
            },
        )
        run.add(leaf.index, result)
        return result

    async def _run_leaf(
        self,
        leaf: Leaf,
        run: _Run,
        stats: _Stats | None = None,
        failed: Exception | None = None,
    ) -> JudgeResult:
        """Run one leaf to its result; ``failed``: its first attempt already raised this."""
        if stats is None:
            stats = _Stats()
        judgment: Judgment | None = None
        error_type: str | None = None
        if run.sampled[leaf.index]:
            if failed is None:
                try:
                    judgment = await self._attempt(leaf, run.ctx, stats)
                except Exception as exc:
                    failed = exc
            if failed is not None:
                judgment, error_type = await self._recover(leaf, run, stats, failed)
        result = self._store(
            leaf, run, stats.attempts, stats.working, stats.queued, judgment, error_type
        )
        if self._on_result is not None:
            await self._notify(leaf, result)
        return result

    async def _recover(
        self, leaf: Leaf, run: _Run, stats: _Stats, exc: Exception
    ) -> tuple[Judgment, str | None]:
        """Retry a failed first attempt as the policy allows; an ERROR judgment if all fail."""
        error = exc
        retry = self._retry
        if retry is not None and retry.is_retryable(exc) and not isinstance(exc, BudgetExhausted):
            try:
                judgment, _ = await call_with_retry(
                    retry,
                    lambda: self._attempt(leaf, run.ctx, stats),
                    attempts_made=1,
                    last_error=exc,
                )
            except Exception as final:
                error = final
            else:
                return judgment, None
        return _failure(error, leaf)

    def _limiters(self, leaf: Leaf) -> tuple[anyio.CapacityLimiter | None, anyio.CapacityLimiter]:
        """The leaf's resource limiter (None without a limit) and the global limiter."""
        resource = self.resource_limiter(leaf.resource) if leaf.resource is not None else None
        return resource, self._global or self.limiter

    def _reserve(self, leaf: Leaf, stats: _Stats) -> bool:
        """Take this leaf's slots now if they are free (never waits); True on success."""
        resource, limiter = self._limiters(leaf)
        if resource is not None:
            try:
                resource.acquire_on_behalf_of_nowait(stats)
            except WouldBlock:
                return False
        try:
            limiter.acquire_on_behalf_of_nowait(stats)
        except WouldBlock:
            if resource is not None:
                resource.release_on_behalf_of(stats)
            return False
        stats.reserved = True
        return True

    def _unreserve(self, leaf: Leaf, stats: _Stats) -> None:
        if stats.reserved:
            stats.reserved = False
            resource, limiter = self._limiters(leaf)
            limiter.release_on_behalf_of(stats)
            if resource is not None:
                resource.release_on_behalf_of(stats)
            self._dispatch()

    def _dispatch(self) -> None:
        """Hand free global slots to queued members, first come first served."""
        waiting = self._waiting
        limiter = self._global
        while waiting and limiter is not None:
            entry = waiting[0]
            if entry.dead:
                waiting.popleft()
                continue
            try:
                limiter.acquire_on_behalf_of_nowait(entry.stats)
            except WouldBlock:
                return
            waiting.popleft()
            entry.stats.reserved = True
            entry.launch()

    def _timed_out(self, leaf: Leaf, stats: _Stats) -> TimeoutError:
        return TimeoutError(
            f"judge {leaf.name!r} timed out after {self._timeout:g} s (attempt {stats.attempts})"
        )

    def _take(self, leaf: Leaf, stats: _Stats) -> None:
        """Take the slots for an attempt of ``leaf`` now; the caller checked they are free."""
        resource, limiter = self._limiters(leaf)
        if resource is not None:
            resource.acquire_on_behalf_of_nowait(stats)
        limiter.acquire_on_behalf_of_nowait(stats)

    def _release(self, leaf: Leaf, stats: _Stats) -> None:
        """Return the slots an attempt of ``leaf`` held (global, then resource)."""
        resource, limiter = self._limiters(leaf)
        limiter.release_on_behalf_of(stats)
        if self._waiting:
            self._dispatch()
        if resource is not None:
            resource.release_on_behalf_of(stats)

    async def _attempt(self, leaf: Leaf, ctx: Context, stats: _Stats) -> Judgment:
        budget = self.budget
        if budget is None or not leaf.metered:
            return await self._attempt_now(leaf, ctx, stats)
        stats.since = stats.since or perf_counter()  # waiting for admission is queueing
        try:
            ticket = await budget.admit(leaf.name)
        except BudgetExhausted:
            self._unreserve(leaf, stats)  # slots taken ahead for this member go back now
            raise
        judgment: Judgment | None = None
        try:
            judgment = await self._attempt_now(leaf, ctx, stats)
            return judgment
        finally:
            budget.settle(ticket, judgment)

    async def _attempt_now(self, leaf: Leaf, ctx: Context, stats: _Stats) -> Judgment:
        stats.attempts += 1
        started, stats.since = stats.since or perf_counter(), 0.0
        resource, limiter = self._limiters(leaf)
        # A member started after its group was cancelled must not reach the judge just
        # because a slot is free (acquiring without waiting is no checkpoint). A reservation
        # still held here is released by the group if this raises.
        await checkpoint_if_cancelled()
        reserved, stats.reserved = stats.reserved, False
        if resource is not None and not reserved:
            await _acquire(resource, stats)
        try:
            if not reserved:
                await _acquire(limiter, stats)
            clock = QueueClock()
            token = queue_clock.set(clock)
            try:
                began = perf_counter()
                stats.queued += began - started
                try:
                    if self._timeout is None:
                        return await _step(leaf, ctx, None, began)
                    # The scope gets its deadline only if the judge suspends: one that completes
                    # in its first step cannot be interrupted anyway, and a scope without a
                    # deadline costs half as much (no timer).
                    with anyio.CancelScope() as sc:
                        judgment = await _step(leaf, ctx, sc, began, self._timeout)
                    # Also when the judge swallowed the deadline's cancellation and returned,
                    # or blocked past the deadline without suspending: an attempt that
                    # overran its timeout is a TimeoutError whatever the judge returned.
                    if sc.cancel_called or perf_counter() - began > self._timeout:
                        raise self._timed_out(leaf, stats)
                    return judgment
                finally:
                    # Waiting the judge reported (a client's rate limit) is queueing.
                    stats.working += perf_counter() - began - clock.seconds
                    stats.queued += clock.seconds
            finally:
                queue_clock.reset(token)
                limiter.release_on_behalf_of(stats)
                if self._waiting:
                    self._dispatch()
        finally:
            if resource is not None:
                resource.release_on_behalf_of(stats)

    async def _gather(
        self,
        group: Group,
        run: _Run,
        out: list[Any],
        on_done: Callable[[int, Judgment | None], bool],
    ) -> None:
        """Run the group's members concurrently, storing each outcome in ``out`` as it arrives.

        Entries end as a Judgment, None (unsampled leaf) or _PENDING (cancelled / never
        started). ``on_done`` returning True cancels the rest. A nested composite failure
        cancels the rest and raises.
        """
        members = group.members
        if len(members) == 1:
            out[0] = await self._run_node(members[0], run)
            on_done(0, out[0])
            return
        stats: list[_Stats | None] = [None] * len(members)
        start, failure = 0, None
        if self._inline_first(group, run):
            start, failure, stop = await self._gather_inline(group.leaves, run, out, on_done, stats)
            if stop or start == len(members):
                return
        await self._gather_tasks(members, run, out, on_done, stats, start, failure)

    @staticmethod
    def _inline_first(group: Group, run: _Run) -> bool:
        """Whether `_gather_inline` should start the group.

        It should when the group is flat and its first member instant or unsampled; the loop
        itself hands over at the first sampled member that is not instant.
        """
        if not group.flat:
            return False
        first = group.leaves[0]
        return first.instant or not run.sampled[first.index]

    async def _gather_tasks(
        self,
        members: tuple[Node, ...],
        run: _Run,
        out: list[Any],
        on_done: Callable[[int, Judgment | None], bool],
        stats: list[_Stats | None],
        start: int,
        first_failure: Exception | None,
    ) -> None:
        """The general way: members from ``start`` on, a task for each one that suspends.

        ``first_failure``: member ``start`` already made its first attempt, which raised this
        (its ``stats`` entry holds the count).
        """
        failures: list[_CompositeFailure] = []
        stop = False
        # Case-major fairness: take every member's slots now, in member order, so the members
        # of one evaluation start together (a cascade tier can short-circuit early) instead
        # of interleaving with other evaluations. Members whose slots are not free wait in
        # the evaluator's FIFO queue without a task (only the global limit stands between
        # them and a slot), or start as their own task waiting on their resource limiter.
        inline: list[bool] = [True] * len(members)
        for i in range(start, len(members)):
            m = members[i]
            if stats[i] is None and type(m) is Leaf and run.sampled[m.index]:
                st = _Stats(perf_counter())
                stats[i] = st
                inline[i] = self._reserve(m, st)
        queued: list[_Queued] = []
        pending = 0
        all_started: anyio.Event | None = None

        def stopped() -> bool:
            return stop

        def runs_inline(i: int) -> bool:
            return inline[i]

        def start_later(i: int) -> None:
            nonlocal pending
            m, st = members[i], stats[i]
            if type(m) is Leaf and st is not None and m.resource not in self._limits:
                entry = _Queued(st, lambda: launch(i))
                queued.append(entry)
                self._waiting.append(entry)
                pending += 1
            else:
                tg.start_soon(member, i)

        def launch(i: int) -> None:
            nonlocal pending
            pending -= 1
            if pending == 0 and all_started is not None:
                all_started.set()
            tg.start_soon(member, i)

        try:
            async with anyio.create_task_group() as tg:

                async def member(i: int) -> None:
                    nonlocal stop, first_failure
                    try:
                        if first_failure is not None and i == start:
                            failed, first_failure = first_failure, None
                            leaf = cast(Leaf, members[i])
                            result = await self._run_leaf(leaf, run, stats[i], failed)
                            judgment = result.judgment
                        else:
                            judgment = await self._run_node(members[i], run, stats[i])
                    except _CompositeFailure as exc:
                        failures.append(exc)
                        finish = True
                    else:
                        out[i] = judgment
                        finish = on_done(i, judgment)
                    if finish and not stop:
                        stop = True
                        tg.cancel_scope.cancel()

                await start_all(tg, member, len(members), stopped, runs_inline, start_later, start)
                if pending:
                    self._dispatch()
                if pending:
                    all_started = anyio.Event()
                    await all_started.wait()
        except BaseExceptionGroup as group:
            raise single_exception(group) from None
        finally:
            for entry in queued:
                entry.dead = True
            for m, held in zip(members, stats, strict=True):
                if held is not None and held.reserved:
                    self._unreserve(cast(Leaf, m), held)
        if failures:
            raise failures[0]

    async def _gather_inline(
        self,
        leaves: tuple[Leaf, ...],
        run: _Run,
        out: list[Any],
        on_done: Callable[[int, Judgment | None], bool] | None,
        stats: list[_Stats | None],
    ) -> tuple[int, Exception | None, bool]:
        """Run a flat group's instant leaves (`Leaf.instant`) one after another in this task.

        A judge that completes in its first step holds its slots for no time at all, so none
        are taken; the loop only checks that they are free (and that nobody is queued for
        them). One scope without a deadline guards the loop (no scope at all without a
        timeout: it would never get a deadline). A leaf that suspends after all (an instant
        judge may still do so once, e.g. on a cache miss) is demoted for good, takes its slots
        then, gets the guard's deadline as its timeout (counted from where its ``duration_s``
        starts, see below) and is driven to its end here; the members after it then go the
        general way, as do the members from the first sampled one that is not instant.

        Timing on this path: an instant judge never waits for a slot, so ``queued_s`` is 0.
        The clock is read once per member, when it completes: ``duration_s`` runs from the
        previous member's completion (or the loop's start) to this one's, so it includes the
        few microseconds of bookkeeping between two calls (never a result callback's time).

        Returns:
            ``(k, failure, stopped)``: members before ``k`` are done; the caller runs the
            others, member ``k`` retrying from ``failure`` when that is set (its first attempt
            raised something the retry policy retries; ``stats[k]`` counts it). ``stopped``:
            ``on_done`` asked to stop.
        """
        await checkpoint_if_cancelled()
        ctx, sampled, notify = run.ctx, run.sampled, self._on_result is not None
        budget = self.budget

        def metered(leaf: Leaf) -> bool:  # a budget admits each call: the general way
            return budget is not None and leaf.metered

        limiter, waiting = self._global or self.limiter, self._waiting
        leaf: Leaf | None = None
        i = 0
        # Slots are checked, not taken: nothing else runs until a member suspends or a result
        # callback is awaited, so they are checked again only after a callback.
        check_slots = True
        with new_scope() if self._timeout is not None else _NO_GUARD as guard:
            mark = perf_counter()
            for i, leaf in enumerate(leaves):
                if not sampled[leaf.index]:
                    result = self._store(leaf, run, 0, 0.0, 0.0, None, None)
                    if notify:
                        await self._notify(leaf, result)
                        mark = perf_counter()
                    out[i] = None
                    if on_done is not None and on_done(i, None):
                        return i + 1, None, True
                    continue
                if leaf.inline_streak < INSTANT_AFTER or leaf.suspends or metered(leaf):
                    return i, None, False  # not instant (yet, or any more): the general way
                if check_slots or leaf.resource is not None:
                    resource = None
                    if leaf.resource is not None:
                        resource = self.resource_limiter(leaf.resource)
                    if (
                        waiting
                        or limiter.available_tokens < 1
                        or (resource is not None and resource.available_tokens < 1)
                    ):
                        return i, None, False  # the general way queues for them
                    check_slots = notify
                suspended = False
                error_type: str | None = None
                try:
                    coro = leaf.step(ctx)
                    try:
                        first = coro.send(None)
                    except StopIteration as done:
                        judgment = done.value
                        if leaf.coerce_as is not None:
                            judgment = coerce_judgment(judgment, leaf.coerce_as)
                        if self._timeout is not None and perf_counter() - mark > self._timeout:
                            raise TimeoutError(
                                f"judge {leaf.name!r} timed out after {self._timeout:g} s "
                                "(attempt 1)"
                            ) from None
                    except BaseException as exc:
                        if is_stray_cancellation(exc):
                            raise _stray(leaf, exc) from exc
                        raise
                    else:
                        suspended = True
                        judgment = await self._inline_resume(
                            leaf, coro, first, guard, mark, stats, i
                        )
                except _InlineTimeout:
                    break
                except Exception as exc:
                    if suspended:
                        failed = stats[i]
                        assert failed is not None
                    else:
                        failed = stats[i] = _Stats()
                        failed.attempts = 1
                        failed.working = perf_counter() - mark
                    if self._retry is not None and self._retry.is_retryable(exc):
                        return i, exc, False
                    judgment, error_type = _failure(exc, leaf)
                now = perf_counter()
                result = construct(
                    JudgeResult,
                    {
                        "name": leaf.name,
                        "judgment": judgment,
                        "sampled": True,
                        "metric_key": leaf.metric_key,
                        "tier": leaf.tier,
                        "attempts": 1,
                        "duration_s": now - mark,
                        "queued_s": 0.0,
                        "error_type": error_type,
                    },
                )
                run.add(leaf.index, result)
                if notify:
                    await self._notify(leaf, result)
                    now = perf_counter()
                mark = now
                out[i] = judgment
                if on_done is not None and on_done(i, judgment):
                    return i + 1, None, True
                if suspended:
                    return i + 1, None, False
            else:
                return len(leaves), None, False
        # Only reached when leaf ``i`` (``stats[i]``: its stats) suspended and overran the
        # guard's deadline: the guard caught the cancellation, or the leaf swallowed it (or
        # blocked past the deadline) and `_inline_resume` raised _InlineTimeout.
        assert leaf is not None
        st = stats[i]
        assert st is not None
        error = self._timed_out(leaf, st)
        if self._retry is not None and self._retry.is_retryable(error):
            return i, error, False
        judgment, error_type = _failure(error, leaf)
        result = self._store(leaf, run, 1, st.working, st.queued, judgment, error_type)
        if notify:
            await self._notify(leaf, result)
        out[i] = judgment
        return i + 1, None, on_done is not None and on_done(i, judgment)

    async def _inline_resume(
        self,
        leaf: Leaf,
        coro: Coroutine[Any, Any, object],
        first: object,
        guard: anyio.CancelScope | None,
        began: float,
        stats: list[_Stats | None],
        i: int,
    ) -> Judgment:
        """Drive an instant leaf that suspended after all (see `_gather_inline`) to its end.

        The leaf is demoted for good, takes its slots (checked free by the caller) for the rest
        of the attempt, and the guard gets the timeout counted from ``began``.

        Raises:
            _InlineTimeout: the leaf returned although it overran the deadline (it swallowed
                the guard's cancellation, or blocked past it). Nothing may await inside the
                guard after that: the caller leaves the guard first.
        """
        leaf.suspends = True
        st = stats[i] = _Stats()
        st.attempts = 1
        self._take(leaf, st)
        try:
            if guard is not None and self._timeout is not None:
                arm(guard, self._timeout, began)
            try:
                value = await Resume(coro, first)
            except BaseException as exc:
                if is_stray_cancellation(exc):
                    raise _stray(leaf, exc) from exc
                raise
            timeout = self._timeout
            if guard is not None and timeout is not None:  # noqa: SIM102 - one question each
                if guard.cancel_called or perf_counter() - began > timeout:
                    raise _InlineTimeout
            return value if leaf.coerce_as is None else coerce_judgment(value, leaf.coerce_as)
        finally:
            st.working = perf_counter() - began
            self._release(leaf, st)

    @staticmethod
    def _ballot(
        group: Group, out: list[Any], *, running: bool
    ) -> tuple[list[Judgment | None], list[float] | None]:
        """The members that vote, with their weights (None when the group has none).

        Completed judgments vote; with ``running``, still-running members are included as None
        (as `VotingStrategy.decided` expects). Unsampled members never vote.
        """
        votes: list[Judgment | None] = []
        weights: list[float] | None = None if group.weights is None else []
        for i, j in enumerate(out):
            if isinstance(j, Judgment):
                votes.append(j)
            elif running and j is _PENDING:
                votes.append(None)
            else:
                continue
            if weights is not None:
                assert group.weights is not None
                weights.append(group.weights[i])
        return votes, weights

    def _vote(self, group: Group, out: list[Any]) -> Judgment | None:
        """Aggregate the judgments that completed (None when none did)."""
        weights: list[float] | None = None
        if group.weights is None:
            judgments = [j for j in out if isinstance(j, Judgment)]
        else:
            ballot, weights = self._ballot(group, out, running=False)
            judgments = [j for j in ballot if j is not None]
        if not judgments:
            return None
        if group.voting is None:
            return judgments[0]
        try:
            return group.voting.aggregate(judgments, weights)
        except Exception as exc:
            raise _CompositeFailure(
                f"{group.name}: voting {group.voting.name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def _decided(self, group: Group, out: list[Any]) -> Judgment | None:
        assert group.voting is not None
        done, weights = self._ballot(group, out, running=True)
        try:
            return group.voting.decided(done, weights)
        except Exception:
            return None

    async def _run_group(self, group: Group, run: _Run) -> Judgment:
        members = group.members
        count = len(members)
        out: list[Any] = [_PENDING] * count
        decision: Judgment | None = None
        on_done: Callable[[int, Judgment | None], bool] | None = None
        if group.early_stop and group.voting is not None:

            def on_done(i: int, judgment: Judgment | None) -> bool:
                nonlocal decision
                decision = self._decided(group, out)
                return decision is not None

        first = group.leaves[0]
        if count > 1 and group.flat and (first.instant or not run.sampled[first.index]):
            # The common case of a flat jury of instant judges: straight to the inline loop,
            # the general way only for the members it leaves (see `_gather_inline`).
            stats: list[_Stats | None] = [None] * count
            start, failure, stop = await self._gather_inline(group.leaves, run, out, on_done, stats)
            if not stop and start < count:
                await self._gather_tasks(
                    members, run, out, on_done or _never, stats, start, failure
                )
        else:
            await self._gather(group, run, out, on_done or _never)
        if decision is not None:
            return decision
        return self._vote(group, out) or Judgment.abstained(
            f"{group.name}: no member was sampled or completed"
        )

    async def _run_cascade(self, cascade: CascadeNode, run: _Run, *, record: bool) -> Judgment:
        for tier in cascade.tiers:
            judgment, stopped, failure = await self._run_tier(tier, run)
            if record:
                leaves = tier.group.leaves
                run.tiers.append(
                    _new(
                        TierAttempt,
                        name=tier.name,
                        policy=tier.policy,
                        judgment=judgment,
                        results=tuple(
                            r for r in (run.results[x.index] for x in leaves) if r is not None
                        ),
                        skipped=tuple(x.name for x in leaves if run.results[x.index] is None),
                        failure=failure,
                        stopped=stopped,
                    )
                )
            if stopped and judgment is not None:
                return judgment
            if failure is not None and tier.policy is TierPolicy.FINAL:
                return Judgment.errored(f"the final cascade tier {tier.name!r} failed: {failure}")
        return Judgment.errored(f"{cascade.name}: no cascade tier returned a verdict")

    async def _run_tier(
        self, tier: TierNode, run: _Run
    ) -> tuple[Judgment | None, bool, str | None]:
        """Run one tier; returns (judgment, whether it stops the cascade, failure)."""
        group, policy = tier.group, tier.policy
        out: list[Any] = [_PENDING] * len(group.members)
        names = [m.name for m in group.members]
        stop_with: Judgment | None = None
        escalate = False

        def on_done(i: int, judgment: Judgment | None) -> bool:
            nonlocal stop_with, escalate
            if judgment is None:
                return False
            status = judgment.status
            if policy is TierPolicy.FINAL:
                if group.early_stop and group.voting is not None:
                    stop_with = self._decided(group, out)
                    return stop_with is not None
                return False
            if policy is TierPolicy.REJECT_ON_ANY_FAIL:
                if status is Status.FAIL:
                    stop_with = Judgment.failed(
                        f"tier {tier.name!r} rejected: {names[i]} failed"
                        + (f": {judgment.reasoning}" if judgment.reasoning else ""),
                        metadata={"tier": tier.name, "decided_by": names[i]},
                    )
                    return True
                return False
            if policy is TierPolicy.ACCEPT_ON_ALL_PASS:
                if status is not Status.PASS:
                    escalate = True
                    return True
                return False
            # STOP_ON_AGREEMENT
            seen = {j.status for j in out if isinstance(j, Judgment)}
            if status in (Status.ABSTAIN, Status.ERROR) or {Status.PASS, Status.FAIL} <= seen:
                escalate = True
                return True
            return False

        try:
            await self._gather(group, run, out, on_done)
        except _CompositeFailure as exc:
            return None, False, str(exc)
        if stop_with is not None:
            return stop_with, True, None
        completed = [j for j in out if isinstance(j, Judgment)]
        try:
            aggregate = self._vote(group, out)
        except _CompositeFailure as exc:
            return None, False, str(exc)
        if aggregate is None:
            aggregate = Judgment.abstained(f"tier {tier.name!r}: no member was sampled")
        if policy is TierPolicy.FINAL:
            return aggregate, True, None
        if not escalate and completed:
            statuses = {j.status for j in completed}
            if policy is TierPolicy.ACCEPT_ON_ALL_PASS and statuses == {Status.PASS}:
                return (
                    Judgment.passed(
                        f"tier {tier.name!r} accepted: all {len(completed)} members passed",
                        metadata={"tier": tier.name},
                    ),
                    True,
                    None,
                )
            if policy is TierPolicy.STOP_ON_AGREEMENT and len(statuses) == 1:
                agreed = statuses.pop()
                if agreed in (Status.PASS, Status.FAIL):
                    make = Judgment.passed if agreed is Status.PASS else Judgment.failed
                    return (
                        make(
                            f"tier {tier.name!r}: all {len(completed)} members agree "
                            f"({agreed.value})",
                            metadata={"tier": tier.name},
                        ),
                        True,
                        None,
                    )
        return aggregate, False, None


async def _step(
    leaf: Leaf,
    ctx: Context,
    scope: anyio.CancelScope | None,
    began: float,
    seconds: float = 0.0,
) -> Judgment:
    """Call the judge, stepping it once inline to learn whether it suspends (`Leaf.instant`).

    When it suspends, ``scope`` (entered just before, without a deadline) gets the deadline
    ``seconds`` after ``began`` (a `perf_counter` reading).
    """
    coro = cast(Coroutine[Any, Any, Judgment], leaf.call(ctx))
    try:
        first = coro.send(None)
    except StopIteration as done:
        leaf.inline_streak += 1
        return cast(Judgment, done.value)
    except Exception:
        leaf.inline_streak += 1  # raising in the first step is completing without suspending
        raise
    except BaseException as exc:
        if is_stray_cancellation(exc):
            leaf.inline_streak += 1
            raise _stray(leaf, exc) from exc
        raise
    leaf.suspends = True
    if scope is not None:
        arm(scope, seconds, began)
    try:
        return cast(Judgment, await Resume(coro, first))
    except BaseException as exc:
        if is_stray_cancellation(exc):
            raise _stray(leaf, exc) from exc
        raise


async def _acquire(limiter: anyio.CapacityLimiter, borrower: object) -> None:
    try:
        limiter.acquire_on_behalf_of_nowait(borrower)
    except WouldBlock:
        await limiter.acquire_on_behalf_of(borrower)

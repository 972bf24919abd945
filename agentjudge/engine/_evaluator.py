"""The Evaluator: the public API of the engine (submit, evaluate, verdict, stream, run).

The engine's parts, in the order a context flows through them (docs/concepts/engine.md):

* `agentjudge.engine._plan` compiles the judges into an immutable plan once.
* `agentjudge.engine._scheduler` runs the plan: groups (juries), cascades and their tier
  rules (`agentjudge.engine._policy`), members concurrently under admission control
  (`agentjudge.engine._admission`: the global and per-resource slots and the waiting queue).
* `agentjudge.engine._fastpath` runs the leading instant members of a flat group inline.
* `agentjudge.engine._leaf` is the leaf boundary: attempts, timeout, retries, failure as data
  and the one place a `JudgeResult` is built.

One evaluation runs in the task that asked for it (`evaluate`, `verdict`, each `run` worker)
or in one driver task of the evaluator's task group (`submit`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Mapping,
)
from functools import partial
from typing import Any

import anyio
from anyio.lowlevel import checkpoint_if_cancelled

from agentjudge._retry import RetryPolicy
from agentjudge.core import CaseResult, Context, JudgeResult, Verdict
from agentjudge.engine._admission import Admission, AdmissionStatistics
from agentjudge.engine._background import BackgroundEvaluator
from agentjudge.engine._budget import Budget
from agentjudge.engine._deadline import execute_until, resolve_timeouts
from agentjudge.engine._detached import Feed, Outlet, single_exception
from agentjudge.engine._fastpath import FastPath, fast_path_default
from agentjudge.engine._knobs import check_seconds, positive_int
from agentjudge.engine._leaf import LeafRunner, ResultCallback
from agentjudge.engine._learned import Learned
from agentjudge.engine._plan import Leaf, Plan, compile_plan
from agentjudge.engine._scheduler import Scheduler
from agentjudge.engine._state import PENDING, Lane, RunState, no_results
from agentjudge.exceptions import EvaluationCancelled
from agentjudge.judging import current_owner

__all__ = ["EvaluationHandle", "Evaluator", "ResultCallback"]

_DEFAULT_RETRY = RetryPolicy()


class EvaluationHandle:
    """The future of one evaluation, returned by `Evaluator.submit`.

    ``await handle`` gives the results in configured order (cancelled and skipped judges
    excluded); ``async for result in handle`` gives them as they complete; ``await
    handle.verdict()`` gives the `Verdict`. Cancelling the task that awaits the handle cancels
    the evaluation too. Awaiting a cancelled evaluation raises `EvaluationCancelled`.
    """

    __slots__ = ("_run", "_scope")

    def __init__(self, run: RunState, scope: anyio.CancelScope) -> None:
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


class Evaluator:
    """Schedules judges, juries and cascades concurrently under bounded concurrency.

    Args:
        judges: A judge, a sequence or mapping name -> judge (evaluated as ``Jury(judges)``
            with Majority voting), a `Jury` or a `Cascade`. None evaluates to ``[]``.
        max_concurrency: Judge calls in flight across everything this evaluator runs.
        limits: Per-resource caps (judges name theirs with a ``resource`` attribute),
            shared by all submissions.
        timeout: Per judge attempt, seconds (None: no timeout).
        timeouts: Per judge name, its own attempt timeout (seconds, None: none), overriding
            ``timeout`` and the judge's ``attempt_timeout`` attribute; unknown names are a
            ValueError (see `agentjudge.engine._deadline`).
        retry: Retry policy for judge attempts (None: no retries).
        sampling: Per judge name, the fraction of evaluations it runs in (0..1).
        rng: The random source for sampling draws (seed it for reproducible runs).
        on_result: Called once per completed JudgeResult, in completion order.
        budget: A spending limit on the model calls of model-backed judges (see `Budget`:
            each call reserves an upper bound of its cost before it is sent); an attempt it
            refuses is an ERROR result with ``error_type="BudgetExhausted"``.
        fast_path: Run instant judges of flat juries inline (the fast path); None: on unless
            the environment variable ``AGENTJUDGE_FAST_PATH`` is ``0``. Results are identical
            either way; off is for tests and debugging.

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
        fast_path: bool | None = None,
        timeouts: Mapping[str, float | None] | None = None,
    ) -> None:
        if budget is not None and not isinstance(budget, Budget):
            raise ValueError(f"budget must be a Budget or None, got {budget!r}")
        self.budget = budget
        max_concurrency = positive_int("max_concurrency", max_concurrency)
        timeout = None if timeout is None else check_seconds("timeout", timeout)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ValueError(f"retry must be a RetryPolicy or None, got {retry!r}")
        retry = retry if retry is not None and retry.attempts > 1 else None
        self._plan: Plan = compile_plan(judges, sampling)
        per_leaf, sources = resolve_timeouts(self._plan.leaves, timeout, timeouts)
        caps = {k: positive_int(f"limits[{k!r}]", v) for k, v in (limits or {}).items()}
        unknown = sorted(set(caps) - self._plan.resources)
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
        self._nones = no_results(len(self._plan.leaves))  # every run's results before any lands
        if on_result is not None and not callable(on_result):
            raise ValueError(f"on_result must be callable, got {on_result!r}")
        self._admission = Admission(max_concurrency, caps)
        self._learned = Learned(len(self._plan.leaves))
        leaves = LeafRunner(
            self._admission,
            self._learned,
            timeouts=per_leaf,
            sources=sources,
            retry=retry,
            budget=budget,
            on_result=on_result,
        )
        enabled = fast_path_default() if fast_path is None else bool(fast_path)
        fast = FastPath(leaves, self._admission, enabled=enabled)
        self._scheduler = Scheduler(self._plan, leaves, fast)
        self._execute = self._scheduler.execute
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
    def judge_tiers(self) -> tuple[str | None, ...]:
        """The cascade tier of each judge, in `judge_names` order (None outside a cascade).

        The same value its `JudgeResult.tier` carries.
        """
        return tuple(leaf.tier for leaf in self._plan.leaves)

    @property
    def max_concurrency(self) -> int:
        """Judge calls in flight at most, across everything this evaluator runs."""
        return self._admission._max

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The global limiter (``max_concurrency`` tokens)."""
        return self._admission.limiter

    def resource_limiter(self, resource: str) -> anyio.CapacityLimiter | None:
        """The limiter of one resource named in ``limits`` (None if it has no limit)."""
        return self._admission.resource_limiter(resource)

    @property
    def fast_path(self) -> bool:
        """Whether instant judges of flat juries run inline (see the ``fast_path`` argument)."""
        return self._scheduler.fast.enabled

    def statistics(self) -> AdmissionStatistics:
        """Borrowed and queued slots per limiter, read-only (like anyio's limiter statistics)."""
        return self._admission.statistics()

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

    def _new_run(self, ctx: Context) -> RunState:
        sampled = self._all_sampled
        if sampled is None:
            rng = self._rng
            sampled = tuple(
                [
                    rate >= 1.0 or (rate > 0.0 and rng.random() < rate)
                    for rate in (leaf.rate for leaf in self._plan.leaves)
                ]
            )
        return RunState(ctx, sampled, self._nones)

    def submit(
        self,
        context: Context | None = None,
        /,
        *,
        deadline: float | None = None,
        **context_fields: Any,
    ) -> EvaluationHandle:
        """Start an evaluation in the evaluator's task group and return its handle at once.

        Args:
            context: The context (or give its fields as keyword arguments).
            deadline: Seconds from now the whole evaluation may take (as for `verdict`): no
                attempt, retry wait, rate-limit or slot wait outlives it, even while nobody
                awaits the handle; judges cut short are ERROR ``TimeoutError`` naming the
                deadline (None: no deadline).
            **context_fields: `Context` fields, merged over ``context``.

        Raises:
            RuntimeError: outside ``async with evaluator``.
            ValueError: a deadline that is not seconds > 0.
        """
        if self._tg is None:
            raise RuntimeError(
                "submit() needs a running evaluator: use `async with evaluator:` first, "
                "or `await evaluator.evaluate(...)` which needs no scope"
            )
        seconds = None if deadline is None else check_seconds("deadline", deadline)
        run = self._new_run(self._context(context, context_fields))
        scope = anyio.CancelScope()
        # the deadline's clock starts now, not when the driver task first runs
        at = None if seconds is None else anyio.current_time() + seconds
        self._tg.start_soon(self._drive, run, scope, at, seconds or 0.0)
        return EvaluationHandle(run, scope)

    async def evaluate(
        self,
        context: Context | None = None,
        /,
        *,
        deadline: float | None = None,
        **context_fields: Any,
    ) -> list[JudgeResult]:
        """Evaluate one context in the calling task; results in configured order.

        ``deadline``: seconds the whole evaluation may take (see `verdict`).
        """
        return list((await self.verdict(context, deadline=deadline, **context_fields)).results)

    async def verdict(
        self,
        context: Context | None = None,
        /,
        *,
        deadline: float | None = None,
        **context_fields: Any,
    ) -> Verdict:
        """Evaluate one context in the calling task and return the `Verdict`.

        Args:
            context: The context (or give its fields as keyword arguments).
            deadline: Seconds the whole evaluation may take: no attempt, retry wait,
                rate-limit or slot wait outlives it; judges cut short are ERROR
                ``TimeoutError`` naming the deadline (None: no deadline).
            **context_fields: `Context` fields, merged over ``context``.
        """
        if context_fields or type(context) is not Context:
            context = self._context(context, context_fields)
        if deadline is None:
            return await self._execute(self._new_run(context))
        seconds = check_seconds("deadline", deadline)
        run = self._new_run(context)
        return await execute_until(self._execute, run, anyio.current_time() + seconds, seconds)

    async def _execute_until(self, run: RunState, at: float | None, seconds: float) -> Verdict:
        """Run ``run`` (with the deadline ``at`` on the ``anyio.current_time()`` clock)."""
        if at is None:
            return await self._execute(run)
        return await execute_until(self._execute, run, at, seconds)

    def background(
        self, *, max_backlog: int = 1000, policy: str = "drop_newest", **options: Any
    ) -> BackgroundEvaluator:
        """A background front for fire-and-forget evaluation from request handlers.

        ``async with evaluator.background(...) as background:`` then
        ``background.offer(ctx, key=trace_id)`` from handlers. See `BackgroundEvaluator`
        for every option (sampling, sinks, drain timeout, deadlines) and the counters.

        Raises:
            ValueError: an invalid option, naming it.
        """
        return BackgroundEvaluator(self, max_backlog=max_backlog, policy=policy, **options)

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
        return Feed(lambda outlet: self._stream_run(run, outlet.publish))

    async def _stream_run(
        self, run: RunState, publish: Callable[[JudgeResult], Awaitable[None]]
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

        The input is pulled lazily: at most ``concurrency`` cases are in flight, and at most
        ``2 * concurrency`` are in flight or finished and not yet read, so memory stays flat
        however long the input is (a reader that stops reading stops the run once its finished
        cases fill those slots). The second ``concurrency`` slots let a worker go on while the
        reader is busy: with exactly ``concurrency``, a finished worker waits for a read, which
        in W4 cost about a third more garbage collection per case (docs/reference/benchmarks.md).
        Nothing else is accumulated. Closing the iterator
        early (``async with``, ``aclosing``, or just breaking out) cancels the cases in
        flight, never the caller (see `stream`).
        """
        concurrency = positive_int("concurrency", concurrency)
        slots = 2 * concurrency  # in flight (at most concurrency workers) + read ahead
        return Feed(lambda outlet: self._run_cases(contexts, concurrency, outlet), slots)

    async def _run_cases(
        self,
        contexts: Iterable[Context] | AsyncIterable[Context],
        concurrency: int,
        outlet: Outlet[CaseResult],
    ) -> None:
        """The producer behind `run`: ``concurrency`` workers pulling contexts lazily.

        ``concurrency`` workers, so at most that many cases run. A worker takes one of the
        outlet's ``2 * concurrency`` slots before it pulls a context and leaves its finished
        case with the reader (who frees the slot by reading it), so at most ``2 *
        concurrency`` cases are pulled from the input ahead of what was read. It never
        waits for its case to be read: a reader already waiting gets the case and the worker
        goes on with its slot; otherwise the worker waits for a free slot, whichever case's.
        """
        if isinstance(contexts, AsyncIterable):
            source: Any = aiter(contexts)
            lock: anyio.Lock | None = anyio.Lock()
        else:
            source, lock = iter(contexts), None

        execute, new_run = self._execute, self._new_run
        # a root leaf's attempts share the worker's timeout scope (see `Lane`); nothing else
        # is entered between the worker and such an attempt
        root = self._plan.root
        shared = False
        if type(root) is Leaf:  # what `Scheduler.execute` returns for it, without that call
            shared = True
            execute = partial(self._scheduler.leaves.verdict, root)

        async def worker() -> None:
            lane = Lane(current_owner()) if shared else None
            held = False  # a slot, kept when the reader took the last case at once
            try:
                while True:
                    if not held:
                        await outlet.reserve()
                    if lock is None:
                        ctx = next(source, PENDING)
                    else:
                        async with lock:
                            ctx = await anext(source, PENDING)
                    if ctx is PENDING:
                        outlet.release()
                        break
                    # one case, in the worker's own frame (no coroutine per case for it); the
                    # worker keeps no reference to the case it handed over
                    if not isinstance(ctx, Context):
                        ctx = Context.model_validate(ctx)
                    run = new_run(ctx)
                    run.lane = lane
                    verdict = await execute(run)
                    held = outlet.put(
                        CaseResult.fast(context=ctx, results=verdict.results, verdict=verdict)
                    )
                    del verdict  # not kept while the next case waits
            except BaseException as exc:
                if lane is not None:
                    lane.close(exc)
                raise
            if lane is not None:
                lane.close(None)

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
    async def _drive(
        self,
        run: RunState,
        scope: anyio.CancelScope | None,
        at: float | None = None,
        seconds: float = 0.0,
    ) -> None:
        try:
            if scope is None:
                run.verdict = await self._execute_until(run, at, seconds)
            else:
                with scope:
                    # handle.cancel() may come before this task starts, and judges that never
                    # suspend reach no checkpoint: check first, and never publish a verdict
                    # once cancel() was called.
                    await checkpoint_if_cancelled()
                    verdict = await self._execute_until(run, at, seconds)
                    if not scope.cancel_called:
                        run.verdict = verdict
        finally:
            run.finish()

"""Cancellation: it propagates, never becomes a result, and leaves no slot or task behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import aclosing

import anyio
import pytest
from engine_support import idle, running_tasks, settle, wait_until

from agentjudge import (
    AgentJudgeError,
    Cascade,
    Context,
    EvaluationCancelled,
    Evaluator,
    JudgeResult,
    Judgment,
    Jury,
    RetryableError,
    RetryPolicy,
    Status,
    Tier,
    TierPolicy,
)
from agentjudge.testing import ScriptedJudge

CTX = Context(input="q")


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def hanging(n: int, **kwargs: object) -> list[ScriptedJudge]:
    """``n`` judges that never answer."""
    return [ScriptedJudge(True, hang=True, name=f"h{i}", **kwargs) for i in range(n)]  # type: ignore[arg-type]


async def test_caller_cancellation_propagates() -> None:
    """Cancelling the caller cancels the judges, raises CancelledError, records nothing."""
    tasks_before = running_tasks()
    judges = hanging(3, resource="llm")
    recorded: list[JudgeResult] = []
    evaluator = Evaluator(judges, limits={"llm": 2}, on_result=recorded.append)
    outcome: list[str] = []

    async def caller() -> None:
        try:
            await evaluator.evaluate(CTX)
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise
        outcome.append("returned")  # pragma: no cover - must not happen

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller)
        await wait_until(lambda: sum(j.calls for j in judges) == 2)
        tg.cancel_scope.cancel()
    assert outcome == ["cancelled"]
    assert [j.cancelled for j in judges] == [1, 1, 0]  # the third was still queued
    assert recorded == []
    assert idle(evaluator, "llm")
    assert running_tasks() == tasks_before


async def test_deadline_around_evaluate_cancels_cleanly() -> None:
    """A caller's move_on_after around evaluate() cancels it without producing results."""
    tasks_before = running_tasks()
    judges = hanging(4)
    recorded: list[JudgeResult] = []
    evaluator = Evaluator(judges, max_concurrency=2, on_result=recorded.append)
    with anyio.move_on_after(0.02) as scope:
        await evaluator.evaluate(CTX)
    assert scope.cancelled_caught
    assert recorded == []
    assert sum(j.cancelled for j in judges) == 2
    assert idle(evaluator)
    assert running_tasks() == tasks_before


async def test_cancellation_while_waiting_for_slots_returns_every_token() -> None:
    """Cancelling judges queued on the global and resource limiters returns every token."""
    tasks_before = running_tasks()
    judges = hanging(6, resource="db")
    evaluator = Evaluator(judges, max_concurrency=1, limits={"db": 1})
    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(evaluator.evaluate, Context(input=i))
        await wait_until(lambda: sum(j.calls for j in judges) == 1)
        await settle()
        assert evaluator.limiter.borrowed_tokens == 1
        tg.cancel_scope.cancel()
    assert idle(evaluator, "db")
    assert running_tasks() == tasks_before


async def test_cancellation_during_retry_backoff() -> None:
    """Cancelling while a judge waits to be retried propagates; no result is recorded."""
    error = RetryableError("busy", retry_after=60)
    flaky = ScriptedJudge(True, fail_times=1, error=error, name="flaky")
    recorded: list[JudgeResult] = []
    evaluator = Evaluator(flaky, retry=RetryPolicy(attempts=3), on_result=recorded.append)
    with anyio.move_on_after(0.05) as scope:
        await evaluator.evaluate(CTX)
    assert scope.cancelled_caught
    assert flaky.calls == 1
    assert recorded == []
    assert idle(evaluator)


async def test_cancelling_a_sync_judge_does_not_wait_for_its_thread() -> None:
    """A caller cancelled while a sync judge blocks its thread is released at once."""
    release = threading.Event()
    entered = threading.Event()

    def blocking(ctx: Context) -> bool:
        entered.set()
        release.wait(5)
        return True

    evaluator = Evaluator(blocking, timeout=None)
    try:
        with anyio.move_on_after(0.05) as scope:
            await evaluator.evaluate(CTX)
        assert scope.cancelled_caught
        assert entered.is_set()
        assert idle(evaluator)
    finally:
        release.set()


async def test_cancelling_a_cascade_mid_tier_leaves_nothing_behind() -> None:
    """Cancelling inside a cascade tier (a jury) cancels its members and frees every slot."""
    tasks_before = running_tasks()
    members = hanging(2, resource="llm")
    later = ScriptedJudge(True, name="later")
    cascade = Cascade(
        [Tier("panel", Jury(members), TierPolicy.ACCEPT_ON_ALL_PASS), Tier("last", later)]
    )
    evaluator = Evaluator(cascade, limits={"llm": 2})
    with anyio.move_on_after(0.02):
        await evaluator.evaluate(CTX)
    assert [m.cancelled for m in members] == [1, 1]
    assert later.calls == 0
    assert idle(evaluator, "llm")
    assert running_tasks() == tasks_before


# --------------------------------------------------------------------------- handles


async def test_handle_cancel_makes_awaiting_raise_evaluation_cancelled() -> None:
    """handle.cancel() cancels the judges; awaiting, verdict() and iteration raise."""
    tasks_before = running_tasks()
    judges = hanging(2)
    evaluator = Evaluator(judges)
    async with evaluator:
        handle = evaluator.submit(CTX)
        await wait_until(lambda: all(j.calls for j in judges))
        handle.cancel()
        with pytest.raises(EvaluationCancelled):
            await handle
        assert handle.done()
        with pytest.raises(EvaluationCancelled):
            await handle.verdict()
        with pytest.raises(EvaluationCancelled):
            async for _ in handle:
                pass
    assert [j.cancelled for j in judges] == [1, 1]
    assert idle(evaluator)
    assert running_tasks() == tasks_before
    assert issubclass(EvaluationCancelled, AgentJudgeError)


async def test_handle_cancel_before_it_starts() -> None:
    """A handle cancelled right after submit() never calls its judges."""
    judge = ScriptedJudge(True, name="j")
    evaluator = Evaluator(judge)
    async with evaluator:
        handle = evaluator.submit(CTX)
        handle.cancel()
        with pytest.raises(EvaluationCancelled):
            await handle
    assert judge.calls == 0


async def test_cancel_after_completion_changes_nothing() -> None:
    """Cancelling a finished handle keeps its results."""
    async with Evaluator(ScriptedJudge(True, name="j")) as evaluator:
        handle = evaluator.submit(CTX)
        results = await handle
        handle.cancel()
        assert await handle == results


async def test_cancelling_the_awaiter_cancels_the_evaluation() -> None:
    """Cancelling the task awaiting a handle cancels the evaluation behind it."""
    judge = ScriptedJudge(True, hang=True, name="h")
    evaluator = Evaluator(judge)
    async with evaluator:
        handle = evaluator.submit(CTX)
        async with anyio.create_task_group() as tg:

            async def awaiter() -> None:
                await handle

            tg.start_soon(awaiter)
            await judge.started.wait()
            tg.cancel_scope.cancel()
        with pytest.raises(EvaluationCancelled):
            await handle
    assert judge.cancelled == 1
    assert idle(evaluator)


async def test_one_cancelled_submission_does_not_disturb_another() -> None:
    """Cancelling one handle leaves a concurrent submission on the same evaluator intact."""
    gate = anyio.Event()
    judge = ScriptedJudge(True, gate=gate, name="j")
    evaluator = Evaluator(judge)
    async with evaluator:
        doomed = evaluator.submit(input="doomed")
        kept = evaluator.submit(input="kept")
        await wait_until(lambda: judge.calls == 2)
        doomed.cancel()
        with pytest.raises(EvaluationCancelled):
            await doomed
        gate.set()
        results = await kept
    assert [r.status for r in results] == [Status.PASS]
    assert (judge.cancelled, judge.completed) == (1, 1)
    assert idle(evaluator)


async def test_one_cancelled_request_does_not_disturb_another() -> None:
    """Two requests calling evaluate() on a shared evaluator: cancelling one spares the other."""
    gate = anyio.Event()
    judge = ScriptedJudge(Judgment.passed("ok"), gate=gate, name="j")
    evaluator = Evaluator(judge, max_concurrency=4)
    finished: list[list[JudgeResult]] = []

    async def request(ctx: Context) -> None:
        finished.append(await evaluator.evaluate(ctx))

    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as doomed_scope:
            async with anyio.create_task_group() as inner:
                inner.start_soon(request, Context(input="doomed"))
                tg.start_soon(request, Context(input="kept"))
                await wait_until(lambda: judge.calls == 2)
                doomed_scope.cancel()
        gate.set()
    assert len(finished) == 1
    assert finished[0][0].status is Status.PASS
    assert (judge.cancelled, judge.completed) == (1, 1)
    assert idle(evaluator)


async def test_raising_block_cancels_running_submissions() -> None:
    """If the `async with` block raises, running evaluations are cancelled; the error surfaces."""
    judge = ScriptedJudge(True, hang=True, name="h")
    evaluator = Evaluator(judge)
    with pytest.raises(BaseException) as caught:  # the type is checked below
        async with evaluator:
            handle = evaluator.submit(CTX)
            await judge.started.wait()
            raise LookupError("request failed")
    assert [type(e) for e in leaves(caught.value)] == [LookupError]
    assert judge.cancelled == 1
    with pytest.raises(EvaluationCancelled):
        await handle
    assert idle(evaluator)


# --------------------------------------------------------------------------- stream / run


async def test_closing_a_stream_early_cancels_the_rest() -> None:
    """Breaking out of stream() (closed with aclosing) cancels the judges still running."""
    tasks_before = running_tasks()
    fast = ScriptedJudge(True, name="fast")
    slow = hanging(2)
    evaluator = Evaluator([*slow, fast])
    async with aclosing(evaluator.stream(CTX)) as results:
        async for result in results:
            assert result.name == "fast"
            break
    assert [j.cancelled for j in slow] == [1, 1]
    assert idle(evaluator)
    assert running_tasks() == tasks_before


async def test_cancelling_a_stream_consumer_cancels_its_judges() -> None:
    """A consumer cancelled while waiting on stream() cancels the evaluation."""
    judges = hanging(2)
    evaluator = Evaluator(judges)
    with anyio.move_on_after(0.02) as scope:
        async with aclosing(evaluator.stream(CTX)) as results:
            async for _ in results:
                pass  # pragma: no cover - nothing completes
    assert scope.cancelled_caught
    assert [j.cancelled for j in judges] == [1, 1]
    assert idle(evaluator)


async def test_closing_run_early_cancels_cases_in_flight() -> None:
    """Breaking out of run() (closed with aclosing) cancels the cases in flight."""
    tasks_before = running_tasks()
    pulled: list[int] = []

    def contexts() -> Iterator[Context]:
        for i in range(100):
            pulled.append(i)
            yield Context(input=i)

    cancelled: list[int] = []

    async def judge(ctx: Context) -> Judgment:
        if ctx.input == 0:
            return Judgment.passed()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(ctx.input)
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    evaluator = Evaluator(judge)
    async with aclosing(evaluator.run(contexts(), concurrency=3)) as cases:
        async for case in cases:
            assert case.context.input == 0
            break
    assert len(pulled) <= 4
    assert sorted(cancelled) == [i for i in pulled if i != 0]
    assert idle(evaluator)
    assert running_tasks() == tasks_before


async def test_error_in_run_input_propagates() -> None:
    """An exception raised by run()'s input iterable reaches the consumer."""

    def contexts() -> Iterator[Context]:
        yield Context(input=0)
        raise OSError("dataset unreadable")

    with pytest.raises(BaseException) as caught:  # the type is checked below
        async for _ in Evaluator(ScriptedJudge()).run(contexts(), concurrency=1):
            pass
    assert [type(e) for e in leaves(caught.value)] == [OSError]

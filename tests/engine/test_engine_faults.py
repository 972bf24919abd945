"""Fault injection at the leaf boundary: stray cancellation, swallowed timeouts, garbage
judgments, BaseExceptions, stuck sync judges, abandoned streams (issue 12)."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator

import anyio
import pytest
from engine_support import idle, new_objects_only, wait_until

from agentjudge import Context, Evaluator, Judgment, Jury, Status
from agentjudge.judging import abandoned_threads


async def _stray_cancel() -> None:
    """Raise a CancelledError that no cancel scope asked for (a cancelled future)."""
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    fut.cancel()
    await fut


async def stray_after_suspend(ctx: Context) -> Judgment:
    await anyio.sleep(0)
    await _stray_cancel()
    return Judgment.passed()


async def stray_at_once(ctx: Context) -> Judgment:
    raise asyncio.CancelledError()


async def ok(ctx: Context) -> Judgment:
    return Judgment.passed("fine")


# ----------------------------------------------------------------------------- item 1
@pytest.mark.parametrize("fn", [stray_after_suspend, stray_at_once])
async def test_stray_cancelled_error_is_an_error_result(fn: object) -> None:
    """A judge's own CancelledError (nobody cancelled the caller) is an ERROR judgment."""
    evaluator = Evaluator(fn, timeout=5)
    [result] = await evaluator.evaluate(output="x")
    assert result.status is Status.ERROR
    assert result.error_type == "CancelledError"
    assert result.judgment is not None and "CancelledError" in result.judgment.reasoning


@pytest.mark.parametrize("timeout", [5.0, None])
@pytest.mark.parametrize("fn", [stray_after_suspend, stray_at_once])
async def test_stray_cancel_in_jury_on_every_path(fn: object, timeout: float | None) -> None:
    """Inside a jury, warm (instant fast path) or not, the stray cancel is the member's ERROR."""
    evaluator = Evaluator(Jury([ok, fn, ok]), timeout=timeout)
    for _ in range(12):  # past the instant warm-up, so the inline loop runs it too
        results = await evaluator.evaluate(output="x")
        assert [r.status for r in results] == [Status.PASS, Status.ERROR, Status.PASS]
        assert results[1].error_type == "CancelledError"
    assert idle(evaluator)


async def test_run_over_many_contexts_loses_no_case_to_a_stray_cancel() -> None:
    """Evaluator.run() over 100 contexts yields 100 cases although every judge cancels itself."""
    evaluator = Evaluator([stray_after_suspend, ok], timeout=5)
    contexts = [Context(output=str(i)) for i in range(100)]
    cases = [case async for case in evaluator.run(contexts, concurrency=8)]
    assert len(cases) == 100
    assert all(case.results[0].error_type == "CancelledError" for case in cases)


async def test_real_cancellation_still_propagates() -> None:
    """Cancelling the caller's scope is cancellation, never a result."""
    started = anyio.Event()
    results: list[object] = []

    async def slow(ctx: Context) -> Judgment:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    evaluator = Evaluator(Jury([slow, ok]), timeout=30)
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            results.append(await evaluator.evaluate(output="x"))

        tg.start_soon(call)
        await started.wait()
        tg.cancel_scope.cancel()
    assert results == []
    assert idle(evaluator)


# ----------------------------------------------------------------------------- item 9
async def swallower(ctx: Context) -> Judgment:
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        pass
    return Judgment.passed("I ignore timeouts")


async def test_swallowed_timeout_is_a_timeout_error() -> None:
    """A judge that swallows its timeout's cancellation and returns PASS is ERROR (TimeoutError)."""
    evaluator = Evaluator(swallower, timeout=0.05, retry=None)
    [result] = await evaluator.evaluate(output="x")
    assert result.status is Status.ERROR
    assert result.error_type == "TimeoutError"


async def test_swallowed_timeout_on_the_inline_path() -> None:
    """The same judge inside a warmed-up flat jury (inline loop) is ERROR too."""
    calls = 0

    async def sometimes(ctx: Context) -> Judgment:
        nonlocal calls
        calls += 1
        if calls <= 10:
            return Judgment.passed("instant")
        return await swallower(ctx)

    evaluator = Evaluator(Jury([ok, sometimes, ok]), timeout=0.05, retry=None)
    for _ in range(10):
        await evaluator.evaluate(output="x")
    results = await evaluator.evaluate(output="x")
    assert [r.status for r in results] == [Status.PASS, Status.ERROR, Status.PASS]
    assert results[1].error_type == "TimeoutError"
    assert idle(evaluator)


def test_blocking_judge_that_overruns_is_a_timeout_error() -> None:
    """A judge that blocks past its timeout without ever suspending is ERROR (TimeoutError)."""
    import time

    async def blocking(ctx: Context) -> Judgment:
        time.sleep(0.015)  # past the timeout: it is measured after the judge returns
        return Judgment.passed()

    for judges in (blocking, Jury([ok, blocking])):
        evaluator = Evaluator(judges, timeout=0.01, retry=None)
        for _ in range(10):  # warm, so the inline path also sees it
            results = evaluator.evaluate_sync(output="x")
            assert results[-1].status is Status.ERROR
            assert results[-1].error_type == "TimeoutError"


# ----------------------------------------------------------------------------- item 16
async def bogus(ctx: Context) -> Judgment:
    return Judgment.model_construct(status="bogus", score=7.0)


async def bogus_score(ctx: Context) -> Judgment:
    return Judgment.model_construct(status=Status.PASS, score=7.0)


async def bogus_error(ctx: Context) -> Judgment:
    return Judgment.model_construct(status=Status.ERROR, reasoning="", score=0.5)


@pytest.mark.parametrize("fn", [bogus, bogus_score, bogus_error])
async def test_unvalidated_judgment_becomes_error(fn: object) -> None:
    """A judgment built without validation that breaks the invariants is ERROR, not a vote."""
    evaluator = Evaluator(Jury([fn, ok, ok]))
    for _ in range(10):  # inline path too
        verdict = await evaluator.verdict(output="x")
        assert verdict.results[0].status is Status.ERROR
        assert verdict.results[0].error_type == "JudgeReturnError"
        assert verdict.judgment.status is Status.ERROR  # Majority propagates errors


async def test_model_construct_of_a_valid_judgment_is_accepted() -> None:
    """Bypassing validation with valid values still counts (only garbage is refused)."""

    async def constructed(ctx: Context) -> Judgment:
        return Judgment.model_construct(status=Status.PASS, score=0.5, reasoning="ok")

    [result] = await Evaluator(constructed).evaluate(output="x")
    assert result.status is Status.PASS and result.score == 0.5


# ----------------------------------------------------------------------------- item 17
class Boom(BaseException):
    """Not an Exception: must propagate, in the same shape alone and in a jury."""


async def boom(ctx: Context) -> Judgment:
    await anyio.sleep(0)
    raise Boom("no")


async def slow_ok(ctx: Context) -> Judgment:
    await anyio.sleep(0)
    await anyio.sleep(0)
    return Judgment.passed()


@pytest.mark.parametrize("judges", [boom, Jury([slow_ok, boom]), Jury([Jury([boom, slow_ok])])])
async def test_base_exception_has_one_shape(judges: object) -> None:
    """A BaseException from a judge comes out bare, alone or inside (nested) juries."""
    with pytest.raises(Boom):
        await Evaluator(judges).evaluate(output="x")


async def test_base_exception_from_run_is_bare() -> None:
    """run() re-raises a judge's BaseException unwrapped too."""
    with pytest.raises(Boom):
        async for _ in Evaluator(Jury([slow_ok, boom])).run([Context(output="x")] * 3):
            pass


# ----------------------------------------------------------------------------- item 10
async def test_abandoned_sync_threads_are_bounded() -> None:
    """Sync judges stuck past their timeout are bounded; past the bound they ERROR at once."""
    from agentjudge.judging import MAX_ABANDONED_THREADS

    release = threading.Event()

    def stuck(ctx: Context) -> bool:
        release.wait(30)
        return True

    base = abandoned_threads()
    evaluator = Evaluator(stuck, timeout=0.02, retry=None, max_concurrency=64)
    try:
        seen: list[str | None] = []
        # A call whose thread had not started when it timed out leaves no thread behind and
        # is not counted (a loaded machine makes some), so the bound is met within a few more.
        for _ in range(4 * MAX_ABANDONED_THREADS):
            [result] = await evaluator.evaluate(output="x")
            assert result.status is Status.ERROR
            seen.append(result.error_type)
            if result.error_type == "ThreadsExhausted":
                break
        assert abandoned_threads() - base <= MAX_ABANDONED_THREADS
        assert seen[-1] == "ThreadsExhausted"
        assert seen[0] == "TimeoutError"
    finally:
        release.set()
    await wait_until(lambda: abandoned_threads() <= base, limit=30)
    [result] = await Evaluator(lambda ctx: True).evaluate(output="x")
    assert result.status is Status.PASS


# ----------------------------------------------------------------------------- item 22
def test_breaking_out_of_stream_without_aclosing_never_cancels_the_caller() -> None:
    """Abandoning stream() (no aclosing, no `async with evaluator`) leaves the caller running."""
    gate = anyio.Event

    async def main() -> list[str]:
        release = gate()

        async def waits(ctx: Context) -> Judgment:
            await release.wait()
            return Judgment.passed()

        evaluator = Evaluator(Jury([ok, waits]), timeout=5)
        stream: AsyncIterator[object] = evaluator.stream(output="x")
        async for _ in stream:
            break
        del stream
        gc.collect()
        steps = []
        for i in range(20):  # the caller keeps awaiting; a stray cancel would hit here
            await anyio.sleep(0)
            steps.append(str(i))
        release.set()
        await anyio.sleep(0.01)
        return steps

    with new_objects_only():  # the collection finalises the stream, made inside
        assert len(anyio.run(main)) == 20


async def test_stream_as_context_manager_cancels_the_rest() -> None:
    """`async with evaluator.stream(...) as results` cancels unfinished judges on exit."""
    cancelled = anyio.Event()

    async def waits(ctx: Context) -> Judgment:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    evaluator = Evaluator(Jury([ok, waits]), timeout=30)
    async with evaluator.stream(output="x") as results:
        async for result in results:
            assert result.status is Status.PASS
            break
    with anyio.fail_after(5):
        await cancelled.wait()
    assert idle(evaluator)


def test_breaking_out_of_run_without_aclosing_never_cancels_the_caller() -> None:
    """Abandoning run() without aclosing leaves the caller running too."""

    async def main() -> int:
        evaluator = Evaluator(ok)
        contexts = (Context(output=str(i)) for i in range(1000))
        async for _ in evaluator.run(contexts, concurrency=4):
            break
        gc.collect()
        for _ in range(20):
            await anyio.sleep(0)
        await anyio.sleep(0.01)
        return 1

    with new_objects_only():  # the collection finalises the run, made inside
        assert anyio.run(main) == 1


async def test_waiting_reported_by_the_judge_counts_as_queueing() -> None:
    """Time a judge reports with add_queued (a client's rate limit) is queued_s, not duration_s."""
    from agentjudge.judging import add_queued

    waited: list[float] = []

    async def waits_for_capacity(ctx: Context) -> Judgment:
        start = anyio.current_time()
        await anyio.sleep(0.05)
        waited.append(anyio.current_time() - start)
        add_queued(waited[0])  # what a rate-limited model client reports
        return Judgment.passed()

    start = anyio.current_time()
    [result] = await Evaluator(waits_for_capacity).evaluate(output="x")
    elapsed = anyio.current_time() - start
    # The reported wait moved from duration_s to queued_s (no bound on the machine's speed).
    assert result.queued_s >= waited[0]
    assert result.duration_s <= elapsed - waited[0]
    add_queued(1.0)  # outside an attempt: ignored, never an error


async def test_sync_judge_storm_leaves_no_phantom_abandoned_threads() -> None:
    """A storm of timed-out sync judges counts only running threads; the count returns to 0."""
    from agentjudge.judging._faults import wait_abandoned_threads

    release = threading.Event()
    running: list[str] = []

    def blocked(ctx: Context) -> bool:
        running.append(ctx.output)
        return release.wait(30)

    base = abandoned_threads()
    evaluator = Evaluator(blocked, timeout=0.1, retry=None, max_concurrency=64)
    try:
        seen: list[str | None] = []

        async def one(i: int) -> None:
            [result] = await evaluator.evaluate(output=str(i))
            seen.append(result.error_type)

        async with anyio.create_task_group() as tg:
            for i in range(64):
                tg.start_soon(one, i)
        assert seen == ["TimeoutError"] * 64
        # the count is the threads really running the judge; calls cancelled before a thread
        # took them up never ran (the count once grew by all 64 and kept the never-run ones)
        await wait_until(lambda: abandoned_threads() - base == len(running))
        assert len(running) < 64
    finally:
        release.set()
    assert await anyio.to_thread.run_sync(wait_abandoned_threads, base, 10)
    assert abandoned_threads() == base
    [result] = await Evaluator(blocked, timeout=5).evaluate(output="x")
    assert result.status is Status.PASS

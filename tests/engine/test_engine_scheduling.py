"""Evaluator scheduling: concurrency, limits, timeouts, retries and failure as data."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from engine_support import idle, settle, wait_until

from agentjudge import (
    Context,
    Evaluator,
    Judgment,
    RetryableError,
    RetryPolicy,
    Status,
)
from agentjudge.testing import ConcurrencyProbe, ScriptedJudge

CTX = Context(input="q", output="a")
NO_WAIT = RetryPolicy(attempts=3, initial_delay=0.0, max_delay=0.0)


# --------------------------------------------------------------------------- concurrency


@pytest.mark.timing
async def test_ten_slow_judges_run_concurrently() -> None:
    """Ten judges of 100 ms each finish together in well under 0.5 s."""
    judges = [ScriptedJudge(True, latency=0.1, name=f"j{i}") for i in range(10)]
    started = time.perf_counter()
    results = await Evaluator(judges).evaluate(CTX)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5
    assert [r.status for r in results] == [Status.PASS] * 10
    assert all(r.duration_s >= 0.09 for r in results)


async def test_global_limit_never_exceeded() -> None:
    """With max_concurrency=3 the judges themselves never see more than 3 calls in flight."""
    probe = ConcurrencyProbe()
    gate = anyio.Event()
    judges = [ScriptedJudge(True, gate=gate, probe=probe, name=f"j{i}") for i in range(10)]
    evaluator = Evaluator(judges, max_concurrency=3)
    results = []
    async with anyio.create_task_group() as tg:

        async def evaluate() -> None:
            results.extend(await evaluator.evaluate(CTX))

        tg.start_soon(evaluate)
        await wait_until(lambda: probe.in_flight == 3)
        await settle()
        assert probe.in_flight == 3
        assert evaluator.limiter.borrowed_tokens == 3
        assert sum(j.calls for j in judges) == 3
        gate.set()
    assert len(results) == 10
    assert probe.max_in_flight == 3
    assert idle(evaluator)


async def test_resource_limit_never_exceeded() -> None:
    """Judges drawing on resource "llm" (limit 2) never exceed 2, others are not held back."""
    llm_probe, other_probe = ConcurrencyProbe(), ConcurrencyProbe()
    gate = anyio.Event()
    llm = [
        ScriptedJudge(True, gate=gate, probe=llm_probe, resource="llm", name=f"llm{i}")
        for i in range(6)
    ]
    other = [ScriptedJudge(True, gate=gate, probe=other_probe, name=f"det{i}") for i in range(4)]
    evaluator = Evaluator([*llm, *other], max_concurrency=10, limits={"llm": 2})
    async with anyio.create_task_group() as tg:
        tg.start_soon(evaluator.evaluate, CTX)
        await wait_until(lambda: llm_probe.in_flight == 2 and other_probe.in_flight == 4)
        await settle()
        assert llm_probe.in_flight == 2
        llm_limiter = evaluator.resource_limiter("llm")
        assert llm_limiter is not None
        assert llm_limiter.borrowed_tokens == 2
        gate.set()
    assert llm_probe.max_in_flight == 2
    assert other_probe.max_in_flight == 4
    assert idle(evaluator, "llm")


async def test_limits_shared_by_many_concurrent_submissions() -> None:
    """Twenty submissions on one evaluator share max_concurrency and the resource limits."""
    probe, db_probe = ConcurrencyProbe(), ConcurrencyProbe()
    gate = anyio.Event()
    judges = [ScriptedJudge(True, gate=gate, probe=probe, name=f"j{i}") for i in range(3)]
    judges += [
        ScriptedJudge(False, gate=gate, probe=db_probe, resource="db", name=f"db{i}")
        for i in range(2)
    ]
    evaluator = Evaluator(judges, max_concurrency=4, limits={"db": 1})
    async with evaluator:
        handles = [evaluator.submit(input=i) for i in range(20)]
        await wait_until(lambda: probe.in_flight + db_probe.in_flight == 4)
        await settle()
        assert probe.in_flight + db_probe.in_flight == 4
        assert db_probe.in_flight == 1
        gate.set()
        outcomes = [await h for h in handles]
    assert probe.max_in_flight <= 4
    assert db_probe.max_in_flight == 1
    for results in outcomes:
        assert [r.name for r in results] == ["j0", "j1", "j2", "db0", "db1"]
        assert [r.status for r in results] == [Status.PASS] * 3 + [Status.FAIL] * 2
    assert sorted(ctx.input for ctx in judges[0].contexts) == list(range(20))
    assert idle(evaluator, "db")


async def test_limits_shared_by_concurrent_evaluate_calls() -> None:
    """Many tasks calling evaluate() on one shared evaluator (web requests) share its limits."""
    probe = ConcurrencyProbe()
    gate = anyio.Event()
    judges = [ScriptedJudge(True, gate=gate, probe=probe, name=f"j{i}") for i in range(4)]
    evaluator = Evaluator(judges, max_concurrency=5)
    done: list[int] = []
    async with anyio.create_task_group() as tg:

        async def request(i: int) -> None:
            results = await evaluator.evaluate(input=i)
            assert len(results) == 4
            done.append(i)

        for i in range(15):
            tg.start_soon(request, i)
        await wait_until(lambda: probe.in_flight == 5)
        await settle()
        assert probe.in_flight == 5
        gate.set()
    assert probe.max_in_flight == 5
    assert sorted(done) == list(range(15))
    assert idle(evaluator)


async def test_queued_time_is_recorded_apart_from_working_time() -> None:
    """A judge that waited for a slot reports the wait in queued_s, not in duration_s."""
    first_gate, second_gate = anyio.Event(), anyio.Event()
    first = ScriptedJudge(True, gate=first_gate, name="first")
    second = ScriptedJudge(True, gate=second_gate, name="second")
    evaluator = Evaluator([first, second], max_concurrency=1)
    second_gate.set()
    async with anyio.create_task_group() as tg:
        results = []

        async def evaluate() -> None:
            results.extend(await evaluator.evaluate(CTX))

        tg.start_soon(evaluate)
        await first.started.wait()
        await anyio.sleep(0.05)  # hold the only slot so the second judge queues for it
        first_gate.set()
    assert results[1].queued_s >= 0.04
    assert results[1].duration_s < results[1].queued_s
    assert results[0].duration_s >= 0.04


# --------------------------------------------------------------------------- timeouts


async def test_timeout_becomes_error() -> None:
    """A judge that never answers becomes ERROR with error_type "TimeoutError"."""
    hang = ScriptedJudge(True, hang=True, name="hang")
    result = (await Evaluator(hang, timeout=0.02, retry=None).evaluate(CTX))[0]
    assert result.status is Status.ERROR
    assert result.error_type == "TimeoutError"
    assert result.attempts == 1
    assert "timed out" in (result.reasoning or "")
    assert hang.cancelled == 1


async def test_timeout_is_per_attempt_and_retried() -> None:
    """Timeouts are retried by default: each attempt gets the full timeout again."""
    hang = ScriptedJudge(True, hang=True, name="hang")
    evaluator = Evaluator(hang, timeout=0.02, retry=RetryPolicy(attempts=2, initial_delay=0))
    result = (await evaluator.evaluate(CTX))[0]
    assert result.error_type == "TimeoutError"
    assert result.attempts == 2
    assert hang.calls == 2 and hang.cancelled == 2


async def test_slow_judge_within_timeout_passes() -> None:
    """A judge finishing before the timeout is unaffected; timeout=None disables it."""
    slow = ScriptedJudge(True, latency=0.02, name="slow")
    assert (await Evaluator(slow, timeout=5).evaluate(CTX))[0].status is Status.PASS
    assert (await Evaluator(slow, timeout=None).evaluate(CTX))[0].status is Status.PASS


async def test_sync_judge_timeout_becomes_error() -> None:
    """A blocking sync judge past the timeout becomes ERROR without blocking the loop."""
    release = threading.Event()

    def blocking(ctx: Context) -> bool:
        release.wait(5)
        return True

    try:
        result = (await Evaluator(blocking, timeout=0.05, retry=None).evaluate(CTX))[0]
    finally:
        release.set()
    assert result.status is Status.ERROR
    assert result.error_type == "TimeoutError"


# --------------------------------------------------------------------------- retries


async def test_retryable_error_twice_then_pass() -> None:
    """A judge failing twice with RetryableError then passing gives PASS with attempts=3."""
    flaky = ScriptedJudge(True, fail_times=2, name="flaky")
    result = (await Evaluator(flaky, retry=NO_WAIT).evaluate(CTX))[0]
    assert result.status is Status.PASS
    assert result.attempts == 3
    assert result.error_type is None
    assert flaky.calls == 3


async def test_retries_exhausted_gives_error_with_last_exception() -> None:
    """When every attempt fails the result is ERROR with the last error and all attempts."""
    flaky = ScriptedJudge(True, fail_times=10, name="flaky")
    result = (await Evaluator(flaky, retry=NO_WAIT).evaluate(CTX))[0]
    assert result.status is Status.ERROR
    assert result.error_type == "RetryableError"
    assert result.attempts == 3
    assert "scripted failure" in (result.reasoning or "")
    assert flaky.calls == 3


async def test_retry_none_means_one_attempt() -> None:
    """retry=None makes a single attempt even for a RetryableError."""
    flaky = ScriptedJudge(True, fail_times=1, name="flaky")
    result = (await Evaluator(flaky, retry=None).evaluate(CTX))[0]
    assert (result.status, result.attempts, flaky.calls) == (Status.ERROR, 1, 1)


@pytest.mark.timing
async def test_retry_after_is_honoured_beyond_max_delay() -> None:
    """RetryableError.retry_after is waited even when it exceeds RetryPolicy.max_delay."""
    error = RetryableError("rate limited", retry_after=0.2)
    flaky = ScriptedJudge(True, fail_times=1, error=error, name="flaky")
    policy = RetryPolicy(attempts=2, initial_delay=0.0, max_delay=0.0, jitter=False)
    started = time.perf_counter()
    result = (await Evaluator(flaky, retry=policy).evaluate(CTX))[0]
    elapsed = time.perf_counter() - started
    assert result.status is Status.PASS
    assert result.attempts == 2
    assert elapsed >= 0.15


async def test_retry_after_overrides_the_backoff() -> None:
    """retry_after=0 retries at once even when the backoff would wait 10 s."""
    error = RetryableError("try again", retry_after=0)
    flaky = ScriptedJudge(True, fail_times=2, error=error, name="flaky")
    policy = RetryPolicy(attempts=3, initial_delay=10.0, max_delay=10.0, jitter=False)
    with anyio.fail_after(3):
        result = (await Evaluator(flaky, retry=policy).evaluate(CTX))[0]
    assert (result.status, result.attempts) == (Status.PASS, 3)


async def test_retry_on_custom_exception_types() -> None:
    """RetryPolicy.retry_on decides what is retried."""
    flaky = ScriptedJudge(True, fail_times=1, error=ConnectionError, name="flaky")
    policy = RetryPolicy(attempts=2, initial_delay=0, retry_on=(ConnectionError,))
    result = (await Evaluator(flaky, retry=policy).evaluate(CTX))[0]
    assert (result.status, result.attempts) == (Status.PASS, 2)


def test_retryable_error_rejects_bad_retry_after() -> None:
    """RetryableError(retry_after=...) must be finite and >= 0."""
    assert RetryableError("x").retry_after is None
    assert RetryableError("x", retry_after=1.5).retry_after == 1.5
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="retry_after"):
            RetryableError("x", retry_after=bad)


# --------------------------------------------------------------------------- failure as data


async def test_non_retryable_exception_becomes_error_after_one_attempt() -> None:
    """A ValueError becomes ERROR at once: error_type "ValueError", message in reasoning."""
    broken = ScriptedJudge(True, fail_times=1, error=ValueError("bad config: k"), name="broken")
    result = (await Evaluator(broken).evaluate(CTX))[0]
    assert result.status is Status.ERROR
    assert result.error_type == "ValueError"
    assert "bad config: k" in (result.reasoning or "")
    assert result.attempts == 1
    assert broken.calls == 1


async def test_exception_without_message_still_has_reasoning() -> None:
    """An exception with an empty message yields a non-blank reasoning naming the type."""

    async def silent(ctx: Context) -> Judgment:
        raise KeyError

    result = (await Evaluator(silent).evaluate(CTX))[0]
    assert result.error_type == "KeyError"
    assert "KeyError" in (result.reasoning or "")


async def test_exception_from_sync_judge_becomes_error() -> None:
    """An exception raised on the worker thread becomes ERROR like any other."""

    def sync_broken(ctx: Context) -> bool:
        raise ZeroDivisionError("division by zero")

    result = (await Evaluator(sync_broken).evaluate(CTX))[0]
    assert (result.status, result.error_type) == (Status.ERROR, "ZeroDivisionError")
    assert "division by zero" in (result.reasoning or "")


async def test_failure_of_one_judge_does_not_stop_the_others() -> None:
    """One judge raising leaves the others' results intact."""
    judges = [
        ScriptedJudge(True, name="a"),
        ScriptedJudge(True, fail_times=1, error=RuntimeError("boom"), name="b"),
        ScriptedJudge(False, latency=0.01, name="c"),
    ]
    results = await Evaluator(judges).evaluate(CTX)
    assert [(r.name, r.status) for r in results] == [
        ("a", Status.PASS),
        ("b", Status.ERROR),
        ("c", Status.FAIL),
    ]


async def test_judge_result_carries_metric_key_and_context() -> None:
    """Results carry the judge's metric_key; the judge receives the submitted context."""
    j = ScriptedJudge(0.8, metric_key="accuracy", name="acc")
    results = await Evaluator(j).evaluate(input="q", output="a", metadata={"case_id": "c1"})
    assert results[0].metric_key == "accuracy"
    assert results[0].score == pytest.approx(0.8)
    assert j.contexts[0].output == "a"
    assert j.contexts[0].metadata["case_id"] == "c1"


async def test_context_fields_override_given_context() -> None:
    """evaluate(ctx, **fields) evaluates ctx with those fields replaced."""
    j = ScriptedJudge(True, name="j")
    await Evaluator(j).evaluate(CTX, output="replaced")
    assert (j.contexts[0].input, j.contexts[0].output) == ("q", "replaced")


async def test_non_context_positional_is_a_type_error() -> None:
    """evaluate() refuses something that is not a Context."""
    with pytest.raises(TypeError, match="Context"):
        await Evaluator(ScriptedJudge()).evaluate({"input": "q"})  # type: ignore[arg-type]

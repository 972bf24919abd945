"""Evaluations leave no reference cycles: what a case made is freed when it ends (issue 19.11).

An object in a reference cycle is freed only by the garbage collector, and everything it
holds waits with it. A jury left ~80 such objects per case: each member task's queue clock
held the task strongly from inside the task's own context (task -> context -> clock ->
task), keeping the task's frames and all they referenced alive, and a group's queued members
closed over the group (group -> queued entry -> launch closure -> group). The collector's
young collections per 1,000 W4 calls were 3.5 times the plain judge's. These tests run
evaluations with the collector off and saving what it finds, then count it.

A failure held the same way: the leaf kept its error in a local after recording it (error ->
traceback -> the leaf's frame -> error), and tenacity re-raised a retried call's last error
through frames whose locals hold its state, which holds the error; a timed-out judge with
retries left ~120 objects per case, every frame of its attempts among them. tenacity's own
objects still form cycles per retried call (its retrying object and state refer to each
other), but they no longer hold an error, a traceback or a frame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

import anyio
import pytest
from gc_support import cyclic_garbage, failure_kinds

from agentjudge import (
    Cascade,
    Context,
    Evaluator,
    Judgment,
    Jury,
    RetryPolicy,
    Tier,
    TierPolicy,
    judge,
)
from agentjudge.exceptions import RetryableError


@judge(name="slow_pass")
async def slow_pass(ctx: Context) -> Judgment:
    await anyio.sleep(0)  # it suspends, as a model call does
    return Judgment.passed("ok", score=0.9, confidence=0.9)


@judge(name="slow_fail")
async def slow_fail(ctx: Context) -> Judgment:
    await anyio.sleep(0)
    return Judgment.failed("no", score=0.1, confidence=0.9)


CASES = [Context(input=str(i), output="a") for i in range(40)]


def _run(subject: object, max_concurrency: int, concurrency: int) -> Callable[[], Awaitable[None]]:
    async def work() -> None:
        evaluator = Evaluator(subject, max_concurrency=max_concurrency)  # type: ignore[arg-type]
        async for case in evaluator.run(CASES, concurrency=concurrency):
            assert case.verdict.judgment is not None

    return work


@pytest.mark.parametrize(
    ("name", "subject", "max_concurrency"),
    [
        ("one judge", slow_pass, 8),
        ("jury, members as tasks", Jury([slow_pass, slow_fail, slow_pass]), 64),
        ("jury, members queued for slots", Jury([slow_pass, slow_fail, slow_pass]), 4),
        (
            "cascade",
            Cascade(
                [
                    Tier("cheap", slow_fail, TierPolicy.ACCEPT_ON_ALL_PASS),
                    Tier("panel", Jury([slow_pass, slow_pass]), TierPolicy.FINAL),
                ]
            ),
            4,
        ),
    ],
)
def test_run_leaves_nocyclic_garbage(name: str, subject: object, max_concurrency: int) -> None:
    """`Evaluator.run`: every object a case made is freed by reference counting."""
    assert cyclic_garbage(_run(subject, max_concurrency, concurrency=8)) == Counter(), name


def test_evaluate_leaves_nocyclic_garbage() -> None:
    """`Evaluator.evaluate` of a jury, cases in tasks of their own (as a web service's)."""

    async def work() -> None:
        evaluator = Evaluator(Jury([slow_pass, slow_fail, slow_pass]), max_concurrency=6)
        async with anyio.create_task_group() as tg:
            for ctx in CASES:
                tg.start_soon(evaluator.evaluate, ctx)

    assert cyclic_garbage(work) == Counter()


@judge(name="boom")
async def boom(ctx: Context) -> Judgment:
    await anyio.sleep(0)
    raise RuntimeError("the judge failed")


@judge(name="flaky")
async def flaky(ctx: Context) -> Judgment:
    await anyio.sleep(0)
    raise RetryableError("the provider is overloaded")


@judge(name="hangs")
async def hangs(ctx: Context) -> Judgment:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


NO_WAIT = RetryPolicy(attempts=2, initial_delay=0.0, max_delay=0.0, jitter=False)


def test_a_failing_judge_leaves_nocyclic_garbage() -> None:
    """A judge that raises (no retries): its error and frames are freed as the case ends."""
    found = cyclic_garbage(_run(boom, 4, concurrency=8))
    assert found == Counter()


@pytest.mark.parametrize(
    ("subject", "options"),
    [
        (flaky, {"retry": NO_WAIT}),
        (hangs, {"retry": NO_WAIT, "timeout": 0.001}),
    ],
    ids=["raises, retried", "times out, retried"],
)
def test_a_retried_failure_keeps_no_error_or_frame_in_a_cycle(
    subject: object, options: dict[str, object]
) -> None:
    """Retried through tenacity: no error, traceback or frame left for the collector."""

    async def work() -> None:
        evaluator = Evaluator(subject, max_concurrency=4, **options)  # type: ignore[arg-type]
        async for case in evaluator.run(CASES[:16], concurrency=8):
            assert case.verdict.results[0].attempts == 2

    assert failure_kinds(cyclic_garbage(work)) == Counter()


def test_streams_leave_no_cyclic_garbage() -> None:
    """`Evaluator.stream` of a jury, read to the end."""
    results: list[str] = []

    async def work() -> None:
        evaluator = Evaluator(Jury([slow_pass, slow_fail, slow_pass]), max_concurrency=4)
        for ctx in CASES[:10]:
            async with evaluator.stream(ctx) as feed:
                async for result in feed:
                    results.append(result.name)

    assert cyclic_garbage(work) == Counter()
    assert len(results) == 2 * 10 * 3  # (the warm-up run and the counted one)


def test_a_cancelled_evaluation_leaves_no_cyclic_garbage() -> None:
    """The caller gives up on `evaluate` (its own timeout): cancellation propagates, and
    what the evaluation made is freed as it unwinds."""
    cancelled: list[bool] = []

    async def work() -> None:
        evaluator = Evaluator(hangs, max_concurrency=4)
        for ctx in CASES[:10]:
            with anyio.move_on_after(0.001) as scope:
                await evaluator.evaluate(ctx)
            cancelled.append(scope.cancelled_caught)

    assert cyclic_garbage(work) == Counter()
    assert cancelled == [True] * 20

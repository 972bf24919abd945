"""Instant judges: after a warm-up they run inline (no task, no scope each), with the same results.

A leaf counts as instant after `INSTANT_AFTER` attempts in a row that completed without
suspending. These tests warm a jury up, then check that the fast path keeps every promise of the
general one: timeouts, retries, errors as data, sampling, cascades, early stop, cancellation and
slots returned, and that a judge that suspends after all is demoted for good.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from engine_support import idle, wait_until

from agentjudge import (
    Cascade,
    Context,
    Evaluator,
    JudgeResult,
    Judgment,
    Jury,
    Majority,
    RetryableError,
    RetryPolicy,
    Status,
    Tier,
    TierPolicy,
)
from agentjudge.engine._learned import INSTANT_AFTER
from agentjudge.voting import ErrorPolicy

CTX = Context(input="q", output="a", expected="a")


class Switchable:
    """A judge that answers at once until told to raise or to wait (then it suspends)."""

    def __init__(self, name: str, answer: Judgment | None = None) -> None:
        self.name = name
        self.answer = answer or Judgment.passed(f"{name} ok")
        self.wait_for: anyio.Event | None = None
        self.raise_once: BaseException | None = None
        self.waiting = anyio.Event()
        self.calls = 0
        self.cancelled = 0

    async def __call__(self, ctx: Context) -> Judgment:
        self.calls += 1
        if self.raise_once is not None:
            exc, self.raise_once = self.raise_once, None
            raise exc
        if self.wait_for is not None:
            self.waiting.set()
            try:
                await self.wait_for.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
        return self.answer


def summary(results: Sequence[JudgeResult]) -> list[tuple[str, Status | None, int, bool]]:
    """The parts of results that do not depend on timing."""
    return [
        (r.name, None if r.judgment is None else r.judgment.status, r.attempts, r.sampled)
        for r in results
    ]


def quick_retry(attempts: int) -> RetryPolicy:
    """A retry policy with 10 ms backoff."""
    return RetryPolicy(attempts=attempts, initial_delay=0.01, max_delay=0.01)


async def warm_up(evaluator: Evaluator) -> None:
    """Evaluate until every leaf of the evaluator counts as instant."""
    for _ in range(INSTANT_AFTER):
        await evaluator.evaluate(CTX)
    assert all(evaluator._learned.instant(leaf.index) for leaf in evaluator._plan.leaves)


async def test_instant_jury_gives_the_same_results_before_and_after_warm_up() -> None:
    """The fast path changes nothing visible: same names, statuses, attempts and verdict."""
    judges = [
        Switchable("a"),
        Switchable("b", Judgment.failed("no")),
        Switchable("c", Judgment.from_score(0.75)),
    ]
    evaluator = Evaluator(judges)
    cold = await evaluator.verdict(CTX)
    await warm_up(evaluator)
    hot = await evaluator.verdict(CTX)
    assert summary(hot.results) == summary(cold.results)
    assert hot.judgment == cold.judgment
    assert idle(evaluator)


async def test_instant_judge_that_hangs_after_all_times_out_and_is_demoted() -> None:
    """A warmed-up judge that suspends and hangs gets the timeout; the others still answer."""
    a, b, c = Switchable("a"), Switchable("b"), Switchable("c")
    evaluator = Evaluator([a, b, c], timeout=0.2, retry=None)
    await warm_up(evaluator)
    b.wait_for = anyio.Event()  # never set
    results = await evaluator.evaluate(CTX)
    assert [r.name for r in results] == ["a", "b", "c"]
    timed_out = results[1]
    assert timed_out.judgment is not None and timed_out.judgment.status is Status.ERROR
    assert timed_out.error_type == "TimeoutError"
    assert "timed out after 0.2 s" in timed_out.judgment.reasoning
    assert b.cancelled == 1
    assert [r.judgment.status for r in (results[0], results[2]) if r.judgment] == [
        Status.PASS,
        Status.PASS,
    ]
    learned = evaluator._learned
    assert learned.suspends[1] and not learned.instant(1)
    assert learned.instant(0) and learned.instant(2)
    assert idle(evaluator)


async def test_timed_out_instant_judge_is_retried_by_the_policy() -> None:
    """A timeout on the fast path goes through the retry policy like any other."""
    a, b = Switchable("a"), Switchable("b")
    evaluator = Evaluator([a, b], timeout=0.2, retry=quick_retry(2))
    await warm_up(evaluator)
    release = anyio.Event()
    b.wait_for = release

    async def unblock_second_attempt() -> None:
        await wait_until(lambda: b.calls >= 2 + INSTANT_AFTER)
        release.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(unblock_second_attempt)
        results = await evaluator.evaluate(CTX)
    assert summary(results) == [("a", Status.PASS, 1, True), ("b", Status.PASS, 2, True)]
    assert idle(evaluator)


async def test_instant_judge_that_suspends_once_still_answers() -> None:
    """A warmed-up judge may suspend (a cache miss): it answers and the rest still run."""
    judges = [Switchable(n) for n in "abcd"]
    evaluator = Evaluator(judges)
    await warm_up(evaluator)
    judges[1].wait_for = release = anyio.Event()

    borrowed: list[int] = []

    async def answer_when_waiting() -> None:
        await judges[1].waiting.wait()
        borrowed.append(evaluator.limiter.borrowed_tokens)
        release.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_when_waiting)
        results = await evaluator.evaluate(CTX)
    assert summary(results) == [(n, Status.PASS, 1, True) for n in "abcd"]
    assert [j.calls for j in judges] == [INSTANT_AFTER + 1] * 4
    assert not evaluator._learned.instant(1)
    # The suspended judge holds a slot; the members after it went the general way, which
    # takes their slots up front (case-major fairness), so they may hold one too.
    assert len(borrowed) == 1 and borrowed[0] >= 1
    assert idle(evaluator)


async def test_instant_members_wait_their_turn_when_every_slot_is_taken() -> None:
    """With the global limit reached, instant members queue like any other and then run."""
    from agentjudge.engine._state import LeafStats as _Stats

    fast = [Switchable("a"), Switchable("b")]
    evaluator = Evaluator(Jury(fast), max_concurrency=1)
    await warm_up(evaluator)
    leaf, holder = evaluator._plan.leaves[0], _Stats()
    # another evaluation's member holds the one slot
    assert evaluator._admission.reserve(leaf, holder)
    results: list[JudgeResult] = []

    async def evaluate() -> None:
        results.extend(await evaluator.evaluate(CTX))

    async with anyio.create_task_group() as tg:
        tg.start_soon(evaluate)
        await wait_until(lambda: len(evaluator._admission.waiting) == 2)
        assert results == [] and [j.calls for j in fast] == [INSTANT_AFTER] * 2
        evaluator._admission.unreserve(leaf, holder)
    assert summary(results) == [("a", Status.PASS, 1, True), ("b", Status.PASS, 1, True)]
    assert idle(evaluator)


@pytest.mark.parametrize(
    ("error", "attempts", "status", "error_type"),
    [
        (RetryableError("flaky"), 2, Status.PASS, None),
        (ValueError("bad input"), 1, Status.ERROR, "ValueError"),
    ],
)
async def test_instant_judge_errors_follow_the_retry_policy(
    error: Exception, attempts: int, status: Status, error_type: str | None
) -> None:
    """On the fast path a retryable error is retried, any other one becomes an ERROR result."""
    a, b, c = Switchable("a"), Switchable("b"), Switchable("c")
    evaluator = Evaluator([a, b, c], retry=quick_retry(3))
    await warm_up(evaluator)
    b.raise_once = error
    results = await evaluator.evaluate(CTX)
    assert [r.attempts for r in results] == [1, attempts, 1]
    middle = results[1]
    assert middle.judgment is not None and middle.judgment.status is status
    assert middle.error_type == error_type
    if error_type is not None:
        assert middle.judgment.reasoning == "ValueError: bad input"
    assert results[0].judgment == a.answer and results[2].judgment == c.answer
    assert idle(evaluator)


async def test_cancelling_the_caller_while_an_instant_judge_suspends() -> None:
    """Cancellation propagates out of the fast path; nothing is recorded, every slot returns."""
    a, b, c = Switchable("a"), Switchable("b"), Switchable("c")
    recorded: list[JudgeResult] = []
    evaluator = Evaluator([a, b, c], on_result=recorded.append)
    await warm_up(evaluator)
    recorded.clear()
    b.wait_for = anyio.Event()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_when_waiting() -> None:
                await b.waiting.wait()
                scope.cancel()

            tg.start_soon(cancel_when_waiting)
            await evaluator.evaluate(CTX)
            pytest.fail("the evaluation should have been cancelled")
    assert scope.cancelled_caught
    assert b.cancelled == 1
    names = [r.name for r in recorded]
    # b never finished; c started concurrently (as on the general way) and may have answered.
    assert names[0] == "a" and "b" not in names
    assert c.calls in (INSTANT_AFTER, INSTANT_AFTER + 1)
    assert idle(evaluator)


async def test_sampling_on_the_fast_path() -> None:
    """Unsampled members of a warmed-up jury are reported unsampled and never called."""
    a, b = Switchable("a"), Switchable("b")
    evaluator = Evaluator([a, b], sampling={"b": 0.0})
    for _ in range(INSTANT_AFTER):
        await evaluator.evaluate(CTX)
    assert evaluator._learned.instant(0)
    results = await evaluator.evaluate(CTX)
    assert summary(results) == [("a", Status.PASS, 1, True), ("b", None, 0, False)]
    assert b.calls == 0


async def test_cascade_of_instant_tiers_short_circuits() -> None:
    """A warmed-up cascade still stops at the first deciding tier."""
    cheap_fail = Switchable("cheap", Judgment.failed("too short"))
    other = Switchable("other")
    expensive = Switchable("expensive")
    cascade = Cascade(
        [
            Tier("t1", Jury([cheap_fail, other]), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("t2", expensive, TierPolicy.FINAL),
        ]
    )
    evaluator = Evaluator(cascade)
    for _ in range(INSTANT_AFTER):
        await evaluator.verdict(CTX)
    verdict = await evaluator.verdict(CTX)
    assert verdict.judgment.status is Status.FAIL
    assert [t.name for t in verdict.tiers] == ["t1"]
    assert expensive.calls == 0
    assert idle(evaluator)


async def test_early_stop_on_the_fast_path_matches_the_general_path() -> None:
    """With early stop, members after the decision never run, warmed up or not."""
    judges = [Switchable(n) for n in "abcde"]
    voting = Majority(errors=ErrorPolicy.TREAT_AS_FAIL)
    evaluator = Evaluator(Jury(judges, voting=voting, early_stop=True))
    cold = await evaluator.verdict(CTX)
    for _ in range(INSTANT_AFTER):
        await evaluator.verdict(CTX)
    hot = await evaluator.verdict(CTX)
    assert summary(hot.results) == summary(cold.results)
    assert [r.name for r in hot.results] == ["a", "b", "c"]
    assert judges[4].calls == 0
    assert hot.judgment.status is Status.PASS


async def test_return_values_are_coerced_the_same_on_the_fast_path() -> None:
    """bool / float / garbage returns give the same judgments and errors warmed up or not."""
    from agentjudge import judge, named

    async def yes(ctx: Context) -> bool:
        return True

    async def score(ctx: Context) -> float:
        return 0.25

    async def garbage(ctx: Context) -> object:
        return "not a judgment"

    @judge(name="decorated")
    async def decorated(ctx: Context) -> bool:
        return False

    judges = {"yes": yes, "score": score, "garbage": garbage, "dec": named(decorated, "renamed")}
    evaluator = Evaluator(judges, retry=None)
    cold = await evaluator.evaluate(CTX)
    await warm_up(evaluator)
    hot = await evaluator.evaluate(CTX)
    assert [(r.name, r.judgment, r.error_type) for r in hot] == [
        (r.name, r.judgment, r.error_type) for r in cold
    ]
    assert hot[2].error_type == "JudgeReturnError"
    assert hot[0].judgment is not None and hot[0].judgment.reasoning.endswith("returned True")

"""Per-judge timeouts and per-call deadlines: what ran out of time names the limit that fired."""

from __future__ import annotations

import time

import anyio
import pytest

from agentjudge import Evaluator, OnlineResult, RetryableError, RetryPolicy, Status
from agentjudge.engine._deadline import BACKSTOP_S
from agentjudge.testing import ScriptedJudge

NO_RETRY = RetryPolicy(attempts=1)


async def test_timeouts_mapping_overrides_the_evaluator_timeout_per_judge() -> None:
    """timeouts={name: s} bounds that judge alone; the message names timeouts[name]."""
    fast = ScriptedJudge(True, hang=True, name="regex")
    slow = ScriptedJudge(True, latency=0.05, name="llm")
    evaluator = Evaluator([fast, slow], timeout=30, timeouts={"regex": 0.01}, retry=NO_RETRY)
    regex, llm = await evaluator.evaluate(input="q")
    assert regex.status is Status.ERROR and regex.error_type == "TimeoutError"
    assert "timeouts['regex']" in (regex.reasoning or "")
    assert llm.status is Status.PASS


async def test_a_judges_attempt_timeout_attribute() -> None:
    """A judge's own attempt_timeout applies when the mapping does not name it."""
    judge = ScriptedJudge(True, hang=True, name="j")
    judge.attempt_timeout = 0.01  # type: ignore[attr-defined]
    (result,) = await Evaluator(judge, timeout=30, retry=NO_RETRY).evaluate(input="q")
    assert "its attempt_timeout" in (result.reasoning or "")


async def test_the_evaluator_timeout_is_named_too() -> None:
    """The default timeout's message says it was the evaluator's timeout."""
    judge = ScriptedJudge(True, hang=True, name="j")
    (result,) = await Evaluator(judge, timeout=0.01, retry=NO_RETRY).evaluate(input="q")
    assert "the evaluator's timeout" in (result.reasoning or "")


def test_timeouts_are_validated_against_the_judges() -> None:
    """Unknown names and bad values are ValueErrors naming them, like limits."""
    judge = ScriptedJudge(True, name="j")
    with pytest.raises(ValueError, match="timeouts names unknown judges \\['k'\\]"):
        Evaluator(judge, timeouts={"k": 1.0})
    with pytest.raises(ValueError, match="timeouts\\['j'\\]"):
        Evaluator(judge, timeouts={"j": 0})
    judge.attempt_timeout = "soon"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="attempt_timeout"):
        Evaluator(judge)


async def test_a_deadline_cuts_a_hanging_judge_short_and_names_the_deadline() -> None:
    """evaluate(deadline=) ends a judge that never returns: ERROR TimeoutError, deadline named."""
    judge = ScriptedJudge(True, hang=True, name="j")
    (result,) = await Evaluator(judge, timeout=None).evaluate(input="q", deadline=0.02)
    assert result.status is Status.ERROR and result.error_type == "TimeoutError"
    assert "deadline (0.02 s)" in (result.reasoning or "")
    assert judge.cancelled == 1


async def test_no_retry_wait_outlives_the_deadline() -> None:
    """A retry wait longer than the deadline is cut short at the deadline."""
    judge = ScriptedJudge(True, fail_times=5, error=RetryableError("busy", retry_after=3600))
    evaluator = Evaluator(judge, retry=RetryPolicy(attempts=5))
    with anyio.fail_after(10):  # without the deadline this would wait an hour
        verdict = await evaluator.verdict(input="q", deadline=0.05)
    (result,) = verdict.results
    assert result.status is Status.ERROR and "deadline" in (result.reasoning or "")
    assert result.attempts == 1


async def test_no_slot_wait_outlives_the_deadline() -> None:
    """A judge queued behind a busy slot gets a deadline TimeoutError, never the slot."""
    hold = ScriptedJudge(True, hang=True, name="hold")
    queued = ScriptedJudge(True, name="queued")
    evaluator = Evaluator([hold, queued], max_concurrency=1, timeout=None)
    verdict = await evaluator.verdict(input="q", deadline=0.03)
    assert [r.status for r in verdict.results] == [Status.ERROR, Status.ERROR]
    assert queued.calls == 0
    assert verdict.judgment.status is Status.ERROR


async def test_a_deadline_that_is_not_needed_changes_nothing() -> None:
    """A generous deadline gives the same verdict as none."""
    evaluator = Evaluator([ScriptedJudge(True, name="a"), ScriptedJudge(False, name="b")])
    with_deadline = await evaluator.verdict(input="q", deadline=60)
    without = await evaluator.verdict(input="q")
    assert with_deadline.judgment.status == without.judgment.status
    assert [r.status for r in with_deadline.results] == [r.status for r in without.results]


async def test_bad_deadlines_are_value_errors() -> None:
    """A deadline must be seconds > 0."""
    evaluator = Evaluator(ScriptedJudge(True))
    with pytest.raises(ValueError, match="deadline"):
        await evaluator.evaluate(input="q", deadline=0)


async def test_offer_deadline_bounds_the_background_evaluation() -> None:
    """offer(deadline=) is measured from the offer; a hanging judge ends as errored."""
    got: list[OnlineResult] = []
    judge = ScriptedJudge(True, hang=True, name="j")
    async with Evaluator(judge, timeout=None).background(sinks=[got.append]) as background:
        background.offer(input="q", deadline=0.02)
    (result,) = got
    assert result.verdict is not None
    assert "deadline (0.02 s)" in result.verdict.results[0].judgment.reasoning  # type: ignore[union-attr]
    assert background.statistics()["errored"] == 1


async def test_an_offer_whose_worker_starts_after_its_deadline_still_names_its_judges() -> None:
    """A worker that starts past the deadline (and its backstop) still records each judge.

    Under load the background worker may reach an offer only after its deadline passed; the
    evaluation is then still ERROR naming the deadline per judge, not an empty result list
    (this made `test_offer_deadline_bounds_the_background_evaluation` flaky). The event loop
    is held busy here, as a loaded machine would, until well past the deadline.
    """
    got: list[OnlineResult] = []
    judge = ScriptedJudge(True, hang=True, name="j")
    async with Evaluator(judge, timeout=None).background(sinks=[got.append]) as background:
        background.offer(input="q", deadline=0.02)
        offered = anyio.current_time()
        while anyio.current_time() < offered + 0.02 + 2 * BACKSTOP_S:
            time.sleep(0.01)  # blocks the loop: the worker cannot start before the deadline
    (result,) = got
    assert result.verdict is not None
    (judged,) = result.verdict.results
    assert judged.status is Status.ERROR and judged.error_type == "TimeoutError"
    assert "ran out of the evaluation's deadline (0.02 s)" in (judged.reasoning or "")


async def test_submit_deadline_cuts_a_hanging_judge_short_and_names_the_deadline() -> None:
    """submit(deadline=) bounds the evaluation even while nobody awaits the handle."""
    judge = ScriptedJudge(True, hang=True, name="j")
    async with Evaluator(judge, timeout=None) as evaluator:
        handle = evaluator.submit(input="q", deadline=0.02)
        with anyio.fail_after(10):
            while not handle.done():  # nobody awaits it: the deadline alone ends it
                await anyio.sleep(0.005)
        (result,) = await handle
    assert result.status is Status.ERROR and result.error_type == "TimeoutError"
    assert "ran out of the evaluation's deadline (0.02 s)" in (result.reasoning or "")
    # The judge started and was cut short -- or, on a loaded machine, the deadline passed
    # before it could start (the backstop above then gives the same TimeoutError; seen once
    # in CI): either way nothing of it is left running.
    assert judge.calls <= 1 and judge.cancelled == judge.calls


async def test_submit_deadline_bounds_retry_waits() -> None:
    """A retry wait of an hour is cut short by submit's deadline, which names itself."""
    judge = ScriptedJudge(True, fail_times=5, error=RetryableError("busy", retry_after=3600))
    async with Evaluator(judge, retry=RetryPolicy(attempts=5)) as evaluator:
        with anyio.fail_after(10):
            verdict = await evaluator.submit(input="q", deadline=0.05).verdict()
    (result,) = verdict.results
    assert result.error_type == "TimeoutError" and result.attempts == 1
    assert "deadline (0.05 s) after 1 attempt" in (result.reasoning or "")


async def test_submit_deadline_bounds_rate_limit_waits() -> None:
    """A call waiting for the model client's rate limit gives up at submit's deadline."""
    from agentjudge import CorrectnessJudge
    from agentjudge.models import OpenAIChat, RateLimit
    from agentjudge.testing import FakeModelServer, FakeResponse

    async with (
        FakeModelServer(FakeResponse(text="Answer: YES\nReasoning: ok")) as server,
        OpenAIChat(
            "m", base_url=server.base_url, api_key="k", rate_limit=RateLimit(rpm=1, period=3600)
        ) as model,
        Evaluator(CorrectnessJudge(model, name="llm"), timeout=None) as evaluator,
    ):
        first = await evaluator.submit(input="q", output="a").verdict()  # spends the budget
        with anyio.fail_after(10):  # without the deadline: an hour
            second = await evaluator.submit(input="q", output="a", deadline=0.1).verdict()
    assert first.judgment.status is Status.PASS
    (result,) = second.results
    assert result.error_type == "TimeoutError"
    assert "judge 'llm' ran out of the evaluation's deadline (0.1 s)" in (result.reasoning or "")
    assert len(server.requests) == 1


async def test_submit_deadline_is_validated() -> None:
    """A submit deadline must be seconds > 0 (checked before anything starts)."""
    async with Evaluator(ScriptedJudge(True)) as evaluator:
        with pytest.raises(ValueError, match="deadline"):
            evaluator.submit(input="q", deadline=-1)

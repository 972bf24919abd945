"""The fused path for a flat jury of instant judges gives exactly what the general path gives.

Two evaluators are built from the same configuration: in one every leaf is marked instant (the
fused inline path), in the other every leaf is marked as suspending (never instant: the general
path, a task slot per member). Everything but the timing fields must match: names, judgments,
sampled flags, attempts, error types, order, the verdict and the result callback's sequence.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
from engine_support import idle

from agentjudge import (
    Context,
    Evaluator,
    JudgeResult,
    Judgment,
    Jury,
    Majority,
    Status,
    Verdict,
    WeightedAverage,
    judge,
)
from agentjudge.engine._learned import INSTANT_AFTER
from agentjudge.voting import ErrorPolicy

CTX = Context(input="q", output="a", expected="a")


def instant_and_general(build: Callable[[], Evaluator]) -> tuple[Evaluator, Evaluator]:
    """Two evaluators from ``build``: every leaf instant in the first, none in the second."""
    fast, general = build(), build()
    for leaf in fast._plan.leaves:
        fast._learned.streak[leaf.index] = INSTANT_AFTER
    for leaf in general._plan.leaves:
        general._learned.suspends[leaf.index] = True
    return fast, general


def count_general_calls(evaluator: Evaluator, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the evaluator's calls of the general (task) way; the list holds one counter."""
    from agentjudge.engine import _scheduler

    calls = [0]
    original = _scheduler._Members.__init__

    def spy(self: Any, scheduler: Any, *args: Any) -> None:
        if scheduler is evaluator._scheduler:
            calls[0] += 1
        original(self, scheduler, *args)

    monkeypatch.setattr(_scheduler._Members, "__init__", spy)
    return calls


def shape(verdict: Verdict) -> tuple[Any, ...]:
    """Everything in a verdict except the timing fields."""
    return (
        verdict.judgment,
        [
            (r.name, r.judgment, r.sampled, r.attempts, r.error_type, r.metric_key, r.tier)
            for r in verdict.results
        ],
        verdict.tiers,
    )


async def passes(ctx: Context) -> Judgment:
    return Judgment.passed("fine")


async def fails(ctx: Context) -> Judgment:
    return Judgment.failed("wrong")


async def abstains(ctx: Context) -> Judgment:
    return Judgment.abstained("cannot tell")


async def raises(ctx: Context) -> Judgment:
    raise ValueError("bad input")


async def garbage(ctx: Context) -> object:
    return "not a judgment"


async def yes(ctx: Context) -> bool:
    return True


async def score(ctx: Context) -> float:
    return 0.25


@judge(name="decorated")
async def decorated(ctx: Context) -> bool:
    return False


ALL_KINDS: dict[str, Callable[..., Any]] = {
    "passes": passes,
    "fails": fails,
    "abstains": abstains,
    "raises": raises,
    "garbage": garbage,
    "yes": yes,
    "score": score,
    "decorated": decorated,
}


async def test_every_kind_of_return_matches_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pass, fail, abstain, raise, garbage, bool, float and decorated judges: same verdict."""
    fast, general = instant_and_general(lambda: Evaluator(ALL_KINDS, retry=None))
    fast_general_calls = count_general_calls(fast, monkeypatch)
    general_calls = count_general_calls(general, monkeypatch)
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    assert fast_general_calls == [0] and general_calls == [1]
    by_name = hot.by_name
    assert by_name["raises"].error_type == "ValueError"
    assert by_name["garbage"].error_type == "JudgeReturnError"
    assert all(r.queued_s == 0.0 and r.duration_s >= 0.0 for r in hot.results)
    assert idle(fast) and idle(general)


@pytest.mark.parametrize(
    "voting",
    [Majority(), Majority(errors=ErrorPolicy.TREAT_AS_FAIL), WeightedAverage(threshold=0.5)],
    ids=["majority", "majority-errors-fail", "weighted-average"],
)
async def test_weighted_juries_match_the_general_path(voting: Any) -> None:
    """Weights reach the voting the same way on both paths, unsampled members left out."""
    judges = {"p": passes, "f": fails, "s": score, "r": raises, "y": yes}

    def build() -> Evaluator:
        return Evaluator(
            Jury(judges, voting=voting, weights=[1.0, 3.0, 2.0, 0.5, 1.5]),
            retry=None,
            sampling={"y": 0.0},
        )

    fast, general = instant_and_general(build)
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    assert hot.by_name["y"].sampled is False


@pytest.mark.parametrize(
    "judges",
    [[passes, yes, passes, fails, abstains], [fails, raises, passes, fails, passes]],
    ids=["passes-early", "fails-early"],
)
async def test_early_stop_juries_match_the_general_path(judges: list[Callable[..., Any]]) -> None:
    """With early stop, the same members run and the same decision comes out on both paths."""

    def build() -> Evaluator:
        voting = Majority(errors=ErrorPolicy.TREAT_AS_FAIL)
        return Evaluator(Jury(judges, voting=voting, early_stop=True))

    fast, general = instant_and_general(build)
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    assert len(hot.results) < len(judges)


async def test_sampling_draws_match_the_general_path() -> None:
    """Rates below 1 draw from the rng in the same order: same seed, same sampled flags."""
    judges = {"always": passes, "half": fails, "third": yes, "tenth": score}
    sampling = {"half": 0.5, "third": 1 / 3, "tenth": 0.1}

    def build() -> Evaluator:
        return Evaluator(judges, sampling=sampling, rng=random.Random(20240607))

    fast, general = instant_and_general(build)
    hot = [shape(await fast.verdict(CTX)) for _ in range(40)]
    cold = [shape(await general.verdict(CTX)) for _ in range(40)]
    assert hot == cold
    flags = {tuple(r[2] for r in h[1]) for h in hot}
    assert len(flags) > 1  # the draws really varied


class NoDraws(random.Random):
    """An rng that fails the test if it is ever asked for a number."""

    def random(self) -> float:
        raise AssertionError("no sampling draw expected")


async def test_no_rate_below_one_means_no_draws() -> None:
    """When every judge runs every time the rng is never consulted, on either path."""
    fast, general = instant_and_general(
        lambda: Evaluator([passes, fails, score], sampling={"passes": 1.0}, rng=NoDraws())
    )
    assert shape(await fast.verdict(CTX)) == shape(await general.verdict(CTX))
    assert (await fast.verdict(CTX)).results[0].sampled


async def test_result_callbacks_see_the_same_sequence() -> None:
    """on_result gets the same results in the same order (unsampled ones included)."""
    seen: dict[str, list[tuple[str, Judgment | None, bool]]] = {"fast": [], "general": []}

    def recorder(key: str) -> Callable[[JudgeResult], Any]:
        async def record(result: JudgeResult) -> None:
            seen[key].append((result.name, result.judgment, result.sampled))
            await anyio.sleep(0)  # a callback that suspends: the loop re-checks slots after it

        return record

    judges = {"a": passes, "b": fails, "c": raises, "d": score}
    fast = Evaluator(judges, retry=None, sampling={"d": 0.0}, on_result=recorder("fast"))
    general = Evaluator(judges, retry=None, sampling={"d": 0.0}, on_result=recorder("general"))
    for leaf in fast._plan.leaves:
        fast._learned.streak[leaf.index] = INSTANT_AFTER
    for leaf in general._plan.leaves:
        general._learned.suspends[leaf.index] = True
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    assert seen["fast"] == seen["general"]
    # Unsampled members are recorded before the group starts, on both ways.
    assert [name for name, *_ in seen["fast"]] == ["d", "a", "b", "c"]
    assert idle(fast) and idle(general)


class SuspendsOnce:
    """Answers at once, except that its next call suspends once (a cache miss)."""

    def __init__(self) -> None:
        self.suspend_next = False
        self.calls = 0

    async def __call__(self, ctx: Context) -> Judgment:
        self.calls += 1
        if self.suspend_next:
            self.suspend_next = False
            await anyio.sleep(0)
        return Judgment.from_score(0.5)


async def test_a_member_that_suspends_once_on_the_fused_path() -> None:
    """A surprise suspension still answers, holds a slot meanwhile, and is demoted for good."""
    surprise: list[SuspendsOnce] = []

    def build() -> Evaluator:
        surprise.append(SuspendsOnce())
        return Evaluator({"a": passes, "b": surprise[-1], "c": fails}, max_concurrency=2)

    fast, general = instant_and_general(build)
    surprise[0].suspend_next = surprise[1].suspend_next = True
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    learned = fast._learned
    assert learned.suspends[1] and not learned.instant(1)
    assert learned.instant(0) and learned.instant(2)
    # Demoted: later evaluations take the general way for that member, same results again.
    again = await fast.verdict(CTX)
    assert shape(again) == shape(cold)
    assert idle(fast) and idle(general)


async def test_instant_prefix_then_a_cold_member() -> None:
    """The loop runs the instant members before a cold one inline and hands the rest over."""
    cold_judge = SuspendsOnce()

    def build() -> Evaluator:
        return Evaluator({"a": passes, "cold": cold_judge, "c": fails, "d": yes})

    fast, general = instant_and_general(build)
    fast._learned.streak[1] = 0  # not instant yet
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    assert fast._learned.streak[1] == 1  # counted on the general way


@pytest.mark.parametrize("path", ["fast", "general"])
async def test_cancelled_before_the_call(path: str) -> None:
    """An already-cancelled caller gets Cancelled: no judge runs, nothing is recorded."""
    calls: list[str] = []
    recorded: list[JudgeResult] = []

    async def counted(ctx: Context) -> Judgment:
        calls.append("called")
        return Judgment.passed("ok")

    fast, general = instant_and_general(
        lambda: Evaluator([counted, passes], on_result=recorded.append)
    )
    evaluator = fast if path == "fast" else general
    with anyio.CancelScope() as scope:
        scope.cancel()
        await evaluator.verdict(CTX)
        pytest.fail("the evaluation should have been cancelled")
    assert scope.cancelled_caught
    assert calls == [] and recorded == []
    assert idle(evaluator)


async def test_voting_failure_is_an_error_verdict_on_both_paths() -> None:
    """A voting strategy that raises gives the same ERROR verdict on both paths."""

    class Broken(Majority):
        def aggregate(
            self, judgments: Sequence[Judgment], weights: Sequence[float] | None = None
        ) -> Judgment:
            raise RuntimeError("boom")

    fast, general = instant_and_general(lambda: Evaluator(Jury([passes, fails], voting=Broken())))
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    assert hot.judgment.status is Status.ERROR and "boom" in hot.judgment.reasoning


async def test_without_a_timeout_a_surprise_suspension_still_answers() -> None:
    """With ``timeout=None`` the loop has no guard scope; a suspending member still answers."""
    surprise: list[SuspendsOnce] = []

    def build() -> Evaluator:
        surprise.append(SuspendsOnce())
        return Evaluator({"a": passes, "b": surprise[-1], "c": fails}, timeout=None)

    fast, general = instant_and_general(build)
    surprise[0].suspend_next = surprise[1].suspend_next = True
    hot, cold = await fast.verdict(CTX), await general.verdict(CTX)
    assert shape(hot) == shape(cold)
    assert fast._learned.suspends[1] and surprise[0].calls == 1
    assert idle(fast) and idle(general)

"""Sampling: per-judge rates, a seeded rng, draws at submit time in configured order."""

from __future__ import annotations

import random

import anyio
import pytest

from agentjudge import Cascade, Context, Evaluator, JudgeResult, Status, Tier, TierPolicy
from agentjudge.testing import ScriptedJudge

CTX = Context(input="q")
SEED = 3  # draws 0.238, 0.544, 0.370, ...


def twin_draws(n: int) -> list[float]:
    """The first ``n`` draws of a fresh Random(SEED)."""
    rng = random.Random(SEED)
    return [rng.random() for _ in range(n)]


async def test_rates_zero_and_one_never_draw() -> None:
    """Rates 0.0 and 1.0 never consume the rng; rate 0 never runs the judge."""
    never = ScriptedJudge(True, name="never")
    always = ScriptedJudge(True, name="always")
    rng = random.Random(SEED)
    state = rng.getstate()
    evaluator = Evaluator([never, always], sampling={"never": 0.0, "always": 1.0}, rng=rng)
    for _ in range(5):
        results = await evaluator.evaluate(CTX)
        assert [(r.name, r.sampled) for r in results] == [("never", False), ("always", True)]
    assert rng.getstate() == state
    assert (never.calls, always.calls) == (0, 5)


async def test_unsampled_judge_result_shape() -> None:
    """An unsampled judge yields sampled=False, judgment None and is never called."""
    skipped = ScriptedJudge(True, name="skipped", metric_key="m")
    results = await Evaluator(skipped, sampling={"skipped": 0.0}).evaluate(CTX)
    assert len(results) == 1
    result = results[0]
    assert (result.name, result.sampled, result.judgment) == ("skipped", False, None)
    assert result.status is None and result.score is None and not result.success
    assert result.metric_key == "m"
    assert skipped.calls == 0


async def test_other_rates_draw_once_per_judge_in_configured_order() -> None:
    """Fractional rates draw rng.random() once per judge, in configured order; < rate runs."""
    draws = twin_draws(3)
    rates = {"a": 0.3, "b": 0.5, "c": 0.4}
    expected = [d < r for d, r in zip(draws, rates.values(), strict=True)]
    assert expected == [True, False, True]  # the seed makes the order observable
    judges = [ScriptedJudge(True, name=n) for n in rates]
    rng = random.Random(SEED)
    results = await Evaluator(judges, sampling=rates, rng=rng).evaluate(CTX)
    assert [r.sampled for r in results] == expected
    assert [j.calls for j in judges] == [1, 0, 1]
    twin = random.Random(SEED)
    for _ in range(3):
        twin.random()
    assert rng.getstate() == twin.getstate()


async def test_draws_happen_at_submit_time() -> None:
    """submit() takes every draw before any judge runs."""
    gate = anyio.Event()
    judges = [ScriptedJudge(True, gate=gate, name=n) for n in ("a", "b")]
    rng = random.Random(SEED)
    twin = random.Random(SEED)
    twin.random()
    twin.random()
    evaluator = Evaluator(judges, sampling={"a": 0.9, "b": 0.9}, rng=rng)
    async with evaluator:
        handle = evaluator.submit(CTX)
        assert rng.getstate() == twin.getstate()
        assert [j.calls for j in judges] == [0, 0]
        gate.set()
        await handle


async def test_later_cascade_tiers_draw_even_when_never_entered() -> None:
    """Judges of later cascade tiers draw at submit time even if the cascade stops earlier."""
    cheap = ScriptedJudge(False, name="cheap")
    costly = ScriptedJudge(True, name="costly")
    cascade = Cascade([Tier("cheap", cheap, TierPolicy.REJECT_ON_ANY_FAIL), Tier("costly", costly)])
    rng = random.Random(SEED)
    evaluator = Evaluator(cascade, sampling={"cheap": 0.99, "costly": 0.5}, rng=rng)
    verdict = await evaluator.verdict(CTX)
    assert verdict.judgment.status is Status.FAIL
    assert costly.calls == 0
    twin = random.Random(SEED)
    twin.random()
    twin.random()
    assert rng.getstate() == twin.getstate()


def test_seeded_rng_reproduces_the_same_sample() -> None:
    """Two evaluators with equally seeded rngs sample exactly the same judges."""

    def pattern(seed: int) -> list[list[bool]]:
        rng = random.Random(seed)
        judges = [ScriptedJudge(True, name=f"j{i}") for i in range(4)]
        evaluator = Evaluator(judges, sampling={f"j{i}": 0.5 for i in range(4)}, rng=rng)
        return [[r.sampled for r in evaluator.evaluate_sync(CTX)] for _ in range(10)]

    first, second = pattern(42), pattern(42)
    assert first == second
    flat = [s for row in first for s in row]
    assert any(flat) and not all(flat)


async def test_judge_sampling_rate_attribute_is_the_default() -> None:
    """A judge's sampling_rate attribute applies unless `sampling` overrides it."""
    off = ScriptedJudge(True, name="off", sampling_rate=0.0)
    overridden = ScriptedJudge(True, name="overridden", sampling_rate=0.0)
    results = await Evaluator([off, overridden], sampling={"overridden": 1.0}).evaluate(CTX)
    assert [r.sampled for r in results] == [False, True]


async def test_on_result_fires_for_unsampled_results() -> None:
    """on_result is called for unsampled results too."""
    seen: list[JudgeResult] = []
    judges = [ScriptedJudge(True, name="in"), ScriptedJudge(True, name="out")]
    await Evaluator(judges, sampling={"out": 0.0}, on_result=seen.append).evaluate(CTX)
    assert sorted((r.name, r.sampled) for r in seen) == [("in", True), ("out", False)]


async def test_unsampled_members_leave_the_vote() -> None:
    """A jury votes over sampled members only; all unsampled gives ABSTAIN."""
    judges = [ScriptedJudge(False, name="f"), ScriptedJudge(True, name="p")]
    verdict = await Evaluator(judges, sampling={"f": 0.0}).verdict(CTX)
    assert verdict.judgment.status is Status.PASS
    none = await Evaluator(judges, sampling={"f": 0.0, "p": 0.0}).verdict(CTX)
    assert none.judgment.status is Status.ABSTAIN


@pytest.mark.parametrize("rate", [-0.01, 1.01, float("nan"), float("inf"), True, "0.5"])
def test_sampling_rate_outside_unit_interval_rejected(rate: object) -> None:
    """Sampling rates outside [0, 1] (or not numbers) are a ValueError naming the judge."""
    with pytest.raises(ValueError, match=r"sampling\['a'\]"):
        Evaluator(ScriptedJudge(name="a"), sampling={"a": rate})  # type: ignore[dict-item]


def test_sampling_rate_attribute_validated() -> None:
    """A judge's own bad sampling_rate attribute is a ValueError too."""
    with pytest.raises(ValueError, match=r"judge 'a'.*1\.5"):
        Evaluator(ScriptedJudge(name="a", sampling_rate=1.5))


def test_sampling_unknown_judge_name_rejected() -> None:
    """Sampling a name that is no judge of the evaluator is a ValueError naming it."""
    with pytest.raises(ValueError, match="typo"):
        Evaluator(ScriptedJudge(name="a"), sampling={"typo": 0.5})

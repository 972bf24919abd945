"""Confidence-aware cascades: `TierPolicy.STOP_ON_CONFIDENCE`, tier thresholds, FINAL abstention."""

from __future__ import annotations

import math

import anyio
import pytest
from engine_support import idle, wait_until

from agentjudge import (
    Average,
    Cascade,
    Context,
    ErrorPolicy,
    Evaluator,
    Judgment,
    Jury,
    Majority,
    Status,
    Tier,
    TierPolicy,
)
from agentjudge.testing import ScriptedJudge

CTX = Context(input="q", output="a")
SURE = Judgment.passed("sure", confidence=0.9)
UNSURE = Judgment.failed("maybe not", confidence=0.4)
BARE = Judgment.passed("no confidence given")


def scripted(name: str, answer: Judgment, **kwargs: object) -> ScriptedJudge:
    """A named ScriptedJudge."""
    return ScriptedJudge(answer, name=name, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- validation


def test_stop_on_confidence_needs_a_threshold() -> None:
    """STOP_ON_CONFIDENCE without a threshold is refused."""
    with pytest.raises(ValueError, match="STOP_ON_CONFIDENCE needs a threshold"):
        Tier("cheap", scripted("a", SURE), TierPolicy.STOP_ON_CONFIDENCE)


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, -math.inf, True, "0.5"])
def test_threshold_must_be_a_number_in_the_unit_interval(bad: object) -> None:
    """A threshold that is not a finite number in [0, 1] is refused, naming the tier."""
    with pytest.raises(ValueError, match="tier 'cheap': threshold"):
        Tier("cheap", scripted("a", SURE), TierPolicy.STOP_ON_CONFIDENCE, threshold=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "policy",
    [TierPolicy.REJECT_ON_ANY_FAIL, TierPolicy.ACCEPT_ON_ALL_PASS, TierPolicy.STOP_ON_AGREEMENT],
)
def test_policies_that_ignore_confidence_refuse_a_threshold(policy: TierPolicy) -> None:
    """A threshold given to a policy that would not read it is an error, not silently dropped."""
    with pytest.raises(ValueError, match="takes no threshold"):
        Tier("t", scripted("a", SURE), policy, threshold=0.5)


def test_threshold_is_kept_as_float_and_shown_in_repr() -> None:
    """The tier keeps the threshold as a float and shows it."""
    tier = Tier("t", scripted("a", SURE), TierPolicy.STOP_ON_CONFIDENCE, threshold=1)
    assert tier.threshold == 1.0 and type(tier.threshold) is float
    assert "threshold=1.0" in repr(tier)
    assert Tier("f", scripted("b", SURE)).threshold is None


# --------------------------------------------------------------------------- STOP_ON_CONFIDENCE


async def test_confident_tier_stops_and_later_tiers_never_run() -> None:
    """A tier whose judgment is confident enough stops the cascade; the next tier is not called."""
    expensive = scripted("big", UNSURE)
    cascade = Cascade(
        [
            Tier("cheap", scripted("small", SURE), TierPolicy.STOP_ON_CONFIDENCE, threshold=0.8),
            Tier("expensive", expensive),
        ]
    )
    ev = Evaluator(cascade)
    verdict = await ev.verdict(CTX)
    assert verdict.judgment == SURE
    assert [t.name for t in verdict.tiers] == ["cheap"]
    assert verdict.tiers[0].stopped
    assert expensive.calls == 0
    assert idle(ev)


@pytest.mark.parametrize("answer", [UNSURE, BARE, Judgment.errored("boom")])
async def test_unconfident_or_missing_confidence_escalates(answer: Judgment) -> None:
    """Below the threshold, no confidence at all, or an ERROR: the cascade escalates."""
    cascade = Cascade(
        [
            Tier("cheap", scripted("small", answer), TierPolicy.STOP_ON_CONFIDENCE, threshold=0.8),
            Tier("expensive", scripted("big", SURE)),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment == SURE
    assert [(t.name, t.stopped) for t in verdict.tiers] == [("cheap", False), ("expensive", True)]
    assert verdict.tiers[0].judgment is not None
    assert verdict.tiers[0].judgment.status is answer.status


@pytest.mark.parametrize("threshold", [0.5, 0.0])
async def test_a_confident_abstain_escalates(threshold: float) -> None:
    """A confident ABSTAIN decides nothing: the next tier judges (as calibration counts it)."""
    abstain = Judgment.abstained("cannot tell", confidence=0.99)
    strong = scripted("big", SURE)
    cascade = Cascade(
        [
            Tier("cheap", scripted("small", abstain), TierPolicy.STOP_ON_CONFIDENCE,
                 threshold=threshold),
            Tier("expensive", strong),
        ]
    )  # fmt: skip
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment == SURE and strong.calls == 1
    assert [(t.name, t.stopped) for t in verdict.tiers] == [("cheap", False), ("expensive", True)]


async def test_a_confident_early_abstain_of_a_jury_waits_then_escalates() -> None:
    """An early-stopping jury whose vote is already a confident ABSTAIN does not stop the tier."""
    sure_abstain = Judgment.abstained("no idea", confidence=1.0)
    jury = Jury(
        [scripted("a", sure_abstain), scripted("b", sure_abstain), scripted("c", sure_abstain)],
        voting=Majority(),
        early_stop=True,
    )
    cascade = Cascade(
        [
            Tier("panel", jury, TierPolicy.STOP_ON_CONFIDENCE, threshold=0.5),
            Tier("last", scripted("big", SURE)),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment == SURE
    assert [t.name for t in verdict.tiers] == ["panel", "last"]
    assert verdict.tiers[0].judgment is not None
    assert verdict.tiers[0].judgment.status is Status.ABSTAIN


async def test_an_infinite_threshold_never_decides() -> None:
    """math.inf (no tested threshold) is accepted: such a tier escalates, a FINAL one abstains."""
    certain = Judgment.passed("certain", confidence=1.0)
    tier = Tier("cheap", scripted("small", certain), TierPolicy.STOP_ON_CONFIDENCE,
                threshold=math.inf)  # fmt: skip
    assert tier.threshold == math.inf and "threshold=inf" in repr(tier)
    escalating = Cascade([tier, Tier("expensive", scripted("big", SURE))])
    assert (await Evaluator(escalating).verdict(CTX)).judgment == SURE
    never = Cascade([Tier("only", scripted("big", certain), threshold=math.inf)])
    verdict = await Evaluator(never).verdict(CTX)
    assert verdict.judgment.status is Status.ABSTAIN
    assert "no tested threshold" in verdict.judgment.reasoning
    assert verdict.judgment.metadata["untested"] is True  # JSON has no infinity


async def test_threshold_is_inclusive() -> None:
    """A confidence equal to the threshold is confident enough."""
    cascade = Cascade(
        [
            Tier("cheap", scripted("small", SURE), TierPolicy.STOP_ON_CONFIDENCE, threshold=0.9),
            Tier("expensive", scripted("big", UNSURE)),
        ]
    )
    assert (await Evaluator(cascade).verdict(CTX)).judgment == SURE


async def test_jury_tier_stops_on_its_aggregate_confidence() -> None:
    """A jury tier is judged by its aggregate: Majority's confidence is the winning share."""
    jury = Jury(
        [
            scripted("a", Judgment.passed("y", confidence=0.9)),
            scripted("b", Judgment.passed("y", confidence=0.9)),
            scripted("c", Judgment.failed("n", confidence=0.9)),
        ],
        voting=Majority(),
    )
    # Aggregate confidence: (0.9 + 0.9) / 3 = 0.6.
    low = Cascade(
        [
            Tier("panel", jury, TierPolicy.STOP_ON_CONFIDENCE, threshold=0.7),
            Tier("last", scripted("big", UNSURE)),
        ]
    )
    verdict = await Evaluator(low).verdict(CTX)
    assert verdict.tiers[0].judgment is not None
    assert verdict.tiers[0].judgment.confidence == pytest.approx(0.6)
    assert verdict.judgment == UNSURE
    high = Cascade(
        [
            Tier("panel", jury, TierPolicy.STOP_ON_CONFIDENCE, threshold=0.6),
            Tier("last", scripted("big", UNSURE)),
        ]
    )
    verdict = await Evaluator(high).verdict(CTX)
    assert verdict.judgment.status is Status.PASS
    assert verdict.judgment.confidence == pytest.approx(0.6)


async def test_early_stopping_jury_stops_when_its_early_decision_is_confident() -> None:
    """An early-stopping jury tier stops (cancelling the hung member) once confident."""
    hung = scripted("hung", SURE, hang=True)
    jury = Jury(
        [hung, scripted("a", SURE), scripted("b", SURE)],
        voting=Majority(errors=ErrorPolicy.IGNORE),
        early_stop=True,
    )
    cascade = Cascade(
        [
            Tier("panel", jury, TierPolicy.STOP_ON_CONFIDENCE, threshold=0.5),
            Tier("last", scripted("big", UNSURE)),
        ]
    )
    ev = Evaluator(cascade)
    verdict = await ev.verdict(CTX)
    assert verdict.judgment.status is Status.PASS
    assert verdict.tiers[0].skipped == ("hung",)
    assert hung.calls == hung.cancelled == 1
    assert idle(ev)


async def test_unconfident_early_decision_waits_for_the_whole_tier() -> None:
    """An early decision below the threshold does not stop the tier: it waits, then decides."""
    jury = Jury(
        [
            scripted("a", Judgment.passed("y", confidence=0.5)),
            scripted("b", Judgment.passed("y", confidence=0.5)),
            scripted("c", Judgment.passed("y", confidence=1.0)),
        ],
        voting=Majority(errors=ErrorPolicy.IGNORE),
        early_stop=True,
    )
    cascade = Cascade(
        [
            Tier("panel", jury, TierPolicy.STOP_ON_CONFIDENCE, threshold=0.6),
            Tier("last", scripted("big", UNSURE)),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    # All three finish: (0.5 + 0.5 + 1.0) / 3 = 0.667 >= 0.6, so the panel stops.
    assert verdict.judgment.status is Status.PASS
    assert verdict.judgment.confidence == pytest.approx(2.0 / 3.0)
    assert verdict.tiers[0].skipped == ()


# --------------------------------------------------------------------------- FINAL threshold


async def test_final_threshold_abstains_rather_than_guessing() -> None:
    """An unconfident final tier makes the cascade ABSTAIN; every entered tier is recorded."""
    cascade = Cascade(
        [
            Tier("cheap", scripted("small", UNSURE), TierPolicy.STOP_ON_CONFIDENCE, threshold=0.8),
            Tier("expensive", scripted("big", UNSURE), threshold=0.8),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.ABSTAIN
    assert "no tier was confident enough" in verdict.judgment.reasoning
    assert verdict.judgment.metadata["unconfident_status"] == "fail"
    assert [t.name for t in verdict.tiers] == ["cheap", "expensive"]
    assert verdict.tiers[-1].stopped
    assert verdict.tiers[-1].judgment == verdict.judgment
    assert [r.judgment for r in verdict.results] == [UNSURE, UNSURE]


async def test_final_threshold_without_confidence_abstains() -> None:
    """A final tier whose judgment has no confidence abstains under a threshold."""
    cascade = Cascade([Tier("only", scripted("det", BARE), threshold=0.5)])
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.ABSTAIN
    assert "no confidence" in verdict.judgment.reasoning


async def test_final_threshold_met_passes_the_judgment_through() -> None:
    """A confident final tier's judgment is the cascade's, confidence included."""
    cascade = Cascade([Tier("only", scripted("llm", SURE), threshold=0.5)])
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment == SURE


async def test_final_threshold_zero_accepts_any_confidence() -> None:
    """Threshold 0 accepts every judgment that has a confidence (even 0.0)."""
    zero = Judgment.failed("coin flip", confidence=0.0)
    cascade = Cascade([Tier("only", scripted("llm", zero), threshold=0.0)])
    assert (await Evaluator(cascade).verdict(CTX)).judgment == zero


# --------------------------------------------------------------------------- pass-through


async def test_rule_built_judgments_carry_confidence() -> None:
    """REJECT_ON_ANY_FAIL keeps the deciding member's confidence; ACCEPT_ON_ALL_PASS the lowest."""
    reject = Cascade(
        [
            Tier("gate", scripted("a", UNSURE), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("last", scripted("b", SURE)),
        ]
    )
    assert (await Evaluator(reject).verdict(CTX)).judgment.confidence == 0.4
    accept = Cascade(
        [
            Tier(
                "gate",
                Jury([scripted("a", SURE), scripted("b", BARE)]),
                TierPolicy.ACCEPT_ON_ALL_PASS,
            ),
            Tier("last", scripted("c", UNSURE)),
        ]
    )
    assert (await Evaluator(accept).verdict(CTX)).judgment.confidence == 0.9


async def test_score_strategy_tier_uses_the_members_side_of_the_threshold() -> None:
    """An Average jury's confidence is the confidence-weighted share on its verdict's side."""
    jury = Jury(
        [
            scripted("a", Judgment.passed("y", score=0.9, confidence=0.8)),
            scripted("b", Judgment.failed("n", score=0.3, confidence=1.0)),
        ],
        voting=Average(threshold=0.5),
    )
    verdict = await Evaluator(Cascade([Tier("only", jury)])).verdict(CTX)
    # Mean score 0.6 -> PASS; backing: member a (0.8) out of 2 members -> 0.4.
    assert verdict.judgment.status is Status.PASS
    assert verdict.judgment.confidence == pytest.approx(0.4)


# --------------------------------------------------------------------------- short_circuit=False


def test_short_circuit_must_be_a_bool() -> None:
    """A non-bool short_circuit is refused."""
    with pytest.raises(ValueError, match="short_circuit must be a bool"):
        Cascade([Tier("only", scripted("a", SURE))], short_circuit="no")  # type: ignore[arg-type]


async def test_without_short_circuit_every_tier_runs_and_the_decision_is_unchanged() -> None:
    """Calibration runs: every tier judges, `stopped` marks the deciding tier, same verdict."""
    expensive = scripted("big", UNSURE)

    def cascade(short_circuit: bool) -> Cascade:
        return Cascade(
            [
                Tier(
                    "cheap", scripted("small", SURE), TierPolicy.STOP_ON_CONFIDENCE, threshold=0.8
                ),
                Tier("expensive", expensive),
            ],
            short_circuit=short_circuit,
        )

    short = await Evaluator(cascade(True)).verdict(CTX)
    full = await Evaluator(cascade(False)).verdict(CTX)
    assert full.judgment == short.judgment == SURE
    assert [(t.name, t.stopped) for t in full.tiers] == [("cheap", True), ("expensive", False)]
    assert full.tiers[1].judgment == UNSURE
    assert [r.name for r in full.results] == ["small", "big"]
    assert expensive.calls == 1
    assert "short_circuit=False" in repr(cascade(False))


async def test_without_short_circuit_a_deciding_rule_cancels_no_member() -> None:
    """REJECT_ON_ANY_FAIL decides at the first FAIL but the tier's other members still finish."""
    gate = anyio.Event()
    slow = scripted("slow", SURE, gate=gate)
    tier = Jury([scripted("fails", UNSURE), slow])

    async def release() -> None:
        await wait_until(lambda: slow.calls == 1)
        gate.set()

    cascade = Cascade(
        [Tier("gate", tier, TierPolicy.REJECT_ON_ANY_FAIL), Tier("last", scripted("c", SURE))],
        short_circuit=False,
    )
    ev = Evaluator(cascade)
    async with anyio.create_task_group() as tg:
        tg.start_soon(release)
        verdict = await ev.verdict(CTX)
    assert verdict.judgment.status is Status.FAIL
    assert verdict.tiers[0].stopped and verdict.tiers[0].skipped == ()
    assert slow.completed == 1
    assert [t.name for t in verdict.tiers] == ["gate", "last"]
    assert idle(ev)


async def test_without_short_circuit_a_failed_final_tier_is_still_an_error() -> None:
    """When no tier decides, the result is what the short-circuiting cascade returns."""
    cascade = Cascade(
        [
            Tier("cheap", scripted("a", UNSURE), TierPolicy.STOP_ON_CONFIDENCE, threshold=0.9),
            Tier("last", scripted("b", UNSURE), threshold=0.9),
        ],
        short_circuit=False,
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.ABSTAIN
    assert [t.stopped for t in verdict.tiers] == [False, True]

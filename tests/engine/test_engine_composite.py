"""Juries and cascades: concurrency, naming, weights, early stop, tier policies, nesting."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import anyio
import pytest
from engine_support import idle, wait_until

from agentjudge import (
    Average,
    Cascade,
    Consensus,
    Context,
    ErrorPolicy,
    Evaluator,
    Judge,
    Judgment,
    Jury,
    Majority,
    Status,
    TiePolicy,
    Tier,
    TierPolicy,
    WeightedAverage,
)
from agentjudge.testing import ConcurrencyProbe, ScriptedJudge

CTX = Context(input="q", output="a")
P, F = Judgment.passed("yes"), Judgment.failed("no")
A, E = Judgment.abstained("unsure"), Judgment.errored("crashed")


def scripted(name: str, answer: Judgment | bool = True, **kwargs: object) -> ScriptedJudge:
    """A ScriptedJudge with a name (keyword arguments pass through)."""
    return ScriptedJudge(answer, name=name, **kwargs)  # type: ignore[arg-type]


class BrokenVoting:
    """A VotingStrategy whose aggregate always raises."""

    name = "broken"

    def aggregate(
        self, judgments: Sequence[Judgment], weights: Sequence[float] | None = None
    ) -> Judgment:
        raise RuntimeError("ballot box on fire")

    def decided(
        self, done: Sequence[Judgment | None], weights: Sequence[float] | None = None
    ) -> Judgment | None:
        return None


# --------------------------------------------------------------------------- Jury


async def test_jury_members_run_concurrently() -> None:
    """Every member of a jury is running before any of them answers."""
    gate = anyio.Event()
    members = [scripted(f"m{i}", gate=gate) for i in range(5)]
    async with anyio.create_task_group() as tg:
        verdicts = []

        async def evaluate() -> None:
            verdicts.append(await Evaluator(Jury(members)).verdict(CTX))

        tg.start_soon(evaluate)
        await wait_until(lambda: all(m.calls == 1 for m in members))
        assert not any(m.completed for m in members)
        gate.set()
    assert verdicts[0].judgment.status is Status.PASS


async def test_jury_member_names_are_unique() -> None:
    """Repeated names become x-2, x-3; lambdas are judge#<i+1>; results use these names."""
    jury = Jury([scripted("x"), scripted("x"), lambda ctx: True, scripted("y"), scripted("x")])
    assert jury.names == ("x", "x-2", "judge#3", "y", "x-3")
    results = await Evaluator(jury).evaluate(CTX)
    assert [r.name for r in results] == ["x", "x-2", "judge#3", "y", "x-3"]


async def test_jury_mapping_names() -> None:
    """A mapping gives the member names."""
    jury = Jury({"fluency": scripted("a"), "accuracy": scripted("b", False)})
    results = await Evaluator(jury).evaluate(CTX)
    assert [(r.name, r.status) for r in results] == [
        ("fluency", Status.PASS),
        ("accuracy", Status.FAIL),
    ]


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1.0], r"weights has 1 entries.*2"),
        ([1.0, 2.0, 3.0], "weights has 3 entries"),
        ([1.0, -0.5], r"weights\[1\].*-0\.5"),
        ([float("nan"), 1.0], r"weights\[0\] must be finite"),
        ([1.0, float("inf")], r"weights\[1\] must be finite"),
        ([0.0, 0.0], "all zero"),
    ],
)
def test_jury_weights_validated(weights: list[float], message: str) -> None:
    """Wrong length, negative, non-finite and all-zero weights are a ValueError."""
    with pytest.raises(ValueError, match=message):
        Jury([scripted("a"), scripted("b")], weights=weights)


async def test_jury_weights_reach_the_vote() -> None:
    """Weights [3, 1] on PASS/FAIL under WeightedAverage give 0.75."""
    jury = Jury([scripted("p"), scripted("f", False)], voting=WeightedAverage(), weights=[3, 1])
    judgment = await jury(CTX)
    assert judgment.status is Status.PASS
    assert judgment.score == pytest.approx(0.75)


def test_empty_jury_rejected() -> None:
    """A jury needs at least one judge."""
    with pytest.raises(ValueError, match="at least one"):
        Jury([])


async def test_jury_early_stop_cancels_undecided_members() -> None:
    """Majority(IGNORE), 3 fast PASS of 5: the decision is certain, the 2 hanging are cancelled."""
    hangs = [scripted(f"slow{i}", hang=True) for i in range(2)]
    fast = [scripted(f"fast{i}") for i in range(3)]
    jury = Jury([*hangs, *fast], voting=Majority(errors=ErrorPolicy.IGNORE), early_stop=True)
    evaluator = Evaluator(jury)
    async with evaluator:
        handle = evaluator.submit(CTX)
        verdict = await handle.verdict()
        results = await handle
    assert verdict.judgment.status is Status.PASS
    assert [h.cancelled for h in hangs] == [1, 1]
    assert [r.name for r in results] == ["fast0", "fast1", "fast2"]
    assert idle(evaluator)


async def test_jury_early_stop_waits_while_a_running_member_could_still_matter() -> None:
    """Under PROPAGATE a running member could still ERROR: no early decision, all complete."""
    gate = anyio.Event()
    gated = [scripted(f"g{i}", gate=gate) for i in range(2)]
    fast = [scripted(f"fast{i}") for i in range(3)]
    jury = Jury([*gated, *fast], voting=Majority(), early_stop=True)
    async with Evaluator(jury) as evaluator:
        handle = evaluator.submit(CTX)
        await wait_until(lambda: all(f.completed for f in fast) and all(g.calls for g in gated))
        assert not handle.done()
        gate.set()
        results = await handle
    assert len(results) == 5
    assert all(g.cancelled == 0 for g in gated)


async def test_jury_without_early_stop_waits_for_everyone() -> None:
    """Without early_stop every member completes even when the vote is already certain."""
    gate = anyio.Event()
    late = scripted("late", False, gate=gate)
    jury = Jury([late, scripted("a"), scripted("b"), scripted("c")])
    async with Evaluator(jury) as evaluator:
        handle = evaluator.submit(CTX)
        await wait_until(lambda: late.calls == 1)
        gate.set()
        results = await handle
    assert [r.name for r in results] == ["late", "a", "b", "c"]


async def test_raising_member_becomes_error_and_the_jury_goes_on() -> None:
    """A member that raises becomes an ERROR result; the others still vote."""
    broken = scripted("broken", error=ValueError("bad prompt"), fail_times=1)
    jury = Jury([scripted("a"), broken, scripted("b")], voting=Majority(errors=ErrorPolicy.IGNORE))
    verdict = await Evaluator(jury).verdict(CTX)
    assert [r.status for r in verdict.results] == [Status.PASS, Status.ERROR, Status.PASS]
    assert verdict.by_name["broken"].error_type == "ValueError"
    assert verdict.judgment.status is Status.PASS


async def test_raising_member_under_propagate_makes_the_jury_error() -> None:
    """Under the default PROPAGATE policy one ERROR member makes the aggregate ERROR."""
    broken = scripted("broken", error=KeyError("k"), fail_times=5)
    verdict = await Evaluator(Jury([scripted("a"), broken])).verdict(CTX)
    assert verdict.judgment.status is Status.ERROR
    assert [r.status for r in verdict.results] == [Status.PASS, Status.ERROR]


async def test_sync_judges_participate_in_a_jury() -> None:
    """Sync members run on worker threads and vote like async ones."""
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def sync_fail(ctx: Context) -> bool:
        threads.append(threading.get_ident())
        return False

    jury = Jury([sync_fail, scripted("a"), scripted("b")])
    verdict = await Evaluator(jury).verdict(CTX)
    assert [r.name for r in verdict.results] == ["sync_fail", "a", "b"]
    assert verdict.results[0].status is Status.FAIL
    assert verdict.judgment.status is Status.PASS
    assert threads and threads[0] != loop_thread


async def test_jury_is_callable_standalone() -> None:
    """`await jury(ctx)` returns the aggregate Judgment."""
    jury = Jury([scripted("a"), scripted("b", False), scripted("c", False)])
    assert isinstance(jury, Judge)
    judgment = await jury(CTX)
    assert judgment.status is Status.FAIL
    assert judgment.metadata["aggregation"]["passCount"] == 1
    assert judgment.metadata["aggregation"]["failCount"] == 2


async def test_jury_evidence_comes_from_its_voting() -> None:
    """The jury's verdict judgment is its voting strategy's aggregate."""
    members = [scripted("a", Judgment.passed(score=0.9)), scripted("b", Judgment.failed(score=0.4))]
    verdict = await Evaluator(Jury(members, voting=Average())).verdict(CTX)
    assert verdict.judgment.score == pytest.approx(0.65)
    assert verdict.judgment.metadata["aggregation"]["strategy"] == "average"


# --------------------------------------------------------------------------- Cascade


async def test_reject_on_any_fail_short_circuits() -> None:
    """The first FAIL stops the tier: running members are cancelled, later tiers never start."""
    slow = [scripted(f"slow{i}", hang=True) for i in range(2)]
    gate = anyio.Event()
    failing = scripted("quick", False, gate=gate)
    expensive = scripted("expensive")
    cascade = Cascade(
        [
            Tier("cheap", Jury([*slow, failing]), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("costly", expensive),
        ]
    )
    evaluator = Evaluator(cascade)
    async with evaluator:
        handle = evaluator.submit(CTX)
        await wait_until(lambda: all(s.calls for s in slow))
        gate.set()
        verdict = await handle.verdict()
        results = await handle
    assert verdict.judgment.status is Status.FAIL
    assert [s.cancelled for s in slow] == [1, 1]
    assert expensive.calls == 0
    assert [r.name for r in results] == ["quick"]
    (tier,) = verdict.tiers
    assert (tier.name, tier.policy, tier.failure) == ("cheap", TierPolicy.REJECT_ON_ANY_FAIL, None)
    assert tier.judgment is not None and tier.judgment.status is Status.FAIL
    assert [r.name for r in tier.results] == ["quick"]
    assert tier.skipped == ("slow0", "slow1")
    assert results[0].tier == "cheap"
    assert idle(evaluator)


async def test_reject_on_any_fail_escalates_without_a_fail() -> None:
    """No FAIL (ERROR and ABSTAIN do not reject) escalates to the next tier."""
    expensive = scripted("expensive", False)
    cascade = Cascade(
        [
            Tier(
                "cheap",
                Jury([scripted("p"), scripted("e", E), scripted("a", A)]),
                TierPolicy.REJECT_ON_ANY_FAIL,
            ),
            Tier("costly", expensive),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert [t.name for t in verdict.tiers] == ["cheap", "costly"]
    assert verdict.judgment.status is Status.FAIL
    assert verdict.tiers[1].judgment is not None
    assert verdict.tiers[1].judgment.status is Status.FAIL
    assert [r.name for r in verdict.results] == ["p", "e", "a", "expensive"]
    assert verdict.results[-1].tier == "costly"


async def test_accept_on_all_pass_stops_when_everyone_passes() -> None:
    """ACCEPT_ON_ALL_PASS stops with PASS when every member passes; later tiers never run."""
    expensive = scripted("expensive")
    cascade = Cascade(
        [
            Tier("cheap", Jury([scripted("a"), scripted("b")]), TierPolicy.ACCEPT_ON_ALL_PASS),
            Tier("costly", expensive),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.PASS
    assert expensive.calls == 0
    assert [t.name for t in verdict.tiers] == ["cheap"]


async def test_accept_on_all_pass_escalates_on_first_non_pass() -> None:
    """One non-PASS makes acceptance impossible: the rest is cancelled, the next tier runs."""
    slow = scripted("slow", hang=True)
    gate = anyio.Event()
    unsure = scripted("unsure", A, gate=gate)
    final = scripted("final", False)
    cascade = Cascade(
        [
            Tier("cheap", Jury([slow, unsure]), TierPolicy.ACCEPT_ON_ALL_PASS),
            Tier("last", final),
        ]
    )
    async with Evaluator(cascade) as evaluator:
        handle = evaluator.submit(CTX)
        await slow.started.wait()
        gate.set()
        verdict = await handle.verdict()
    assert slow.cancelled == 1
    assert [t.name for t in verdict.tiers] == ["cheap", "last"]
    assert verdict.tiers[0].skipped == ("slow",)
    assert verdict.judgment.status is Status.FAIL


async def test_stop_on_agreement_stops_when_all_agree() -> None:
    """STOP_ON_AGREEMENT stops when every member FAILs (or every member PASSes)."""
    final = scripted("final")
    cascade = Cascade(
        [
            Tier(
                "cheap",
                Jury([scripted("a", False), scripted("b", False)]),
                TierPolicy.STOP_ON_AGREEMENT,
            ),
            Tier("last", final),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.FAIL
    assert final.calls == 0
    passing = Cascade(
        [
            Tier("cheap", Jury([scripted("a"), scripted("b")]), TierPolicy.STOP_ON_AGREEMENT),
            Tier("last", final),
        ]
    )
    assert (await Evaluator(passing).verdict(CTX)).judgment.status is Status.PASS
    assert final.calls == 0


async def test_stop_on_agreement_escalates_on_a_split() -> None:
    """A PASS and a FAIL make agreement impossible: the rest is cancelled, the next tier runs."""
    slow = scripted("slow", hang=True)
    gate = anyio.Event()
    yes = scripted("yes", gate=gate)
    no = scripted("no", False, gate=gate)
    final = scripted("final")
    cascade = Cascade(
        [
            Tier("cheap", Jury([slow, yes, no]), TierPolicy.STOP_ON_AGREEMENT),
            Tier("last", final),
        ]
    )
    async with Evaluator(cascade) as evaluator:
        handle = evaluator.submit(CTX)
        await slow.started.wait()
        gate.set()
        verdict = await handle.verdict()
    assert slow.cancelled == 1
    assert final.calls == 1
    assert verdict.judgment.status is Status.PASS
    assert verdict.tiers[0].skipped == ("slow",)


@pytest.mark.parametrize("odd", [A, E], ids=["abstain", "error"])
async def test_stop_on_agreement_escalates_on_abstain_or_error(odd: Judgment) -> None:
    """An ABSTAIN or ERROR member escalates a STOP_ON_AGREEMENT tier."""
    final = scripted("final", False)
    cascade = Cascade(
        [
            Tier(
                "cheap", Jury([scripted("a"), scripted("odd", odd)]), TierPolicy.STOP_ON_AGREEMENT
            ),
            Tier("last", final),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert final.calls == 1
    assert verdict.judgment.status is Status.FAIL


async def test_final_tier_gives_its_aggregate() -> None:
    """A FINAL tier always stops with its voting's aggregate."""
    members = [scripted("a", Judgment.passed(score=0.8)), scripted("b", Judgment.failed(score=0.2))]
    cascade = Cascade([Tier("only", Jury(members, voting=Average(threshold=0.6)))])
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.FAIL
    assert verdict.judgment.score == pytest.approx(0.5)
    assert verdict.judgment.metadata["aggregation"]["strategy"] == "average"
    (tier,) = verdict.tiers
    assert tier.judgment == verdict.judgment
    assert tier.policy is TierPolicy.FINAL


async def test_final_tier_in_the_middle_stops_the_cascade() -> None:
    """A FINAL tier before the last one stops there."""
    never = scripted("never")
    cascade = Cascade([Tier("first", scripted("first", False)), Tier("second", never)])
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.FAIL
    assert never.calls == 0


async def test_verdict_tiers_record_every_tier_entered() -> None:
    """Verdict.tiers has one TierAttempt per tier entered, with its results and outcome."""
    cascade = Cascade(
        [
            Tier("t1", Jury([scripted("a"), scripted("b")]), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("t2", Jury([scripted("c"), scripted("d", False)]), TierPolicy.ACCEPT_ON_ALL_PASS),
            Tier("t3", Jury([scripted("e"), scripted("f")], voting=Consensus())),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert [(t.name, t.policy) for t in verdict.tiers] == [
        ("t1", TierPolicy.REJECT_ON_ANY_FAIL),
        ("t2", TierPolicy.ACCEPT_ON_ALL_PASS),
        ("t3", TierPolicy.FINAL),
    ]
    assert [[r.name for r in t.results] for t in verdict.tiers] == [
        ["a", "b"],
        ["c", "d"],
        ["e", "f"],
    ]
    assert all(t.failure is None and t.skipped == () for t in verdict.tiers)
    assert all(t.judgment is not None for t in verdict.tiers)
    assert verdict.judgment.status is Status.PASS
    assert [r.tier for r in verdict.results] == ["t1", "t1", "t2", "t2", "t3", "t3"]


async def test_tier_whose_voting_raises_is_a_failed_attempt_and_the_cascade_goes_on() -> None:
    """A tier whose voting raises is recorded as failed; the next tier decides."""
    cascade = Cascade(
        [
            Tier(
                "shaky",
                Jury([scripted("a"), scripted("b")], voting=BrokenVoting()),
                TierPolicy.ACCEPT_ON_ALL_PASS,
            ),
            Tier("last", scripted("last", False)),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    shaky, last = verdict.tiers
    assert shaky.judgment is None
    assert shaky.failure is not None and "ballot box on fire" in shaky.failure
    assert [r.name for r in shaky.results] == ["a", "b"]
    assert last.failure is None
    assert verdict.judgment.status is Status.FAIL


async def test_failing_final_tier_gives_error() -> None:
    """When the FINAL tier's voting raises, the cascade's judgment is ERROR naming the tier."""
    cascade = Cascade(
        [
            Tier("cheap", scripted("cheap"), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("panel", Jury([scripted("x"), scripted("y")], voting=BrokenVoting())),
        ]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.judgment.status is Status.ERROR
    assert "panel" in verdict.judgment.reasoning
    assert verdict.tiers[-1].failure is not None
    assert verdict.tiers[-1].judgment is None


async def test_raising_judge_in_a_tier_is_an_error_result_not_a_tier_failure() -> None:
    """A judge raising inside a tier is an ERROR result; the tier itself did not fail."""
    broken = scripted("broken", error=OSError("disk"), fail_times=9)
    cascade = Cascade(
        [Tier("only", Jury([broken, scripted("ok")], voting=Majority(errors=ErrorPolicy.IGNORE)))]
    )
    verdict = await Evaluator(cascade).verdict(CTX)
    assert verdict.tiers[0].failure is None
    assert verdict.by_name["broken"].error_type == "OSError"
    assert verdict.judgment.status is Status.PASS


@pytest.mark.parametrize(
    ("tiers", "message"),
    [
        ([], "at least one tier"),
        (
            [Tier("only", ScriptedJudge(), TierPolicy.REJECT_ON_ANY_FAIL)],
            "'only'.*REJECT_ON_ANY_FAIL",
        ),
        (
            [
                Tier("a", ScriptedJudge(), TierPolicy.FINAL),
                Tier("b", ScriptedJudge(), TierPolicy.STOP_ON_AGREEMENT),
            ],
            "'b'.*STOP_ON_AGREEMENT",
        ),
        (
            [
                Tier("dup", ScriptedJudge(), TierPolicy.ACCEPT_ON_ALL_PASS),
                Tier("dup", ScriptedJudge()),
            ],
            "'dup'",
        ),
    ],
    ids=["empty", "last-not-final", "last-not-final-2", "duplicate-name"],
)
def test_bad_cascades_rejected(tiers: list[Tier], message: str) -> None:
    """Empty cascades, a last tier that is not FINAL, duplicate tier names: ValueError."""
    with pytest.raises(ValueError, match=message):
        Cascade(tiers)


def test_bad_tiers_rejected() -> None:
    """A tier needs a non-blank name and a callable judge."""
    with pytest.raises(ValueError, match="name"):
        Tier(" ", ScriptedJudge())
    with pytest.raises(ValueError, match="not a judge"):
        Tier("t", "judge")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Tier("t", ScriptedJudge(), "sometimes")  # type: ignore[arg-type]


async def test_cascade_is_callable_standalone() -> None:
    """`await cascade(ctx)` returns the cascade's judgment."""
    cascade = Cascade(
        [
            Tier("cheap", scripted("cheap", False), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("x", scripted("x")),
        ]
    )
    assert isinstance(cascade, Judge)
    assert (await cascade(CTX)).status is Status.FAIL


# --------------------------------------------------------------------------- nesting


async def test_jury_of_cascades() -> None:
    """A jury of cascades votes over the cascades' judgments; results are qualified by name."""
    left = Cascade(
        [
            Tier("gate", scripted("lint", False), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("deep", scripted("review")),
        ],
        name="left",
    )
    right = Cascade(
        [
            Tier("gate", scripted("lint"), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("deep", scripted("review")),
        ],
        name="right",
    )
    third = scripted("solo")
    verdict = await Evaluator(Jury([left, right, third])).verdict(CTX)
    assert [r.name for r in verdict.results] == ["left/lint", "right/lint", "right/review", "solo"]
    assert verdict.judgment.status is Status.PASS  # left FAIL, right PASS, solo PASS
    assert verdict.judgment.metadata["aggregation"]["failCount"] == 1


async def test_cascade_with_jury_tier_and_nested_jury() -> None:
    """A cascade tier may be a jury containing a jury; nested members are qualified."""
    inner = Jury([scripted("x"), scripted("y", False), scripted("z", False)], name="inner")
    panel = Jury([scripted("a"), inner], name="panel", voting=Majority(tie=TiePolicy.PASS))
    cascade = Cascade([Tier("panel", panel)], name="review")
    verdict = await Evaluator(cascade).verdict(CTX)
    assert [r.name for r in verdict.results] == ["a", "inner/x", "inner/y", "inner/z"]
    assert verdict.judgment.status is Status.PASS  # a PASS vs inner FAIL: tie resolved PASS


async def test_nested_cascade_inside_a_cascade_tier() -> None:
    """A cascade used as a tier's judge runs its own tiers; its members are qualified."""
    inner = Cascade(
        [Tier("quick", scripted("q"), TierPolicy.ACCEPT_ON_ALL_PASS), Tier("slow", scripted("s"))],
        name="inner",
    )
    outer = Cascade(
        [Tier("first", inner, TierPolicy.REJECT_ON_ANY_FAIL), Tier("last", scripted("l"))]
    )
    verdict = await Evaluator(outer).verdict(CTX)
    assert [r.name for r in verdict.results] == ["inner/q", "l"]
    assert [t.name for t in verdict.tiers] == ["first", "last"]


async def test_nested_members_share_the_evaluator_limits() -> None:
    """Members of nested composites draw on the same evaluator limits."""
    probe = ConcurrencyProbe()
    gate = anyio.Event()
    members = [scripted(f"m{i}", gate=gate, probe=probe, resource="llm") for i in range(6)]
    nested = Jury([Jury(members[:3], name="left"), Jury(members[3:], name="right")])
    evaluator = Evaluator(nested, limits={"llm": 2})
    async with anyio.create_task_group() as tg:
        tg.start_soon(evaluator.evaluate, CTX)
        await wait_until(lambda: probe.in_flight == 2)
        gate.set()
    assert probe.max_in_flight == 2
    assert idle(evaluator, "llm")

"""How juries aggregate `Judgment.confidence`, per voting strategy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentjudge import Judgment
from agentjudge.voting import (
    Average,
    Consensus,
    ErrorPolicy,
    Majority,
    Median,
    TiePolicy,
    WeightedAverage,
)
from agentjudge.voting._intern import _INTERNED

P = Judgment.passed
F = Judgment.failed


def test_majority_is_the_winning_sides_mean_confidence_times_its_share() -> None:
    """Majority: (0.9 + 0.6) / 3 = mean(0.9, 0.6) * 2/3."""
    agg = Majority().aggregate([P(confidence=0.9), P(confidence=0.6), F(confidence=0.8)])
    assert agg.confidence == pytest.approx(0.5)


def test_members_without_confidence_read_as_certain() -> None:
    """A member without a confidence counts as 1.0 once any member has one."""
    agg = Majority().aggregate([P(confidence=0.5), P(), F()])
    assert agg.confidence == pytest.approx((0.5 + 1.0) / 3)


def test_no_member_confidence_gives_no_aggregate_confidence() -> None:
    """Juries of judges without confidence keep None (no behaviour change)."""
    for voting in (Majority(), Consensus(), Average(), Median(), WeightedAverage()):
        assert voting.aggregate([P(), F(), P()]).confidence is None


def test_majority_tie_resolved_to_a_side_has_half_the_share() -> None:
    """A tie resolved as PASS is backed by the PASS side only: 0.8 * 1/2."""
    agg = Majority(tie=TiePolicy.PASS).aggregate([P(confidence=0.8), F(confidence=0.6)])
    assert agg.confidence == pytest.approx(0.4)
    abstain = Majority(tie=TiePolicy.ABSTAIN).aggregate([P(confidence=0.8), F(confidence=0.6)])
    assert abstain.confidence is None


def test_consensus_is_the_mean_confidence_and_a_split_has_none() -> None:
    """Consensus: unanimous -> mean confidence; split -> ABSTAIN without confidence."""
    assert Consensus().aggregate([F(confidence=0.9), F(confidence=0.5)]).confidence == 0.7
    assert Consensus().aggregate([P(confidence=0.9), F(confidence=0.5)]).confidence is None


def test_average_counts_members_on_the_verdicts_side_of_the_threshold() -> None:
    """Average: scores 0.9, 0.7, 0.2 -> mean 0.6 PASS; backing 0.8 + 0.5 of 3."""
    agg = Average().aggregate(
        [
            P(score=0.9, confidence=0.8),
            P(score=0.7, confidence=0.5),
            F(score=0.2, confidence=1.0),
        ]
    )
    assert agg.score == pytest.approx(0.6)
    assert agg.confidence == pytest.approx((0.8 + 0.5) / 3)


def test_median_uses_the_same_side_rule() -> None:
    """Median 0.7 PASS with threshold 0.5: members at 0.7 and 0.9 back it."""
    agg = Median().aggregate(
        [P(score=0.9, confidence=0.6), P(score=0.7, confidence=0.6), F(score=0.1, confidence=0.6)]
    )
    assert agg.confidence == pytest.approx(0.4)


def test_weighted_average_weighs_confidence_by_member_weight() -> None:
    """WeightedAverage: (1 * 0.9 + 1 * 0.6) / (1 + 1 + 2)."""
    agg = WeightedAverage().aggregate(
        [P(confidence=0.9), P(confidence=0.6), F(confidence=0.8)], [1.0, 1.0, 2.0]
    )
    assert agg.confidence == pytest.approx(1.5 / 4)


def test_error_counted_as_fail_backs_fail_with_certainty() -> None:
    """An ERROR treated as FAIL is a certain FAIL vote."""
    agg = Majority(errors=ErrorPolicy.TREAT_AS_FAIL).aggregate(
        [F(confidence=0.4), Judgment.errored("x"), P(confidence=1.0)]
    )
    assert agg.confidence == pytest.approx((0.4 + 1.0) / 3)


def test_abstaining_members_are_left_out() -> None:
    """ABSTAIN members neither back nor oppose the verdict."""
    agg = Majority().aggregate(
        [P(confidence=0.9), Judgment.abstained("?", confidence=0.1), P(confidence=0.7)]
    )
    assert agg.confidence == pytest.approx(0.8)


def test_error_aggregate_has_no_confidence() -> None:
    """A propagated ERROR aggregate never carries a confidence."""
    agg = Majority().aggregate([P(confidence=0.9), Judgment.errored("boom")])
    assert agg.confidence is None


def test_intern_cache_is_bypassed_when_confidence_matters() -> None:
    """Equal counts with different confidences give different aggregates (no stale intern)."""
    _INTERNED.clear()
    a = Majority().aggregate([P(confidence=0.9), P(confidence=0.9)])
    b = Majority().aggregate([P(confidence=0.2), P(confidence=0.2)])
    assert (a.confidence, b.confidence) == (0.9, 0.2)


def test_early_decision_covers_the_finished_members() -> None:
    """An early decision's confidence is over the judgments that arrived."""
    done = [P(confidence=0.8), P(confidence=0.6), None]
    agg = Majority(errors=ErrorPolicy.IGNORE).decided(done)
    assert agg is not None and agg.confidence == pytest.approx(0.7)


JUDGMENTS = st.builds(
    lambda passed, score, conf: (P if passed else F)(score=score, confidence=conf),
    st.booleans(),
    st.none() | st.floats(0.0, 1.0),
    st.none() | st.floats(0.0, 1.0),
)
STRATEGIES = st.sampled_from(
    [
        Majority(),
        Majority(tie=TiePolicy.PASS),
        Consensus(),
        Average(),
        Median(threshold=0.7),
        WeightedAverage(),
    ]
)


@given(STRATEGIES, st.lists(JUDGMENTS, min_size=1, max_size=7))
def test_aggregate_confidence_is_in_range_and_none_iff_no_member_has_one(
    voting: Majority, judgments: list[Judgment]
) -> None:
    """Always in [0, 1]; None when no member has one; never on ABSTAIN/ERROR aggregates."""
    agg = voting.aggregate(judgments)
    if all(j.confidence is None for j in judgments) or agg.status.value in ("abstain", "error"):
        assert agg.confidence is None
    else:
        assert agg.confidence is not None and 0.0 <= agg.confidence <= 1.0


@given(STRATEGIES, st.integers(1, 7))
def test_unanimous_certain_members_give_full_confidence(voting: Majority, size: int) -> None:
    """When every member backs the verdict with confidence 1.0, so does the aggregate."""
    certain = [P(score=1.0, confidence=1.0) for _ in range(size)]
    assert voting.aggregate(certain).confidence == 1.0

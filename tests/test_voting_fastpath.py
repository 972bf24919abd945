"""Voting hot-path shortcuts keep the results of the general path.

Unweighted ballots skip the weight bookkeeping, and the effective score of a plain Judgment is
computed inline; these tests pin that both give exactly what the general rules give.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from agentjudge.core import Judgment, Status
from agentjudge.voting import (
    Average,
    Consensus,
    ErrorPolicy,
    Majority,
    Median,
    TiePolicy,
    VotingStrategy,
    WeightedAverage,
)

P = Judgment.passed("ok")
F = Judgment.failed("bad")
A = Judgment.abstained("not applicable")
E = Judgment.errored("judge crashed: boom")
POOL = (P, F, A, E, Judgment.passed(score=0.75), Judgment.failed(score=0.25))


def strategies() -> list[VotingStrategy]:
    """Every strategy under every error policy (and every tie policy for Majority)."""
    out: list[VotingStrategy] = []
    for policy in ErrorPolicy:
        out += [Majority(tie=tie, errors=policy) for tie in TiePolicy]
        out += [Consensus(errors=policy), Average(errors=policy), Median(errors=policy)]
        out.append(WeightedAverage(errors=policy, threshold=0.6))
    return out


def evidence(j: Judgment) -> dict[str, Any]:
    """The aggregation evidence as a plain dict."""
    return dict(j.metadata["aggregation"])


def typed(j: Judgment) -> list[tuple[str, type, object]]:
    """The evidence with each value's type, so 3 and 3.0 differ."""
    return [(k, type(v), v) for k, v in evidence(j).items()]


@pytest.mark.parametrize("strategy", strategies(), ids=repr)
def test_no_weights_equal_all_ones(strategy: VotingStrategy) -> None:
    """aggregate/decided without weights give exactly the result of weights all 1.0."""
    for n in (1, 2, 3):
        for judgments in itertools.product(POOL, repeat=n):
            ones = [1.0] * n
            plain = strategy.aggregate(judgments)
            assert plain == strategy.aggregate(judgments, ones)
            assert typed(plain) == typed(strategy.aggregate(judgments, ones))
            for running in range(n):
                done = [None if i == running else j for i, j in enumerate(judgments)]
                early = strategy.decided(done)
                weighted = strategy.decided(done, ones)
                assert early == weighted
                if early is not None and weighted is not None:
                    assert typed(early) == typed(weighted)


def test_unweighted_weights_are_floats_counting_judgments() -> None:
    """Without weights, inputWeight and eligibleWeight are float counts of the judgments."""
    ev = evidence(WeightedAverage().aggregate([P, A, F]))
    assert (type(ev["inputWeight"]), ev["inputWeight"]) == (float, 3.0)
    assert (type(ev["eligibleWeight"]), ev["eligibleWeight"]) == (float, 2.0)
    early = WeightedAverage().decided([E, None, A])
    assert early is not None
    assert (type(evidence(early)["inputWeight"]), evidence(early)["inputWeight"]) == (float, 2.0)
    assert evidence(early)["eligibleWeight"] == 0.0


class _Discounted(Judgment):
    """A Judgment subclass that redefines its effective score."""

    @property
    def effective_score(self) -> float | None:
        """Half the usual effective score."""
        if self.status is Status.ABSTAIN or self.status is Status.ERROR:
            return None
        return 0.5 if self.status is Status.PASS else 0.0


def test_subclass_effective_score_is_used() -> None:
    """Score strategies ask a Judgment subclass for its own effective score."""
    judgments = [_Discounted(status=Status.PASS), P]
    assert Average().aggregate(judgments).score == 0.75
    assert Median().aggregate(judgments).score == 0.75
    assert WeightedAverage().aggregate(judgments, [1, 3]).score == 0.875
    assert Majority().aggregate(judgments).status is Status.PASS


def test_bad_item_index_is_the_first_offender() -> None:
    """The error names the position of the first non-Judgment item, even when repeated."""
    bad = object()
    with pytest.raises(ValueError, match=r"judgments\[1\] must be a Judgment, got object"):
        Majority().aggregate([P, bad, bad])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"done\[2\] must be a Judgment or None"):
        Majority().decided([P, None, bad, bad])  # type: ignore[list-item]

"""Voting strategies: aggregation semantics, policies, weights, evidence and knobs."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
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
    check_weights,
)

P = Judgment.passed("ok")
F = Judgment.failed("bad")
A = Judgment.abstained("not applicable")
E = Judgment.errored("judge crashed: boom")

STRATEGY_TYPES: list[type[Any]] = [Majority, Consensus, Average, Median, WeightedAverage]
BASE_KEYS = [
    "strategy",
    "errorPolicy",
    "inputCount",
    "eligibleCount",
    "explicitAbstainCount",
    "errorCount",
    "ignoredErrorCount",
    "errorsTreatedAsAbstainCount",
    "errorsTreatedAsFailCount",
]
EXTRA_KEYS = {
    "majority": ["passCount", "failCount"],
    "consensus": ["passCount", "failCount"],
    "average": [],
    "median": [],
    "weightedAverage": ["inputWeight", "eligibleWeight"],
}


def evidence(j: Judgment) -> dict[str, Any]:
    """Return the aggregation evidence as a plain dict."""
    return dict(j.metadata["aggregation"])


def all_strategies(errors: ErrorPolicy = ErrorPolicy.PROPAGATE) -> list[VotingStrategy]:
    """One instance of every strategy with the given error policy."""
    return [cls(errors=errors) for cls in STRATEGY_TYPES]


# --------------------------------------------------------------------------- enums and knobs


def test_enum_wire_values() -> None:
    """TiePolicy and ErrorPolicy use the pinned lower-case values."""
    assert [t.value for t in TiePolicy] == ["pass", "fail", "abstain"]
    assert [e.value for e in ErrorPolicy] == [
        "propagate",
        "treat_as_fail",
        "treat_as_abstain",
        "ignore",
    ]


def test_names() -> None:
    """Each strategy reports its pinned name."""
    assert [s.name for s in all_strategies()] == [
        "majority",
        "consensus",
        "average",
        "median",
        "weightedAverage",
    ]


def test_defaults() -> None:
    """Defaults: tie FAIL, errors PROPAGATE, threshold 0.5."""
    assert Majority().tie is TiePolicy.FAIL
    for s in all_strategies():
        assert s.errors is ErrorPolicy.PROPAGATE  # type: ignore[attr-defined]
    for cls in (Average, Median, WeightedAverage):
        assert cls().threshold == 0.5


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_strategies_satisfy_the_protocol(strategy: VotingStrategy) -> None:
    """Every shipped strategy is a VotingStrategy at runtime."""
    assert isinstance(strategy, VotingStrategy)


def test_user_strategy_satisfies_the_protocol() -> None:
    """A user-written class with name/aggregate/decided is a VotingStrategy."""

    class FirstWins:
        name = "firstWins"

        def aggregate(
            self, judgments: Sequence[Judgment], weights: Sequence[float] | None = None
        ) -> Judgment:
            return judgments[0]

        def decided(
            self, done: Sequence[Judgment | None], weights: Sequence[float] | None = None
        ) -> Judgment | None:
            return done[0]

    assert isinstance(FirstWins(), VotingStrategy)
    assert not isinstance(object(), VotingStrategy)


def test_repr_equality_hash() -> None:
    """Strategies are values: readable repr, equality by knobs and type, hashable."""
    assert repr(Majority()) == "Majority(tie=TiePolicy.FAIL, errors=ErrorPolicy.PROPAGATE)"
    assert repr(Consensus(errors=ErrorPolicy.IGNORE)) == "Consensus(errors=ErrorPolicy.IGNORE)"
    assert repr(Average(0.7)) == "Average(threshold=0.7, errors=ErrorPolicy.PROPAGATE)"
    assert (
        repr(WeightedAverage(errors=ErrorPolicy.TREAT_AS_FAIL))
        == "WeightedAverage(threshold=0.5, errors=ErrorPolicy.TREAT_AS_FAIL)"
    )
    assert Majority(tie=TiePolicy.PASS) == Majority(tie=TiePolicy.PASS)
    assert Majority(tie=TiePolicy.PASS) != Majority()
    assert Average(1) == Average(1.0)
    assert Average() != Median()  # type: ignore[comparison-overlap]
    assert len({Majority(), Majority(), Consensus(), Average(), Median()}) == 4


def test_immutable() -> None:
    """Knobs cannot be changed after construction."""
    m = Majority()
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.tie = TiePolicy.PASS  # type: ignore[misc]
    a = Average()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.threshold = 0.1  # type: ignore[misc]


def test_string_knobs_are_accepted() -> None:
    """Enum knobs given as their wire strings become the enum members."""
    m = Majority(tie="pass", errors="ignore")  # type: ignore[arg-type]
    assert m.tie is TiePolicy.PASS
    assert m.errors is ErrorPolicy.IGNORE
    assert Average(errors="treat_as_fail").errors is ErrorPolicy.TREAT_AS_FAIL  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.1, 1.0000001, 2])
@pytest.mark.parametrize("cls", [Average, Median, WeightedAverage])
def test_threshold_out_of_range_rejected(cls: type[Any], bad: float) -> None:
    """A threshold that is not finite within [0, 1] is a ValueError naming the value."""
    with pytest.raises(ValueError, match=r"threshold must be a finite number within \[0, 1\]"):
        cls(threshold=bad)
    with pytest.raises(ValueError, match=re_escape(repr(bad))):
        cls(threshold=bad)


def re_escape(text: str) -> str:
    """Escape text for pytest.raises(match=...)."""
    import re

    return re.escape(text)


@pytest.mark.parametrize("bad", [True, "0.5", None])
def test_threshold_must_be_a_number(bad: object) -> None:
    """A non-number threshold (bools included) is a ValueError naming the type."""
    with pytest.raises(ValueError, match="threshold must be a real number"):
        Average(threshold=bad)  # type: ignore[arg-type]


def test_bad_enum_knobs_rejected() -> None:
    """Unknown tie or error policies are ValueErrors listing the allowed values."""
    with pytest.raises(ValueError, match=r"tie must be a TiePolicy .*got 'maybe'"):
        Majority(tie="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"errors must be a ErrorPolicy .*got 'explode'"):
        Consensus(errors="explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tie must be a TiePolicy"):
        Majority(tie=ErrorPolicy.IGNORE)  # type: ignore[arg-type]
    score_types: list[Any] = [Average, Median, WeightedAverage]
    for cls in score_types:
        with pytest.raises(ValueError, match="errors must be a ErrorPolicy"):
            cls(errors="PROPAGATE")


# --------------------------------------------------------------------------- input errors


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_empty_list_rejected(strategy: VotingStrategy) -> None:
    """Aggregating (or deciding on) an empty list is a ValueError."""
    with pytest.raises(ValueError, match="Cannot aggregate an empty list of judgments"):
        strategy.aggregate([])
    with pytest.raises(ValueError, match="Cannot aggregate an empty list of judgments"):
        strategy.decided([])


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_non_judgment_items_rejected(strategy: VotingStrategy) -> None:
    """Items that are not judgments are rejected with their index."""
    with pytest.raises(ValueError, match=r"judgments\[1\] must be a Judgment, got NoneType"):
        strategy.aggregate([P, None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"done\[0\] must be a Judgment or None.*got str"):
        strategy.decided(["pass", None])  # type: ignore[list-item]


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1.0, -1.0], r"weights\[1\] must be >= 0, got -1.0"),
        ([1.0, float("nan")], r"weights\[1\] must be finite, got nan"),
        ([float("inf"), 1.0], r"weights\[0\] must be finite, got inf"),
        ([float("-inf"), 1.0], r"weights\[0\] must be finite, got -inf"),
        ([0.0, 0.0], "weights are all zero"),
        ([0, 0], "weights are all zero"),
        ([1.0], "weights has 1 entries but there are 2 judgments"),
        ([1.0, 1.0, 1.0], "weights has 3 entries but there are 2 judgments"),
        ([1.0, "2"], r"weights\[1\] must be a real number, got str"),
        ([True, 1.0], r"weights\[0\] must be a real number, got bool"),
        ({"0": 1.0, "1": 2.0}, "weights must be a sequence of numbers.*got dict"),
        ("11", "weights must be a sequence of numbers.*got str"),
        ([1e308, 1e308], "weights sum beyond the float range"),
    ],
)
def test_bad_weights_rejected(strategy: VotingStrategy, weights: Any, message: str) -> None:
    """Every strategy validates weights: length, finite, >= 0, not all zero."""
    with pytest.raises(ValueError, match=message):
        strategy.aggregate([P, F], weights)
    with pytest.raises(ValueError, match=message):
        strategy.decided([P, None], weights)


def test_check_weights_helper() -> None:
    """check_weights returns floats and fills None with ones."""
    assert check_weights(None, 3) == (1.0, 1.0, 1.0)
    assert check_weights([3, 0, 1.5], 3) == (3.0, 0.0, 1.5)
    assert check_weights((2,), 1) == (2.0,)


def test_all_zero_weights_rejected_even_before_propagate() -> None:
    """All-zero weights are a configuration error even when an ERROR would propagate."""
    with pytest.raises(ValueError, match="all zero"):
        WeightedAverage().aggregate([E, P], [0.0, 0.0])


# --------------------------------------------------------------------------- error policies


MATRIX: dict[tuple[str, ErrorPolicy], tuple[Status, float | None]] = {}
for _name in ("majority", "consensus", "average", "median", "weightedAverage"):
    MATRIX[(_name, ErrorPolicy.PROPAGATE)] = (Status.ERROR, None)
    MATRIX[(_name, ErrorPolicy.TREAT_AS_ABSTAIN)] = (
        Status.PASS,
        None if _name in ("majority", "consensus") else 1.0,
    )
    MATRIX[(_name, ErrorPolicy.IGNORE)] = MATRIX[(_name, ErrorPolicy.TREAT_AS_ABSTAIN)]
MATRIX[("majority", ErrorPolicy.TREAT_AS_FAIL)] = (Status.FAIL, None)
MATRIX[("consensus", ErrorPolicy.TREAT_AS_FAIL)] = (Status.ABSTAIN, None)
for _name in ("average", "median", "weightedAverage"):
    MATRIX[(_name, ErrorPolicy.TREAT_AS_FAIL)] = (Status.PASS, 0.5)


@pytest.mark.parametrize("policy", list(ErrorPolicy), ids=str)
@pytest.mark.parametrize("cls", STRATEGY_TYPES, ids=lambda c: c.__name__)
def test_error_policy_matrix_pass_error_abstain(cls: type[Any], policy: ErrorPolicy) -> None:
    """[PASS, ERROR, ABSTAIN] under every strategy and error policy gives the pinned outcome."""
    strategy = cls(errors=policy)
    result = strategy.aggregate([P, E, A])
    status, score = MATRIX[(strategy.name, policy)]
    assert result.status is status
    assert result.score == score
    ev = evidence(result)
    assert ev["inputCount"] == 3
    assert ev["explicitAbstainCount"] == 1
    assert ev["errorCount"] == 1
    assert ev["errorPolicy"] == policy.value
    expected_eligible = {
        ErrorPolicy.PROPAGATE: 0,
        ErrorPolicy.TREAT_AS_FAIL: 2,
        ErrorPolicy.TREAT_AS_ABSTAIN: 1,
        ErrorPolicy.IGNORE: 1,
    }[policy]
    assert ev["eligibleCount"] == expected_eligible
    assert ev["ignoredErrorCount"] == (1 if policy is ErrorPolicy.IGNORE else 0)
    assert ev["errorsTreatedAsAbstainCount"] == (1 if policy is ErrorPolicy.TREAT_AS_ABSTAIN else 0)
    assert ev["errorsTreatedAsFailCount"] == (1 if policy is ErrorPolicy.TREAT_AS_FAIL else 0)


@pytest.mark.parametrize("policy", list(ErrorPolicy), ids=str)
@pytest.mark.parametrize("cls", STRATEGY_TYPES, ids=lambda c: c.__name__)
def test_error_policy_matrix_all_errors(cls: type[Any], policy: ErrorPolicy) -> None:
    """[ERROR, ERROR]: PROPAGATE ERROR, TREAT_AS_FAIL FAIL, the others ABSTAIN."""
    result = cls(errors=policy).aggregate([E, E])
    expected = {
        ErrorPolicy.PROPAGATE: Status.ERROR,
        ErrorPolicy.TREAT_AS_FAIL: Status.FAIL,
        ErrorPolicy.TREAT_AS_ABSTAIN: Status.ABSTAIN,
        ErrorPolicy.IGNORE: Status.ABSTAIN,
    }[policy]
    assert result.status is expected
    assert evidence(result)["errorCount"] == 2
    if policy is ErrorPolicy.TREAT_AS_FAIL and cls in (Average, Median, WeightedAverage):
        assert result.score == 0.0


def test_propagate_reasoning_names_counts_and_first_error() -> None:
    """A propagated ERROR says how many errored and quotes the first error."""
    second = Judgment.errored("second failure")
    result = Majority().aggregate([P, E, second, F])
    assert result.status is Status.ERROR
    assert "2 of 4" in result.reasoning
    assert "propagate" in result.reasoning
    assert "judge crashed: boom" in result.reasoning
    assert "second failure" not in result.reasoning


def test_propagate_reasoning_excerpt_is_bounded() -> None:
    """A very long error reasoning is shortened in the aggregate's reasoning."""
    long = Judgment.errored("x" * 5000)
    result = Average().aggregate([long])
    assert len(result.reasoning) < 400
    assert result.reasoning.endswith("...")


def test_no_result_reasoning_order() -> None:
    """Empty populations explain themselves: ignored errors, errors as abstain, all abstain."""
    ignored = Majority(errors=ErrorPolicy.IGNORE).aggregate([E, A])
    assert ignored.status is Status.ABSTAIN
    assert "1 error(s) ignored" in ignored.reasoning
    assert "1 abstained" in ignored.reasoning
    as_abstain = Average(errors=ErrorPolicy.TREAT_AS_ABSTAIN).aggregate([E, E])
    assert as_abstain.status is Status.ABSTAIN
    assert "2 error(s) treated as abstentions" in as_abstain.reasoning
    all_abstain = Median(errors=ErrorPolicy.IGNORE).aggregate([A, A, A])
    assert all_abstain.status is Status.ABSTAIN
    assert all_abstain.reasoning.startswith("All 3 judgment(s) abstained")


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_all_abstain_gives_abstain(strategy: VotingStrategy) -> None:
    """An empty population (only ABSTAIN) gives ABSTAIN without a score."""
    result = strategy.aggregate([A, A])
    assert result.status is Status.ABSTAIN
    assert result.score is None
    assert evidence(result)["eligibleCount"] == 0
    assert evidence(result)["explicitAbstainCount"] == 2


# --------------------------------------------------------------------------- majority


@pytest.mark.parametrize(
    ("tie", "status"),
    [
        (TiePolicy.PASS, Status.PASS),
        (TiePolicy.FAIL, Status.FAIL),
        (TiePolicy.ABSTAIN, Status.ABSTAIN),
    ],
)
def test_majority_tie_policies(tie: TiePolicy, status: Status) -> None:
    """A 2-2 tie resolves to the tie policy's status and says so."""
    result = Majority(tie=tie).aggregate([P, F, P, F])
    assert result.status is status
    assert result.score is None
    assert "Tie" in result.reasoning
    assert tie.value in result.reasoning


def test_majority_counts_statuses_not_scores() -> None:
    """Majority reads statuses only: low-scored PASSes still win; no aggregate score."""
    low_pass = Judgment.passed(score=0.1)
    high_fail = Judgment.failed(score=0.9)
    result = Majority().aggregate([low_pass, low_pass, high_fail])
    assert result.status is Status.PASS
    assert result.score is None
    ev = evidence(result)
    assert (ev["passCount"], ev["failCount"]) == (2, 1)
    assert "2 passed, 1 failed" in result.reasoning


def test_majority_fail_wins() -> None:
    """More FAIL than PASS votes fails."""
    result = Majority(tie=TiePolicy.PASS).aggregate([F, F, P, A])
    assert result.status is Status.FAIL
    assert evidence(result)["eligibleCount"] == 3


def test_majority_ignores_abstentions() -> None:
    """ABSTAIN leaves the population: one PASS among abstentions passes."""
    assert Majority().aggregate([A, A, P]).status is Status.PASS


# --------------------------------------------------------------------------- consensus


def test_consensus_split_abstains() -> None:
    """Mixed PASS/FAIL is no consensus: ABSTAIN, with the counts in the reasoning."""
    result = Consensus().aggregate([P, P, F])
    assert result.status is Status.ABSTAIN
    assert result.score is None
    assert "No consensus" in result.reasoning
    assert (evidence(result)["passCount"], evidence(result)["failCount"]) == (2, 1)


@pytest.mark.parametrize(
    ("judgments", "status"),
    [([P, P], Status.PASS), ([F, F], Status.FAIL), ([P, A], Status.PASS), ([F, A], Status.FAIL)],
)
def test_consensus_unanimity(judgments: list[Judgment], status: Status) -> None:
    """Unanimous PASS passes, unanimous FAIL fails; abstentions do not break unanimity."""
    result = Consensus().aggregate(judgments)
    assert result.status is status
    assert result.score is None


def test_consensus_ignores_scores() -> None:
    """Consensus reads statuses: PASS judgments without scores agree."""
    assert Consensus().aggregate([P, Judgment.passed(score=0.2)]).status is Status.PASS


# --------------------------------------------------------------------------- score strategies


def test_weighted_average_three_to_one() -> None:
    """Weights [3, 1] on PASS(1.0)/FAIL(0.0) give 0.75, PASS."""
    result = WeightedAverage().aggregate(
        [Judgment.passed(score=1.0), Judgment.failed(score=0.0)], [3, 1]
    )
    assert result.status is Status.PASS
    assert result.score == 0.75
    ev = evidence(result)
    assert ev["inputWeight"] == 4.0
    assert ev["eligibleWeight"] == 4.0


def test_weighted_average_without_weights_is_the_mean() -> None:
    """No weights means all 1.0; the strategy name stays weightedAverage."""
    result = WeightedAverage().aggregate([P, F, F, P, Judgment.passed(score=0.5)])
    assert result.score == pytest.approx(0.5)
    assert evidence(result)["strategy"] == "weightedAverage"
    assert evidence(result)["inputWeight"] == 5.0


def test_weighted_average_zero_eligible_weight_abstains() -> None:
    """If only the positively weighted judge abstained, the result is ABSTAIN with weights."""
    result = WeightedAverage().aggregate([A, P, F], [2.0, 0.0, 0.0])
    assert result.status is Status.ABSTAIN
    assert result.score is None
    assert "weight 0" in result.reasoning
    ev = evidence(result)
    assert ev["eligibleCount"] == 2
    assert ev["inputWeight"] == 2.0
    assert ev["eligibleWeight"] == 0.0


def test_weighted_average_weights_skip_abstentions() -> None:
    """Weights belong to input positions; abstaining judges' weights leave the denominator."""
    result = WeightedAverage().aggregate([F, A, P], [1.0, 5.0, 3.0])
    assert result.score == 0.75
    assert evidence(result)["inputWeight"] == 9.0
    assert evidence(result)["eligibleWeight"] == 4.0


def test_weighted_average_treat_as_fail_uses_the_weight() -> None:
    """An ERROR treated as FAIL counts 0.0 with its own weight."""
    result = WeightedAverage(errors=ErrorPolicy.TREAT_AS_FAIL).aggregate([P, E], [1.0, 3.0])
    assert result.score == 0.25
    assert result.status is Status.FAIL


def test_other_strategies_ignore_weights() -> None:
    """Average, Median, Majority and Consensus validate but do not use weights."""
    judgments = [Judgment.passed(score=1.0), Judgment.failed(score=0.0)]
    assert Average().aggregate(judgments, [3, 1]).score == 0.5
    assert Median().aggregate(judgments, [3, 1]).score == 0.5
    assert Majority().aggregate(judgments, [3, 1]).status is Status.FAIL
    assert Consensus().aggregate(judgments, [3, 1]).status is Status.ABSTAIN


def test_average_uses_effective_scores() -> None:
    """Average uses the score when set, else 1.0 for PASS and 0.0 for FAIL."""
    result = Average().aggregate([P, F, Judgment.failed(score=0.4), Judgment.passed(score=0.6)])
    assert result.score == pytest.approx(0.5)
    assert result.status is Status.PASS
    assert "Average score 0.5" in result.reasoning


def test_average_fails_below_threshold() -> None:
    """A mean below the threshold fails and stores the mean."""
    result = Average().aggregate([Judgment.passed(score=0.2), Judgment.passed(score=0.4)])
    assert result.status is Status.FAIL
    assert result.score == pytest.approx(0.3)


@pytest.mark.parametrize("cls", [Average, Median, WeightedAverage])
def test_threshold_is_inclusive(cls: type[Any]) -> None:
    """A score exactly at the threshold passes; just below fails."""
    at = cls(threshold=0.7).aggregate([Judgment.failed(score=0.7)])
    assert at.status is Status.PASS
    assert at.score == 0.7
    below = cls(threshold=0.7).aggregate([Judgment.passed(score=0.6999999)])
    assert below.status is Status.FAIL
    assert cls(threshold=0.0).aggregate([F]).status is Status.PASS
    assert cls(threshold=1.0).aggregate([Judgment.passed(score=0.999)]).status is Status.FAIL
    assert cls(threshold=1.0).aggregate([P]).status is Status.PASS


def test_median_of_even_count_is_mean_of_middles() -> None:
    """An even count takes the mean of the two middle scores."""
    scores = [1.0, 0.2, 0.6, 0.4]
    result = Median().aggregate([Judgment.passed(score=s) for s in scores])
    assert result.score == pytest.approx(0.5)
    assert result.status is Status.PASS
    low = Median(threshold=0.51).aggregate([Judgment.passed(score=s) for s in scores])
    assert low.status is Status.FAIL


def test_median_of_odd_count_is_the_middle() -> None:
    """An odd count takes the middle score, unaffected by outliers."""
    result = Median().aggregate([Judgment.passed(score=s) for s in (0.0, 0.9, 0.3)])
    assert result.score == 0.3
    assert result.status is Status.FAIL


def test_median_two_pass_fail_is_half() -> None:
    """Median of PASS and FAIL (1.0 and 0.0) is 0.5, which passes."""
    result = Median().aggregate([P, F])
    assert result.score == 0.5
    assert result.status is Status.PASS


def test_scores_stay_in_range() -> None:
    """Aggregate scores of many identical ones and zeros stay within [0, 1]."""
    ones = [Judgment.passed(score=1.0)] * 97
    for s in (Average(), Median(), WeightedAverage()):
        assert s.aggregate(ones).score == 1.0
        assert s.aggregate(ones, [0.1] * 97).score == 1.0
    zeros = [Judgment.failed(score=0.0)] * 13
    assert WeightedAverage().aggregate(zeros, [1e-300] * 13).score == 0.0


# --------------------------------------------------------------------------- evidence


def outcomes(strategy: VotingStrategy) -> list[Judgment]:
    """Aggregates of several shapes (PASS/FAIL, ERROR, ABSTAIN) for one strategy."""
    kind: Any = type(strategy)
    return [
        strategy.aggregate([P, P, F]),
        strategy.aggregate([F, F, A]),
        strategy.aggregate([P, E]),
        strategy.aggregate([A]),
        kind(errors=ErrorPolicy.IGNORE).aggregate([E, A]),
        kind(errors=ErrorPolicy.TREAT_AS_FAIL).aggregate([E, P]),
    ]


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_evidence_keys_present_in_order(strategy: VotingStrategy) -> None:
    """Every aggregate, including ERROR and ABSTAIN, carries the full evidence map in order."""
    for result in outcomes(strategy):
        ev = evidence(result)
        assert list(ev) == BASE_KEYS + EXTRA_KEYS[strategy.name]
        assert ev["strategy"] == strategy.name
        for key in ev:
            if key not in ("strategy", "errorPolicy"):
                assert isinstance(ev[key], int | float)


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_aggregates_round_trip_through_json(strategy: VotingStrategy) -> None:
    """Aggregates are valid judgments whose JSON round-trip is exact."""
    for result in outcomes(strategy):
        wire = result.model_dump(mode="json", exclude_none=True)
        text = json.dumps(wire)
        assert Judgment.model_validate(json.loads(text)) == result
        assert wire["metadata"]["aggregation"]["strategy"] == strategy.name


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_aggregates_are_valid_read_only_judgments(strategy: VotingStrategy) -> None:
    """Aggregates equal their re-validated selves and their evidence cannot be mutated."""
    for result in outcomes(strategy):
        assert Judgment.model_validate(result.model_dump()) == result
        assert result.model_dump(mode="json", exclude_none=True) == Judgment.model_validate(
            result.model_dump()
        ).model_dump(mode="json", exclude_none=True)
        with pytest.raises(TypeError):
            result.metadata["aggregation"]["strategy"] = "forged"
        with pytest.raises(TypeError):
            result.metadata["other"] = 1  # type: ignore[index]


def test_evidence_counts_add_up() -> None:
    """inputCount = eligible + abstentions + removed errors; error counters partition errors."""
    mixed = [P, F, A, E, E, A, P]
    for policy in ErrorPolicy:
        for strategy in all_strategies(policy):
            ev = evidence(strategy.aggregate(mixed))
            removed = ev["ignoredErrorCount"] + ev["errorsTreatedAsAbstainCount"]
            if policy is ErrorPolicy.PROPAGATE:
                assert ev["eligibleCount"] == 0
                continue
            assert ev["inputCount"] == ev["eligibleCount"] + ev["explicitAbstainCount"] + removed
            assert ev["errorCount"] == removed + ev["errorsTreatedAsFailCount"]
            if "passCount" in ev:
                assert ev["passCount"] + ev["failCount"] == ev["eligibleCount"]


def test_aggregate_keeps_no_input_metadata_or_label() -> None:
    """The aggregate is a fresh judgment: no label, no checks, only the aggregation metadata."""
    labelled = Judgment.passed(label="good", metadata={"k": 1})
    result = Average().aggregate([labelled])
    assert result.label is None
    assert result.checks == ()
    assert list(result.metadata) == ["aggregation"]


# --------------------------------------------------------------------------- decided() basics


def test_majority_decides_early_when_certain() -> None:
    """Majority(IGNORE) on [P,P,P,running,running] is PASS, with runningCount evidence."""
    result = Majority(errors=ErrorPolicy.IGNORE).decided([P, P, P, None, None])
    assert result is not None
    assert result.status is Status.PASS
    ev = evidence(result)
    assert ev["inputCount"] == 3
    assert ev["runningCount"] == 2
    assert "2 judgment(s) still running" in result.reasoning


def test_majority_propagate_waits_for_possible_errors() -> None:
    """Under PROPAGATE a running judge could still error, so nothing is decided."""
    assert Majority().decided([P, P, P, None, None]) is None


def test_majority_undecided_while_a_flip_is_possible() -> None:
    """[P,P,F,running,running] could still end in a tie or a FAIL majority."""
    assert Majority(errors=ErrorPolicy.TREAT_AS_FAIL).decided([P, P, F, None, None]) is None
    assert (
        Majority(tie=TiePolicy.PASS, errors=ErrorPolicy.IGNORE).decided([P, P, F, None]) is not None
    )


@pytest.mark.parametrize("strategy", all_strategies(), ids=lambda s: s.name)
def test_propagate_decides_error_at_once(strategy: VotingStrategy) -> None:
    """Under PROPAGATE an arrived ERROR decides ERROR while others still run."""
    result = strategy.decided([None, E, None, P])
    assert result is not None
    assert result.status is Status.ERROR
    assert evidence(result)["runningCount"] == 2


@pytest.mark.parametrize("policy", list(ErrorPolicy), ids=str)
@pytest.mark.parametrize("cls", [Average, Median, WeightedAverage])
def test_score_strategies_wait_for_everyone(cls: type[Any], policy: ErrorPolicy) -> None:
    """Score-based strategies decide nothing while a judge runs (unless an ERROR propagates)."""
    assert cls(errors=policy).decided([P, P, P, P, None]) is None
    assert cls(errors=policy).decided([None]) is None


def test_consensus_decides_a_split_early() -> None:
    """Once PASS and FAIL both arrived, Consensus is ABSTAIN whatever the rest say."""
    result = Consensus(errors=ErrorPolicy.TREAT_AS_ABSTAIN).decided([P, None, F, None])
    assert result is not None
    assert result.status is Status.ABSTAIN
    assert Consensus(errors=ErrorPolicy.IGNORE).decided([P, P, P, None]) is None


@pytest.mark.parametrize(
    "strategy", all_strategies(ErrorPolicy.TREAT_AS_FAIL), ids=lambda s: s.name
)
def test_decided_without_running_equals_aggregate(strategy: VotingStrategy) -> None:
    """With nothing running, decided() returns exactly aggregate()."""
    judgments = [P, F, A, E, Judgment.passed(score=0.3)]
    weights = [1.0, 2.0, 0.5, 0.0, 4.0]
    assert strategy.decided(judgments, weights) == strategy.aggregate(judgments, weights)
    assert "runningCount" not in evidence(strategy.aggregate(judgments, weights))


def test_decided_weights_cover_running_judges() -> None:
    """decided() validates weights against all slots, running ones included."""
    with pytest.raises(ValueError, match="weights has 2 entries but there are 3 judgments"):
        WeightedAverage().decided([P, None, E], [1.0, 1.0])
    result = WeightedAverage().decided([E, None, None], [0.0, 1.0, 1.0])
    assert result is not None
    assert result.status is Status.ERROR
    assert evidence(result)["inputWeight"] == 0.0


def test_nothing_finished_is_undecided() -> None:
    """All judges still running: nothing is decided for any strategy or policy."""
    for policy in ErrorPolicy:
        for strategy in [*all_strategies(policy), Majority(tie=TiePolicy.PASS, errors=policy)]:
            assert strategy.decided([None, None, None]) is None


def test_weights_accept_numeric_types() -> None:
    """Integer and float-like weights are accepted and converted to floats."""
    from fractions import Fraction

    result = WeightedAverage().aggregate([P, F], [Fraction(3, 1), 1])  # type: ignore[list-item]
    assert result.score == 0.75
    assert math.isclose(evidence(result)["inputWeight"], 4.0)

"""Aggregates and confidence intervals behind summary.json."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentjudge.harness._summary import RunAggregate, bootstrap_ci, normal_ci


def row(
    case_id: str, *results: tuple[str, dict[str, Any] | None], error: str | None = None
) -> dict[str, Any]:
    return {
        "id": case_id,
        "results": [{"name": n, "judgment": j} for n, j in results],
        "verdict": None if error else {"status": "pass"},
        "error": error,
    }


def test_mean_uses_effective_score_and_pass_rate_ignores_abstain_and_error() -> None:
    """Mean: score, else 1.0 PASS / 0.0 FAIL; ABSTAIN/ERROR/unsampled left out of both."""
    agg = RunAggregate(["j"])
    agg.add_row(row("a", ("j", {"status": "pass", "score": 0.6})))
    agg.add_row(row("b", ("j", {"status": "pass"})))
    agg.add_row(row("c", ("j", {"status": "fail"})))
    agg.add_row(row("d", ("j", {"status": "abstain", "reasoning": "n/a"})))
    agg.add_row(row("e", ("j", {"status": "error", "reasoning": "boom"})))
    agg.add_row(row("f", ("j", None)))
    s = agg.judge_summaries()["j"]
    assert s.mean == pytest.approx((0.6 + 1.0 + 0.0) / 3)
    assert s.pass_rate == pytest.approx(2 / 3)
    assert s.counts == {"pass": 2, "fail": 1, "abstain": 1, "error": 1}
    assert (s.scored, s.unsampled) == (3, 1)


def test_errored_cases_are_counted_not_scored() -> None:
    """A task error counts in cases.errors and contributes nothing to any judge."""
    agg = RunAggregate(["j"])
    agg.add_row(row("a", ("j", {"status": "pass"})))
    agg.add_row(row("b", error="RuntimeError: boom"))
    cases = agg.cases_summary()
    assert (cases.total, cases.errors, cases.error_rate) == (2, 1, 0.5)
    assert agg.judge_summaries()["j"].counts["pass"] == 1
    assert agg.judge_summaries()["j"].scored == 1
    assert agg.verdict_summary().scored == 1


def test_zero_cases_give_undefined_not_zero() -> None:
    """With no cases, means, rates and intervals are None, never 0.0."""
    agg = RunAggregate(["j"])
    assert agg.judge_summaries() == {}
    v = agg.verdict_summary()
    assert (v.mean, v.pass_rate, v.ci95) == (None, None, None)
    assert agg.cases_summary().error_rate is None


def test_only_errored_cases_leave_judge_means_undefined() -> None:
    """When every case errored, no judge has a mean (upstream scored them from defaults)."""
    agg = RunAggregate(["j"])
    agg.add_row(row("a", error="TimeoutError: slow"))
    assert agg.judge_summaries() == {}
    assert agg.verdict_summary().mean is None


def test_judge_order_follows_configuration_then_name() -> None:
    """Configured judges come first in configured order, others sorted after."""
    agg = RunAggregate(["z", "a"])
    agg.add_row(
        row(
            "a",
            ("m", {"status": "pass"}),
            ("a", {"status": "pass"}),
            ("z", {"status": "pass"}),
            ("b", {"status": "pass"}),
        )
    )
    assert list(agg.judge_summaries()) == ["z", "a", "b", "m"]


def test_bootstrap_is_seeded_and_order_independent() -> None:
    """Same values in any order and the same seed give the same interval."""
    rng = random.Random(1)
    values = [rng.random() for _ in range(200)]
    shuffled = values[::-1]
    assert bootstrap_ci(values, seed=7) == bootstrap_ci(shuffled, seed=7)
    assert bootstrap_ci(values, seed=7) != bootstrap_ci(values, seed=8)


def test_bootstrap_brackets_the_mean_and_needs_two_values() -> None:
    """The interval contains the sample mean; fewer than 2 values give None."""
    values = [0.0, 1.0] * 50
    lo, hi = bootstrap_ci(values)  # type: ignore[misc]
    assert lo < 0.5 < hi
    assert lo > 0.35 and hi < 0.65
    assert bootstrap_ci([0.3]) is None
    assert bootstrap_ci([]) is None
    assert bootstrap_ci([0.4, 0.4]) == (0.4, 0.4)


def test_bootstrap_rejects_bad_knobs() -> None:
    """resamples < 1 and confidence outside (0, 1) are errors."""
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([0.1, 0.2], resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([0.1, 0.2], confidence=1.0)


def test_large_samples_use_the_normal_interval() -> None:
    """Above the bootstrap budget continuous scores use the normal interval and say so."""
    agg = RunAggregate(["j"])
    scores = [0.2 if i % 4 == 0 else 0.9 for i in range(5000)]
    for i, score in enumerate(scores):
        agg.add_row(row(str(i), ("j", {"status": "pass", "score": score})))
    s = agg.judge_summaries()["j"]
    assert s.ci_method == "normal"
    assert s.ci95 == normal_ci(scores)
    lo, hi = s.ci95  # type: ignore[misc]
    assert lo < 0.725 < hi and hi - lo < 0.03
    small = RunAggregate(["j"])
    small.add_row(row("a", ("j", {"status": "pass", "score": 0.7})))
    small.add_row(row("b", ("j", {"status": "fail", "score": 0.1})))
    assert small.judge_summaries()["j"].ci_method == "bootstrap"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=2, max_size=60))
@example([3.7722869586792864e-177] * 3)  # the mean of equal tiny values rounds below them
def test_intervals_stay_within_the_observed_range(values: list[float]) -> None:
    """Both intervals lie within [min, max] of the values and low <= high."""
    for ci in (bootstrap_ci(values, resamples=50), normal_ci(values)):
        assert ci is not None
        assert min(values) <= ci[0] <= ci[1] <= max(values)

"""`agentjudge.calibration`: the exact binomial bound and fixed-sequence threshold calibration."""

from __future__ import annotations

import bisect
import math
import random
from fractions import Fraction
from math import comb
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentjudge.calibration import (
    NEVER,
    _Support,
    binomial_cdf,
    calibrate_thresholds,
    calibrate_tiers,
    cascade_guarantee,
    evaluate_thresholds,
    risk_upper_bound,
)


def _exact_cdf(k: int, n: int, p: Fraction) -> Fraction:
    """Brute force: the binomial CDF in exact rational arithmetic."""
    return sum((comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1)), Fraction(0))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([Fraction(1, 1000), Fraction(1, 7), Fraction(1, 2), Fraction(9, 10)]),
)
def test_cdf_matches_exact_rational_sum(pair: tuple[int, int], p: Fraction) -> None:
    """The log-space CDF equals the exact rational sum to 1e-12."""
    k, n = pair
    assert binomial_cdf(k, n, float(p)) == pytest.approx(float(_exact_cdf(k, n, p)), abs=1e-12)


@settings(max_examples=30, deadline=None)
@example(pair=(700, 70_000), p=0.01)  # past the kept table: lgamma called directly
@example(pair=(69_000, 70_000), p=0.5)  # there the terms far from the top (both sides) are 0.0
@given(
    st.integers(1, 3_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.floats(0, 1),
)
def test_cdf_is_the_lgamma_sum_to_the_last_bit(pair: tuple[int, int], p: float) -> None:
    """The CDF reads log(i!) from a table kept across calls: the very floats lgamma gives
    (also for n past the kept table), summed as before."""
    k, n = pair
    if k >= n or p in (0.0, 1.0):
        return
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
        + i * log_p + (n - i) * log_q
        for i in range(k + 1)
    ]  # fmt: skip
    top = max(terms)
    expected = min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))
    assert binomial_cdf(k, n, p) == expected


def test_cdf_survives_large_n() -> None:
    """Large n neither overflows nor underflows (the median of Binomial(10^6, 1/2))."""
    assert binomial_cdf(500_000, 1_000_000, 0.5) == pytest.approx(0.5004, abs=1e-4)


@pytest.mark.parametrize(
    ("errors", "n", "delta", "expected"),
    [
        # R binom.test(x, n)$conf.int upper ends (= scipy beta.ppf(0.975, x + 1, n - x)).
        (5, 10, 0.025, 0.8129140),
        (1, 10, 0.025, 0.4450161),
        (0, 10, 0.025, 0.3084971),
    ],
)
def test_bound_matches_published_clopper_pearson(
    errors: int, n: int, delta: float, expected: float
) -> None:
    """The bound equals the published Clopper-Pearson upper limits to 7 decimals."""
    assert round(risk_upper_bound(errors, n, delta=delta), 7) == expected


@pytest.mark.parametrize("n", [1, 30, 500])
def test_bound_without_errors_has_closed_form(n: int) -> None:
    """With 0 errors the bound is 1 - delta ** (1 / n)."""
    assert risk_upper_bound(0, n, delta=0.1) == pytest.approx(1 - 0.1 ** (1 / n), abs=2e-10)


def test_bound_is_capped_when_every_case_errs() -> None:
    """When even r = 0.9999 leaves the CDF above delta the bound is 0.9999."""
    assert risk_upper_bound(40, 40, delta=0.1) == 0.9999


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))))
def test_bound_agrees_with_a_brute_force_scan(pair: tuple[int, int]) -> None:
    """The exact CDF crosses delta within 2e-10 below the bound, and a 1e-3 scan agrees."""
    errors, n = pair
    delta = Fraction(1, 10)
    bound = risk_upper_bound(errors, n, delta=0.1)
    assert _exact_cdf(errors, n, Fraction(bound)) <= delta
    assert _exact_cdf(errors, n, Fraction(bound) - Fraction(2, 10**10)) > delta
    # The first r on the 1e-3 grid whose exact CDF is <= delta, found by bisecting the grid:
    # the CDF falls as r grows, so the same r a scan from 0 finds (~10 exact sums, not ~1,000).
    first = bisect.bisect_left(
        range(1001), True, key=lambda r: _exact_cdf(errors, n, Fraction(r, 1000)) <= delta
    )
    scanned = Fraction(first, 1000)
    assert scanned - Fraction(1, 1000) < bound <= scanned + Fraction(1, 10**9)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=80),
    st.floats(0, 1),
    st.floats(0.01, 0.5),
)
def test_shortcut_decides_like_the_bisected_bound(
    cases: list[tuple[float, bool]], threshold: float, alpha: float
) -> None:
    """Comparing with alpha via the CDF gives the same answer as the bisected bound."""
    support = _Support(cases, 0.1)
    n, errors = support.count(threshold)
    if n == 0:
        return
    assert support.exceeds(threshold, alpha) == (risk_upper_bound(errors, n, delta=0.1) > alpha)


def test_each_count_is_decided_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grid points with the same counts share one decision (a 5,000-point grid over 800 cases
    asked ~12,000 CDFs of a trust calibration, ~6x more than distinct counts); a different
    alpha is decided anew, and every answer is the one each point got on its own."""
    import agentjudge.calibration as calibration

    rng = random.Random(5)
    cases = [(round(rng.random(), 3), rng.random() < 0.8) for _ in range(200)]
    support = _Support(cases, 0.1)
    grid = [lam for lam in (i / 1999 for i in range(2000)) if support.count(lam)[0]]
    at = {support.count(lam): lam for lam in grid}  # a grid point of each count
    alphas = (0.15, 0.25)
    expected = {  # each decided by a support of its own
        (*count, alpha): _Support(cases, 0.1).exceeds(lam, alpha)
        for count, lam in at.items()
        for alpha in alphas
    }
    cdfs: list[float] = []
    real = calibration.binomial_cdf

    def counting(k: int, n: int, p: float) -> float:
        cdfs.append(p)
        return real(k, n, p)

    monkeypatch.setattr(calibration, "binomial_cdf", counting)
    for alpha in (*alphas, alphas[0]):
        for lam in grid:
            assert support.exceeds(lam, alpha) == expected[(*support.count(lam), alpha)]
    assert len(grid) > 4 * len(at)  # neighbouring grid points share their counts
    assert len(cdfs) <= 2 * len(expected)  # at most two CDFs per decision, none repeated


@pytest.mark.parametrize("min_support", [1, 2, 30, 199, 200, 201])
def test_candidates_are_the_grid_points_that_keep_min_support_cases(min_support: int) -> None:
    """The bisected prefix of the grid is exactly the points a count per point keeps, with
    confidences on grid points (a threshold equal to a confidence keeps it) and ties."""
    rng = random.Random(7)
    grid = [i / 100 for i in range(101)]
    cases = [(rng.choice(grid[40:]), rng.random() < 0.8) for _ in range(200)]
    support = _Support(cases, 0.1)
    expected = [lam for lam in grid if support.count(lam)[0] >= min_support]
    assert support.candidates(grid, min_support) == expected
    assert (expected == []) == (min_support > 200)


PAPER: dict[str, Any] = {"untested": "paper", "split_delta": False}
"""The paper's own rule: untested fallbacks applied, every tier tested at delta."""
OPTIONS: dict[str, Any] = {"alpha": 0.1, "delta": 0.1, "min_support": 30, "grid": 11} | PAPER


def test_all_correct_goes_down_to_the_lowest_candidate() -> None:
    """A tier that never errs passes every test: the lowest candidate, 0.0, is its threshold."""
    assert calibrate_thresholds([[(0.95, True)] * 50], **OPTIONS) == (0.0,)


def test_scan_stops_above_the_first_failing_neighbour() -> None:
    """Sure-and-right above 0.5, unsure-and-wrong at 0.45: the threshold is 0.5."""
    tier = [(0.95, True)] * 40 + [(0.45, False)] * 40
    assert calibrate_thresholds([tier], **OPTIONS) == (0.5,)


def test_highest_candidate_when_even_it_fails() -> None:
    """When the highest candidate's bound exceeds alpha it is still the threshold."""
    (threshold,) = calibrate_thresholds([[(0.95, False)] * 40], **OPTIONS)
    assert threshold == pytest.approx(0.9)


def test_no_candidate_reuses_the_previous_threshold() -> None:
    """Too few cases: the first tier gets 1.0, a later tier the previous tier's threshold."""
    assert calibrate_thresholds([[(0.9, True)] * 10], **OPTIONS) == (1.0,)
    first = [(0.95, True)] * 40 + [(0.45, False)] * 20
    second = [(0.2, True)] * 60
    assert calibrate_thresholds([first, second], **OPTIONS) == (0.5, 0.5)


def test_later_tiers_see_only_the_cases_no_earlier_tier_accepted() -> None:
    """Tier 2 is calibrated on the 40 cases tier 1 passed on, not on its own errors elsewhere."""
    first = [(0.95, True)] * 40 + [(0.45, False)] * 40
    # On the cases tier 1 accepts, tier 2 is sure and wrong; counting them would give 0.9.
    second = [(0.95, False)] * 40 + [(0.85, True)] * 40
    assert calibrate_thresholds([first, second], **OPTIONS) == (0.5, 0.0)


def test_default_grid_follows_linspace() -> None:
    """With grid=5000 the candidates are i / 4999; the scan stops at the first above 0.5."""
    tier = [(0.95, True)] * 40 + [(0.5, False)] * 40
    (threshold,) = calibrate_thresholds([tier], alpha=0.1, delta=0.1)
    assert threshold == 2500 * (1 / 4999)


@pytest.mark.parametrize(
    ("tiers", "kwargs", "fragment"),
    [
        ([], {}, "non-empty"),
        ([[]], {}, "at least 1 case"),
        ([[(0.5, True)], []], {}, "tiers\\[1\\] has 0"),
        ([[(1.5, True)]], {}, "tiers\\[0\\]\\[0\\]: confidence must be within"),
        ([[(0.5, 1)]], {}, "must be a bool"),
        ([[0.5]], {}, "must be a pair"),
        ([[(0.5, True)]], {"alpha": 0.0}, "alpha must be within"),
        ([[(0.5, True)]], {"delta": 1.0}, "delta must be within"),
        ([[(0.5, True)]], {"grid": 1}, "grid must be a whole number >= 2"),
        ([[(0.5, True)]], {"min_support": 0}, "min_support must be"),
    ],
)
def test_bad_input_is_a_value_error(tiers: list, kwargs: dict, fragment: str) -> None:  # type: ignore[type-arg]
    """Malformed tables and out-of-range settings raise ValueError naming the problem."""
    options = {"alpha": 0.1, "delta": 0.1} | kwargs
    with pytest.raises(ValueError, match=fragment):
        calibrate_thresholds(tiers, **options)


def test_report_counts_coverage_agreement_and_tiers() -> None:
    """The report routes each case to its first confident tier and counts abstentions."""
    first = [(0.9, True), (0.9, False), (0.1, True), (0.1, True)]
    second = [(0.0, False), (0.0, False), (0.8, False), (0.3, True)]
    report = evaluate_thresholds([first, second], (0.5, 0.5))
    assert (report.n, report.accepted, report.agreed, report.abstained) == (4, 3, 1, 1)
    assert report.per_tier == (2, 1)
    assert report.tier_shares == (0.5, 0.25)
    assert report.coverage == 0.75
    assert report.selective_agreement == pytest.approx(1 / 3)
    assert report.selective_agreement_ci95 is not None
    low, high = report.selective_agreement_ci95
    assert low < 1 / 3 < high
    assert report.as_dict()["per_tier"] == [2, 1]


def test_report_without_acceptance_has_no_agreement() -> None:
    """Nothing accepted: selective agreement and its interval are None, not NaN."""
    report = evaluate_thresholds([[(0.1, True)]], (0.5,))
    assert report.selective_agreement is None and report.selective_agreement_ci95 is None
    with pytest.raises(ValueError, match="one threshold"):
        evaluate_thresholds([[(0.1, True)]], (0.5, 0.5))


# --------------------------------------------------------------------------- calibrate_tiers


def test_calibrate_tiers_gives_the_same_thresholds_with_their_evidence() -> None:
    """Each tier says which rule chose its threshold and how many cases back it."""
    from agentjudge.calibration import calibrate_tiers

    cheap = [(0.95, True)] * 40 + [(0.45, False)] * 40
    strong = [(0.99, True)] * 80
    found = calibrate_tiers([cheap, strong], alpha=0.1, delta=0.1, grid=11)
    assert tuple(t.threshold for t in found) == calibrate_thresholds(
        [cheap, strong], alpha=0.1, delta=0.1, grid=11
    )
    first, second = found
    assert (first.basis, first.remaining, first.support, first.errors) == ("tested", 80, 40, 0)
    assert first.risk_bound is not None and first.risk_bound <= 0.1
    assert second.remaining == 40 and second.basis == "tested"


def test_calibrate_tiers_names_the_untested_fallbacks() -> None:
    """A tier whose best candidate fails is 'highest_untested'; one without support reuses."""
    from agentjudge.calibration import calibrate_tiers

    wrong = [(0.9, False)] * 50
    tiny = [(0.9, True)] * 50
    found = calibrate_tiers([wrong, tiny], **OPTIONS)
    assert found[0].basis == "highest_untested"
    assert found[0].threshold == 0.9
    assert found[0].risk_bound is not None and found[0].risk_bound > 0.1
    # The first tier accepted every case (all at 0.9 >= 0.9): nothing remains for the second.
    assert (found[1].basis, found[1].remaining, found[1].threshold) == ("reused_previous", 0, 0.9)
    assert found[1].risk_bound is None


# --------------------------------------------------------------------------- what holds


def test_by_default_an_untested_tier_never_decides() -> None:
    """untested="escalate": the failing tier gets NEVER and the next tier sees every case."""
    wrong = [(0.9, False)] * 50
    strong = [(0.9, True)] * 50
    found = calibrate_tiers([wrong, strong], alpha=0.1, delta=0.1, grid=11)
    assert (found[0].basis, found[0].threshold, found[0].decides) == (
        "highest_untested",
        NEVER,
        False,
    )
    assert (found[1].basis, found[1].remaining) == ("tested", 50)
    report = evaluate_thresholds([wrong, strong], calibrate_thresholds([wrong, strong],
                                 alpha=0.1, delta=0.1, grid=11))  # fmt: skip
    assert report.per_tier == (0, 50) and report.selective_agreement == 1.0
    # The paper's rule applies the failing threshold: here every verdict it lets through is wrong.
    paper = calibrate_thresholds([wrong, strong], **OPTIONS)
    assert evaluate_thresholds([wrong, strong], paper).selective_agreement == 0.0


def test_too_few_cases_never_decides_by_default() -> None:
    """No candidate keeps min_support cases: NEVER (escalate), not the paper's 1.0."""
    found = calibrate_tiers([[(1.0, False)] * 10], alpha=0.1, delta=0.1, grid=11)
    assert (found[0].basis, found[0].threshold) == ("reused_previous", NEVER)
    paper = calibrate_tiers([[(1.0, False)] * 10], **OPTIONS)
    assert paper[0].threshold == 1.0  # ... which accepts every confidence of exactly 1.0
    assert evaluate_thresholds([[(1.0, False)] * 10], (paper[0].threshold,)).accepted == 10


def test_delta_is_split_across_the_tiers_by_default() -> None:
    """Each of K tiers is tested at delta / K; split_delta=False tests each at delta."""
    tiers = [[(0.95, True)] * 40 + [(0.45, False)] * 40] * 3
    split = calibrate_tiers(tiers, alpha=0.1, delta=0.09, grid=11)
    assert [t.delta for t in split] == pytest.approx([0.03] * 3)
    whole = calibrate_tiers(tiers, alpha=0.1, delta=0.09, grid=11, split_delta=False)
    assert [t.delta for t in whole] == [0.09] * 3
    # A smaller level is a stricter test: the bound of the same cases is higher.
    assert split[0].risk_bound is not None and whole[0].risk_bound is not None
    assert split[0].risk_bound > whole[0].risk_bound


def test_a_stricter_level_can_change_the_threshold() -> None:
    """2 errors in 40 pass at delta 0.3 but not at 0.1: splitting delta over 3 tiers matters."""
    tier = [(0.95, True)] * 38 + [(0.95, False)] * 2
    assert risk_upper_bound(2, 40, delta=0.3) <= 0.1 < risk_upper_bound(2, 40, delta=0.1)
    assert calibrate_thresholds([tier] * 3, alpha=0.1, delta=0.3, grid=11, split_delta=False)[
        0
    ] == pytest.approx(0.0)
    assert calibrate_thresholds([tier] * 3, alpha=0.1, delta=0.3, grid=11)[0] == NEVER


def test_cascade_guarantee_says_what_holds() -> None:
    """Holds (tested, split); union bound only (not split); nothing (an untested tier decides)."""
    good = [(0.95, True)] * 40 + [(0.45, False)] * 40
    wrong = [(0.9, False)] * 40 + [(0.3, True)] * 40
    strong = [(0.99, True)] * 80
    rigorous = calibrate_tiers([good, good], alpha=0.1, delta=0.1, grid=11)
    held = cascade_guarantee(rigorous, alpha=0.1, delta=0.1, names=["cheap", "strong"])
    assert held.holds and held.probability == pytest.approx(0.9)
    assert held.statement.startswith("holds: with probability >= 0.9")
    unsplit = calibrate_tiers([good, good], alpha=0.1, delta=0.1, grid=11, split_delta=False)
    union = cascade_guarantee(unsplit, alpha=0.1, delta=0.1)
    assert not union.holds and union.probability == pytest.approx(0.8)
    assert "union bound gives probability >= 0.8" in union.statement
    paper = calibrate_tiers([wrong, strong], **OPTIONS)
    void = cascade_guarantee(paper, alpha=0.1, delta=0.1, names=["cheap", "strong"])
    assert (void.holds, void.probability, void.deciding_untested) == (False, None, (0,))
    assert "does not hold: cheap (highest_untested) decides" in void.statement
    escalated = calibrate_tiers([wrong, strong], alpha=0.1, delta=0.1, grid=11)
    kept = cascade_guarantee(escalated, alpha=0.1, delta=0.1, names=["cheap", "strong"])
    assert kept.holds and kept.untested == (0,) and kept.deciding_untested == ()
    assert "cheap never decides (untested)" in kept.statement
    assert kept.as_dict()["untested"] == [0]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"untested": "apply"}, "untested must be one of"), ({"split_delta": 1}, "must be a bool")],
)
def test_bad_rule_is_a_value_error(kwargs: dict[str, Any], fragment: str) -> None:
    """An unknown untested rule or a split_delta that is not a bool is refused."""
    with pytest.raises(ValueError, match=fragment):
        calibrate_thresholds([[(0.5, True)]], alpha=0.1, delta=0.1, **kwargs)


def test_evaluate_thresholds_accepts_never() -> None:
    """NEVER accepts no case, even at confidence 1.0."""
    report = evaluate_thresholds([[(1.0, True)], [(1.0, False)]], (NEVER, 0.5))
    assert report.per_tier == (0, 1)


def test_confidently_wrong_cheap_tier_escalate_keeps_the_guarantee() -> None:
    """A cheap tier always sure (1.0) and right half the time: the paper's rule lets it decide
    every case in every draw (true agreement 0.5); escalate never lets it decide, and the
    strong tier (confidence c uniform in [0.5, 1], right with probability c) keeps it."""
    alpha, delta = 0.15, 0.1
    rng = random.Random(4)

    def draw(n: int) -> list[list[tuple[float, bool]]]:
        cheap = [(1.0, rng.random() < 0.5) for _ in range(n)]
        strong = [(c, rng.random() < c) for c in (0.5 + 0.5 * rng.random() for _ in range(n))]
        return [cheap, strong]

    def true_agreement(thresholds: tuple[float, ...]) -> float:
        if thresholds[0] <= 1.0:
            return 0.5  # the cheap tier decides every case
        return (1 + max(thresholds[1], 0.5)) / 2  # E[c | c >= t]: the strong tier alone

    paper_held = escalate_held = 0
    for _ in range(10):
        sample = draw(300)
        paper = calibrate_thresholds(sample, alpha=alpha, delta=delta, grid=101, **PAPER)
        escalate = calibrate_thresholds(sample, alpha=alpha, delta=delta, grid=101)
        assert escalate[0] == NEVER
        paper_held += true_agreement(paper) >= 1 - alpha
        escalate_held += true_agreement(escalate) >= 1 - alpha
    assert paper_held == 0 and escalate_held >= 8

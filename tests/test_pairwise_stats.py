"""agentjudge.pairwise: win rates, position consistency and the Bradley-Terry fit."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.agreement import wilson_interval
from agentjudge.pairwise import (
    BradleyTerry,
    Comparison,
    Rate,
    bradley_terry,
    position_consistency,
    win_rates,
)


def _games(
    first: str, second: str, first_wins: int, second_wins: int, ties: int = 0
) -> list[Comparison]:
    return (
        [Comparison(first, second, first)] * first_wins
        + [Comparison(first, second, second)] * second_wins
        + [Comparison(first, second, None)] * ties
    )


# -- win rates ---------------------------------------------------------------------------------


def test_win_rates_count_ties_apart_and_give_both_rates_with_n() -> None:
    """Ties are reported apart; the decided rate leaves them out, the overall rate counts them."""
    rates = win_rates(_games("x", "y", 3, 1, ties=1))
    x, y = rates["x"], rates["y"]
    assert (x.n, x.wins, x.losses, x.ties) == (5, 3, 1, 1)
    assert (y.n, y.wins, y.losses, y.ties) == (5, 1, 3, 1)
    assert x.decided == Rate(3, 4, 0.75, wilson_interval(3, 4))
    assert x.overall == Rate(3, 5, 0.6, wilson_interval(3, 5))
    assert list(rates) == ["x", "y"]


def test_win_rates_all_ties_leave_the_decided_rate_undefined() -> None:
    """With only ties there is no decided comparison: None, not 0/0."""
    rates = win_rates(_games("x", "y", 0, 0, ties=2))
    assert rates["x"].decided is None
    assert rates["x"].overall.rate == 0.0
    assert rates["x"].as_dict()["win_rate_decided"] is None


def test_win_rates_of_nothing_is_empty() -> None:
    """No comparisons give no systems."""
    assert win_rates([]) == {}


def test_comparison_refuses_bad_values() -> None:
    """A comparison names two different systems and a winner among them (or None)."""
    with pytest.raises(ValueError, match="two different systems"):
        Comparison("x", "x", None)
    with pytest.raises(ValueError, match="winner must be"):
        Comparison("x", "y", "z")
    with pytest.raises(ValueError, match="non-empty string"):
        Comparison("", "y", None)
    with pytest.raises(ValueError, match=r"comparisons\[0\] must be a Comparison"):
        win_rates([("x", "y", "x")])  # type: ignore[list-item]


# -- position consistency ------------------------------------------------------------------------


def test_position_consistency_is_a_wilson_rate() -> None:
    """13 consistent pairs of 20 is 0.65 with the Wilson interval of 13/20."""
    rate = position_consistency(13, 20)
    assert (rate.successes, rate.n, rate.rate) == (13, 20, 0.65)
    assert rate.ci95 == wilson_interval(13, 20)
    assert rate.as_dict() == {"successes": 13, "n": 20, "rate": 0.65, "ci95": list(rate.ci95)}


def test_position_consistency_refuses_no_pairs() -> None:
    """n = 0 has no rate: ValueError, never NaN."""
    with pytest.raises(ValueError, match="n must be >= 1"):
        position_consistency(0, 0)


# -- Bradley-Terry -------------------------------------------------------------------------------


def test_bradley_terry_two_systems_is_the_win_share() -> None:
    """Hand-computed: with two systems the MLE strength is each one's share of the wins."""
    fit = bradley_terry(_games("x", "y", 3, 1), prior=0.0)
    assert fit.strengths == pytest.approx({"x": 0.75, "y": 0.25}, abs=1e-8)
    assert fit.converged and fit.comparisons == 4


def test_bradley_terry_recovers_strengths_from_exactly_consistent_data() -> None:
    """Hand-computed: counts in the exact ratios of strengths 4:2:1 give the MLE (4, 2, 1)/7."""
    data = _games("a", "b", 2, 1) + _games("a", "c", 4, 1) + _games("b", "c", 2, 1)
    fit = bradley_terry(data, prior=0.0)
    assert list(fit.strengths) == ["a", "b", "c"]
    assert fit.strengths == pytest.approx({"a": 4 / 7, "b": 2 / 7, "c": 1 / 7}, abs=1e-8)
    assert fit.probability("a", "c") == pytest.approx(0.8, abs=1e-8)


def test_bradley_terry_ties_count_half_a_win_each() -> None:
    """One win each and two ties is the same as two wins each: equal strengths."""
    fit = bradley_terry(_games("x", "y", 1, 1, ties=2), prior=0.0)
    assert fit.strengths == pytest.approx({"x": 0.5, "y": 0.5})


def test_bradley_terry_never_winning_system_gets_a_small_strength_with_the_prior() -> None:
    """A system that never wins gets a small positive strength, not a division by zero."""
    fit = bradley_terry(_games("x", "y", 5, 0))
    # prior 0.1: x has 5.1 of 5.2 (pseudo-)wins against y, so x/(x+y) = 5.1/5.2.
    assert fit.strengths["y"] == pytest.approx(0.1 / 5.2, abs=1e-8)
    assert fit.strengths["y"] > 0


def test_bradley_terry_without_prior_refuses_data_without_an_estimate() -> None:
    """prior=0 with a system that never won (or groups never compared) is a clear ValueError."""
    with pytest.raises(ValueError, match="no finite estimate"):
        bradley_terry(_games("x", "y", 5, 0), prior=0.0)
    disconnected = _games("a", "b", 1, 1) + _games("c", "d", 1, 1)
    with pytest.raises(ValueError, match="no finite estimate"):
        bradley_terry(disconnected, prior=0.0)


def test_bradley_terry_options_are_checked() -> None:
    """Bad options and empty data are ValueErrors naming the option."""
    games = _games("x", "y", 1, 1)
    with pytest.raises(ValueError, match="at least one comparison"):
        bradley_terry([])
    with pytest.raises(ValueError, match="prior"):
        bradley_terry(games, prior=-1.0)
    with pytest.raises(ValueError, match="tolerance"):
        bradley_terry(games, tolerance=0.0)
    with pytest.raises(ValueError, match="max_iterations"):
        bradley_terry(games, max_iterations=0)


def test_bradley_terry_reports_an_unconverged_fit() -> None:
    """The iteration cap stops the fit and says so."""
    data = _games("a", "b", 2, 1) + _games("a", "c", 4, 1) + _games("b", "c", 2, 1)
    fit = bradley_terry(data, max_iterations=1)
    assert (fit.iterations, fit.converged) == (1, False)
    assert isinstance(fit, BradleyTerry)


def _ordered_pairs(systems: Sequence[str]) -> st.SearchStrategy[tuple[str, str]]:
    """Two different systems in either order: one draw (the first two of a drawn permutation
    were the same pairs at a draw per system, most of these tests' CPU)."""
    return st.sampled_from([(a, b) for a in systems for b in systems if a != b])


# The strategies the composites below draw from are built once, not at every draw: building a
# `sampled_from` of a list is not cached by hypothesis and was a large part of these tests' CPU.
# Same choices, same distribution of examples (hypothesis's mutations tell strategies apart by
# their elements, so a few derandomized examples differ from the in-place build's).
_ABCD_PAIRS = _ordered_pairs("abcd")
_WINNER = st.sampled_from((0, 1, None))
"""The first, the second or neither (a tie): the index into the drawn pair."""


@st.composite
def _comparisons(draw: st.DrawFn) -> list[Comparison]:
    out = []
    for _ in range(draw(st.integers(1, 30))):
        pair = draw(_ABCD_PAIRS)
        winner = draw(_WINNER)
        out.append(Comparison(*pair, None if winner is None else pair[winner]))
    return out


@settings(max_examples=60, deadline=None)
@given(_comparisons())
def test_bradley_terry_solves_the_likelihood_equations(data: list[Comparison]) -> None:
    """Property: the fit sums to 1 and meets W_i = sum_j n_ij p_i / (p_i + p_j) (with the prior)."""
    prior = 0.1
    fit = bradley_terry(data, prior=prior)
    p = fit.strengths
    assert fit.converged
    assert math.fsum(p.values()) == pytest.approx(1.0)
    assert all(v > 0 for v in p.values())
    for i in p:
        wins = prior * (len(p) - 1)
        expected = 0.0
        for j in p:
            if j == i:
                continue
            games = 2 * prior
            for c in data:
                if {c.first, c.second} == {i, j}:
                    games += 1
                    wins += 1.0 if c.winner == i else 0.5 if c.winner is None else 0.0
            expected += games * p[i] / (p[i] + p[j])
        assert expected == pytest.approx(wins, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(_comparisons())
def test_win_rates_add_up(data: list[Comparison]) -> None:
    """Property: wins + losses + ties = n per system; total wins = total losses; rates in [0, 1]."""
    rates = win_rates(data)
    assert sum(r.wins for r in rates.values()) == sum(r.losses for r in rates.values())
    for r in rates.values():
        assert r.wins + r.losses + r.ties == r.n
        assert 0.0 <= r.overall.ci95[0] <= r.overall.rate <= r.overall.ci95[1] <= 1.0
        if r.decided is not None:
            assert r.decided.n == r.wins + r.losses


# -- Bradley-Terry against a 50-digit reference ----------------------------------------------------


def _reference_fit(data: list[Comparison], prior: float) -> dict[str, float]:
    """The MLE to 50 digits: Newton on the log-strengths in Decimal, independent of the fit.

    The likelihood equations ``W_i = sum_j n_ij p_i / (p_i + p_j)`` are checked to 1e-30 at
    the answer, so the reference certifies itself.
    """
    with localcontext() as context:
        context.prec = 50
        return _newton_in_decimal(data, prior)


def _newton_in_decimal(data: list[Comparison], prior: float) -> dict[str, float]:
    systems = sorted({c.first for c in data} | {c.second for c in data})
    k = len(systems)
    half, extra = Decimal("0.5"), Decimal(repr(prior))
    wins = {s: extra * (k - 1) for s in systems}
    games = {(a, b): 2 * extra for a in systems for b in systems if a < b}
    for c in data:
        games[min(c.first, c.second), max(c.first, c.second)] += 1
        for side in (c.first, c.second):
            wins[side] += 1 if c.winner == side else half if c.winner is None else 0

    def gradient_and_curvature(
        theta: dict[str, Decimal],
    ) -> tuple[dict[str, Decimal], dict[tuple[str, str], Decimal]]:
        p = {s: theta[s].exp() for s in systems}
        grad = dict(wins)
        curve = {(a, b): Decimal(0) for a in systems for b in systems}
        for (a, b), n in games.items():
            if not n:
                continue
            total = p[a] + p[b]
            grad[a] -= n * p[a] / total
            grad[b] -= n * p[b] / total
            h = n * p[a] * p[b] / (total * total)
            curve[a, a] += h
            curve[b, b] += h
            curve[a, b] -= h
            curve[b, a] -= h
        return grad, curve

    theta = {s: Decimal(0) for s in systems}
    free = systems[1:]  # theta of systems[0] stays 0 (the scale is free)
    for _ in range(100):
        grad, curve = gradient_and_curvature(theta)
        rows = [[curve[a, b] for b in free] + [grad[a]] for a in free]
        for col in range(len(free)):  # Gauss-Jordan elimination with partial pivoting
            pivot = max(range(col, len(free)), key=lambda r: abs(rows[r][col]))
            rows[col], rows[pivot] = rows[pivot], rows[col]
            for r in range(len(free)):
                if r != col:
                    factor = rows[r][col] / rows[col][col]
                    rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col], strict=True)]
        step = {a: rows[r][-1] / rows[r][r] for r, a in enumerate(free)}
        theta.update({a: theta[a] + step[a] for a in free})
        if max(abs(v) for v in step.values()) < Decimal("1e-45"):
            break
    grad, _ = gradient_and_curvature(theta)
    assert max(abs(g) for g in grad.values()) < Decimal("1e-30")
    p = {s: theta[s].exp() for s in systems}
    total = sum(p.values())
    return {s: float(v / total) for s, v in p.items()}


@pytest.mark.parametrize("prior", [0.0, 0.1])
@pytest.mark.parametrize("margin", [5, 20, 40])
def test_bradley_terry_is_within_tolerance_of_the_mle_when_it_says_converged(
    margin: int, prior: float
) -> None:
    """Slow-converging data (a chain, each beating the next margin:1): converged means exact.

    MM moves by less than 1e-10 per step long before it is within 1e-10 of the maximum here
    (the old step-size rule said converged while 1e-9 to 1e-8 away); the fit must agree with
    the 50-digit maximum-likelihood solution within 1e-10 whenever it says converged.
    """
    names = "abcdef"
    data = [c for x, y in itertools.pairwise(names) for c in _games(x, y, margin, 1)]
    fit = bradley_terry(data, prior=prior)
    reference = _reference_fit(data, prior)
    assert fit.converged
    assert max(abs(fit.strengths[s] - reference[s]) for s in reference) <= 1e-10


_SYSTEMS = {k: [f"s{i}" for i in range(k)] for k in range(3, 8)}
_SYSTEM_PAIRS = {k: _ordered_pairs(systems) for k, systems in _SYSTEMS.items()}
"""`_skewed`'s systems and their pair strategies by count, built once (see `_ABCD_PAIRS`)."""


@st.composite
def _skewed(draw: st.DrawFn) -> tuple[list[Comparison], float]:
    systems = _SYSTEMS[draw(st.integers(3, 7))]
    strength = {s: draw(st.integers(0, 6)) for s in systems}
    pairs = _SYSTEM_PAIRS[len(systems)]
    data = []
    for _ in range(draw(st.integers(10, 80))):
        first, second = draw(pairs)
        upset = draw(st.integers(0, 9)) == 0  # the weaker side wins one time in ten
        stronger = first if strength[first] >= strength[second] else second
        weaker = second if stronger == first else first
        data.append(Comparison(first, second, weaker if upset else stronger))
    return data, draw(st.sampled_from([0.1, 0.01, 0.001]))


@settings(max_examples=25, deadline=None)
@given(_skewed())
def test_bradley_terry_converged_fits_match_the_reference(
    case: tuple[list[Comparison], float],
) -> None:
    """Property: on lopsided data with small priors, a converged fit is within 1e-10."""
    data, prior = case
    fit = bradley_terry(data, prior=prior)
    reference = _reference_fit(data, prior)
    assert fit.converged
    assert max(abs(fit.strengths[s] - reference[s]) for s in reference) <= 1e-10

"""`agentjudge.agreement.wilson_interval` against textbook values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.agreement import wilson_interval


@pytest.mark.parametrize(
    ("successes", "n", "expected"),
    [
        (81, 263, (0.2553, 0.3662)),  # Newcombe (1998), Statistics in Medicine 17, table I
        (0, 30, (0.0, 0.1135)),
        (30, 30, (0.8865, 1.0)),
        (5, 10, (0.2366, 0.7634)),
        (1, 1, (0.2065, 1.0)),
    ],
)
def test_wilson_95_matches_textbook_values(
    successes: int, n: int, expected: tuple[float, float]
) -> None:
    """The 95% Wilson interval equals the published values to 4 decimals."""
    low, high = wilson_interval(successes, n)
    assert (round(low, 4), round(high, 4)) == expected


def test_bounds_are_exact_at_the_extremes() -> None:
    """0 successes give a low of exactly 0.0 and n successes a high of exactly 1.0."""
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0


def test_confidence_widens_the_interval() -> None:
    """A 99% interval contains the 95% one, which contains the 80% one."""
    lo80, hi80 = wilson_interval(40, 100, confidence=0.80)
    lo95, hi95 = wilson_interval(40, 100)
    lo99, hi99 = wilson_interval(40, 100, confidence=0.99)
    assert lo99 < lo95 < lo80 < 0.4 < hi80 < hi95 < hi99


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        ((0, 0), {}, "n must be >= 1"),
        ((-1, 5), {}, "successes must be within"),
        ((6, 5), {}, "successes must be within"),
        ((1, 5), {"confidence": 0.0}, "confidence must be within"),
        ((1, 5), {"confidence": 1.0}, "confidence must be within"),
        ((1, 5), {"confidence": float("nan")}, "confidence must be within"),
        ((1.0, 5), {}, "successes must be a whole number"),
        ((True, 5), {}, "successes must be a whole number"),
    ],
)
def test_bad_input_is_a_value_error(args: tuple, kwargs: dict, fragment: str) -> None:  # type: ignore[type-arg]
    """n < 1, successes outside [0, n], non-integers and confidence outside (0, 1) raise."""
    with pytest.raises(ValueError, match=fragment):
        wilson_interval(*args, **kwargs)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1, max_value=10_000).flatmap(
        lambda n: st.tuples(st.integers(0, n), st.just(n))
    )
)
def test_interval_contains_the_proportion(pair: tuple[int, int]) -> None:
    """The interval lies within [0, 1] and contains successes / n."""
    successes, n = pair
    low, high = wilson_interval(successes, n)
    assert 0.0 <= low <= successes / n <= high <= 1.0

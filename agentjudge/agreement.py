"""Statistics of agreement and of proportions (standard library only).

```python
from agentjudge.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha, wilson_interval

wilson_interval(81, 263)        # (0.2553..., 0.3662...): 95% interval of 81/263
wilson_interval(30, 30)         # (0.8865..., 1.0): 30 passes out of 30 is not proof of 100%
cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"])          # 0.5
fleiss_kappa([["y", "y", "n"], ["n", "n", "n"], ["y", "y", "y"]])  # 0.55
krippendorff_alpha([[1, 2, 3, None], [1, 2, 4, 4]], level="interval")  # 0.878...
```

Degenerate data never gives NaN: when the chance term leaves nothing to correct for (both
raters always give the same single label, every rating is the same value), the coefficients
are 1.0 (perfect agreement, though on data that cannot show disagreement); data on which
agreement cannot be measured at all (no item rated twice) is a `ValueError`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from statistics import NormalDist

__all__ = ["LEVELS", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "wilson_interval"]

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
"""The levels of measurement `krippendorff_alpha` accepts."""


def _check_count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number (int), got {value!r}")
    return value


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n`` (Wilson, 1927).

    Unlike a bootstrap or the normal (Wald) interval it is never degenerate: 30 successes out
    of 30 give about ``(0.886, 1.0)`` at 95%, not ``(1.0, 1.0)``, so a gate on the lower bound
    does not pass on a small sample. With ``z`` the standard normal quantile
    ``NormalDist().inv_cdf(1 - (1 - confidence) / 2)`` and ``p = successes / n``::

        centre = (p + z**2 / (2 n)) / (1 + z**2 / n)
        half   = z / (1 + z**2 / n) * sqrt(p (1 - p) / n + z**2 / (4 n**2))

    Args:
        successes: How many of the ``n`` trials succeeded, 0 <= successes <= n.
        n: How many trials, >= 1.
        confidence: Coverage, strictly between 0 and 1.

    Returns:
        ``(low, high)`` within [0, 1]; ``low`` is exactly 0.0 when ``successes`` is 0 and
        ``high`` exactly 1.0 when ``successes`` is ``n``.

    Raises:
        ValueError: ``n`` < 1, ``successes`` outside [0, n], either not an int, or
            ``confidence`` not strictly between 0 and 1.
    """
    n = _check_count(n, "n")
    successes = _check_count(successes, "successes")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within [0, n] = [0, {n}], got {successes}")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise ValueError(f"confidence must be a number within (0, 1), got {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _check_sequence(value: object, name: str) -> Sequence[object]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(f"{name} must be a sequence (list or tuple) of labels, got {value!r:.80}")
    return value


def _check_label(value: object, where: str) -> Hashable:
    if value is None or _is_nan(value):
        raise ValueError(
            f"{where} is {value!r}: this measure has no missing values "
            "(drop the item, or use krippendorff_alpha, which takes None as missing)"
        )
    if not isinstance(value, Hashable):
        raise ValueError(f"{where} must be a hashable label, got {type(value).__name__}")
    return value


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters on nominal labels (Cohen, 1960).

    With ``n`` items, ``p_o`` the share of items both raters label alike and ``p_e`` the
    agreement expected by chance from each rater's own label shares
    (``p_e = sum over labels l of a_l / n * b_l / n``)::

        kappa = (p_o - p_e) / (1 - p_e)

    computed from integer counts, so the only rounding is the final division. 1.0 is perfect
    agreement, 0.0 chance-level agreement, negative values worse than chance (down to -1.0).

    Args:
        a: The first rater's label for each item (any hashable values, no None).
        b: The second rater's labels, same items in the same order.

    Returns:
        Kappa within [-1, 1]. When ``p_e`` is 1 (both raters always give the same single
        label) the data shows no disagreement to correct for: the result is 1.0.

    Raises:
        ValueError: ``a`` and ``b`` differ in length, are empty, are not sequences (a string
            is refused: give a list of labels), or hold None/NaN or an unhashable label.
    """
    a = _check_sequence(a, "a")
    b = _check_sequence(b, "b")
    if len(a) != len(b):
        raise ValueError(f"a and b must rate the same items: len(a)={len(a)}, len(b)={len(b)}")
    n = len(a)
    if n < 1:
        raise ValueError("cohen_kappa needs at least 1 item, got 0")
    left = [_check_label(x, f"a[{i}]") for i, x in enumerate(a)]
    right = [_check_label(y, f"b[{i}]") for i, y in enumerate(b)]
    agree = sum(1 for x, y in zip(left, right, strict=True) if x == y)
    counts_a, counts_b = Counter(left), Counter(right)
    chance = sum(count * counts_b[label] for label, count in counts_a.items())
    if chance == n * n:
        return 1.0
    return (n * agree - chance) / (n * n - chance)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa of a fixed number of raters per item on nominal labels (Fleiss, 1971).

    With ``N`` items, ``m`` ratings per item, ``n_ij`` the number of ratings of item ``i`` in
    category ``j`` and ``p_j = sum_i n_ij / (N m)``::

        P_i   = (sum_j n_ij**2 - m) / (m (m - 1))     # agreement on item i
        P_bar = mean of P_i,  P_e = sum_j p_j**2
        kappa = (P_bar - P_e) / (1 - P_e)

    computed exactly with fractions. The raters need not be the same people on every item,
    only as many.

    Args:
        ratings: One inner sequence per item: the labels its raters gave.

    Returns:
        Kappa, at most 1.0 (and at least ``-1 / (m - 1)``). When every rating of every item is
        the same single label (``P_e`` = 1) the result is 1.0.

    Raises:
        ValueError: no items, an item with fewer than 2 ratings, items with different numbers
            of ratings, an item that is not a sequence, or a None/NaN/unhashable label.
    """
    ratings = _check_sequence(ratings, "ratings")  # type: ignore[assignment]
    if len(ratings) < 1:
        raise ValueError("fleiss_kappa needs at least 1 item, got 0")
    m = len(_check_sequence(ratings[0], "ratings[0]"))
    if m < 2:
        raise ValueError(f"fleiss_kappa needs >= 2 ratings per item; ratings[0] has {m}")
    per_item: list[Counter[Hashable]] = []
    for i, item in enumerate(ratings):
        labels = _check_sequence(item, f"ratings[{i}]")
        if len(labels) != m:
            raise ValueError(
                f"every item needs the same number of ratings: ratings[0] has {m}, "
                f"ratings[{i}] has {len(labels)}"
            )
        per_item.append(
            Counter(_check_label(x, f"ratings[{i}][{j}]") for j, x in enumerate(labels))
        )
    total = len(per_item) * m
    squares = sum(c * c for counts in per_item for c in counts.values())
    columns: Counter[Hashable] = Counter()
    for counts in per_item:
        columns.update(counts)
    chance = Fraction(sum(c * c for c in columns.values()), total * total)
    if chance == 1:
        return 1.0
    observed = Fraction(squares - total, total * (m - 1))
    return float((observed - chance) / (1 - chance))


def _check_value(value: object, level: str, where: str) -> object:
    if _is_nan(value):
        raise ValueError(f"{where} is NaN: write None for a missing value")
    if level == "nominal":
        if not isinstance(value, Hashable):
            raise ValueError(f"{where} must be a hashable label, got {type(value).__name__}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            f"{where} must be a number (int or float) for level={level!r}, got {value!r:.80}; "
            "map ordered labels to their ranks first (e.g. {'low': 1, 'mid': 2, 'high': 3})"
        )
    if not math.isfinite(value):
        raise ValueError(f"{where} must be finite, got {value!r}")
    if level == "ratio" and value < 0:
        raise ValueError(f"{where} must be >= 0 for level='ratio' (a ratio scale), got {value!r}")
    return value


def _pairable_units(ratings: Sequence[Sequence[object]], level: str) -> list[Counter[Hashable]]:
    """Validate the rater-by-item matrix; return each item's value counts (items with >= 2)."""
    ratings = _check_sequence(ratings, "ratings")  # type: ignore[assignment]
    if len(ratings) < 1:
        raise ValueError("krippendorff_alpha needs at least 1 rater, got 0")
    rows = [_check_sequence(row, f"ratings[{r}]") for r, row in enumerate(ratings)]
    items = len(rows[0])
    if items < 1:
        raise ValueError("krippendorff_alpha needs at least 1 item, got 0")
    for r, row in enumerate(rows):
        if len(row) != items:
            raise ValueError(
                f"every rater needs one entry per item (None = missing): ratings[0] has "
                f"{items}, ratings[{r}] has {len(row)}"
            )
    units: list[Counter[Hashable]] = []
    for i in range(items):
        values = [
            _check_value(row[i], level, f"ratings[{r}][{i}]")
            for r, row in enumerate(rows)
            if row[i] is not None
        ]
        if len(values) >= 2:
            units.append(Counter(values))
    if not units:
        raise ValueError(
            "krippendorff_alpha needs at least one item with 2 or more (non-None) values; "
            "no item was rated twice"
        )
    return units


def _nominal_alpha(units: list[Counter[Hashable]]) -> float:
    """Nominal alpha, exactly: D_o and D_e count the pairs of different values."""
    marginals: Counter[Hashable] = Counter()
    observed = Fraction(0)
    for counts in units:
        m_u = sum(counts.values())
        observed += Fraction(m_u * m_u - sum(c * c for c in counts.values()), m_u - 1)
        marginals.update(counts)
    n = sum(marginals.values())
    expected = n * n - sum(c * c for c in marginals.values())
    if expected == 0:
        return 1.0
    return float(1 - (n - 1) * observed / expected)


def _metric(level: str, marginals: Counter[float]) -> Callable[[float, float], float]:
    """The squared difference function delta(c, k) of Krippendorff (2011) for ``level``."""
    if level == "interval":
        return lambda c, k: (c - k) ** 2
    if level == "ratio":
        return lambda c, k: ((c - k) / (c + k)) ** 2
    # ordinal: the ranks are the marginals of the coincidence matrix, in value order
    order = sorted(marginals)
    index = {value: i for i, value in enumerate(order)}
    prefix = [0]
    for value in order:
        prefix.append(prefix[-1] + marginals[value])

    def ordinal(c: float, k: float) -> float:
        i, j = sorted((index[c], index[k]))
        between = prefix[j + 1] - prefix[i] - (marginals[c] + marginals[k]) / 2
        return float(between * between)

    return ordinal


def _metric_alpha(units: list[Counter[Hashable]], level: str) -> float:
    """Alpha from the coincidence matrix and the level's metric (values are numbers)."""
    marginals: Counter[float] = Counter()
    for counts in units:
        marginals.update(counts)  # type: ignore[arg-type]
    delta = _metric(level, marginals)
    observed_terms = []
    for counts in units:
        m_u = sum(counts.values())
        pairs = [(c, n_c) for c, n_c in counts.items()]
        for a, (c, n_c) in enumerate(pairs):
            for k, n_k in pairs[a + 1 :]:
                observed_terms.append(2 * n_c * n_k * delta(c, k) / (m_u - 1))  # type: ignore[arg-type]
    values = sorted(marginals)
    expected = math.fsum(
        2 * marginals[c] * marginals[k] * delta(c, k)
        for a, c in enumerate(values)
        for k in values[a + 1 :]
    )
    if expected == 0.0:
        return 1.0
    n = sum(marginals.values())
    return 1.0 - (n - 1) * math.fsum(observed_terms) / expected


def krippendorff_alpha(
    ratings: Sequence[Sequence[Hashable | float | None]], *, level: str = "nominal"
) -> float:
    """Krippendorff's alpha for any number of raters, missing values and four levels.

    Follows Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": items with
    fewer than two values are not pairable and leave the computation; within each remaining
    item ``u`` with ``m_u`` values, every ordered pair of values from different raters adds
    ``1 / (m_u - 1)`` to the coincidence matrix ``o_ck``, whose marginals are ``n_c`` (with
    ``n = sum n_c``). Then::

        alpha = 1 - D_o / D_e = 1 - (n - 1) * sum o_ck delta_ck / sum n_c n_k delta_ck

    with the squared difference ``delta_ck`` of the level:

    * ``"nominal"``: 0 if ``c == k`` else 1 (computed exactly with fractions);
    * ``"ordinal"``: ``(sum of n_g for g from c to k - (n_c + n_k) / 2) ** 2``;
    * ``"interval"``: ``(c - k) ** 2``;
    * ``"ratio"``: ``((c - k) / (c + k)) ** 2`` (values must be >= 0).

    The cost grows with the square of the number of distinct values for the last three.

    Args:
        ratings: One inner sequence per rater, one entry per item (the same items in the same
            order for every rater); None marks a missing rating. Values are any hashable
            labels for "nominal" and numbers (int or float, not bool) for the other levels.
        level: "nominal", "ordinal", "interval" or "ratio".

    Returns:
        Alpha, at most 1.0; 0.0 is chance-level agreement. When every pairable value is the
        same (``D_e`` = 0) the data shows no disagreement to correct for: the result is 1.0.

    Raises:
        ValueError: unknown ``level``, no rater, no item, raters with different numbers of
            entries, no item with at least two values, NaN (write None), a non-number for a
            non-nominal level, or a negative value for "ratio".
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    units = _pairable_units(ratings, level)
    if level == "nominal":
        return _nominal_alpha(units)
    return _metric_alpha(units, level)

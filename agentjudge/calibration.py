"""Thresholds for confidence cascades with a statistical guarantee (standard library only).

`calibrate_thresholds` implements the fixed-sequence testing of Jung et al. (2024), "Trust or
Escalate: LLM Judges with Provable Guarantees for Human Agreement": given, for every tier of a
cascade, its (confidence, agrees with the human label) on each case of a labelled calibration
set, it returns one confidence threshold per tier.

**What holds.** With the defaults (``untested="escalate"``, ``split_delta=True``): with
probability at least ``1 - delta`` over calibration sets drawn from the same distribution as
the cases you will judge, the cascade's non-abstaining verdicts agree with humans at a rate of
at least ``1 - alpha``. It is a guarantee about the procedure over calibration sets, not a
promise about any single case. It rests on two things, both of which the defaults enforce:

* every tier that decides has a **tested** threshold. A tier whose threshold could not be
  tested (too few confident cases, or even its highest candidate failed) gets `NEVER`
  (``math.inf``): it never decides. The paper instead applies an untested fallback
  (``untested="paper"``): that tier then decides on no evidence and the guarantee is void;
* ``delta`` is **split across the K tiers** (each tested at ``delta / K``, a union bound). The
  paper tests each tier at ``delta`` (``split_delta=False``), which proves only
  ``1 - K * delta`` for the cascade.

`calibrate_tiers` gives each tier's evidence (`TierCalibration`) and `cascade_guarantee` says
in one sentence whether the guarantee holds for a given calibration. The defaults buy the
guarantee with coverage (a tier that cannot be tested leaves its cases to the next tier or to
abstention); docs/how-to/trust.md measures both rules side by side.

```python
from agentjudge.calibration import (
    calibrate_thresholds,
    calibrate_tiers,
    cascade_guarantee,
    evaluate_thresholds,
)

cheap = [(0.95, True)] * 40 + [(0.45, False)] * 40  # sure and right, or unsure and wrong
strong = [(0.99, True)] * 80
thresholds = calibrate_thresholds([cheap, strong], alpha=0.1, delta=0.1, grid=11)
thresholds                                    # (0.5, 0.0)
evaluate_thresholds([cheap, strong], thresholds).selective_agreement   # 1.0
found = calibrate_tiers([cheap, strong], alpha=0.1, delta=0.1, grid=11)
assert cascade_guarantee(found, alpha=0.1, delta=0.1).holds
```

The binomial tail is summed exactly in log space (no scipy); `risk_upper_bound` exposes the
Clopper-Pearson bound it is built on.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentjudge.agreement import wilson_interval

__all__ = [
    "NEVER",
    "UNTESTED_RULES",
    "CalibrationReport",
    "CascadeGuarantee",
    "TierCalibration",
    "binomial_cdf",
    "calibrate_thresholds",
    "calibrate_tiers",
    "cascade_guarantee",
    "evaluate_thresholds",
    "risk_upper_bound",
]

_MAX_RISK = 0.9999
_TOLERANCE = 1e-10


_LOG_FACTORIALS: list[float] = [0.0]
"""``math.lgamma(i + 1)`` (``log(i!)``) for i = 0, 1, ...: the same floats, computed once."""
_LOG_FACTORIALS_KEPT = 1 << 16


def _log_binomials(k: int, n: int) -> list[float]:
    """``log C(n, i)`` for i within [0, k]: ``lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1)``.

    A calibration computes thousands of CDFs over the same few counts, and their lgamma calls
    were most of its time: for n below 65,536 (larger n: `_central_terms`) the log-factorials
    come from a table kept across calls (the same floats). The table is replaced, never
    extended in place, so a concurrent caller always reads a complete one.
    """
    global _LOG_FACTORIALS
    table = _LOG_FACTORIALS
    if n >= len(table):
        table = table + [math.lgamma(i + 1) for i in range(len(table), n + 1)]
        _LOG_FACTORIALS = table
    return [table[n] - table[i] - table[n - i] for i in range(k + 1)]


def _central_terms(k: int, n: int, p: float) -> list[float]:
    """The log terms of `binomial_cdf` past the kept table, less those 800 below the top.

    The terms are unimodal in i (the binomial is log-concave), topping at ``floor((n + 1) p)``
    or at ``k``; the walks from there stop 800 below it, where exp is 0.0 (below e**-745.2) and
    adds nothing to `math.fsum`: the same sum to the last bit, from ~20,000 terms of 500,001 at
    n = 1,000,000 (two lgamma calls each).
    """
    log_n, log_p, log_q = math.lgamma(n + 1), math.log(p), math.log1p(-p)

    def term(i: int) -> float:  # as the list over _log_binomials(k, n) computes it
        return log_n - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q

    mode = min(k, math.floor((n + 1) * p))
    terms = [term(mode)]
    lowest = terms[0] - 800.0
    for steps in (range(mode - 1, -1, -1), range(mode + 1, k + 1)):
        for i in steps:
            t = term(i)
            if t < lowest:
                break
            terms.append(t)
    return terms


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``, summed exactly in log space.

    Each term ``C(n, i) p**i (1 - p)**(n - i)`` is formed as a logarithm (``math.lgamma``,
    ``math.log1p``) and the terms are added with a log-sum-exp, so large ``n`` neither
    overflows nor underflows.

    Args:
        k: The largest count included; below 0 the result is 0.0, at ``n`` or above 1.0.
        n: Number of trials, >= 0.
        p: Success probability within [0, 1].

    Returns:
        The probability, within [0, 1].

    Raises:
        ValueError: ``n`` < 0 or ``p`` outside [0, 1].
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be within [0, 1], got {p!r}")
    if k < 0:
        return 0.0
    if k >= n or p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    if n >= _LOG_FACTORIALS_KEPT:
        terms = _central_terms(k, n, p)
    else:
        terms = [
            log_choose + i * log_p + (n - i) * log_q
            for i, log_choose in enumerate(_log_binomials(k, n))
        ]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


def risk_upper_bound(errors: int, n: int, *, delta: float) -> float:
    """Exact (Clopper-Pearson) upper confidence bound on an error rate.

    The ``r`` within [0, 0.9999] with ``binomial_cdf(errors, n, r) == delta``, found by
    bisection to 1e-10 and rounded up (the returned ``r`` has a CDF <= ``delta``); 0.9999 when
    even ``binomial_cdf(errors, n, 0.9999)`` exceeds ``delta``. With probability at least
    ``1 - delta`` the true error rate is at most this bound. It equals
    ``scipy.stats.beta.ppf(1 - delta, errors + 1, n - errors)`` for ``errors < n``.

    Args:
        errors: Observed errors, within [0, n].
        n: Observed cases, >= 1.
        delta: Allowed probability that the bound is wrong, within (0, 1).

    Returns:
        The bound, within (0, 0.9999].

    Raises:
        ValueError: ``n`` < 1, ``errors`` outside [0, n], or ``delta`` outside (0, 1).
    """
    if n < 1 or not 0 <= errors <= n:
        raise ValueError(f"need n >= 1 and 0 <= errors <= n, got errors={errors}, n={n}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be within (0, 1), got {delta!r}")
    if binomial_cdf(errors, n, _MAX_RISK) > delta:
        return _MAX_RISK
    low, high = 0.0, _MAX_RISK  # cdf(low) > delta >= cdf(high)
    while high - low > _TOLERANCE:
        middle = (low + high) / 2.0
        if binomial_cdf(errors, n, middle) > delta:
            low = middle
        else:
            high = middle
    return high


def _check_fraction(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number within (0, 1), got {value!r}")
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be within (0, 1), got {value!r}")
    return float(value)


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def _check_tiers(tiers: Sequence[Sequence[tuple[float, bool]]]) -> list[list[tuple[float, bool]]]:
    """Validate the tier-by-case table; every tier judged every case."""
    if isinstance(tiers, str | bytes) or not isinstance(tiers, Sequence) or not tiers:
        raise ValueError("tiers must be a non-empty sequence: one sequence of cases per tier")
    cases = len(tiers[0])
    checked: list[list[tuple[float, bool]]] = []
    for k, tier in enumerate(tiers):
        if len(tier) != cases:
            raise ValueError(
                f"every tier must judge every case: tiers[0] has {cases}, "
                f"tiers[{k}] has {len(tier)}"
            )
        checked.append(_check_cases(tier, k))
    if cases < 1:
        raise ValueError("calibration needs at least 1 case, got 0")
    return checked


def _check_cases(tier: Sequence[object], k: int) -> list[tuple[float, bool]]:
    """One tier's cases, validated.

    A ``(float, bool)`` tuple with the float within [0, 1] is taken as it is (a test of exact
    types, ~4x cheaper than `_check_case`: a benchmark's tables hold hundreds of thousands of
    cases); anything else goes through `_check_case`, which converts or names the problem.
    """
    checked: list[tuple[float, bool]] = []
    for i, case in enumerate(tier):
        if type(case) is tuple and len(case) == 2:
            confidence, agrees = case
            if type(confidence) is float and type(agrees) is bool and 0.0 <= confidence <= 1.0:
                checked.append(case)
                continue
        checked.append(_check_case(case, f"tiers[{k}][{i}]"))
    return checked


def _check_case(case: object, where: str) -> tuple[float, bool]:
    if not isinstance(case, tuple | list) or len(case) != 2:
        raise ValueError(
            f"{where} must be a pair (confidence, agrees_with_human), got {case!r:.80}"
        )
    confidence, agrees = case
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise ValueError(f"{where}: confidence must be a number within [0, 1], got {confidence!r}")
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"{where}: confidence must be within [0, 1], got {confidence!r}")
    if not isinstance(agrees, bool):
        raise ValueError(f"{where}: agrees_with_human must be a bool, got {agrees!r}")
    return float(confidence), agrees


def _linspace(grid: int) -> list[float]:
    """``numpy.linspace(0, 1, grid)``: ``i * step`` with the last point exactly 1.0."""
    step = 1.0 / (grid - 1)
    points = [i * step for i in range(grid)]
    points[-1] = 1.0
    return points


class _Support:
    """How many of a tier's remaining cases sit at or above a threshold, and how many err."""

    def __init__(self, cases: Sequence[tuple[float, bool]], delta: float) -> None:
        ordered = sorted(cases)
        self._confidences = [confidence for confidence, _ in ordered]
        self._errors_from = [0] * (len(ordered) + 1)  # errors among ordered[j:]
        for j in range(len(ordered) - 1, -1, -1):
            self._errors_from[j] = self._errors_from[j + 1] + (not ordered[j][1])
        self._delta = delta
        self._bounds: dict[tuple[int, int], float] = {}
        self._answers: dict[tuple[int, int, float], bool] = {}

    def candidates(self, grid: list[float], min_support: int) -> list[float]:
        """The points of ``grid`` (ascending) that keep at least ``min_support`` cases.

        ``count(lam)[0] >= min_support`` holds exactly for ``lam`` at or below the
        ``min_support``-th highest confidence, so the candidates are a prefix of the grid: one
        bisection instead of a count per grid point.
        """
        if min_support > len(self._confidences):
            return []
        return grid[: bisect.bisect_right(grid, self._confidences[-min_support])]

    def count(self, threshold: float) -> tuple[int, int]:
        """``(n, errors)`` among the cases whose confidence >= ``threshold``."""
        j = bisect.bisect_left(self._confidences, threshold)
        return len(self._confidences) - j, self._errors_from[j]

    def exceeds(self, threshold: float, alpha: float) -> bool:
        """Whether the risk bound of the cases at or above ``threshold`` is above ``alpha``.

        The answer depends on the counts only, and neighbouring grid points mostly share them
        (a 5,000-point grid over 800 cases): each ``(n, errors, alpha)`` is decided once.
        """
        n, errors = self.count(threshold)
        answer = self._answers.get((n, errors, alpha))
        if answer is None:
            answer = self._answers[n, errors, alpha] = self._bound_exceeds(n, errors, alpha)
        return answer

    def _bound_exceeds(self, n: int, errors: int, alpha: float) -> bool:
        """``risk_upper_bound(errors, n) > alpha``, usually without the bisection.

        The CDF falls as the rate grows, so ``cdf(alpha) > delta`` puts the root (and the
        bound) above ``alpha``, and ``cdf(alpha - 1e-10) <= delta`` puts the bound, at most
        1e-10 above the root, at or below ``alpha``. Only the band between is bisected.
        """
        key = (n, errors)
        if key in self._bounds:
            return self._bounds[key] > alpha
        if alpha < _MAX_RISK and binomial_cdf(errors, n, alpha) > self._delta:
            return True
        if binomial_cdf(errors, n, max(0.0, alpha - _TOLERANCE)) <= self._delta:
            return False
        self._bounds[key] = risk_upper_bound(errors, n, delta=self._delta)
        return self._bounds[key] > alpha


UNTESTED_RULES = ("escalate", "paper")
"""What a tier without a tested threshold does (``untested=`` of `calibrate_thresholds`)."""

NEVER = math.inf
"""The threshold of a tier that never decides: no confidence reaches it (``untested="escalate"``).

`agentjudge.Tier` accepts it; ``thresholds.json`` writes it as ``null``."""


@dataclass(frozen=True, slots=True)
class TierCalibration:
    """How one tier's threshold was chosen (see `calibrate_tiers`).

    Attributes:
        threshold: The tier's threshold: a number in [0, 1], or `NEVER` (``math.inf``) for a
            tier without a tested threshold under ``untested="escalate"``.
        basis: ``"tested"`` (it passed its test: the risk bound of the cases at or above it is
            at most ``alpha``, up to the procedure's neighbour rule), ``"highest_untested"``
            (even the highest candidate failed its test) or ``"reused_previous"`` (no candidate
            kept ``min_support`` cases). Only ``"tested"`` carries evidence. What an untested
            tier does depends on ``untested``: with ``"escalate"`` its threshold is `NEVER`
            (it never decides); with ``"paper"`` it applies the highest candidate, or the
            previous tier's threshold (1.0 for the first), with no guarantee behind it.
        remaining: Calibration cases this tier was calibrated on (no earlier tier accepted
            them).
        support: Of those, the cases at or above the threshold.
        errors: Of those, the cases that disagree with the human label.
        risk_bound: `risk_upper_bound` of ``errors`` in ``support``; None when ``support``
            is 0.
        delta: The level this tier was tested at: ``delta / len(tiers)`` with
            ``split_delta=True``, else ``delta``.
    """

    threshold: float
    basis: str
    remaining: int
    support: int
    errors: int
    risk_bound: float | None
    delta: float = 0.0

    @property
    def tested(self) -> bool:
        """Whether the threshold passed its test (``basis == "tested"``)."""
        return self.basis == "tested"

    @property
    def decides(self) -> bool:
        """Whether the tier can accept a case at all (its threshold is not `NEVER`)."""
        return self.threshold != NEVER


def _calibrate_tier(
    cases: Sequence[tuple[float, bool]],
    previous: float,
    *,
    alpha: float,
    delta: float,
    min_support: int,
    grid: int,
    untested: str,
) -> TierCalibration:
    """One tier's threshold by fixed-sequence testing from the highest candidate down."""
    support = _Support(cases, delta)
    candidates = support.candidates(_linspace(grid), min_support)
    if not candidates:
        threshold, basis = previous, "reused_previous"
    elif support.exceeds(candidates[-1], alpha):
        threshold, basis = candidates[-1], "highest_untested"
    else:
        threshold, basis = candidates[0], "tested"
        spacing = 1.0 / len(candidates)
        for lam in reversed(candidates):
            if support.exceeds(lam - spacing, alpha):
                threshold = lam
                break
    if basis != "tested" and untested == "escalate":
        threshold = NEVER
    n, errors = support.count(threshold)
    bound = risk_upper_bound(errors, n, delta=delta) if n else None
    return TierCalibration(threshold, basis, len(cases), n, errors, bound, delta)


def _check_rule(untested: object, split_delta: object) -> None:
    if untested not in UNTESTED_RULES:
        raise ValueError(f"untested must be one of {UNTESTED_RULES}, got {untested!r}")
    if not isinstance(split_delta, bool):
        raise ValueError(f"split_delta must be a bool, got {split_delta!r}")


def calibrate_tiers(
    tiers: Sequence[Sequence[tuple[float, bool]]],
    *,
    alpha: float,
    delta: float,
    min_support: int = 30,
    grid: int = 5000,
    untested: str = "escalate",
    split_delta: bool = True,
) -> tuple[TierCalibration, ...]:
    """`calibrate_thresholds` with the evidence behind each threshold (`TierCalibration`).

    Same arguments, same thresholds, same errors; use it to see which tiers got a tested
    threshold and which did not (``basis``), and `cascade_guarantee` of the result to see
    whether the cascade-level guarantee holds.
    """
    alpha = _check_fraction(alpha, "alpha")
    delta = _check_fraction(delta, "delta")
    min_support = _check_int(min_support, "min_support", 1)
    grid = _check_int(grid, "grid", 2)
    _check_rule(untested, split_delta)
    table = _check_tiers(tiers)
    level = delta / len(table) if split_delta else delta
    remaining = list(range(len(table[0])))
    found: list[TierCalibration] = []
    previous = 1.0
    for tier in table:
        chosen = _calibrate_tier(
            [tier[i] for i in remaining],
            previous,
            alpha=alpha,
            delta=level,
            min_support=min_support,
            grid=grid,
            untested=untested,
        )
        found.append(chosen)
        if chosen.decides:  # a tier that never decides leaves every case to the next
            previous = chosen.threshold
            remaining = [i for i in remaining if tier[i][0] < previous]
    return tuple(found)


def calibrate_thresholds(
    tiers: Sequence[Sequence[tuple[float, bool]]],
    *,
    alpha: float,
    delta: float,
    min_support: int = 30,
    grid: int = 5000,
    untested: str = "escalate",
    split_delta: bool = True,
) -> tuple[float, ...]:
    """One confidence threshold per cascade tier, by fixed-sequence testing (Jung et al., 2024).

    Tiers are calibrated in order, each on the calibration cases no earlier tier accepted (a
    case is accepted by tier k when its confidence there >= tier k's threshold). For one tier:

    1. candidates are the points of ``numpy.linspace(0, 1, grid)`` that keep at least
       ``min_support`` remaining cases at or above them;
    2. the risk bound of a threshold ``lambda`` is `risk_upper_bound`, at the tier's level
       (``delta / len(tiers)`` with ``split_delta``, else ``delta``), of the ``e`` cases that
       disagree with the human among the ``n`` remaining cases with confidence >= ``lambda``;
    3. scanning from the highest candidate down, the threshold is the first ``lambda`` whose
       lower neighbour ``lambda - 1 / len(candidates)`` has a bound above ``alpha``, and the
       lowest candidate if none has.

    A tier can end **without a tested threshold**: no candidate keeps ``min_support`` cases
    (``"reused_previous"``), or even the highest candidate's bound exceeds ``alpha``
    (``"highest_untested"``). What it does then is ``untested``:

    * ``"escalate"`` (the default): its threshold is `NEVER` (``math.inf``), so it never
      decides - a non-final tier always escalates, a final tier always abstains. Every tier
      that decides has a tested threshold.
    * ``"paper"``: the paper's fallbacks - the highest candidate, or the previous tier's
      threshold (1.0 for the first; 1.0 still accepts a confidence of exactly 1.0). Such a
      tier decides **with no evidence**, and the cascade-level guarantee does not hold.

    **What holds.** Each tier's test errs with probability at most its level, so by the union
    bound every deciding tier's accepted cases meet ``1 - alpha`` together with probability at
    least ``1 - (sum of the levels)``, and then so does the cascade (its accepted cases are a
    mix of the tiers'). With the defaults (``untested="escalate"``, ``split_delta=True``) that
    is the promise below: with probability >= ``1 - delta`` over calibration sets drawn from
    the distribution of the cases you will judge, the cascade's non-abstaining verdicts agree
    with humans at a rate >= ``1 - alpha``. With ``split_delta=False`` the union bound gives
    only ``1 - len(tiers) * delta``; with ``untested="paper"`` and a fallback applied, nothing.
    `cascade_guarantee` of `calibrate_tiers` says which case you are in. The paper's own rule
    is ``untested="paper", split_delta=False``.

    Args:
        tiers: ``tiers[k][i]`` is tier k's ``(confidence, agrees_with_human)`` on calibration
            case i; every tier judged every case (confidence within [0, 1], agreement a bool).
        alpha: Tolerated disagreement rate, within (0, 1): the target is agreement >= 1 - alpha.
        delta: Tolerated probability that the guarantee fails, within (0, 1).
        min_support: Fewest cases a candidate threshold must keep, >= 1.
        grid: Number of evenly spaced candidate thresholds in [0, 1], >= 2.
        untested: ``"escalate"`` or ``"paper"``: what a tier without a tested threshold does.
        split_delta: Test each of the K tiers at ``delta / K`` (True) or at ``delta`` (False).

    Returns:
        One threshold per tier, in tier order: a number in [0, 1], or `NEVER` (``math.inf``,
        which `agentjudge.Tier` accepts) for a tier that never decides.

    Raises:
        ValueError: no tier or no case, tiers of different lengths, a malformed case, or
            ``alpha``/``delta``/``min_support``/``grid``/``untested``/``split_delta`` out of
            range.
    """
    found = calibrate_tiers(
        tiers,
        alpha=alpha,
        delta=delta,
        min_support=min_support,
        grid=grid,
        untested=untested,
        split_delta=split_delta,
    )
    return tuple(t.threshold for t in found)


@dataclass(frozen=True, slots=True)
class CascadeGuarantee:
    """Whether a calibration's cascade-level guarantee holds (see `cascade_guarantee`).

    Attributes:
        holds: The promise of `calibrate_thresholds` holds at the requested ``alpha`` and
            ``delta``: every deciding tier's threshold was tested and the tiers' levels add up
            to at most ``delta``.
        probability: The probability the union bound does prove (``1 -`` the sum of the
            tiers' levels) when every deciding tier's threshold was tested; None when a tier
            decides on an untested threshold (then nothing is proven).
        untested: Indexes of the tiers without a tested threshold.
        deciding_untested: Of those, the tiers that still decide (``untested="paper"``).
        statement: One sentence saying what holds, naming the tiers: it starts with
            ``holds:``, ``does not hold:`` or ``does not hold at delta=...:``.
    """

    holds: bool
    probability: float | None
    untested: tuple[int, ...]
    deciding_untested: tuple[int, ...]
    statement: str

    def as_dict(self) -> dict[str, Any]:
        """The guarantee as plain JSON-ready values."""
        return {
            "holds": self.holds,
            "probability": self.probability,
            "untested": list(self.untested),
            "deciding_untested": list(self.deciding_untested),
            "statement": self.statement,
        }


def cascade_guarantee(
    found: Sequence[TierCalibration],
    *,
    alpha: float,
    delta: float,
    names: Sequence[str] | None = None,
) -> CascadeGuarantee:
    """What the thresholds of `calibrate_tiers` guarantee for the cascade as a whole.

    Args:
        found: `calibrate_tiers`' result, one entry per tier.
        alpha: The ``alpha`` it was calibrated with.
        delta: The ``delta`` it was calibrated with.
        names: Tier names for the statement (default ``tier 0``, ``tier 1``, ...).

    Returns:
        Whether the guarantee holds, the probability the union bound proves, the untested
        tiers and a one-sentence statement.
    """
    label = list(names) if names is not None else [f"tier {k}" for k in range(len(found))]
    untested = tuple(k for k, t in enumerate(found) if not t.tested)
    deciding = tuple(k for k in untested if found[k].decides)
    target = f"accepted verdicts agree with humans >= {1 - alpha:.4g}"
    if deciding:
        which = ", ".join(f"{label[k]} ({found[k].basis})" for k in deciding)
        return CascadeGuarantee(
            False,
            None,
            untested,
            deciding,
            f"does not hold: {which} {'decide' if len(deciding) > 1 else 'decides'} on an "
            "untested threshold (the paper's fallback); "
            'calibrate with untested="escalate" or more labelled cases',
        )
    probability = 1.0 - math.fsum(t.delta for t in found)
    holds = probability >= 1.0 - delta - _TOLERANCE
    never = ", ".join(label[k] for k in untested)
    never = f"; {never} never decides (untested)" if never else ""
    statement = (
        f"holds: with probability >= {1 - delta:.4g} over calibration sets, {target}{never}"
        if holds
        else f"does not hold at delta={delta:.4g}: every deciding tier is tested, but each at "
        f"delta; the union bound gives probability >= {max(probability, 0.0):.4g} that "
        f"{target}{never} (split_delta=True splits delta across the tiers)"
    )
    return CascadeGuarantee(holds, max(probability, 0.0), untested, deciding, statement)


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """What a thresholded cascade does on a labelled set (see `evaluate_thresholds`).

    Attributes:
        n: Cases in the set.
        thresholds: The thresholds evaluated, one per tier.
        accepted: Cases some tier accepted (the rest are abstentions).
        agreed: Accepted cases whose accepting tier agreed with the human label.
        abstained: Cases no tier accepted (``n - accepted``).
        coverage: ``accepted / n``.
        coverage_ci95: Wilson 95% interval of the coverage.
        selective_agreement: ``agreed / accepted``; None when nothing was accepted.
        selective_agreement_ci95: Wilson 95% interval of it; None when nothing was accepted.
        per_tier: How many cases each tier accepted, in tier order.
        tier_shares: ``per_tier[k] / n`` for each tier.
    """

    n: int
    thresholds: tuple[float, ...]
    accepted: int
    agreed: int
    abstained: int
    coverage: float
    coverage_ci95: tuple[float, float]
    selective_agreement: float | None
    selective_agreement_ci95: tuple[float, float] | None
    per_tier: tuple[int, ...]
    tier_shares: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready values (tuples become lists)."""
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in ((field, getattr(self, field)) for field in self.__slots__)
        }


def evaluate_thresholds(
    tiers: Sequence[Sequence[tuple[float, bool]]], thresholds: Sequence[float]
) -> CalibrationReport:
    """Run a thresholded cascade over labelled cases and measure it.

    Each case goes to the first tier whose confidence >= its threshold; that tier's agreement
    with the human counts. A case no tier accepts is an abstention.

    Args:
        tiers: As for `calibrate_thresholds` (usually a held-out test set).
        thresholds: One threshold per tier, each within [0, 1] or `NEVER` (never accepts).

    Returns:
        Coverage, selective agreement (both with Wilson 95% intervals and their counts) and
        the share of cases each tier decided.

    Raises:
        ValueError: malformed ``tiers`` (as for `calibrate_thresholds`), or not one threshold
            within [0, 1] (or `NEVER`) per tier.
    """
    table = _check_tiers(tiers)
    if len(thresholds) != len(table) or not all(t == NEVER or 0.0 <= t <= 1.0 for t in thresholds):
        raise ValueError(
            f"need one threshold within [0, 1] (or NEVER) per tier ({len(table)}), "
            f"got {list(thresholds)!r}"
        )
    n = len(table[0])
    per_tier = [0] * len(table)
    agreed = 0
    for i in range(n):
        for k, tier in enumerate(table):
            confidence, agrees = tier[i]
            if confidence >= thresholds[k]:
                per_tier[k] += 1
                agreed += agrees
                break
    accepted = sum(per_tier)
    return CalibrationReport(
        n=n,
        thresholds=tuple(float(t) for t in thresholds),
        accepted=accepted,
        agreed=agreed,
        abstained=n - accepted,
        coverage=accepted / n,
        coverage_ci95=wilson_interval(accepted, n),
        selective_agreement=agreed / accepted if accepted else None,
        selective_agreement_ci95=wilson_interval(agreed, accepted) if accepted else None,
        per_tier=tuple(per_tier),
        tier_shares=tuple(count / n for count in per_tier),
    )

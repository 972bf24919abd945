"""Statistics of pairwise comparisons (standard library only).

A comparison is one judgment of two systems against each other: the first system won, the
second won, or it was a tie. From many of them:

* `win_rates`: per system, wins, losses and ties counted apart, and two win rates, each with
  its n and a 95% Wilson interval (`agentjudge.agreement.wilson_interval`): over the *decided*
  comparisons (``wins / (wins + losses)``, ties left out) and over *all* comparisons
  (``wins / n``, a tie counts as not a win).
* `position_consistency`: the share of swapped pairs on which the judge gave the same verdict
  in both orders, with its Wilson interval.
* `bradley_terry`: a Bradley-Terry ranking by maximum likelihood (damped Newton steps, MM
  steps of Hunter (2004) as the fallback; converged means within ``tolerance`` of the
  maximum), ties counting as half a win to each side, strengths normalised to sum to 1.

```python
from agentjudge.pairwise import Comparison, bradley_terry, position_consistency, win_rates

games = [Comparison("x", "y", "x")] * 3 + [Comparison("x", "y", "y"), Comparison("x", "y", None)]
rates = win_rates(games)
rates["x"].wins, rates["x"].ties, rates["x"].decided.rate    # (3, 1, 0.75)
rates["x"].overall.rate                                       # 0.6  (3 wins of 5)
position_consistency(13, 20).rate                             # 0.65
bradley_terry(games, prior=0.0).strengths                     # {'x': 0.7, 'y': 0.3}
```
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentjudge.agreement import wilson_interval

__all__ = [
    "BradleyTerry",
    "Comparison",
    "Rate",
    "WinRate",
    "bradley_terry",
    "position_consistency",
    "win_rates",
]

DEFAULT_TOLERANCE = 1e-10
"""`bradley_terry` stops when a Newton step (the distance to the maximum that the gradient and
the curvature of the log-likelihood predict) moves no strength by more than this."""
DEFAULT_MAX_ITERATIONS = 10_000
"""`bradley_terry` gives up (``converged=False``) after this many iterations."""
DEFAULT_PRIOR = 0.1
"""Pseudo-wins `bradley_terry` adds each way to every pair of systems (see there)."""


@dataclass(frozen=True)
class Comparison:
    """One pairwise comparison.

    Attributes:
        first: One system's name.
        second: The other system's name (different from ``first``).
        winner: ``first``, ``second``, or None for a tie.

    Raises:
        ValueError: a blank or non-string name, the same system twice, or a winner that is
            neither of the two.
    """

    first: str
    second: str
    winner: str | None

    def __post_init__(self) -> None:
        for field in ("first", "second"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Comparison.{field} must be a non-empty string, got {value!r}")
        if self.first == self.second:
            raise ValueError(f"a comparison needs two different systems, got {self.first!r} twice")
        if self.winner is not None and self.winner not in (self.first, self.second):
            raise ValueError(
                f"Comparison.winner must be {self.first!r}, {self.second!r} or None (a tie), "
                f"got {self.winner!r}"
            )


@dataclass(frozen=True)
class Rate:
    """A proportion with its n and its 95% Wilson interval.

    Attributes:
        successes: How many of the n counted.
        n: How many there were (>= 1).
        rate: ``successes / n``.
        ci95: The 95% Wilson interval of ``rate``.
    """

    successes: int
    n: int
    rate: float
    ci95: tuple[float, float]

    @classmethod
    def of(cls, successes: int, n: int) -> Rate:
        """The rate of ``successes`` out of ``n`` (n >= 1; ValueError otherwise)."""
        ci95 = wilson_interval(successes, n)  # validates both counts
        return cls(successes, n, successes / n, ci95)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"successes", "n", "rate", "ci95": [low, high]}``."""
        return {
            "successes": self.successes,
            "n": self.n,
            "rate": self.rate,
            "ci95": list(self.ci95),
        }


@dataclass(frozen=True)
class WinRate:
    """How one system fared in its comparisons.

    Attributes:
        system: The system's name.
        n: Comparisons it took part in (wins + losses + ties).
        wins: Comparisons it won.
        losses: Comparisons the other system won.
        ties: Ties, reported apart.
        decided: ``wins / (wins + losses)`` (ties left out), or None when every comparison
            was a tie.
        overall: ``wins / n`` (a tie counts as not a win).
    """

    system: str
    n: int
    wins: int
    losses: int
    ties: int
    decided: Rate | None
    overall: Rate

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, the two rates as `Rate.as_dict` (``decided`` null when undefined)."""
        return {
            "n": self.n,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "win_rate_decided": None if self.decided is None else self.decided.as_dict(),
            "win_rate_all": self.overall.as_dict(),
        }


def _checked(comparisons: Iterable[Comparison]) -> list[Comparison]:
    items = list(comparisons)
    for index, item in enumerate(items):
        if not isinstance(item, Comparison):
            raise ValueError(
                f"comparisons[{index}] must be a Comparison, got {type(item).__name__}"
            )
    return items


def win_rates(comparisons: Iterable[Comparison]) -> dict[str, WinRate]:
    """Wins, losses, ties and win rates of every system, in order of first appearance.

    Args:
        comparisons: The comparisons (any number; none gives an empty mapping).

    Returns:
        One `WinRate` per system that took part in a comparison.

    Raises:
        ValueError: an item that is not a `Comparison`.
    """
    tally: dict[str, list[int]] = {}  # system -> [wins, losses, ties]
    for c in _checked(comparisons):
        first = tally.setdefault(c.first, [0, 0, 0])
        second = tally.setdefault(c.second, [0, 0, 0])
        if c.winner is None:
            first[2] += 1
            second[2] += 1
        elif c.winner == c.first:
            first[0] += 1
            second[1] += 1
        else:
            first[1] += 1
            second[0] += 1
    return {system: _win_rate(system, *counts) for system, counts in tally.items()}


def _win_rate(system: str, wins: int, losses: int, ties: int) -> WinRate:
    n = wins + losses + ties
    decided = wins + losses
    return WinRate(
        system=system,
        n=n,
        wins=wins,
        losses=losses,
        ties=ties,
        decided=Rate.of(wins, decided) if decided else None,
        overall=Rate.of(wins, n),
    )


def position_consistency(consistent: int, n: int) -> Rate:
    """The share of swapped pairs judged the same way in both orders.

    A pair is consistent when the judge picked the same system (or a tie) whichever came
    first. Position bias shows as a rate well below 1.

    Args:
        consistent: Consistent pairs, 0 <= consistent <= n.
        n: Pairs judged in both orders, >= 1.

    Raises:
        ValueError: ``n`` < 1 or ``consistent`` outside [0, n].
    """
    return Rate.of(consistent, n)


@dataclass(frozen=True)
class BradleyTerry:
    """A fitted Bradley-Terry model.

    Attributes:
        strengths: System -> strength, summing to 1, strongest first (equal strengths by
            name). The model's probability that ``i`` beats ``j`` is
            ``strengths[i] / (strengths[i] + strengths[j])``.
        iterations: MM and Newton iterations run.
        converged: True when a final Newton step moved no strength by more than the
            tolerance (see `bradley_terry`); False when the iteration cap stopped the fit
            first.
        comparisons: How many comparisons were fitted.
        prior: The pseudo-wins added each way per pair of systems.
    """

    strengths: dict[str, float]
    iterations: int
    converged: bool
    comparisons: int
    prior: float

    def probability(self, first: str, second: str) -> float:
        """The fitted probability that ``first`` beats ``second`` (KeyError for an unknown)."""
        a, b = self.strengths[first], self.strengths[second]
        return a / (a + b)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: strengths, iterations, converged, comparisons, prior."""
        return {
            "strengths": dict(self.strengths),
            "iterations": self.iterations,
            "converged": self.converged,
            "comparisons": self.comparisons,
            "prior": self.prior,
        }


def _pair_counts(
    items: Sequence[Comparison], prior: float
) -> tuple[list[str], list[float], dict[tuple[int, int], float]]:
    """Systems, their (half-tie) win totals and the comparison count of every pair."""
    systems = sorted({c.first for c in items} | {c.second for c in items})
    index = {s: i for i, s in enumerate(systems)}
    wins = [0.0] * len(systems)
    games: dict[tuple[int, int], float] = {}
    for c in items:
        i, j = index[c.first], index[c.second]
        key = (min(i, j), max(i, j))
        games[key] = games.get(key, 0.0) + 1.0
        if c.winner is None:
            wins[i] += 0.5
            wins[j] += 0.5
        else:
            wins[index[c.winner]] += 1.0
    if prior > 0.0:
        for i in range(len(systems)):
            wins[i] += prior * (len(systems) - 1)
            for j in range(i + 1, len(systems)):
                games[(i, j)] = games.get((i, j), 0.0) + 2.0 * prior
    return systems, wins, games


def _reachable(start: str, edges: Mapping[str, set[str]]) -> set[str]:
    seen = {start}
    frontier = [start]
    while frontier:
        for other in edges.get(frontier.pop(), ()):
            if other not in seen:
                seen.add(other)
                frontier.append(other)
    return seen


def _check_identifiable(systems: list[str], items: Sequence[Comparison]) -> None:
    """Hunter's (2004) condition for a finite maximum-likelihood estimate.

    For every split of the systems into two groups, some system of each group beat (or tied)
    some system of the other: the directed graph "i beat or tied j" is strongly connected.
    """
    beat: dict[str, set[str]] = {}  # winner -> losers (a tie links both ways)
    beaten: dict[str, set[str]] = {}  # the same edges reversed
    for c in items:
        pairs = [(c.first, c.second), (c.second, c.first)]
        if c.winner is not None:
            loser = c.second if c.winner == c.first else c.first
            pairs = [(c.winner, loser)]
        for winner, loser in pairs:
            beat.setdefault(winner, set()).add(loser)
            beaten.setdefault(loser, set()).add(winner)
    root = systems[0]
    for edges in (beat, beaten):
        missing = [s for s in systems if s not in _reachable(root, edges)]
        if missing:
            raise ValueError(
                f"without a prior the Bradley-Terry fit has no finite estimate: {missing[0]!r} "
                f"and {root!r} are not linked both ways by wins or ties (a system that never "
                "won or never lost, or groups never compared); use prior > 0"
            )


def _check_fit_options(prior: float, tolerance: float, max_iterations: int) -> None:
    if isinstance(prior, bool) or not isinstance(prior, int | float):
        raise ValueError(f"prior must be a number >= 0, got {prior!r}")
    if not (math.isfinite(prior) and prior >= 0):
        raise ValueError(f"prior must be a finite number >= 0, got {prior!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float):
        raise ValueError(f"tolerance must be a number > 0, got {tolerance!r}")
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a finite number > 0, got {tolerance!r}")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
        raise ValueError(f"max_iterations must be an int >= 1, got {max_iterations!r}")
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")


class _Likelihood:
    """The Bradley-Terry log-likelihood of (pseudo-)win totals and pair counts.

    In the log-strengths ``theta_i = log p_i`` it is
    ``L = sum_i W_i theta_i - sum_{i<j} n_ij log(p_i + p_j)``, concave, with gradient
    ``g_i = W_i - sum_j n_ij p_i / (p_i + p_j)`` and negative Hessian ``H`` (a weighted graph
    Laplacian: ``H_ij = -n_ij p_i p_j / (p_i + p_j)^2``, ``H_ii = -sum_{j != i} H_ij``).
    """

    __slots__ = ("count", "pairs", "partners", "wins")

    def __init__(self, wins: list[float], games: Mapping[tuple[int, int], float]) -> None:
        self.wins = wins
        self.count = len(wins)
        self.pairs = list(games.items())
        self.partners: list[list[tuple[int, float]]] = [[] for _ in wins]
        for (i, j), n in self.pairs:
            self.partners[i].append((j, n))
            self.partners[j].append((i, n))

    def value(self, p: Sequence[float]) -> float:
        """``L`` at the strengths ``p`` (any positive scale)."""
        won = math.fsum(w * math.log(v) for w, v in zip(self.wins, p, strict=True) if w)
        return won - math.fsum(n * math.log(p[i] + p[j]) for (i, j), n in self.pairs)

    def mm_step(self, p: Sequence[float]) -> list[float]:
        """One cyclic MM (Zermelo) update of Hunter (2004), normalised to sum 1."""
        q = list(p)
        for i in range(self.count):
            q[i] = self.wins[i] / math.fsum(n / (q[i] + q[j]) for j, n in self.partners[i])
        return _normalised(q)

    def newton_direction(self, p: Sequence[float]) -> list[float] | None:
        """``H^-1 g`` in the log-strengths with ``theta_0`` held (the scale is free).

        None when the reduced ``H`` is not numerically positive definite (then MM goes on).
        """
        k = self.count
        grad = list(self.wins)
        hess = [[0.0] * k for _ in range(k)]
        for (i, j), n in self.pairs:
            total = p[i] + p[j]
            grad[i] -= n * p[i] / total
            grad[j] -= n * p[j] / total
            h = n * p[i] * p[j] / (total * total)
            hess[i][i] += h
            hess[j][j] += h
            hess[i][j] -= h
            hess[j][i] -= h
        reduced = [row[1:] for row in hess[1:]]
        solved = _cholesky_solve(reduced, grad[1:])
        return None if solved is None else [0.0, *solved]


def _normalised(p: Sequence[float]) -> list[float]:
    total = math.fsum(p)
    return [v / total for v in p]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(map(operator.mul, a, b)))


def _cholesky_solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Solve ``matrix x = rhs`` for a symmetric positive definite matrix; None if it is not."""
    m = len(rhs)
    low: list[list[float]] = []  # row i holds L_i0 .. L_ii
    for i in range(m):
        row = matrix[i][: i + 1]
        for j in range(i):
            row[j] = (row[j] - _dot(row[:j], low[j][:j])) / low[j][j]
        pivot = row[i] - _dot(row[:i], row[:i])
        if not pivot > 0.0:
            return None
        row[i] = math.sqrt(pivot)
        low.append(row)
    y: list[float] = []
    for i in range(m):
        y.append((rhs[i] - _dot(low[i][:i], y)) / low[i][i])
    x = [0.0] * m
    for i in reversed(range(m)):
        x[i] = (y[i] - math.fsum(low[t][i] * x[t] for t in range(i + 1, m))) / low[i][i]
    return x


_HALVINGS = 40
"""Step halvings a damped Newton step may take before MM takes over again."""


def _newton_step(fit: _Likelihood, p: list[float]) -> tuple[list[float], bool] | None:
    """A damped Newton step from ``p`` that does not lower ``L``, and whether it is whole.

    None when there is none (the curvature is not usable, or no halving kept ``L``).
    """
    direction = fit.newton_direction(p)
    if direction is None:
        return None
    before = fit.value(p)
    slack = 1e-12 * max(1.0, abs(before))  # rounding of L itself near the maximum
    scale = 1.0
    for _ in range(_HALVINGS):
        try:
            moved = _normalised(
                [v * math.exp(scale * d) for v, d in zip(p, direction, strict=True)]
            )
        except OverflowError:
            moved = None
        if moved is not None and all(v > 0.0 for v in moved) and fit.value(moved) >= before - slack:
            return moved, scale == 1.0
        scale /= 2.0
    return None


def _fit(fit: _Likelihood, tolerance: float, max_iterations: int) -> tuple[list[float], int, bool]:
    """Damped Newton steps (an MM step where one cannot be taken) until a whole step is small.

    Converged when a whole (undamped) Newton step moves no strength by more than
    ``tolerance``: it estimates the distance to the maximum (``H^-1 g``), and the error left
    after it is of the order of its square. The step size of MM is no such measure (MM
    converges linearly, slowly where the data link the systems weakly: an MM step of 1e-10
    can leave an error of 1e-8).
    """
    p = [1.0 / fit.count] * fit.count
    iterations = 0
    while iterations < max_iterations:
        iterations += 1
        newton = _newton_step(fit, p)
        stepped, whole = newton if newton is not None else (fit.mm_step(p), False)
        move = max(abs(a - b) for a, b in zip(stepped, p, strict=True))
        p = stepped
        if whole and move <= tolerance:
            return p, iterations, True
    return p, iterations, False


def bradley_terry(
    comparisons: Iterable[Comparison],
    *,
    prior: float = DEFAULT_PRIOR,
    tolerance: float = DEFAULT_TOLERANCE,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> BradleyTerry:
    """Fit a Bradley-Terry model by maximum likelihood (the fixed point of Hunter's MM).

    With ``W_i`` the wins of system ``i`` (a tie is half a win to each side) and ``n_ij`` the
    comparisons of ``i`` with ``j``, the fit solves ``p_i = W_i / sum_j n_ij / (p_i + p_j)``
    for every ``i`` (the likelihood equations; one cyclic MM, or Zermelo, iteration of Hunter
    (2004) applies them once in turn), with the strengths rescaled to sum to 1.

    How it is solved and when it stops: MM converges linearly, and slowly when the data link
    the systems weakly, so a small MM step does not mean a small error (a step of 1e-10 can be
    1e-8 from the maximum). The fit therefore takes Newton steps on the log-likelihood in the
    log-strengths (the gradient scaled by the inverse curvature; damped by halving so the
    likelihood never falls, and an MM step where no Newton step can be taken) and stops when
    a whole Newton step moves no strength by more than ``tolerance``. That step estimates the
    distance to the maximum, and the error left after it is of the order of its square:
    ``converged=True`` means the strengths are within about ``tolerance`` of the
    maximum-likelihood fit (tested against a 50-digit solution). The fixed point is the MM
    one above. Each Newton step solves a linear system in the number of systems (cubic
    cost, a handful of steps per fit).

    The prior: ``prior`` pseudo-wins for ``i`` over ``j`` and as many for ``j`` over ``i`` are
    added for every pair of systems (so ``n_ij`` grows by ``2 * prior``). This shrinks the
    strengths slightly towards each other and makes the fit exist for any data: a system
    that never wins gets a small strength instead of 0 (no division by zero), and systems
    never compared with each other are still put on one scale. With ``prior=0`` you get the
    plain maximum-likelihood estimate, which exists only when every system beat or tied
    some system (and the comparisons connect them all); otherwise ValueError.

    Args:
        comparisons: The comparisons, at least one.
        prior: Pseudo-wins each way per pair of systems, >= 0 (default 0.1).
        tolerance: Convergence tolerance on the strengths (default 1e-10): the largest move
            of a strength by the final Newton step.
        max_iterations: Cap on MM and Newton iterations together (default 10,000).

    Returns:
        The fitted `BradleyTerry`.

    Raises:
        ValueError: no comparisons, an item that is not a `Comparison`, a bad option, or
            (``prior=0``) data without a finite maximum-likelihood estimate.
    """
    _check_fit_options(prior, tolerance, max_iterations)
    items = _checked(comparisons)
    if not items:
        raise ValueError("bradley_terry needs at least one comparison")
    systems, wins, games = _pair_counts(items, float(prior))
    if prior == 0:
        _check_identifiable(systems, items)
    p, iterations, converged = _fit(_Likelihood(wins, games), tolerance, max_iterations)
    ranked = sorted(zip(systems, p, strict=True), key=lambda sp: (-sp[1], sp[0]))
    return BradleyTerry(
        strengths=dict(ranked),
        iterations=iterations,
        converged=converged,
        comparisons=len(items),
        prior=float(prior),
    )

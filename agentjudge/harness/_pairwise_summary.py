"""The ``pairwise`` block of a pairwise judge in ``summary.json`` (see `PairwiseTally`).

A judge is pairwise when its judgments carry ``metadata["pairwise"]`` (`PairwiseJudge` does).
For each such judge, ``judges[name].pairwise`` holds:

* ``n``: comparisons in the win rates (PASS with label A, B or tie, and inconsistent swapped
  pairs under ``on_inconsistent="tie"``, counted as ties); ``inconsistent``: swapped pairs
  whose two orders disagreed (position bias). Those are ABSTAIN judgments, not decisions: they
  are never a PASS, never make a case "judged" (the ``judged_cases`` check), and are counted
  here apart. ``undecided``: the other ABSTAIN judgments left out of the win rates
  (unreadable answers, inconsistent pairs under ``on_inconsistent="abstain"``). ERROR results
  have no comparison and are only in the judge's ``counts``.
* ``systems``: per system, ``n``, ``wins``, ``losses``, ``ties`` (apart), and two rates with
  their n and 95% Wilson interval: ``win_rate_decided`` (ties left out; null when every
  comparison was a tie) and ``win_rate_all`` (a tie is not a win). See `agentjudge.pairwise`.
* ``position_consistency``: ``{successes, n, rate, ci95}`` over the judgments asked in both
  orders (those with ``metadata["position_bias"]``), null when there were none. Below
  `POSITION_CONSISTENCY_WARNING` (0.5: most swapped pairs changed their answer with the
  order) the report and the ``position_consistency`` trust check warn; a gate
  ``<judge>.pairwise.position_consistency>=X`` can require more.
* ``bradley_terry``: when more than two systems appear, the Bradley-Terry fit of
  `agentjudge.pairwise.bradley_terry` (default prior 0.1; strengths sum to 1).

The block is typed (`PairwiseSummary`, with `PairwiseSystem`, `PairwiseRate` and
`BradleyTerryFit`): its JSON is the same as the dict it replaced (``bradley_terry`` left out,
not null, with two systems), and a summary written before ``inconsistent`` was counted reads
with ``inconsistent=0``.

Memory: a counter per (pair of systems, outcome), not per case; tallies of worker processes
merge exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.harness._fold import Judged
from agentjudge.harness._text import plural
from agentjudge.pairwise import (
    BradleyTerry,
    Comparison,
    Rate,
    WinRate,
    bradley_terry,
    position_consistency,
    win_rates,
)

__all__ = [
    "POSITION_CONSISTENCY_WARNING",
    "BradleyTerryFit",
    "PairwiseRate",
    "PairwiseSummary",
    "PairwiseSystem",
    "PairwiseTally",
    "pairwise_lines",
    "position_warning",
]

_DECIDED_LABELS = frozenset({"A", "B", "tie"})
POSITION_CONSISTENCY_WARNING = 0.5
"""Below this position consistency the report and the trust checks warn: most swapped pairs
got a different answer when the order changed, so the judge's verdicts say more about the
order than about the candidates (GPT-4-class judges are reported near 0.65; ask more of a
judge with a ``<judge>.pairwise.position_consistency`` gate)."""


class PairwiseRate(BaseModel):
    """A proportion with its n and 95% Wilson interval (`agentjudge.pairwise.Rate`)."""

    model_config = ConfigDict(extra="allow")

    successes: int
    """How many of the n counted."""
    n: int
    """How many there were."""
    rate: float
    """``successes / n``."""
    ci95: tuple[float, float]
    """The 95% Wilson interval of ``rate``."""

    @classmethod
    def of(cls, rate: Rate) -> PairwiseRate:
        """The block entry of ``rate``."""
        return cls(successes=rate.successes, n=rate.n, rate=rate.rate, ci95=rate.ci95)


class PairwiseSystem(BaseModel):
    """How one system fared (`agentjudge.pairwise.WinRate`)."""

    model_config = ConfigDict(extra="allow")

    n: int
    """Comparisons it took part in (wins + losses + ties)."""
    wins: int
    """Comparisons it won."""
    losses: int
    """Comparisons the other system won."""
    ties: int
    """Ties, counted apart."""
    win_rate_decided: PairwiseRate | None
    """``wins / (wins + losses)``; None when every comparison was a tie."""
    win_rate_all: PairwiseRate
    """``wins / n`` (a tie is not a win)."""

    @classmethod
    def of(cls, rate: WinRate) -> PairwiseSystem:
        """The block entry of ``rate``."""
        decided = None if rate.decided is None else PairwiseRate.of(rate.decided)
        return cls(
            n=rate.n,
            wins=rate.wins,
            losses=rate.losses,
            ties=rate.ties,
            win_rate_decided=decided,
            win_rate_all=PairwiseRate.of(rate.overall),
        )


class BradleyTerryFit(BaseModel):
    """The Bradley-Terry ranking of three or more systems (`agentjudge.pairwise.BradleyTerry`)."""

    model_config = ConfigDict(extra="allow")

    strengths: dict[str, float]
    """System -> strength (sum 1), strongest first."""
    iterations: int
    """Iterations the fit ran."""
    converged: bool
    """Whether the fit reached its tolerance."""
    comparisons: int
    """Comparisons fitted."""
    prior: float
    """Pseudo-wins added each way per pair of systems."""

    @classmethod
    def of(cls, fit: BradleyTerry) -> BradleyTerryFit:
        """The block entry of ``fit``."""
        return cls(
            strengths=dict(fit.strengths),
            iterations=fit.iterations,
            converged=fit.converged,
            comparisons=fit.comparisons,
            prior=fit.prior,
        )


class PairwiseSummary(BaseModel):
    """A pairwise judge's ``pairwise`` block of ``summary.json`` (see the module docstring)."""

    model_config = ConfigDict(extra="allow")

    n: int
    """Comparisons in the win rates."""
    inconsistent: int = 0
    """Swapped pairs whose two orders disagreed (0 in summaries written before it was counted)."""
    undecided: int
    """Other ABSTAIN judgments, left out of the win rates."""
    systems: dict[str, PairwiseSystem]
    """Per system: wins, losses, ties and the two win rates."""
    position_consistency: PairwiseRate | None
    """Share of the swapped pairs answered the same in both orders; None without any."""
    bradley_terry: BradleyTerryFit | None = Field(default=None, exclude_if=lambda v: v is None)
    """With more than two systems, their ranking (left out of ``summary.json`` otherwise)."""


class _JudgeTally:
    __slots__ = ("consistent", "outcomes", "swapped", "undecided")

    def __init__(self) -> None:
        self.outcomes: Counter[tuple[str, str, str]] = Counter()  # (first, second, label)
        self.undecided = 0
        self.swapped = 0
        self.consistent = 0

    def merge(self, other: _JudgeTally) -> None:
        self.outcomes.update(other.outcomes)
        self.undecided += other.undecided
        self.swapped += other.swapped
        self.consistent += other.consistent

    def observe(self, status: str, label: object, bias: object, systems: Sequence[Any]) -> None:
        """Fold in one judgment: its status, label, ``position_bias`` and the two systems."""
        if isinstance(bias, bool):
            self.swapped += 1
            self.consistent += not bias
        tie_by_policy = status == "abstain" and bias is True and label == "tie"
        if label in _DECIDED_LABELS and (status == "pass" or tie_by_policy):
            self.outcomes[(str(systems[0]), str(systems[1]), str(label))] += 1
        elif status == "abstain":
            self.undecided += 1

    def comparisons(self) -> Iterable[Comparison]:
        for (first, second, label), count in self.outcomes.items():
            winner = None if label == "tie" else first if label == "A" else second
            yield from [Comparison(first, second, winner)] * count

    def block(self) -> PairwiseSummary:
        comparisons = list(self.comparisons())
        systems = win_rates(comparisons)
        consistency = position_consistency(self.consistent, self.swapped) if self.swapped else None
        return PairwiseSummary(
            n=len(comparisons),
            inconsistent=self.swapped - self.consistent,
            undecided=self.undecided,
            systems={name: PairwiseSystem.of(rate) for name, rate in systems.items()},
            position_consistency=None if consistency is None else PairwiseRate.of(consistency),
            bradley_terry=BradleyTerryFit.of(bradley_terry(comparisons))
            if len(systems) > 2
            else None,
        )


class PairwiseTally:
    """Streaming pairwise tallies of a run, per judge (part of `RunAggregate`)."""

    __slots__ = ("judges",)

    def __init__(self) -> None:
        self.judges: dict[str, _JudgeTally] = {}

    def add(self, result: Judged) -> None:
        """Fold in one judge result (only a judgment with a ``pairwise`` record counts)."""
        metadata = result.metadata
        if result.status is not None and metadata and "pairwise" in metadata:
            self._observe(result.name, result.status, result.label, metadata)

    def _observe(self, judge: str, status: str, label: object, metadata: Mapping[str, Any]) -> None:
        pair = metadata["pairwise"]
        systems = pair.get("systems") if isinstance(pair, Mapping) else None
        if not isinstance(systems, list | tuple) or len(systems) != 2:
            return  # not a pairwise judgment we can read (another judge's key)
        tally = self.judges.get(judge)
        if tally is None:
            tally = self.judges[judge] = _JudgeTally()
        tally.observe(status, label, metadata.get("position_bias"), systems)

    def merge(self, other: PairwiseTally) -> None:
        """Fold in the tallies of other cases."""
        for name, theirs in other.judges.items():
            mine = self.judges.get(name)
            if mine is None:
                mine = self.judges[name] = _JudgeTally()
            mine.merge(theirs)

    def blocks(self) -> dict[str, PairwiseSummary]:
        """The ``pairwise`` block of every pairwise judge."""
        return {name: tally.block() for name, tally in self.judges.items()}


def _rate(rate: PairwiseRate | None) -> str:
    if rate is None:
        return "-"
    low, high = rate.ci95
    return f"{rate.rate:.3f} [{low:.3f}, {high:.3f}] n={rate.n}"


def pairwise_lines(blocks: Mapping[str, PairwiseSummary | None]) -> list[str]:
    """Report lines for every judge with a ``pairwise`` block (judge name -> block or None)."""
    lines: list[str] = []
    for name, block in blocks.items():
        if block is None:
            continue
        lines += [
            "",
            f"pairwise {name}: {plural(block.n, 'comparison')}, {block.inconsistent} inconsistent "
            f"(no decision: position bias), {block.undecided} undecided",
            "  system: wins/losses/ties; win rate over decided [95% CI]; over all [95% CI]",
        ]
        lines += [
            f"  {system}: {s.wins}/{s.losses}/{s.ties}; "
            f"{_rate(s.win_rate_decided)}; {_rate(s.win_rate_all)}"
            for system, s in block.systems.items()
        ]
        lines.append(f"  position consistency: {_rate(block.position_consistency)}")
        warning = position_warning(name, block)
        if warning is not None:
            lines.append(f"  warning: {warning}")
        fit = block.bradley_terry
        if fit is not None:
            ranked = ", ".join(f"{k} {v:.3f}" for k, v in fit.strengths.items())
            lines.append(f"  Bradley-Terry strengths (sum 1, prior {fit.prior:g}): {ranked}")
    return lines


def position_warning(judge: str, block: PairwiseSummary) -> str | None:
    """The warning for a pairwise block below `POSITION_CONSISTENCY_WARNING`, else None."""
    consistency = block.position_consistency
    if consistency is None or consistency.rate >= POSITION_CONSISTENCY_WARNING:
        return None
    return (
        f"judge {judge!r}: position consistency {consistency.rate:.3f} "
        f"({consistency.successes} of {consistency.n} swapped pairs gave the same answer "
        f"in both orders) is below {POSITION_CONSISTENCY_WARNING}: its verdicts depend on the "
        "order the candidates are shown in; inconsistent pairs are no decision"
    )

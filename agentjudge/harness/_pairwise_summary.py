"""The ``pairwise`` block of a pairwise judge in ``summary.json`` (see `PairwiseTally`).

A judge is pairwise when its judgments carry ``metadata["pairwise"]`` (`PairwiseJudge` does).
For each such judge, ``judges[name].pairwise`` holds:

* ``n``: comparisons with a decision (PASS with label A, B or tie; an inconsistent swapped
  pair recorded as a tie counts, as a tie); ``undecided``: ABSTAIN judgments (unreadable
  answers, or inconsistent pairs under ``on_inconsistent="abstain"``). ERROR results have no
  comparison and are only in the judge's ``counts``.
* ``systems``: per system, ``n``, ``wins``, ``losses``, ``ties`` (apart), and two rates with
  their n and 95% Wilson interval: ``win_rate_decided`` (ties left out; null when every
  comparison was a tie) and ``win_rate_all`` (a tie is not a win). See `agentjudge.pairwise`.
* ``position_consistency``: ``{successes, n, rate, ci95}`` over the judgments asked in both
  orders (those with ``metadata["position_bias"]``), null when there were none.
* ``bradley_terry``: when more than two systems appear, the Bradley-Terry fit of
  `agentjudge.pairwise.bradley_terry` (default prior 0.1; strengths sum to 1).

Memory: a counter per (pair of systems, outcome), not per case; tallies of worker processes
merge exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from agentjudge.core import Judgment
from agentjudge.pairwise import Comparison, bradley_terry, position_consistency, win_rates

__all__ = ["PairwiseTally", "pairwise_lines"]

_DECIDED_LABELS = frozenset({"A", "B", "tie"})


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

    def comparisons(self) -> Iterable[Comparison]:
        for (first, second, label), count in self.outcomes.items():
            winner = None if label == "tie" else first if label == "A" else second
            yield from [Comparison(first, second, winner)] * count

    def block(self) -> dict[str, Any]:
        comparisons = list(self.comparisons())
        systems = win_rates(comparisons)
        block: dict[str, Any] = {
            "n": len(comparisons),
            "undecided": self.undecided,
            "systems": {name: rate.as_dict() for name, rate in systems.items()},
            "position_consistency": None
            if not self.swapped
            else position_consistency(self.consistent, self.swapped).as_dict(),
        }
        if len(systems) > 2:
            block["bradley_terry"] = bradley_terry(comparisons).as_dict()
        return block


class PairwiseTally:
    """Streaming pairwise tallies of a run, per judge (part of `RunAggregate`)."""

    __slots__ = ("judges",)

    def __init__(self) -> None:
        self.judges: dict[str, _JudgeTally] = {}

    def add(self, judge: str, judgment: Mapping[str, Any] | None) -> None:
        """Fold in one results-row judgment (a dict; None when the judge was not run)."""
        if judgment is None:
            return
        metadata = judgment.get("metadata")
        if metadata and "pairwise" in metadata:
            self._observe(judge, judgment["status"], judgment.get("label"), metadata)

    def add_judgment(self, judge: str, judgment: Judgment | None) -> None:
        """`add` for the judgment itself (a live run)."""
        if judgment is not None and "pairwise" in judgment.metadata:
            self._observe(judge, judgment.status.value, judgment.label, judgment.metadata)

    def _observe(self, judge: str, status: str, label: object, metadata: Mapping[str, Any]) -> None:
        pair = metadata["pairwise"]
        systems = pair.get("systems") if isinstance(pair, Mapping) else None
        if not isinstance(systems, list | tuple) or len(systems) != 2:
            return  # not a pairwise judgment we can read (another judge's key)
        tally = self.judges.get(judge)
        if tally is None:
            tally = self.judges[judge] = _JudgeTally()
        bias = metadata.get("position_bias")
        if isinstance(bias, bool):
            tally.swapped += 1
            tally.consistent += not bias
        if status == "pass" and label in _DECIDED_LABELS:
            tally.outcomes[(str(systems[0]), str(systems[1]), str(label))] += 1
        elif status == "abstain":
            tally.undecided += 1

    def merge(self, other: PairwiseTally) -> None:
        """Fold in the tallies of other cases."""
        for name, theirs in other.judges.items():
            mine = self.judges.get(name)
            if mine is None:
                mine = self.judges[name] = _JudgeTally()
            mine.merge(theirs)

    def blocks(self) -> dict[str, dict[str, Any]]:
        """The ``pairwise`` block of every pairwise judge."""
        return {name: tally.block() for name, tally in self.judges.items()}


def _rate(rate: Mapping[str, Any] | None) -> str:
    if not rate:
        return "-"
    low, high = rate["ci95"]
    return f"{rate['rate']:.3f} [{low:.3f}, {high:.3f}] n={rate['n']}"


def pairwise_lines(judges: Mapping[str, Any]) -> list[str]:
    """Report lines for every judge summary that has a ``pairwise`` block."""
    lines: list[str] = []
    for name, summary in judges.items():
        block = getattr(summary, "pairwise", None)
        if not isinstance(block, Mapping):
            continue
        lines += [
            "",
            f"pairwise {name}: {block['n']} comparisons, {block['undecided']} undecided",
            "  system: wins/losses/ties; win rate over decided [95% CI]; over all [95% CI]",
        ]
        for system, s in block["systems"].items():
            lines.append(
                f"  {system}: {s['wins']}/{s['losses']}/{s['ties']}; "
                f"{_rate(s['win_rate_decided'])}; {_rate(s['win_rate_all'])}"
            )
        lines.append(f"  position consistency: {_rate(block['position_consistency'])}")
        fit = block.get("bradley_terry")
        if isinstance(fit, Mapping):
            ranked = ", ".join(f"{k} {v:.3f}" for k, v in fit["strengths"].items())
            lines.append(f"  Bradley-Terry strengths (sum 1, prior {fit['prior']:g}): {ranked}")
    return lines

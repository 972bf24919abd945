"""Voting benchmark: the cost of one ``aggregate`` and one ``decided`` call per strategy.

Run: ``uv run python benchmarks/bench_voting.py``.

The engine calls ``aggregate`` once per jury evaluation and ``decided`` after each member
finishes (with early stop), so both sit on the harness's critical path. Inputs are built once;
each figure is the best of several timeit runs, in microseconds per call. Prints one JSON line
per strategy. Targets for a 3-judge jury without weights: Majority ``aggregate`` <= 6 µs,
``decided`` <= 3 µs.
"""

from __future__ import annotations

import json
import timeit
from collections.abc import Callable
from functools import partial

from agentjudge import Average, Consensus, Judgment, Majority, Median, WeightedAverage

JUDGMENTS = [Judgment.passed("ok"), Judgment.from_score(0.75), Judgment.passed("ok")]
WEIGHTS = [1.0, 2.0, 1.0]
ONE_RUNNING = [JUDGMENTS[0], None, JUDGMENTS[2]]
TWO_RUNNING = [JUDGMENTS[0], None, None]


def best_us(call: Callable[[], object], number: int = 20_000, repeat: int = 9) -> float:
    """The best per-call time of ``call`` over ``repeat`` runs, in microseconds."""
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    """Time every strategy and print one JSON line each."""
    for strategy in (Majority(), Consensus(), Average(), Median(), WeightedAverage()):
        aggregate, decided = strategy.aggregate, strategy.decided
        row = {
            "strategy": strategy.name,
            "aggregate_us": best_us(partial(aggregate, JUDGMENTS)),
            "aggregate_weighted_us": best_us(partial(aggregate, JUDGMENTS, WEIGHTS)),
            "decided_two_running_us": best_us(partial(decided, TWO_RUNNING)),
            "decided_one_running_us": best_us(partial(decided, ONE_RUNNING)),
            "decided_none_running_us": best_us(partial(decided, JUDGMENTS)),
        }
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}))


if __name__ == "__main__":
    main()

"""Voting: turn the judgments of several judges into one.

Five strategies ship here: `Majority`, `Consensus`, `Average`, `Median` and `WeightedAverage`.
They are small immutable objects with two methods the engine calls:

* ``aggregate(judgments, weights=None)`` folds finished judgments into one aggregate judgment;
* ``decided(done, weights=None)`` looks at a partly finished jury (``None`` = still running) and
  returns the final aggregate once no outcome of the running judges can change its status. It
  powers early stopping.

Population rules shared by all five strategies:

* an empty list of judgments is a `ValueError`;
* ABSTAIN judgments leave the population (counted as ``explicitAbstainCount``);
* ERROR judgments follow the `ErrorPolicy`: PROPAGATE makes the aggregate ERROR, TREAT_AS_FAIL
  counts them as FAIL votes (score 0.0), TREAT_AS_ABSTAIN and IGNORE remove them (counted apart);
* an empty population gives ABSTAIN.

Every aggregate carries its evidence in ``metadata["aggregation"]`` (see `aggregation_evidence`
for the keys). Write your own strategy by implementing the `VotingStrategy` protocol.

Shared aggregates: `Majority` and `Consensus` (not their subclasses) intern their results. The
result of a counting strategy is a pure function of its settings and the ballot's counts (plus
the first error's excerpt when errors propagate), so equal keys share one frozen, read-only
Judgment. The cache is process-wide and bounded: it holds at most 512 entries and is cleared
when full, so memory stays flat however many distinct ballots pass through, and a cleared entry
is simply built again (results are identical with or without the cache).

The implementation lives in private modules (``_policies``, ``_population``, ``_base``,
``_intern``, ``_strategies``); import the public names from ``agentjudge.voting``.
"""

from __future__ import annotations

from agentjudge.voting._policies import ErrorPolicy, TiePolicy, VotingStrategy, check_weights
from agentjudge.voting._strategies import Average, Consensus, Majority, Median, WeightedAverage

__all__ = [
    "Average",
    "Consensus",
    "ErrorPolicy",
    "Majority",
    "Median",
    "TiePolicy",
    "VotingStrategy",
    "WeightedAverage",
    "check_weights",
]

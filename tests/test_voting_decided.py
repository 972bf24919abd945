"""decided() soundness: never a decision that a running judge could still overturn.

Exhaustive over small populations (sizes 1..5, every slot PASS/FAIL/ABSTAIN/ERROR/running, every
strategy x error policy x tie policy, a few weight vectors), plus a hypothesis property test with
arbitrary scores, thresholds and weights.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.core import Judgment, Status
from agentjudge.voting import (
    Average,
    Consensus,
    ErrorPolicy,
    Majority,
    Median,
    TiePolicy,
    VotingStrategy,
    WeightedAverage,
)

P = Judgment.passed()
F = Judgment.failed()
A = Judgment.abstained("no finding")
E = Judgment.errored("crashed")
# What a running judge may still produce: every status, with a few scores for the score-based
# strategies (a PASS may carry a low score and a FAIL a high one).
OUTCOMES: tuple[Judgment, ...] = (
    P,
    Judgment.passed(score=0.3),
    F,
    Judgment.failed(score=0.8),
    A,
    E,
)
STATUS_OUTCOMES: tuple[Judgment, ...] = (P, F, A, E)
SLOTS: tuple[Judgment | None, ...] = (P, F, A, E, None)


def configs() -> list[tuple[VotingStrategy, str]]:
    """Every strategy x error policy x tie policy, with weight-vector kinds for WeightedAverage."""
    out: list[tuple[VotingStrategy, str]] = []
    for policy in ErrorPolicy:
        for tie in TiePolicy:
            out.append((Majority(tie=tie, errors=policy), "none"))
        out.append((Consensus(errors=policy), "none"))
        out.append((Average(errors=policy), "none"))
        out.append((Median(errors=policy), "none"))
        for kind in ("none", "ascending", "last-only"):
            out.append((WeightedAverage(errors=policy), kind))
    return out


def weights_for(kind: str, n: int) -> list[float] | None:
    """A weight vector of the given kind and length."""
    if kind == "none":
        return None
    if kind == "ascending":
        return [float(i + 1) for i in range(n)]
    return [0.0] * (n - 1) + [1.0]


def outcome_space(strategy: VotingStrategy) -> tuple[Judgment, ...]:
    """The judgments a running slot can turn into (scores matter only for score strategies)."""
    if isinstance(strategy, Majority | Consensus):
        return STATUS_OUTCOMES
    return OUTCOMES


RUNNING = len(OUTCOMES)
"""A running slot in an index population (indices below it are `OUTCOMES`)."""
SLOT_INDEX = {id(j): OUTCOMES.index(j) if j is not None else RUNNING for j in SLOTS}


class Reachable:
    """Memoised statuses a population can still end in, for one configuration.

    A population is a tuple of indices into `OUTCOMES` (`RUNNING` for a running slot). Its
    reachable statuses are the aggregate statuses of all its completions (every running slot
    filled from the configuration's outcome space), computed as the union over the first running
    slot's outcomes: the same set as enumerating every completion, with each partial population
    done once for every population that shares it.
    """

    def __init__(
        self, strategy: VotingStrategy, weights: Sequence[float] | None, space: Sequence[Judgment]
    ) -> None:
        self.strategy = strategy
        self.weights = weights
        self.space = tuple(OUTCOMES.index(j) for j in space)
        self.memo: dict[tuple[int, ...], frozenset[Status]] = {}

    def statuses(self, population: tuple[int, ...]) -> frozenset[Status]:
        found = self.memo.get(population)
        if found is None:
            if RUNNING in population:
                i = population.index(RUNNING)
                head, tail = population[:i], population[i + 1 :]
                found = frozenset().union(*(self.statuses((*head, x, *tail)) for x in self.space))
            else:
                full = [OUTCOMES[k] for k in population]
                found = frozenset({self.strategy.aggregate(full, self.weights).status})
            self.memo[population] = found
        return found


def completions(
    done: Sequence[Judgment | None], space: Sequence[Judgment]
) -> list[tuple[Judgment, ...]]:
    """Every way the running slots (None) can finish."""
    running = [i for i, j in enumerate(done) if j is None]
    out = []
    for fill in itertools.product(space, repeat=len(running)):
        full = list(done)
        for i, j in zip(running, fill, strict=True):
            full[i] = j
        out.append(tuple(j for j in full if j is not None))
    return out


@functools.cache
def populations(n: int) -> list[tuple[tuple[Judgment | None, ...], tuple[int, ...], int]]:
    """Every population of ``n`` slots with its `Reachable` key and running count, built once
    for all the configurations instead of once per configuration (counted by identity:
    tuple.count and `in` compare Judgments with pydantic's __eq__)."""
    return [
        (done, tuple(SLOT_INDEX[id(j)] for j in done), sum(j is None for j in done))
        for done in itertools.product(SLOTS, repeat=n)
    ]


@pytest.mark.parametrize(
    ("strategy", "weight_kind"),
    configs(),
    ids=lambda x: repr(x) if isinstance(x, VotingStrategy) else str(x),
)
def test_decided_is_sound_and_prompt_exhaustively(
    strategy: VotingStrategy, weight_kind: str
) -> None:
    """Over every small population: decisions are never overturned, and complete where pinned."""
    space = outcome_space(strategy)
    counting = isinstance(strategy, Majority | Consensus)
    propagate = strategy.errors is ErrorPolicy.PROPAGATE  # type: ignore[attr-defined]
    decisions = 0
    for n in range(1, 6):
        weights = weights_for(weight_kind, n)
        reachable = Reachable(strategy, weights, space)
        for done, key, running in populations(n):
            result = strategy.decided(done, weights)
            if running == 0:
                final = strategy.aggregate(done, weights)  # type: ignore[arg-type]
                assert result == final
                # What `Reachable` would compute for this complete population (the aggregate of
                # the same judgments), taken from the one just built; it comes before every
                # population that completes to it (None is the last of SLOTS), so the counting
                # strategies' completions are each aggregated once instead of twice.
                reachable.memo[key] = frozenset({final.status})
                continue
            if result is None and not (counting and not propagate):
                statuses: set[Status] = set()  # nothing to check against completions
            else:
                statuses = set(reachable.statuses(key))
            if result is not None:
                decisions += 1
                # Sound: every completion gives the decided status.
                assert statuses == {result.status}, (done, result.reasoning)
                assert result.metadata["aggregation"]["runningCount"] == running
            if propagate:
                # Under PROPAGATE an arrived ERROR decides at once; nothing else is certain.
                assert (result is not None) == any(j is E for j in done), done
            elif counting:
                # Prompt: Majority/Consensus decide as soon as the status is certain.
                assert (result is not None) == (len(statuses) == 1), done
            else:
                # The score-based strategies wait for every judge (pinned).
                assert result is None
    # Every configuration except the score-based ones without PROPAGATE decides sometimes.
    assert (decisions > 0) == (counting or propagate)


def test_propagate_undecided_because_running_could_error() -> None:
    """Under PROPAGATE, [P,P,P,running,running] has an ERROR completion, hence undecided."""
    strategy = Majority()
    done = (P, P, P, None, None)
    statuses = {strategy.aggregate(full).status for full in completions(done, STATUS_OUTCOMES)}
    assert statuses == {Status.PASS, Status.ERROR}
    assert strategy.decided(done) is None


# --------------------------------------------------------------------------- hypothesis

finished_judgments = st.one_of(
    st.builds(lambda s: Judgment.passed(score=s), st.none() | st.floats(0.0, 1.0)),
    st.builds(lambda s: Judgment.failed(score=s), st.none() | st.floats(0.0, 1.0)),
    st.just(A),
    st.just(E),
)
slots = st.one_of(st.none(), finished_judgments)


FIXED_SCORES: tuple[dict[float | None, Judgment], ...] = tuple(
    {score: make(score=score) for score in (None, 0.0, 1.0)}
    for make in (Judgment.passed, Judgment.failed)
)
"""The PASS and FAIL judgments of `random_judgment` without a random score, built once."""


def random_judgment(rng: random.Random) -> Judgment:
    """What `finished_judgments` draws, from a plain Random (a score half of the time).

    A judgment without a random score is one of `FIXED_SCORES` (equal to a new one; building
    ~40,000 judgments was a third of the property's CPU); the same numbers are taken from rng.
    """
    kind = rng.randrange(4)
    if kind >= 2:
        return (A, E)[kind - 2]
    drawn = rng.random()
    score = rng.choice((None, 0.0, 1.0, drawn))
    if score is not drawn:
        return FIXED_SCORES[kind][score]
    return Judgment.passed(score=score) if kind == 0 else Judgment.failed(score=score)


thresholds = st.floats(0.0, 1.0)
policies = st.sampled_from(list(ErrorPolicy))
# Built once, not at every draw of the composites below (the same draws).
kinds = st.sampled_from(["majority", "consensus", "average", "median", "weighted"])
ties = st.sampled_from(list(TiePolicy))
weight_lists = {
    n: st.lists(
        st.sampled_from([0.0, 0.5, 1.0, 3.0]) | st.floats(0.0, 100.0), min_size=n, max_size=n
    )
    for n in range(1, 9)
}
zero_weight_fix = {n: st.integers(0, n - 1) for n in range(1, 9)}
MAX_EXAMPLES = 200
"""Drawn populations. Each is checked with every choice of running slots, so 200 examples check
40 times the decisions and as many complete populations as 400 examples of one choice each did,
in about half the time (counted: 1,616 decisions and 200 complete against 40 and 196)."""


@st.composite
def strategies(draw: st.DrawFn) -> VotingStrategy:
    """Any strategy with any knobs."""
    policy = draw(policies)
    kind = draw(kinds)
    if kind == "majority":
        return Majority(tie=draw(ties), errors=policy)
    if kind == "consensus":
        return Consensus(errors=policy)
    cls: Any = {"average": Average, "median": Median, "weighted": WeightedAverage}[kind]
    return cls(threshold=draw(thresholds), errors=policy)  # type: ignore[no-any-return]


@st.composite
def weight_vectors(draw: st.DrawFn, n: int) -> list[float] | None:
    """None, or n finite non-negative weights that are not all zero."""
    if draw(st.booleans()):
        return None
    weights = draw(weight_lists[n])
    if not any(weights):
        weights[draw(zero_weight_fix[n])] = 1.0
    return weights


weight_vectors = functools.cache(weight_vectors)  # one strategy per length, not per example


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(
    strategy=strategies(),
    finished=st.lists(finished_judgments, min_size=1, max_size=8),
    data=st.data(),
)
def test_decided_is_sound_property(
    strategy: VotingStrategy, finished: list[Judgment], data: st.DataObject
) -> None:
    """For random populations, a decision survives random completions of the running slots.

    Each drawn population is checked with every choice of running slots (a mask over it), so
    one example checks up to 256 populations where drawing each one took most of the time.
    """
    weights = data.draw(weight_vectors(len(finished)))
    rng = random.Random(data.draw(st.integers(0, 2**32)))  # random completions: see below
    for mask in range(1 << len(finished)):
        done = [None if mask >> i & 1 else j for i, j in enumerate(finished)]
        assert_decision_survives(strategy, done, weights, rng)


def assert_decision_survives(
    strategy: VotingStrategy,
    done: list[Judgment | None],
    weights: list[float] | None,
    rng: random.Random,
) -> None:
    """A decision on ``done`` equals the aggregate of the extreme and 10 random completions."""
    result = strategy.decided(done, weights)
    running = [i for i, j in enumerate(done) if j is None]
    if not running:
        assert result == strategy.aggregate(done, weights)  # type: ignore[arg-type]
        return
    if result is None:
        return
    # Extremes first (all abstain, all error, all pass, all fail), then random completions.
    fills: list[list[Judgment]] = [[x] * len(running) for x in (A, E, P, F)]
    fills += [[random_judgment(rng) for _ in running] for _ in range(10)]
    for fill in fills:
        full = list(done)
        for i, j in zip(running, fill, strict=True):
            full[i] = j
        final = strategy.aggregate(full, weights)  # type: ignore[arg-type]
        assert final.status is result.status, (done, fill, result.reasoning, final.reasoning)


@settings(max_examples=300, deadline=None)
@given(
    strategy=strategies(),
    judgments=st.lists(finished_judgments, min_size=1, max_size=8),
)
def test_evidence_invariants_property(strategy: VotingStrategy, judgments: list[Judgment]) -> None:
    """Evidence counts always partition the input and match the status rules."""
    result = strategy.aggregate(judgments)
    # Aggregates skip validation for speed, so prove they are exactly what validation accepts.
    assert Judgment.model_validate_json(result.model_dump_json()) == result
    assert Judgment(**result.model_dump()) == result
    ev = result.metadata["aggregation"]
    errors = sum(j.status is Status.ERROR for j in judgments)
    abstains = sum(j.status is Status.ABSTAIN for j in judgments)
    assert ev["inputCount"] == len(judgments)
    assert ev["errorCount"] == errors
    assert ev["explicitAbstainCount"] == abstains
    if strategy.errors is ErrorPolicy.PROPAGATE and errors:  # type: ignore[attr-defined]
        assert result.status is Status.ERROR
        assert ev["eligibleCount"] == 0
        return
    removed = ev["ignoredErrorCount"] + ev["errorsTreatedAsAbstainCount"]
    assert ev["inputCount"] == ev["eligibleCount"] + abstains + removed
    assert ev["errorCount"] == removed + ev["errorsTreatedAsFailCount"]
    assert result.status is not Status.ERROR
    if ev["eligibleCount"] == 0:
        assert result.status is Status.ABSTAIN
    if result.status in (Status.ABSTAIN, Status.ERROR) or isinstance(
        strategy, Majority | Consensus
    ):
        assert result.score is None
    else:
        assert result.score is not None
        threshold = strategy.threshold  # type: ignore[attr-defined]
        assert (result.score >= threshold) == (result.status is Status.PASS)

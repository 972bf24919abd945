"""Interned counting aggregates: shared frozen Judgments that equal the freshly built ones.

`Majority` and `Consensus` hand out one Judgment per (settings, counts, error excerpt) key. The
golden tests compare every interned result with the result built without the cache, over random
ballots under every error and tie policy, with weights, errors and running members.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pytest

from agentjudge.core import Judgment
from agentjudge.voting import (
    Consensus,
    ErrorPolicy,
    Majority,
    TiePolicy,
    VotingStrategy,
    _intern,
    _strategies,
)
from agentjudge.voting._base import _Strategy
from agentjudge.voting._population import _Population

P = Judgment.passed("ok")
F = Judgment.failed("bad")
A = Judgment.abstained("not applicable")


def counting_strategies() -> list[VotingStrategy]:
    """Majority under every tie and error policy, Consensus under every error policy."""
    out: list[VotingStrategy] = []
    for policy in ErrorPolicy:
        out += [Majority(tie=tie, errors=policy) for tie in TiePolicy]
        out.append(Consensus(errors=policy))
    return out


def random_judgment(rng: random.Random) -> Judgment:
    """A judgment of any status, with varied scores, labels and error texts."""
    kind = rng.randrange(8)
    if kind == 0:
        return Judgment.passed("ok", score=rng.random())
    if kind == 1:
        return Judgment.failed("bad", label="wrong", score=rng.random())
    if kind == 2:
        return Judgment.abstained(f"no finding {rng.randrange(3)}")
    if kind == 3:
        # Texts that differ, that differ only in whitespace, and that share a 200-char excerpt.
        texts = [
            "boom",
            "boom ",
            "  boom\n",
            "crash: " + "x" * rng.randrange(190, 260),
            f"timeout after {rng.randrange(4)} s",
        ]
        return Judgment.errored(rng.choice(texts))
    return rng.choice([P, F, A, P])


def golden(strategy: VotingStrategy, done: list[Judgment | None]) -> Judgment | None:
    """What the strategy returns with the cache bypassed (built fresh every time)."""
    pop = _Population(tuple(done), None, strategy.errors, False)  # type: ignore[attr-defined]
    if pop.running:
        return None
    assert isinstance(strategy, _Strategy)
    return _Strategy._from_population(strategy, pop)


def dump(j: Judgment | None) -> str:
    """The judgment's fields with value types visible (3 and 3.0, str and enum, tuple and list
    differ). Its stored fields as they are, not ``model_dump()``: that is every field (the model
    forbids extras and has no computed ones), each value's type is kept rather than converted,
    and it costs a third as much (the dumps were half of these tests' CPU)."""
    return "None" if j is None else repr(j.__dict__)


def ballots(rng: random.Random, count: int) -> Iterator[tuple[list[Judgment], list[float] | None]]:
    """Random ballots of 1 to 6 judgments, a third of them with weights."""
    for _ in range(count):
        n = rng.randint(1, 6)
        judgments = [random_judgment(rng) for _ in range(n)]
        weights = [rng.choice([0.0, 0.5, 1.0, 2.0, 3.0]) for _ in range(n)]
        if not any(weights):
            weights[0] = 1.0
        yield judgments, weights if rng.randrange(3) == 0 else None


Ballot = tuple[list[Judgment], list[float] | None, list[list[Judgment | None]]]


@functools.cache
def inputs(seed: int) -> list[Ballot]:
    """Random ballots, each with two random choices of running members per strategy, drawn once
    per seed (the same numbers in the same order as drawing them while aggregating): `collect`
    runs four times over seed 7, and drawing them was a third of its CPU."""
    rng = random.Random(seed)
    out: list[Ballot] = []
    for judgments, weights in ballots(rng, 400):
        dones = [
            [None if rng.randrange(3) == 0 else j for j in judgments]
            for _ in range(2 * len(counting_strategies()))
        ]
        out.append((judgments, weights, dones))
    return out


def collect(seed: int) -> list[str]:
    """Dumps of aggregate and decided results over a fixed random set of ballots."""
    out: list[str] = []
    strategies = counting_strategies()  # frozen: built once, not per ballot
    for judgments, weights, dones in inputs(seed):
        for k, strategy in enumerate(strategies):
            out.append(dump(strategy.aggregate(judgments, weights)))
            for done in dones[2 * k : 2 * k + 2]:
                out.append(dump(strategy.decided(done, weights)))
    return out


@functools.cache
def fresh_dumps(seed: int) -> list[str]:
    """`collect` with the cache bypassed (every result built fresh); built once per process, as
    both tests below compare against it."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(
            _strategies,
            "_interned",
            lambda strategy, setting, pop: _Strategy._from_population(strategy, pop),
        )
        return collect(seed)


def test_interned_results_equal_fresh_ones() -> None:
    """Over random ballots, every interned aggregate dumps exactly like the fresh one."""
    _intern._INTERNED.clear()
    cached = collect(7)
    again = collect(7)  # now mostly cache hits
    fresh = fresh_dumps(7)
    assert cached == fresh
    assert again == fresh


def test_each_call_equals_the_golden_result() -> None:
    """aggregate() and decided() with nothing running equal the uncached build, call by call."""
    rng = random.Random(11)
    strategies = counting_strategies()  # frozen: built once, not per ballot
    for judgments, weights in ballots(rng, 300):
        for strategy in strategies:
            expected = dump(golden(strategy, list(judgments)))
            assert dump(strategy.aggregate(judgments, weights)) == expected
            assert dump(strategy.decided(judgments, weights)) == expected


def test_small_cache_gives_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """Constant eviction (a cache of 3 entries) changes no result: the same as built fresh."""
    monkeypatch.setattr(_intern, "_INTERN_LIMIT", 3)
    _intern._INTERNED.clear()
    assert collect(7) == fresh_dumps(7)
    assert len(_intern._INTERNED) <= 3


def test_same_counts_share_one_judgment() -> None:
    """Ballots with the same counts get the very same Judgment object."""
    first = Majority().aggregate([P, F, P])
    second = Majority().aggregate([Judgment.passed("other"), P, F])
    assert first is second
    assert Consensus().aggregate([P, P]) is Consensus().aggregate([P, P], [1.0, 3.0])


def test_keys_separate_settings_and_counts() -> None:
    """Different settings, running counts or error texts never share an aggregate."""
    tie_fail = Majority(tie=TiePolicy.FAIL).aggregate([P, F])
    tie_pass = Majority(tie=TiePolicy.PASS).aggregate([P, F])
    assert tie_fail is not tie_pass
    assert (tie_fail.status, tie_pass.status) == ("fail", "pass")
    assert Majority().aggregate([P, P]) is not Consensus().aggregate([P, P])
    assert Majority().aggregate([P, P]).metadata["aggregation"]["strategy"] == "majority"
    ignore = Majority(errors=ErrorPolicy.IGNORE)
    early = ignore.decided([P, P, None])
    assert early is not None and early is not ignore.aggregate([P, P])
    assert early.metadata["aggregation"]["runningCount"] == 1
    boom = Majority().aggregate([P, Judgment.errored("boom")])
    bang = Majority().aggregate([P, Judgment.errored("bang")])
    assert boom.reasoning.endswith("first error: boom")
    assert bang.reasoning.endswith("first error: bang")
    # Under other policies the error text is not part of the result: one object serves both.
    assert ignore.aggregate([P, Judgment.errored("boom")]) is ignore.aggregate(
        [P, Judgment.errored("bang")]
    )
    assert Majority().aggregate([P, A]) is not Majority().aggregate([P, F])


def test_error_excerpts_key_the_propagated_result() -> None:
    """Error texts with the same excerpt share a result; the reasoning quotes that excerpt."""
    long_a = "crash: " + "x" * 250 + "a"
    long_b = "crash: " + "x" * 250 + "b"
    first = Majority().aggregate([Judgment.errored(long_a), P])
    assert first is Majority().aggregate([Judgment.errored(long_b), P])
    assert first.reasoning.endswith("x...")
    spaced = Majority().aggregate([Judgment.errored("  boom \n now ")])
    assert spaced is Majority().aggregate([Judgment.errored("boom now")])


def test_shared_judgments_are_read_only() -> None:
    """An interned aggregate cannot be changed through its fields or its evidence."""
    j = Majority().aggregate([P, P, F])
    with pytest.raises(ValueError, match="frozen"):
        j.reasoning = "changed"  # type: ignore[misc]
    assert type(j.metadata) is MappingProxyType
    evidence: Any = j.metadata["aggregation"]
    assert type(evidence) is MappingProxyType
    with pytest.raises(TypeError):
        evidence["passCount"] = 0
    assert Majority().aggregate([P, P, F]).metadata["aggregation"]["passCount"] == 2


def test_cache_stays_bounded() -> None:
    """However many distinct keys pass through, the cache holds at most its limit."""
    _intern._INTERNED.clear()
    for n in range(1, 40):
        for passes in range(n + 1):
            judgments = [P] * passes + [F] * (n - passes)
            Majority().aggregate(judgments)
            Consensus().aggregate(judgments)
            assert len(_intern._INTERNED) <= _intern._INTERN_LIMIT
    assert len(_intern._INTERNED) > 0


def test_overfull_cache_stays_bounded_and_exact() -> None:
    """Past its documented limit of 512 keys the cache stays bounded and results stay exact."""
    assert _intern._INTERN_LIMIT == 512  # the limit the module docstring documents
    _intern._INTERNED.clear()
    strategies = [Majority(), Majority(tie=TiePolicy.PASS), Consensus()]
    distinct = 0
    for n in range(1, 30):  # 3 strategies x 464 ballots: well over 512 distinct keys
        for passes in range(n + 1):
            judgments = [P] * passes + [F] * (n - passes)
            for strategy in strategies:
                first = strategy.aggregate(judgments)
                distinct += 1
                assert len(_intern._INTERNED) <= _intern._INTERN_LIMIT
                assert dump(first) == dump(golden(strategy, list(judgments)))
                assert strategy.aggregate(judgments) is first  # a hit right after the miss
    assert distinct > 2 * _intern._INTERN_LIMIT
    # After eviction, an early key is built again and equals the fresh build.
    again = Majority().aggregate([P])
    assert dump(again) == dump(golden(Majority(), [P]))


class _Strict(Majority):
    """A Majority subclass whose result depends on more than the counts."""

    def _conclude(self, pop: _Population) -> Judgment:
        return Judgment.passed(f"{pop.input_count} inputs, {len(pop.input_weights)} weighted")


def test_subclasses_are_not_interned() -> None:
    """A subclass of a shipped strategy gets a fresh aggregate each time."""
    strategy = _Strict()
    first = strategy.aggregate([P, F, P], [1.0, 2.0, 3.0])
    second = strategy.aggregate([P, F, P])
    assert first is not second
    assert first.reasoning == "3 inputs, 3 weighted"
    assert second.reasoning == "3 inputs, 0 weighted"

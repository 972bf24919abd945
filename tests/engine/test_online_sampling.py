"""Consistent sampling by key: the same keys everywhere, per-route and per-judge rates."""

from __future__ import annotations

from hashlib import blake2b

import pytest

from agentjudge import Cascade, Evaluator, OnlineResult, Tier, TierPolicy
from agentjudge.engine._sampling import Sampler, key_point
from agentjudge.testing import ScriptedJudge

KEYS = [f"trace-{i:04d}" for i in range(400)]


def test_key_point_is_the_documented_hash() -> None:
    """The point is blake2b-64 of the UTF-8 key over 2**64: reproducible in any process."""
    digest = blake2b(b"trace-0001", digest_size=8).digest()
    assert key_point("trace-0001") == int.from_bytes(digest, "big") / 2**64
    assert key_point("trace-0001", b"salt") != key_point("trace-0001")
    assert all(0.0 <= key_point(k) < 1.0 for k in KEYS)


async def offered_keys(evaluator: Evaluator, **options: object) -> list[OnlineResult]:
    got: list[OnlineResult] = []
    async with evaluator.background(sinks=[got.append], **options) as background:  # type: ignore[arg-type]
        for key in KEYS:
            background.offer(input=key, key=key)
    return got


async def test_the_same_keys_are_sampled_by_every_background_evaluator() -> None:
    """Two evaluators (as two processes would) sample exactly the same keys at one rate."""
    first = await offered_keys(Evaluator(ScriptedJudge(True, name="a")), sample_rate=0.1)
    second = await offered_keys(Evaluator(ScriptedJudge(True, name="b")), sample_rate=0.1)
    keys = {r.key for r in first}
    assert keys == {r.key for r in second}
    assert keys == {k for k in KEYS if key_point(k) < 0.1}
    assert 20 <= len(keys) <= 60


async def test_a_lower_rate_samples_a_subset() -> None:
    """Lowering the rate keeps a subset of the keys sampled before."""
    wide = {r.key for r in await offered_keys(Evaluator(ScriptedJudge(True)), sample_rate=0.3)}
    narrow = {r.key for r in await offered_keys(Evaluator(ScriptedJudge(True)), sample_rate=0.1)}
    assert narrow < wide


async def test_route_rates() -> None:
    """A route's own rate replaces sample_rate for offers on that route."""
    got: list[OnlineResult] = []
    evaluator = Evaluator(ScriptedJudge(True))
    options = {"sample_rate": 0.0, "route_rates": {"/chat": 1.0}, "sinks": [got.append]}
    async with evaluator.background(**options) as background:  # type: ignore[arg-type]
        assert background.offer(input=1, key="a", route="/chat")
        assert not background.offer(input=2, key="b", route="/search")
        assert not background.offer(input=3, key="c")
    assert [r.route for r in got] == ["/chat"]
    assert background.statistics()["sampled_out"] == 2


async def test_judge_rates_pick_the_same_requests_for_a_judge() -> None:
    """A judge at 0.5 runs on the sampled requests whose point is below half the rate."""
    cheap, costly = ScriptedJudge(True, name="cheap"), ScriptedJudge(True, name="costly")
    got = await offered_keys(Evaluator([cheap, costly]), judge_rates={"costly": 0.5})
    assert len(got) == len(KEYS)
    ran = {r.key for r in got if r.verdict and r.verdict.by_name["costly"].sampled}
    assert ran == {k for k in KEYS if key_point(k) < 0.5}
    assert cheap.calls == len(KEYS) and costly.calls == len(ran)


async def test_a_cascade_samples_once_per_request() -> None:
    """Every tier of a cascade sees the same sampled requests (one decision per request)."""
    first = ScriptedJudge(True, name="first")
    second = ScriptedJudge(True, name="second")
    cascade = Cascade([Tier("cheap", first, TierPolicy.REJECT_ON_ANY_FAIL), Tier("final", second)])
    got = await offered_keys(Evaluator(cascade), sample_rate=0.2)
    keys = {k for k in KEYS if key_point(k) < 0.2}
    assert {r.key for r in got} == keys
    assert {c.input for c in first.contexts} == {c.input for c in second.contexts} == keys


def test_sampler_validation() -> None:
    """Unknown judge names and rates outside [0, 1] are ValueErrors naming them."""
    with pytest.raises(ValueError, match="unknown judges \\['nope'\\]"):
        Sampler(["a"], judge_rates={"nope": 0.5})
    with pytest.raises(ValueError, match="route_rates\\['/x'\\]"):
        Sampler(["a"], route_rates={"/x": 1.5})
    with pytest.raises(ValueError, match="64 bytes"):
        Sampler(["a"], salt="x" * 65)

"""Property: the fast path and the general path give identical results (issue 14).

Hypothesis builds juries, nested juries and cascades (every voting strategy and tier policy,
early stop, weights, sampling rates, resource limits, timeouts, retries, confidence thresholds,
cascades without short-circuit) of judges that return
at once, suspend, raise before or after suspending, time out or are cancelled (early stop,
short-circuits), including judges that are instant while the engine warms up and then suspend,
hang or raise after suspending on the measured run. Each configuration runs on two evaluators,
one with the fast path and one without (`Evaluator(fast_path=False)`), with the same sampling
seed: every run's statuses, scores, names, order, attempts, error types, tier records and
skipped members must match, and every limiter must be idle afterwards.

CI runs it derandomized (tests/conftest.py); ``HYPOTHESIS_PROFILE=explore`` searches longer
(500 examples, a few minutes: lift the per-test timeout, e.g.
``HYPOTHESIS_PROFILE=explore pytest tests/engine/test_engine_equivalence.py --timeout 1800``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import anyio
from engine_support import idle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from virtual_clock import run_virtual

from agentjudge import (
    Cascade,
    Context,
    Evaluator,
    Judgment,
    Jury,
    RetryableError,
    RetryPolicy,
    Tier,
    TierPolicy,
    Verdict,
)
from agentjudge.engine._learned import INSTANT_AFTER
from agentjudge.voting import (
    Average,
    Consensus,
    ErrorPolicy,
    Majority,
    Median,
    TiePolicy,
    WeightedAverage,
)

WARM = INSTANT_AFTER + 2
"""Runs before the measured one: enough for instant judges to take the fast path."""
LAST = WARM
"""``ctx.input`` of the measured run."""
TIMEOUT = 0.5
"""Per attempt. The runs are on a virtual-time loop (`run_virtual`): time passes only while
every task waits, so an instant or suspending judge never times out, whatever the machine's
load (on a real clock a descheduled worker once timed one out on one path only)."""
HANG_TIMEOUT = 0.1
"""Per attempt of a ``then_hang`` judge (its own ``attempt_timeout``): shorter than `TIMEOUT`
so both deadlines are exercised. On the virtual clock its measured run's timeouts take no real
time (at a real 0.1 s each, 50 attempts both ways held an xdist worker idle ~5 s)."""

INSTANT = (
    "pass",
    "fail",
    "abstain",
    "score_low",
    "score_high",
    "raise",
    "retry_once",
    "garbage",
    "sure_pass",
    "unsure_fail",
)
SUSPENDING = ("sleep_pass", "sleep_fail", "sleep_raise")
SWITCHING = ("then_sleep", "then_hang", "then_raise")
BEHAVIOURS = INSTANT + SUSPENDING + SWITCHING


ANSWERS: dict[str, object] = {
    "pass": Judgment.passed("ok"),
    "fail": Judgment.failed("no"),
    "abstain": Judgment.abstained("unsure"),
    "score_low": 0.25,
    "score_high": 0.75,
    "garbage": "not a judgment",
    "sure_pass": Judgment.passed("sure", confidence=0.9),
    "unsure_fail": Judgment.failed("unsure", confidence=0.3),
}
"""What the instant behaviours that always answer the same return."""


def make_judge(behaviour: str, name: str, resource: str | None) -> Callable[..., Any]:
    """A judge whose outcome depends only on ``behaviour`` and the run number (``ctx.input``)."""
    attempts: dict[int, int] = {}

    async def judge(ctx: Context) -> object:
        run = int(ctx.input)
        attempts[run] = attempts.get(run, 0) + 1
        last = run == LAST
        if behaviour in ANSWERS:
            return ANSWERS[behaviour]
        if behaviour == "raise":
            raise ValueError("bad")
        if behaviour == "retry_once":
            if attempts[run] == 1:
                raise RetryableError("again", retry_after=0.0)
            return True
        if behaviour in SUSPENDING or (behaviour in SWITCHING and last):
            await anyio.sleep(0)
            if behaviour in ("sleep_raise", "then_raise"):
                raise RuntimeError("late")
            if behaviour == "then_hang":
                await anyio.sleep_forever()
            return Judgment.failed("slow no") if behaviour == "sleep_fail" else True
        return True  # a switching judge before the measured run: instant

    judge.__name__ = name
    judge.resource = resource  # type: ignore[attr-defined]
    if behaviour == "then_hang":
        judge.attempt_timeout = HANG_TIMEOUT  # type: ignore[attr-defined]
    return judge


VOTINGS = st.sampled_from(
    [
        Majority(),
        Majority(tie=TiePolicy.PASS, errors=ErrorPolicy.IGNORE),
        Majority(errors=ErrorPolicy.TREAT_AS_FAIL),
        Consensus(errors=ErrorPolicy.TREAT_AS_ABSTAIN),
        Average(errors=ErrorPolicy.IGNORE),
        Median(threshold=0.6),
        WeightedAverage(errors=ErrorPolicy.TREAT_AS_FAIL),
    ]
)


# The strategies the composites below draw from, built once instead of at every draw.
BEHAVIOUR = st.sampled_from(BEHAVIOURS)
RESOURCE = st.sampled_from([None, None, "gpu"])
JURY_SIZE = st.integers(2, 5)
NEST = st.integers(0, 5)
WEIGHT_LISTS = {
    n: st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n) for n in range(2, 6)
}
TIER_COUNT = st.integers(1, 3)
STOPPING_POLICY = st.sampled_from(
    [
        TierPolicy.REJECT_ON_ANY_FAIL,
        TierPolicy.ACCEPT_ON_ALL_PASS,
        TierPolicy.STOP_ON_AGREEMENT,
        TierPolicy.STOP_ON_CONFIDENCE,
    ]
)
THRESHOLD = st.sampled_from([0.0, 0.5, 0.8])
MAX_CONCURRENCY = st.integers(1, 8)
LIMIT = st.integers(1, 2)
RETRY = st.sampled_from(
    [None, RetryPolicy(attempts=2, initial_delay=0.0, max_delay=0.0, jitter=False)]
)
RATES = st.sampled_from([None, 0.5, 0.0])
SEED = st.integers(0, 2**16)


# The composites below are built once (module-level strategies, not one per draw: a new
# strategy object is validated and has its properties computed at its first draw); the judges
# and juries get their numbered names after the draw, by `named`, in the order they were drawn.
LEAF = st.tuples(st.just("leaf"), BEHAVIOUR, RESOURCE)


@st.composite
def juries(draw: st.DrawFn, depth: int) -> tuple[Any, ...]:
    size = draw(JURY_SIZE)
    members: list[Any] = []
    for _ in range(size):
        if depth == 0 and draw(NEST) == 0:
            members.append(draw(NESTED_JURY))
        else:
            members.append(draw(LEAF))
    voting = draw(VOTINGS)
    weights = None
    if isinstance(voting, WeightedAverage) or draw(st.booleans()):
        weights = draw(WEIGHT_LISTS[size])
    return ("jury", members, voting, weights, draw(st.booleans()))


NESTED_JURY = juries(1)


@st.composite
def cascades(draw: st.DrawFn) -> tuple[Any, ...]:
    count = draw(TIER_COUNT)
    tiers = []
    for k in range(count):
        policy = TierPolicy.FINAL
        if k < count - 1:
            policy = draw(STOPPING_POLICY)
        threshold = None
        if policy is TierPolicy.STOP_ON_CONFIDENCE or (
            policy is TierPolicy.FINAL and draw(st.booleans())
        ):
            threshold = draw(THRESHOLD)
        body = draw(NESTED_JURY) if draw(st.booleans()) else draw(LEAF)
        tiers.append((f"t{k}", body, policy, threshold))
    return ("cascade", tiers, draw(st.booleans()))


ROOTS = st.one_of(juries(0), cascades())


def named(spec: tuple[Any, ...], counter: list[int]) -> tuple[Any, ...]:
    """``spec`` with its judges named ``j<n>_<behaviour>`` and its juries ``jury<n>``, numbered
    in drawing order (a jury after its members)."""
    if spec[0] == "leaf":
        counter[0] += 1
        return ("leaf", spec[1], f"j{counter[0]}_{spec[1]}", spec[2])
    if spec[0] == "jury":
        members = [named(m, counter) for m in spec[1]]
        counter[0] += 1
        return ("jury", members, *spec[2:], f"jury{counter[0]}")
    tiers = [(name, named(body, counter), *rest) for name, body, *rest in spec[1]]
    return ("cascade", tiers, spec[2])


def build(spec: tuple[Any, ...]) -> Any:
    """Fresh judges (with fresh attempt counters) from a generated spec."""
    kind = spec[0]
    if kind == "leaf":
        return make_judge(spec[1], spec[2], spec[3])
    if kind == "jury":
        _, members, voting, weights, early_stop, name = spec
        return Jury(
            [build(m) for m in members],
            voting=voting,
            weights=weights,
            early_stop=early_stop,
            name=name,
        )
    return Cascade(
        [
            Tier(name, build(body), policy, threshold=threshold)
            for name, body, policy, threshold in spec[1]
        ],
        short_circuit=spec[2],
    )


def resources_of(spec: tuple[Any, ...]) -> set[str]:
    if spec[0] == "leaf":
        return {spec[3]} if spec[3] else set()
    children = spec[1] if spec[0] == "jury" else [tier[1] for tier in spec[1]]
    return set().union(*(resources_of(c) for c in children))


@st.composite
def configurations(draw: st.DrawFn) -> dict[str, Any]:
    root = named(draw(ROOTS), [0])
    return {
        "root": root,
        "max_concurrency": draw(MAX_CONCURRENCY),
        "limits": {r: draw(LIMIT) for r in sorted(resources_of(root))},
        "retry": draw(RETRY),
        "rates": draw(RATES),
        "seed": draw(SEED),
    }


def shape(verdict: Verdict) -> tuple[Any, ...]:
    """Everything in a verdict except the timing fields."""
    tiers = [
        (t.name, t.policy, t.judgment, [r.name for r in t.results], t.skipped, t.failure)
        for t in verdict.tiers
    ]
    results = [
        (r.name, r.judgment, r.sampled, r.attempts, r.error_type, r.tier) for r in verdict.results
    ]
    return verdict.judgment, results, tiers


def evaluator(config: dict[str, Any], fast_path: bool) -> Evaluator:
    root = build(config["root"])
    plan_names = Evaluator(root).judge_names
    sampling = None
    if config["rates"] is not None:
        sampling = {name: config["rates"] for name in plan_names[::2]}
    return Evaluator(
        root,
        max_concurrency=config["max_concurrency"],
        limits=config["limits"],
        timeout=TIMEOUT,
        retry=config["retry"],
        sampling=sampling,
        rng=random.Random(config["seed"]),
        fast_path=fast_path,
    )


async def run_all(ev: Evaluator) -> list[tuple[Any, ...]]:
    shapes = []
    for run in range(WARM + 1):
        shapes.append(shape(await ev.verdict(Context(input=str(run)))))
    return shapes


@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(configurations())
def test_fast_and_general_paths_give_identical_results(config: dict[str, Any]) -> None:
    """Every generated workload: identical verdicts both ways, every limiter idle after."""

    async def main() -> None:
        fast, general = evaluator(config, True), evaluator(config, False)
        assert fast.fast_path and not general.fast_path
        fast_shapes = await run_all(fast)
        general_shapes = await run_all(general)
        for run, (a, b) in enumerate(zip(fast_shapes, general_shapes, strict=True)):
            assert a == b, f"run {run} differs"
        resources = sorted(config["limits"])
        assert idle(fast, *resources) and idle(general, *resources)
        stats = fast.statistics()
        assert stats.global_limit.borrowed == 0 and stats.global_limit.queued == 0

    run_virtual(main)


def test_the_switch_reads_the_environment(monkeypatch: Any) -> None:
    """AGENTJUDGE_FAST_PATH=0 turns the fast path off; the argument wins over it."""
    monkeypatch.setenv("AGENTJUDGE_FAST_PATH", "0")
    assert not Evaluator(make_judge("pass", "a", None)).fast_path
    assert Evaluator(make_judge("pass", "a", None), fast_path=True).fast_path
    monkeypatch.delenv("AGENTJUDGE_FAST_PATH")
    assert Evaluator(make_judge("pass", "a", None)).fast_path

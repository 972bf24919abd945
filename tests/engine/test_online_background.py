"""BackgroundEvaluator: bounded backlog, shedding policies, exact counters, drain and cancel."""

from __future__ import annotations

import asyncio
import logging
import selectors
from typing import Any

import anyio
import pytest
from engine_support import settle, wait_until
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentjudge import BackgroundEvaluator, Context, Evaluator, Judgment, OnlineResult
from agentjudge.testing import ConcurrencyProbe, ScriptedJudge

TERMINAL = ("sampled_out", "shed", "completed", "errored", "cancelled")
IN_FLIGHT = ("backlog", "running")


def balanced(stats: dict[str, Any]) -> bool:
    """Every offered context is in exactly one terminal or in-flight counter."""
    return stats["offered"] == sum(stats[k] for k in TERMINAL + IN_FLIGHT)


def gated_judge(name: str = "slow") -> tuple[ScriptedJudge, anyio.Event]:
    gate = anyio.Event()
    return ScriptedJudge(True, gate=gate, name=name), gate


async def test_offer_returns_at_once_and_results_reach_the_sink() -> None:
    """offer() returns True before any judge runs; leaving drains; the sink gets every result."""
    judge, gate = gated_judge()
    got: list[OnlineResult] = []
    background = Evaluator(judge).background(sinks=[got.append])
    assert isinstance(background, BackgroundEvaluator)
    async with background:
        assert background.offer(input="q", output="a", key="k1") is True
        assert background.offer(Context(input="q2"), key="k2") is True
        assert judge.completed == 0
        gate.set()
    stats = background.statistics()
    assert stats["completed"] == 2 and stats["accepted"] == 2 and balanced(stats)
    assert sorted(r.key or "" for r in got) == ["k1", "k2"]
    assert all(r.verdict is not None and r.verdict.judgment.is_pass for r in got)


async def test_drop_newest_sheds_exactly_what_does_not_fit() -> None:
    """With every worker busy and the backlog full, further offers are shed and counted."""
    judge, gate = gated_judge()
    async with Evaluator(judge).background(max_backlog=3, workers=1) as background:
        assert background.offer(input=0)
        await wait_until(lambda: background.statistics()["running"] == 1)
        accepted = [background.offer(input=i) for i in range(1, 11)]
        assert accepted == [True] * 3 + [False] * 7
        stats = background.statistics()
        assert (stats["backlog"], stats["shed"], stats["backlog_high_water"]) == (3, 7, 3)
        assert balanced(stats)
        gate.set()
    stats = background.statistics()
    assert (stats["completed"], stats["shed"], stats["evicted"]) == (4, 7, 0)
    assert [c.input for c in judge.contexts] == [0, 1, 2, 3]


async def test_drop_oldest_evicts_the_oldest_waiting_context() -> None:
    """drop_oldest accepts the newest and sheds (evicts) the oldest waiting ones."""
    judge, gate = gated_judge()
    background = Evaluator(judge).background(max_backlog=2, workers=1, policy="drop_oldest")
    async with background:
        background.offer(input=0)
        await wait_until(lambda: background.statistics()["running"] == 1)
        assert all(background.offer(input=i) for i in range(1, 6))
        gate.set()
    stats = background.statistics()
    assert (stats["shed"], stats["evicted"], stats["completed"]) == (3, 3, 3)
    assert [c.input for c in judge.contexts] == [0, 4, 5]
    assert balanced(stats)


async def test_byte_bound_sheds_large_contexts() -> None:
    """max_backlog_bytes bounds the waiting contexts by the size estimate."""
    judge, gate = gated_judge()
    background = Evaluator(judge).background(
        workers=1, max_backlog_bytes=100, size_of=lambda ctx: len(ctx.output)
    )
    async with background:
        background.offer(output="x")
        await wait_until(lambda: background.statistics()["running"] == 1)
        assert background.offer(output="a" * 60)
        assert not background.offer(output="b" * 60)  # 120 > 100
        assert background.offer(output="c" * 40)
        assert not background.offer(output="d" * 101)  # alone too big
        assert background.statistics()["backlog_bytes"] == 100
        gate.set()
    assert background.statistics()["shed"] == 2


async def test_adaptive_lowers_the_rate_above_high_water_and_restores_it() -> None:
    """adaptive halves the effective rate while the backlog is high, doubles it back when low."""
    judge, gate = gated_judge()
    background = Evaluator(judge).background(
        max_backlog=100, policy="adaptive", workers=1, high_water=20, low_water=10
    )
    async with background:
        background.offer(input="first", key="first")
        await wait_until(lambda: background.statistics()["running"] == 1)
        for i in range(200):
            background.offer(input=i, key=f"user-{i}")
        lowered = background.statistics()
        assert lowered["effective_sample_rate"] < 1.0
        assert lowered["sampled_out"] > 0
        assert lowered["backlog"] < 100  # sampling, not the hard bound, held it
        gate.set()
        await wait_until(lambda: background.statistics()["backlog"] == 0)
        for i in range(150):  # light traffic: the backlog stays low, the rate comes back
            background.offer(input=i, key=f"later-{i}")
            await wait_until(lambda: background.statistics()["backlog"] == 0)
        assert background.effective_sample_rate == 1.0
    assert balanced(background.statistics())


async def test_workers_are_a_fixed_pool() -> None:
    """At most ``workers`` evaluations run at once, however many are offered."""
    probe = ConcurrencyProbe()
    gate = anyio.Event()
    judge = ScriptedJudge(True, gate=gate, probe=probe)
    async with Evaluator(judge).background(workers=3) as background:
        for i in range(50):
            background.offer(input=i)
        await wait_until(lambda: probe.in_flight == 3)
        await settle()
        assert probe.in_flight == 3 and background.statistics()["backlog"] == 47
        gate.set()
    assert probe.max_in_flight == 3
    assert background.statistics()["completed"] == 50


async def test_drain_timeout_cancels_the_rest_and_reports(caplog: pytest.LogCaptureFixture) -> None:
    """Leaving waits at most drain_timeout, then cancels running and waiting evaluations."""
    judge = ScriptedJudge(True, hang=True)
    background = Evaluator(judge).background(workers=2, drain_timeout=0.05)
    with caplog.at_level(logging.INFO, logger="agentjudge"):
        async with background:
            for i in range(5):
                background.offer(input=i)
            await wait_until(lambda: judge.calls == 2)
    stats = background.statistics()
    assert (stats["cancelled"], stats["running"], stats["backlog"]) == (5, 0, 0)
    assert judge.cancelled == 2 and balanced(stats)
    assert any("cancelled 5" in r.getMessage() for r in caplog.records)


async def test_a_raising_block_cancels_without_draining() -> None:
    """If the block raises, nothing is drained: all is cancelled and the error propagates."""
    judge = ScriptedJudge(True, hang=True)
    background = Evaluator(judge).background(workers=1, drain_timeout=60)
    with pytest.raises(KeyError):
        async with background:
            background.offer(input=1)
            background.offer(input=2)
            await wait_until(lambda: judge.calls == 1)
            raise KeyError("boom")
    assert background.statistics()["cancelled"] == 2


async def test_offers_outside_the_running_window_are_shed() -> None:
    """Before entering and after leaving, offer() returns False and counts the context shed."""
    background = Evaluator(ScriptedJudge(True)).background()
    assert background.offer(input=1) is False
    async with background:
        pass
    assert background.offer(input=2) is False
    stats = background.statistics()
    assert (stats["offered"], stats["shed"]) == (2, 2)


async def test_error_verdicts_count_as_errored() -> None:
    """An evaluation whose verdict is ERROR counts as errored, and still reaches sinks."""
    got: list[OnlineResult] = []
    judge = ScriptedJudge(Judgment.errored("broken"))
    async with Evaluator(judge).background(sinks=[got.append]) as background:
        background.offer(input=1)
    assert background.statistics()["errored"] == 1 and len(got) == 1


def test_invalid_options_name_the_option() -> None:
    """Bad options are ValueErrors naming them, before anything starts."""
    evaluator = Evaluator(ScriptedJudge(True))
    with pytest.raises(ValueError, match="policy"):
        evaluator.background(policy="drop_random")
    with pytest.raises(ValueError, match="max_backlog"):
        evaluator.background(max_backlog=0)
    with pytest.raises(ValueError, match="high_water"):
        evaluator.background(max_backlog=10, high_water=20)
    with pytest.raises(ValueError, match="drain_timeout"):
        evaluator.background(drain_timeout=-1)
    with pytest.raises(ValueError, match="sample_rate"):
        evaluator.background(sample_rate=2)
    with pytest.raises(TypeError):
        evaluator.background(no_such_option=1)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("offer"), st.integers(0, 30)),
        st.tuples(st.just("release"), st.integers(0, 3)),
        st.tuples(st.just("settle"), st.just(0)),
    ),
    max_size=40,
)


@hsettings(max_examples=40, deadline=None)
@given(
    ops=OPS,
    policy=st.sampled_from(["drop_newest", "drop_oldest", "adaptive"]),
    max_backlog=st.integers(1, 6),
    rate=st.sampled_from([1.0, 0.5]),
    drain=st.booleans(),
)
def test_every_offer_ends_in_exactly_one_counter(
    ops: list[tuple[str, int]], policy: str, max_backlog: int, rate: float, drain: bool
) -> None:
    """Property: at every step and after stopping, offered = the sum of the outcome counters."""

    async def scenario() -> None:
        gates = [anyio.Event() for _ in range(4)]
        judges = [
            ScriptedJudge(True, gate=gates[0], name="a"),
            ScriptedJudge(False, gate=gates[1], name="b"),
            ScriptedJudge(Judgment.errored("x"), gate=gates[2], name="c"),
        ]
        background = Evaluator(judges).background(
            max_backlog=max_backlog,
            policy=policy,
            workers=2,
            sample_rate=rate,
            # draining: all gates open, so the drain ends when the backlog is empty (a short
            # timeout made a loaded machine's slow drain look like a lost offer); else the
            # gated judges never finish and the timeout cancels them
            drain_timeout=30 if drain else 0.01,
            high_water=max_backlog,
            low_water=max_backlog - 1,
        )
        async with background:
            for op, arg in ops:
                if op == "offer":
                    background.offer(input=arg, key=f"k{arg}")
                elif op == "release":
                    gates[arg].set()
                else:
                    await settle(5)
                assert balanced(background.statistics())
            if drain:
                for gate in gates:
                    gate.set()
        stats = background.statistics()
        assert balanced(stats)
        assert stats["backlog"] == stats["running"] == 0
        assert stats["offered"] == len([op for op in ops if op[0] == "offer"])
        if drain:
            assert stats["cancelled"] == 0

    anyio.run(scenario)


async def test_an_offer_that_raises_is_not_counted() -> None:
    """Invalid context fields raise (a programmer error) and leave the counters balanced."""
    async with Evaluator(ScriptedJudge(True)).background() as background:
        with pytest.raises(ValueError):
            background.offer(messages="not messages")
        with pytest.raises(ValueError, match="deadline"):
            background.offer(input=1, deadline=-1)
        stats = background.statistics()
        assert stats["offered"] == 0 and balanced(stats)


class _CountingSelector(selectors.DefaultSelector):
    """A selector counting its ``select`` calls: one per pass through the asyncio loop."""

    passes = 0

    def select(self, timeout: float | None = None) -> Any:
        self.passes += 1
        return super().select(timeout)


class _PassRecordingJudge(ScriptedJudge):
    """An instant judge that records the loop pass in which each evaluation began."""

    def __init__(self, selector: _CountingSelector) -> None:
        super().__init__(True)
        self.selector = selector
        self.began: list[int] = []

    async def __call__(self, ctx: Context, /) -> Judgment:
        self.began.append(self.selector.passes)
        return await super().__call__(ctx)


@pytest.mark.parametrize("workers", [8, 1])
def test_at_most_one_evaluation_begins_per_pass_through_the_loop(workers: int) -> None:
    """A burst of offers to idle workers never begins several evaluations in one loop pass.

    A request handler waits for every callback ready before it in a pass, so the background
    work one pass can hold is bounded: one evaluation's start (before it, a burst of N offers
    woke N workers that all began in the same pass, ~1 ms of CPU each for an LLM judge).
    Counted with a selector that counts the loop's passes (no clocks).
    """
    selector = _CountingSelector()
    judge = _PassRecordingJudge(selector)

    async def scenario() -> None:
        async with Evaluator(judge).background(workers=workers, max_backlog=100) as background:
            await settle()  # every worker parked
            for burst in range(3):
                for i in range(20):
                    assert background.offer(input=f"{burst}-{i}")
                await wait_until(lambda: background.statistics()["backlog"] == 0)
        assert background.statistics()["completed"] == 60

    anyio.run(
        scenario,
        backend="asyncio",
        backend_options={"loop_factory": lambda: asyncio.SelectorEventLoop(selector)},
    )
    assert len(judge.began) == 60
    assert len(set(judge.began)) == 60, sorted(judge.began)

"""Queued seconds are each attempt's own, with the queue clock reused within a task.

The engine opens each attempt with `start_attempt` and closes it with `end_attempt`
(`agentjudge.judging._queueing`); on asyncio a task reuses its clock for its next attempt instead
of setting the context variable again. The property: for any cases (a judge reporting waits with
`add_queued` in its own task and in a child task, retried after a first failure, or evaluating
a nested judge that reports waits of its own) run by `Evaluator.run` workers one after another,
every result's ``queued_s`` is exactly what its own attempts reported, as with a fresh clock per
attempt (the waits are whole hours, so the engine's own microseconds of slot wait cannot hide a
mistake).
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentjudge import Context, Evaluator, Judgment, RetryableError, RetryPolicy
from agentjudge.judging import add_queued, end_attempt, queue_clock, start_attempt

HOUR = 3600.0

cases = st.lists(
    st.fixed_dictionaries(
        {
            "own": st.lists(st.integers(0, 3), max_size=3),
            "child": st.integers(0, 2),
            "nested": st.none() | st.lists(st.integers(1, 3), min_size=1, max_size=2),
            "retry": st.booleans(),
        }
    ),
    min_size=1,
    max_size=8,
)


class Reporting:
    """A judge playing each case's reported waits (keyed by the context's input)."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = script
        self.failed: set[int] = set()
        self.nested: list[float] = []

    async def __call__(self, ctx: Context) -> Judgment:
        case = self.script[int(ctx.input)]
        for hours in case["own"]:
            await anyio.lowlevel.checkpoint()
            add_queued(hours * HOUR)
        if case["child"]:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._child, case["child"] * HOUR)
        if case["nested"] is not None:
            inner = Evaluator(_adds(case["nested"]), retry=None)
            [result] = await inner.evaluate(ctx)
            self.nested.append(result.queued_s)
        if case["retry"] and int(ctx.input) not in self.failed:
            self.failed.add(int(ctx.input))
            raise RetryableError("once more", retry_after=0.0)
        return Judgment.passed("ok")

    async def _child(self, seconds: float) -> None:
        await anyio.lowlevel.checkpoint()
        add_queued(seconds)


def _adds(hours: list[int]) -> Any:
    async def nested(ctx: Context) -> Judgment:
        for h in hours:
            await anyio.lowlevel.checkpoint()
            add_queued(h * HOUR * 10)
        return Judgment.passed("inner")

    return nested


def _expected(case: dict[str, Any]) -> float:
    once = (sum(case["own"]) + case["child"]) * HOUR
    return float(once * (2 if case["retry"] else 1))


@hsettings(max_examples=40, deadline=None)
@given(cases, st.integers(1, 3))
def test_queued_seconds_are_each_attempts_own(script: list[dict[str, Any]], workers: int) -> None:
    judge = Reporting(script)
    evaluator = Evaluator(judge, retry=RetryPolicy(attempts=2, initial_delay=0, jitter=False))
    contexts = [Context(input=str(i), output="a") for i in range(len(script))]

    async def main() -> dict[int, float]:
        got = {}
        async for case in evaluator.run(contexts, concurrency=workers):
            [result] = case.results
            assert result.judgment is not None and result.judgment.is_pass, result
            got[int(case.context.input)] = result.queued_s
        return got

    got = anyio.run(main)
    for i, case in enumerate(script):
        assert abs(got[i] - _expected(case)) < 1.0, (i, case, got[i])
    # each nested evaluation (twice for a retried case) has only its own judge's waits
    want = [
        sum(case["nested"]) * 10
        for case in script
        if case["nested"]
        for _ in range(2 if case["retry"] else 1)
    ]
    assert sorted(round(q / HOUR) for q in judge.nested) == sorted(want)


def test_a_task_reuses_its_clock_and_a_nested_attempt_restores_the_outer() -> None:
    async def main() -> None:
        first, token = start_attempt()
        assert token is not None and queue_clock.get() is first
        add_queued(2.0)
        assert end_attempt(first, token) == 2.0
        again, token = start_attempt()
        assert again is first and token is None and again.seconds == 0.0  # reused, reset
        inner, inner_token = start_attempt()  # nested in the same task: a clock of its own
        assert inner is not first and inner_token is not None
        add_queued(5.0)
        assert end_attempt(inner, inner_token) == 5.0
        assert queue_clock.get() is first  # the outer attempt's clock is back
        add_queued(1.0)
        assert end_attempt(again, token) == 1.0

        async def child() -> None:  # inherits the parent's clock: sets its own
            mine, child_token = start_attempt()
            assert mine is not first and child_token is not None
            end_attempt(mine, child_token)

        async with anyio.create_task_group() as tg:
            tg.start_soon(child)

    anyio.run(main)

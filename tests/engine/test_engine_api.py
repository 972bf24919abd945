"""Evaluator surface: submit/handles, evaluate, stream, run, evaluate_sync, noop, on_result."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing

import anyio
import pytest
from engine_support import idle, settle, wait_until

from agentjudge import (
    CaseResult,
    Context,
    Evaluator,
    JudgeResult,
    Judgment,
    Majority,
    Status,
    Verdict,
)
from agentjudge.testing import ConcurrencyProbe, ScriptedJudge

CTX = Context(input="q", output="a")


def gated(*names: str) -> tuple[list[ScriptedJudge], dict[str, anyio.Event]]:
    """One PASS judge per name, each waiting on its own gate."""
    gates = {n: anyio.Event() for n in names}
    return [ScriptedJudge(True, gate=gates[n], name=n) for n in names], gates


# --------------------------------------------------------------------------- handles


async def test_submit_returns_a_handle_at_once() -> None:
    """submit() returns before any judge finishes; awaiting the handle gives the results."""
    judges, gates = gated("a", "b")
    async with Evaluator(judges) as evaluator:
        handle = evaluator.submit(CTX)
        assert not handle.done()
        await judges[1].started.wait()
        assert not handle.done()
        for gate in gates.values():
            gate.set()
        results = await handle
        assert handle.done()
    assert [r.name for r in results] == ["a", "b"]


async def test_await_handle_gives_configured_order() -> None:
    """`await handle` lists results in configured order whatever the completion order."""
    judges, gates = gated("a", "b", "c")
    async with Evaluator(judges) as evaluator:
        handle = evaluator.submit(CTX)
        for judge in reversed(judges):  # complete c, then b, then a
            gates[judge.name].set()
            await wait_until(lambda judge=judge: judge.completed == 1)
        results = await handle
    assert [r.name for r in results] == ["a", "b", "c"]


async def test_handle_async_iteration_follows_completion_order() -> None:
    """`async for` over a handle yields results in the order the judges completed."""
    judges, gates = gated("a", "b", "c")
    order = {"c": "a", "a": "b"}  # after c completes release a, after a release b
    async with Evaluator(judges) as evaluator:
        handle = evaluator.submit(CTX)
        gates["c"].set()
        seen: list[str] = []
        async for result in handle:
            seen.append(result.name)
            if result.name in order:
                gates[order[result.name]].set()
    assert seen == ["c", "a", "b"]


async def test_handle_iteration_after_completion_replays_everything() -> None:
    """Iterating a finished handle yields every result (completion order), then stops."""
    async with Evaluator([ScriptedJudge(True, name="a"), ScriptedJudge(False, name="b")]) as ev:
        handle = ev.submit(CTX)
        first = await handle
        again = await handle
        replay = [r async for r in handle]
    assert first == again
    assert sorted(r.name for r in replay) == ["a", "b"]


async def test_handle_verdict() -> None:
    """handle.verdict() gives the aggregate (Majority for a list), results and by_name."""
    judges = [ScriptedJudge(True, name="a"), ScriptedJudge(True, name="b")]
    judges.append(ScriptedJudge(False, name="c"))
    async with Evaluator(judges) as evaluator:
        verdict = await evaluator.submit(CTX).verdict()
    assert isinstance(verdict, Verdict)
    assert verdict.judgment.status is Status.PASS
    assert verdict.judgment.metadata["aggregation"]["strategy"] == Majority().name
    assert [r.name for r in verdict.results] == ["a", "b", "c"]
    assert verdict.by_name["c"].status is Status.FAIL
    assert verdict.tiers == ()


async def test_single_judge_verdict_is_its_own_judgment() -> None:
    """An evaluator of one judge has that judge's judgment as its verdict."""
    own = Judgment.failed("too short", score=0.1, label="short")
    verdict = await Evaluator(ScriptedJudge(own, name="len")).verdict(CTX)
    assert verdict.judgment == own
    assert [r.name for r in verdict.results] == ["len"]


async def test_mapping_of_judges_uses_keys_as_names() -> None:
    """Evaluator({"x": j1, "y": j2}) names the results after the keys."""
    results = await Evaluator({"x": ScriptedJudge(True), "y": ScriptedJudge(False)}).evaluate()
    assert [(r.name, r.status) for r in results] == [("x", Status.PASS), ("y", Status.FAIL)]


async def test_repeated_judge_names_get_suffixes() -> None:
    """Repeated names among an evaluation's judges become name-2, name-3 in configured order."""
    judges = [ScriptedJudge(True, name="x") for _ in range(3)]
    results = await Evaluator(judges).evaluate(CTX)
    assert [r.name for r in results] == ["x", "x-2", "x-3"]


async def test_submit_outside_async_with_is_a_runtime_error() -> None:
    """submit() needs `async with evaluator`; the error says so."""
    evaluator = Evaluator(ScriptedJudge())
    with pytest.raises(RuntimeError, match="async with"):
        evaluator.submit(CTX)


async def test_entering_twice_is_a_runtime_error() -> None:
    """An evaluator's `async with` cannot be nested."""
    evaluator = Evaluator(ScriptedJudge())
    async with evaluator:
        with pytest.raises(RuntimeError, match="already running"):
            await evaluator.__aenter__()


async def test_leaving_async_with_waits_for_submitted_evaluations() -> None:
    """Leaving `async with` normally lets unawaited submissions finish (nothing cancelled)."""
    slow = ScriptedJudge(True, latency=0.01, name="slow")
    async with Evaluator(slow) as evaluator:
        handles = [evaluator.submit(input=i) for i in range(3)]
    assert all(h.done() for h in handles)
    assert [len(await h) for h in handles] == [1, 1, 1]
    assert slow.completed == 3 and slow.cancelled == 0


async def test_evaluate_without_async_with() -> None:
    """evaluate() needs no `async with` (it uses a temporary scope)."""
    results = await Evaluator([ScriptedJudge(True, name="a")]).evaluate(input="q")
    assert [(r.name, r.status) for r in results] == [("a", Status.PASS)]


async def test_evaluate_inside_async_with() -> None:
    """evaluate() also works inside `async with`, alongside submissions."""
    async with Evaluator(ScriptedJudge(True, name="a")) as evaluator:
        handle = evaluator.submit(CTX)
        direct = await evaluator.evaluate(CTX)
        assert [r.name for r in direct] == [r.name for r in await handle]


# --------------------------------------------------------------------------- stream


async def _stream_in_forced_order(evaluator: Evaluator, gates: dict[str, anyio.Event]) -> list[str]:
    order = {"b": "c", "c": "a"}
    gates["b"].set()
    seen: list[str] = []
    async for result in evaluator.stream(CTX):
        seen.append(result.name)
        if result.name in order:
            gates[order[result.name]].set()
    return seen


async def test_stream_yields_in_completion_order_without_async_with() -> None:
    """stream() without `async with` yields results as they complete (b, c, a)."""
    judges, gates = gated("a", "b", "c")
    assert await _stream_in_forced_order(Evaluator(judges), gates) == ["b", "c", "a"]


async def test_stream_yields_in_completion_order_inside_async_with() -> None:
    """stream() inside `async with` yields results as they complete too."""
    judges, gates = gated("a", "b", "c")
    async with Evaluator(judges) as evaluator:
        assert await _stream_in_forced_order(evaluator, gates) == ["b", "c", "a"]


async def test_stream_of_noop_is_empty() -> None:
    """stream() of an evaluator without judges yields nothing."""
    assert [r async for r in Evaluator.noop().stream(CTX)] == []


# --------------------------------------------------------------------------- run


async def test_run_yields_case_results_in_completion_order() -> None:
    """run() yields CaseResults as cases complete, each with its context and verdict."""
    gates = {i: anyio.Event() for i in range(3)}

    async def by_input(ctx: Context) -> Judgment:
        await gates[ctx.input].wait()
        return Judgment.passed(f"case {ctx.input}")

    contexts = [Context(input=i) for i in range(3)]
    gates[2].set()
    release = {2: 0, 0: 1}
    seen: list[int] = []
    async for case in Evaluator(by_input).run(contexts, concurrency=3):
        assert isinstance(case, CaseResult)
        assert case.results == case.verdict.results
        assert case.verdict.judgment.reasoning == f"case {case.context.input}"
        seen.append(case.context.input)
        if case.context.input in release:
            gates[release[case.context.input]].set()
    assert seen == [2, 0, 1]


async def test_run_pulls_input_lazily_and_bounds_cases_in_flight() -> None:
    """run() never judges more than `concurrency` cases at once, nor reads more than
    `2 * concurrency` ahead of what it yielded (up to `concurrency` finished cases wait)."""
    concurrency = 4
    pulled = 0
    probe = ConcurrencyProbe()

    def contexts() -> Iterator[Context]:
        nonlocal pulled
        for i in range(40):
            pulled += 1
            yield Context(input=i)

    judge = ScriptedJudge(True, latency=0.001, probe=probe, name="j")
    yielded = 0
    worst = 0
    async for _ in Evaluator(judge).run(contexts(), concurrency=concurrency):
        yielded += 1
        worst = max(worst, pulled - yielded)
        await settle(5)  # give the workers every chance to race ahead
        worst = max(worst, pulled - yielded)
    assert yielded == 40
    assert worst <= 2 * concurrency
    assert probe.max_in_flight <= concurrency


async def test_run_works_on_an_endless_iterator() -> None:
    """run() never reads its input up front: an endless generator works."""

    def endless() -> Iterator[Context]:
        i = 0
        while True:
            yield Context(input=i)
            i += 1

    got = 0
    async with aclosing(Evaluator(ScriptedJudge(True)).run(endless(), concurrency=2)) as cases:
        async for _ in cases:
            got += 1
            if got == 10:
                break
    assert got == 10


async def test_run_accepts_an_async_iterable() -> None:
    """run() takes an async iterable of contexts."""

    async def contexts() -> AsyncIterator[Context]:
        for i in range(5):
            await anyio.sleep(0)
            yield Context(input=i)

    j = ScriptedJudge(True, name="j")
    cases = [c async for c in Evaluator(j).run(contexts(), concurrency=2)]
    assert sorted(c.context.input for c in cases) == list(range(5))
    assert all(c.verdict.judgment.status is Status.PASS for c in cases)


async def test_run_inside_async_with() -> None:
    """run() also works inside `async with evaluator`."""
    async with Evaluator(ScriptedJudge(False, name="j")) as evaluator:
        cases = [c async for c in evaluator.run([Context(input=i) for i in range(3)])]
    assert [c.results[0].status for c in cases] == [Status.FAIL] * 3


async def test_run_rejects_bad_concurrency() -> None:
    """run(concurrency=0) is a ValueError naming the value."""
    with pytest.raises(ValueError, match=r"concurrency.*0"):
        async for _ in Evaluator(ScriptedJudge()).run([CTX], concurrency=0):
            pass


async def test_run_of_empty_input_yields_nothing() -> None:
    """run([]) yields nothing and returns."""
    assert [c async for c in Evaluator(ScriptedJudge()).run([])] == []


# --------------------------------------------------------------------------- sync / noop


def test_evaluate_sync_outside_a_loop() -> None:
    """evaluate_sync() works from plain synchronous code."""
    evaluator = Evaluator([ScriptedJudge(True, latency=0.001, name="a")], max_concurrency=1)
    results = evaluator.evaluate_sync(input="q")
    assert [(r.name, r.status) for r in results] == [("a", Status.PASS)]
    assert len(evaluator.evaluate_sync(CTX)) == 1  # a second event loop works too


async def test_evaluate_sync_inside_a_running_loop_is_refused() -> None:
    """evaluate_sync() inside a running loop raises RuntimeError saying to await evaluate()."""
    judge = ScriptedJudge(True)
    with pytest.raises(RuntimeError, match=r"await evaluator\.evaluate\("):
        Evaluator(judge).evaluate_sync(CTX)
    assert judge.calls == 0


async def test_noop_evaluates_to_nothing() -> None:
    """Evaluator.noop() evaluates to [] at once, with or without `async with`."""
    assert await Evaluator.noop().evaluate(CTX) == []
    async with Evaluator.noop() as evaluator:
        assert await evaluator.submit(CTX) == []


def test_noop_evaluate_sync() -> None:
    """Evaluator.noop().evaluate_sync() is [] too."""
    assert Evaluator.noop().evaluate_sync() == []


# --------------------------------------------------------------------------- on_result


async def test_on_result_called_once_per_result_in_completion_order() -> None:
    """on_result sees every result exactly once, in completion order."""
    judges, gates = gated("a", "b", "c")
    seen: list[JudgeResult] = []
    evaluator = Evaluator(judges, on_result=seen.append)
    async with anyio.create_task_group() as tg:
        results: list[JudgeResult] = []

        async def evaluate() -> None:
            results.extend(await evaluator.evaluate(CTX))

        tg.start_soon(evaluate)
        for i, name in enumerate(["c", "a", "b"]):
            gates[name].set()
            await wait_until(lambda i=i: len(seen) == i + 1)
    assert [r.name for r in seen] == ["c", "a", "b"]
    assert [r.name for r in results] == ["a", "b", "c"]
    assert {r.name: r for r in seen} == {r.name: r for r in results}


async def test_async_on_result_finishes_before_evaluate_returns() -> None:
    """An async on_result is awaited: evaluate() returns after every callback finished."""
    finished: list[str] = []

    async def slow_sink(result: JudgeResult) -> None:
        await settle(5)
        finished.append(result.name)

    judges = [ScriptedJudge(True, name="a"), ScriptedJudge(True, latency=0.001, name="b")]
    results = await Evaluator(judges, on_result=slow_sink).evaluate(CTX)
    assert sorted(finished) == ["a", "b"]
    assert len(results) == 2


async def test_raising_on_result_does_not_break_the_evaluation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A callback that raises is logged; the evaluation and later callbacks go on."""
    calls: list[str] = []

    def broken(result: JudgeResult) -> None:
        calls.append(result.name)
        raise RuntimeError("sink down")

    judges = [ScriptedJudge(True, name="a"), ScriptedJudge(False, name="b")]
    with caplog.at_level(logging.ERROR, logger="agentjudge"):
        results = await Evaluator(judges, on_result=broken).evaluate(CTX)
    assert [r.status for r in results] == [Status.PASS, Status.FAIL]
    assert sorted(calls) == ["a", "b"]
    assert "on_result" in caplog.text


async def test_on_result_fires_for_submissions_and_streams() -> None:
    """on_result fires for submitted and streamed evaluations as well."""
    seen: list[str] = []
    evaluator = Evaluator(ScriptedJudge(True, name="a"), on_result=lambda r: seen.append(r.name))
    async with evaluator:
        await evaluator.submit(CTX)
    async for _ in evaluator.stream(CTX):
        pass
    assert seen == ["a", "a"]


def test_on_result_must_be_callable() -> None:
    """A non-callable on_result is a ValueError."""
    with pytest.raises(ValueError, match="on_result"):
        Evaluator(ScriptedJudge(), on_result="print")  # type: ignore[arg-type]


async def test_evaluator_leaves_limiters_idle_after_normal_runs() -> None:
    """After evaluations finish normally every limiter is back to zero."""
    judges = [ScriptedJudge(True, latency=0.001, resource="r", name=f"j{i}") for i in range(5)]
    evaluator = Evaluator(judges, max_concurrency=2, limits={"r": 1})
    async with evaluator:
        for h in [evaluator.submit(input=i) for i in range(4)]:
            await h
    assert idle(evaluator, "r")


async def test_run_hands_over_finished_cases_without_a_loop_trip_each() -> None:
    """Cases already finished are handed to the reader at once, not one per event-loop pass.

    Taking one finished case per pass made 100 concurrent LLM-judge cases wait on each other:
    the evaluator ran ~20 calls in flight instead of 100 (issue 19.11).
    """
    gate = anyio.Event()

    async def held(ctx: Context) -> Judgment:
        await gate.wait()
        return Judgment.passed("done")

    async def open_gate() -> None:
        await anyio.wait_all_tasks_blocked()
        gate.set()

    passes: list[int] = []
    loop = asyncio.get_running_loop()
    async with anyio.create_task_group() as tg:
        tg.start_soon(open_gate)
        cases = Evaluator(held).run([Context(input=i) for i in range(20)], concurrency=20)
        async with cases:
            await anext(cases)
            await anyio.wait_all_tasks_blocked()  # the other 19 wait to hand their case over
            loop.call_soon(passes.append, 1)  # runs on the next pass through the loop
            before_a_pass = 0
            async for _ in cases:
                before_a_pass += not passes
    assert before_a_pass == 19

"""An `Evaluator.run` worker's root-leaf attempts share one timeout scope (`Lane`).

Creating, entering and exiting an anyio cancel scope per attempt was about a third of the
engine's own CPU per case in `Evaluator.run` (issue 19.11). A worker now keeps one scope
entered across its cases; each attempt gives it its deadline and takes it away when it ends,
and a scope that fired is exited by that attempt, where its own scope would have been, and
replaced for the next one. The property: for any script of judges (answering at once or
after suspending, raising, hanging past the timeout, swallowing the cancellation, raising a
stray ``CancelledError``, retried), `run()` records exactly what `evaluate()` of each context
in turn records (which never uses the lane), including the deadline the judge sees in its
first step and while it waits, and the deadline an ``on_result`` callback sees between
attempts. On the virtual clock, so the timeouts take no real time.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from virtual_clock import run_virtual

from agentjudge import Context, Evaluator, JudgeResult, Judgment, RetryPolicy
from agentjudge._compat import cancel_scope
from agentjudge.engine import _leaf

TIMEOUT = 5.0
BEHAVIOURS = ("inline", "suspend", "raise", "retry", "hang", "swallow", "stubborn", "stray")


def _left() -> str:
    """Seconds to the effective deadline ("inf": none), to the microsecond."""
    return str(round(anyio.current_effective_deadline() - anyio.current_time(), 6))


class Scripted:
    """A judge that does what its context's ``input`` says, noting the deadlines it saw."""

    def __init__(self) -> None:
        self.tries: dict[str, int] = {}

    async def __call__(self, ctx: Context) -> Judgment:
        behaviour, _, key = str(ctx.input).partition(":")
        self.tries[key] = self.tries.get(key, 0) + 1
        first = _left()  # in the first step: before or after the deadline is set
        if behaviour == "inline":
            return Judgment.passed("inline", metadata={"first": first})
        await asyncio.sleep(0)
        waiting = _left()
        if behaviour == "raise":
            raise ValueError(f"no {key}")
        if behaviour == "retry" and self.tries[key] == 1:
            raise TimeoutError(f"once {key}")
        if behaviour == "hang":
            await asyncio.Event().wait()
        if behaviour in ("swallow", "stubborn"):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
            if behaviour == "stubborn":
                await asyncio.Event().wait()  # the scope cancels it again here
        if behaviour == "stray":
            raise asyncio.CancelledError
        return Judgment.passed(behaviour, metadata={"first": first, "waiting": waiting})


def _row(result: JudgeResult) -> tuple[Any, ...]:
    judgment = result.judgment
    assert judgment is not None
    return (
        judgment.status,
        judgment.reasoning,
        dict(judgment.metadata),
        result.error_type,
        result.attempts,
    )


async def _both(script: list[str], concurrency: int) -> tuple[list[Any], list[Any]]:
    contexts = [Context(input=f"{b}:{i}", output="a") for i, b in enumerate(script)]
    seen: list[list[str]] = [[], []]

    def evaluator(notes: list[str]) -> Evaluator:
        return Evaluator(
            Scripted(),
            timeout=TIMEOUT,
            retry=RetryPolicy(attempts=2, initial_delay=0.01, jitter=False),
            on_result=lambda result: notes.append(_left()),
        )

    alone = evaluator(seen[0])
    each = [_row((await alone.evaluate(ctx))[0]) for ctx in contexts]
    shared = evaluator(seen[1])
    rows = {}
    async for case in shared.run(contexts, concurrency=concurrency):
        rows[case.context.input] = _row(case.results[0])
    return [each, seen[0]], [[rows[ctx.input] for ctx in contexts], seen[1]]


@hsettings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(BEHAVIOURS), max_size=12))
def test_run_records_what_evaluate_records_for_any_script(script: list[str]) -> None:
    each, shared = run_virtual(lambda: _both(script, 1))
    assert shared == each
    assert all(left == "inf" for left in shared[1])  # no deadline between attempts


def test_the_deadline_is_the_attempts_own_and_gone_after_it() -> None:
    script = ["suspend", "hang", "inline", "suspend", "swallow", "inline", "suspend"]
    each, shared = run_virtual(lambda: _both(script, 1))
    assert shared == each
    by_behaviour = {row[1]: row[2] for row in shared[0] if row[3] is None}
    assert by_behaviour["suspend"]["waiting"] == str(TIMEOUT)
    assert [row[3] for row in shared[0]].count("TimeoutError") == 2


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_worker_makes_one_scope_for_its_cases_and_a_new_one_after_a_timeout(
    concurrency: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []

    def counted() -> Any:
        made.append(cancel_scope())
        return made[-1]

    monkeypatch.setattr(_leaf, "cancel_scope", counted)
    script = ["suspend"] * 10 + ["hang"] + ["suspend"] * 10

    async def main() -> list[Any]:
        evaluator = Evaluator(Scripted(), timeout=TIMEOUT, retry=None)
        contexts = [Context(input=f"{b}:{i}", output="a") for i, b in enumerate(script)]
        return [case async for case in evaluator.run(contexts, concurrency=concurrency)]

    cases = run_virtual(main)
    assert [c.results[0].error_type for c in cases].count("TimeoutError") == 1
    # one scope per worker, one more after the timeout (before: one per case, 21)
    assert len(made) <= concurrency + 1
    assert all(not scope._active for scope in made)  # every one exited when its worker ended


def test_a_cancelled_run_exits_its_workers_scopes() -> None:
    """Closing the feed while judges wait cancels them; every worker's scope is exited."""
    made: list[Any] = []

    async def main() -> None:
        started = asyncio.Event()

        async def waits(ctx: Context) -> Judgment:
            started.set()
            await asyncio.Event().wait()
            return Judgment.passed("never")

        evaluator = Evaluator(waits, timeout=TIMEOUT)
        contexts = [Context(input=str(i), output="a") for i in range(10)]
        feed = evaluator.run(contexts, concurrency=3)
        async with anyio.create_task_group() as tg:

            async def read() -> None:
                async with feed:
                    async for _ in feed:
                        pass

            tg.start_soon(read)
            await started.wait()
            await feed.aclose()
            tg.cancel_scope.cancel()

    def counted() -> Any:
        made.append(cancel_scope())
        return made[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_leaf, "cancel_scope", counted)
        run_virtual(main)
    assert made and all(not scope._active for scope in made)

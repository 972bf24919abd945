"""Evaluator scope behaviour: exceptions from the block, streams inside a running evaluator."""

from __future__ import annotations

import asyncio
import gc

import anyio
import pytest
from engine_support import new_objects_only

from agentjudge import Evaluator, JudgeResult, Judgment, judge
from agentjudge.testing import ScriptedJudge


async def test_block_exception_propagates_unwrapped() -> None:
    """An exception raised inside `async with evaluator` comes out as itself, not a group."""
    hang = ScriptedJudge(hang=True, name="hang")
    with pytest.raises(ValueError, match="boom"):
        async with Evaluator(hang) as ev:
            ev.submit(input="x")
            await hang.started.wait()
            raise ValueError("boom")
    assert hang.cancelled == 1


async def test_breaking_out_of_stream_inside_scope_is_safe() -> None:
    """Inside a running evaluator, abandoning stream() without aclosing cancels the rest."""
    fast = ScriptedJudge(True, name="fast")
    hang = ScriptedJudge(hang=True, name="hang")
    with new_objects_only():  # the stream is made inside: the collection finds it, cheaply
        async with Evaluator([fast, hang]) as ev:
            before = len(asyncio.all_tasks())
            async for result in ev.stream(input="x"):
                assert result.name == "fast"
                break
            gc.collect()  # finalise the abandoned generator (closed from another task)
            with anyio.fail_after(2):
                while hang.cancelled == 0:
                    await anyio.sleep(0.005)
            await anyio.sleep(0)
            assert len(asyncio.all_tasks()) <= before
            assert ev.limiter.borrowed_tokens == 0


def test_limits_without_judges_are_unknown() -> None:
    """limits naming resources that no judge uses is an error even with no judges."""
    with pytest.raises(ValueError, match="gpu"):
        Evaluator(None, limits={"gpu": 1})


def test_judge_result_name_must_not_be_blank() -> None:
    """A JudgeResult needs a non-blank name."""
    with pytest.raises(ValueError, match="name"):
        JudgeResult(name=" ", judgment=Judgment.passed())


def test_bare_decorator_takes_docstring_description() -> None:
    """Bare @judge uses the first docstring line as description, like @judge()."""

    @judge
    async def polite(ctx: object) -> bool:
        """Says please.

        More text.
        """
        return True

    assert polite.description == "Says please."

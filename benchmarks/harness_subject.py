"""The system under test and the judges of `bench_harness.py` (module level, so the worker
processes of a parallel run can import them by name)."""

from __future__ import annotations

from typing import Any

from agentjudge import Judgment
from agentjudge.harness import Case

PASSED, FAILED = Judgment.passed("ok"), Judgment.failed("no")
SCORED = Judgment.from_score(0.75)


async def exact(ctx: Any) -> Judgment:
    """PASS when the output is the expected text."""
    return PASSED if ctx.output == ctx.expected else FAILED


async def length(ctx: Any) -> Judgment:
    """A constant score."""
    return SCORED


async def always(ctx: Any) -> Judgment:
    """Always PASS."""
    return PASSED


async def task(case: Case) -> str:
    """The task: the input upper-cased."""
    return str(case.input).upper()


JUDGES = [exact, length, always]

"""Module-level task and judges for the worker-process tests (importable, so picklable)."""

from __future__ import annotations

import os

from agentjudge.core import Judgment
from agentjudge.harness import Case

PASSED = Judgment.passed("same")
FAILED = Judgment.failed("differs")


async def exact(ctx: object) -> Judgment:
    """PASS when the output equals the expected value."""
    return PASSED if ctx.output == ctx.expected else FAILED  # type: ignore[attr-defined]


def half(ctx: object) -> float:
    """A sync judge scoring 0.5."""
    return 0.5


async def upper(case: Case) -> str:
    """The task: the input upper-cased; ``boom`` raises, ``die`` kills the worker process."""
    if case.input == "boom":
        raise RuntimeError("kaboom")
    if case.input == "die":
        os._exit(7)
    if case.input == "interrupt":
        raise KeyboardInterrupt
    return str(case.input).upper()

"""Helpers shared by the engine tests (imported as a plain module, rootdir mode)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio
from gc_support import new_objects_only  # (moved there; still importable from here)

from agentjudge import Evaluator

__all__ = ["idle", "new_objects_only", "running_tasks", "settle", "wait_until"]


async def wait_until(predicate: Callable[[], bool], *, limit: float = 5.0) -> None:
    """Yield to the event loop until ``predicate()`` holds (fail after ``limit`` seconds)."""
    with anyio.fail_after(limit):
        while not predicate():
            await anyio.sleep(0)


async def settle(rounds: int = 20) -> None:
    """Give every ready task a few chances to run (checkpoints, not time)."""
    for _ in range(rounds):
        await anyio.sleep(0)


def running_tasks() -> int:
    """How many asyncio tasks are alive on the current loop."""
    return len(asyncio.all_tasks())


def idle(evaluator: Evaluator, *resources: str) -> bool:
    """True when the evaluator's global and named resource limiters lend no token."""
    if evaluator.limiter.borrowed_tokens != 0:
        return False
    if evaluator.limiter.statistics().tasks_waiting != 0:
        return False
    for name in resources:
        limiter = evaluator.resource_limiter(name)
        assert limiter is not None, f"no limiter for resource {name!r}"
        if limiter.borrowed_tokens != 0 or limiter.statistics().tasks_waiting != 0:
            return False
    return True

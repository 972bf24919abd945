"""Helpers shared by the engine tests (imported as a plain module, rootdir mode)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio

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


@contextmanager
def new_objects_only() -> Iterator[None]:
    """Inside, `gc.collect` and `gc.get_objects` see only the objects made inside.

    What existed before moves to the collector's permanent generation (`gc.freeze`) until the
    block ends: a full collection of a test worker's heap (every module, test and fixture
    loaded so far, ~0.3 s of CPU under ``make test``) then walks only the test's own objects.
    Garbage made inside is collected as before; garbage made before is not looked at.
    """
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        # Under pytest the heap is frozen already (tests/conftest.py freezes what collection
        # built, sdk_support what an SDK import built): unfreezing would hand all of it back to
        # every later full collection of the worker, so it stays frozen, with what survived
        # the block. Elsewhere the heap is given back as it was.
        if not frozen_before:
            gc.unfreeze()

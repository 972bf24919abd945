"""Counting what tests leave to the garbage collector (imported as a plain module, rootdir mode)."""

from __future__ import annotations

import gc
import types
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio

__all__ = [
    "cyclic_garbage",
    "failure_kinds",
    "garbage_of",
    "new_objects_only",
    "saving_garbage",
]


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


def cyclic_garbage(work: Callable[[], Awaitable[None]]) -> Counter[str]:
    """The kinds of objects ``work`` (run in a new event loop) left for the garbage collector.

    ``work`` runs twice: first to make what is made once (caches, learned paths), then under
    `saving_garbage`, which counts what it left by type name.
    """
    anyio.run(work)
    with saving_garbage() as found:
        anyio.run(work)
    return found


async def garbage_of(calls: Callable[[], Awaitable[None]]) -> Counter[str]:
    """The kinds of objects ``calls`` left for the garbage collector, in the running loop.

    For calls whose set-up (a server, a client) must not be counted: it is made before, and
    ``calls`` is awaited under `saving_garbage`.
    """
    with saving_garbage() as found:
        await calls()
    return found


@contextmanager
def saving_garbage() -> Iterator[Counter[str]]:
    """Inside, the collector is off; as the block ends, what it collects is counted.

    The counter yielded is filled by type name with every object a collection finds (it
    saves them instead of freeing them: ``DEBUG_SAVEALL``) when the block ends without an
    error. Only objects made inside are looked at (`new_objects_only`); the collector's
    state is restored whatever happens.
    """
    found: Counter[str] = Counter()
    with new_objects_only():
        gc.collect()
        enabled = gc.isenabled()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            yield found
            gc.collect()
            found.update(type(o).__qualname__ for o in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if enabled:
                gc.enable()


def failure_kinds(found: Counter[str]) -> Counter[str]:
    """What a failure's cycle keeps alive, of ``found``: errors, tracebacks and frames."""
    kept = (types.FrameType.__qualname__, types.TracebackType.__qualname__)
    return Counter({kind: n for kind, n in found.items() if kind in kept or kind.endswith("Error")})

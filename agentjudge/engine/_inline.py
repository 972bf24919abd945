"""Run many coroutines concurrently without paying a task for the ones that never suspend.

`start_all` steps each coroutine once in the current task. A coroutine that finishes in that
first step (a judge that completes without suspending) never costs a task. When one suspends,
the *rest of the loop* moves to a new task in the task group and the current task keeps driving
the suspended coroutine, so every coroutine stays in the task that started it (cancel scopes,
context variables and ``current_task()`` all stay consistent).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator
from time import perf_counter
from typing import Any, TypeVar, cast

import anyio
from anyio.abc import TaskGroup

from agentjudge._compat import cancel_scope, checkpoint_if_cancelled, loop_time
from agentjudge.engine._deadline import arm, disarm

__all__ = ["Resume", "await_armed", "cancel_scope", "checkpoint_if_cancelled", "start_all"]

T = TypeVar("T")


class Resume:
    """Awaitable that continues a coroutine already stepped once (PEP 380 delegation)."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self._coro = coro
        self._first = first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._coro
        to_yield = self._first
        self._first = None
        while True:
            try:
                sent = yield to_yield
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    to_yield = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    to_yield = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


async def await_armed(awaitable: Awaitable[T], scope: anyio.CancelScope, seconds: float) -> T:
    """Await ``awaitable`` inside ``scope`` (entered without a deadline by the caller).

    A coroutine is stepped once first: if it completes there it could not have been
    interrupted anyway, and the scope never needs a timer. If it suspends, the scope's
    deadline becomes ``seconds`` after this call began. Cheaper than entering
    ``anyio.move_on_after(seconds)`` for work that usually completes without suspending.
    """
    began = perf_counter()
    if not inspect.iscoroutine(awaitable):
        scope.deadline = loop_time() + seconds
        return await awaitable
    coro = cast(Coroutine[Any, Any, T], awaitable)
    try:
        first = coro.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    armed = arm(scope, seconds, began)
    try:
        return cast(T, await Resume(coro, first))
    finally:
        if armed is not None:
            disarm(armed)


async def start_all(
    tg: TaskGroup,
    factory: Callable[[int], Coroutine[Any, Any, None]],
    count: int,
    stopped: Callable[[], bool],
    inline: Callable[[int], bool],
    later: Callable[[int], None],
    start: int = 0,
) -> None:
    """Run ``factory(i)`` for ``i`` in ``start..count-1`` concurrently inside ``tg``.

    ``stopped()`` is checked before starting each coroutine; once true, the rest never start.
    For ``i`` where ``inline(i)`` is false, ``later(i)`` is called instead (it starts or
    queues the coroutine itself).
    """
    i = start
    while i < count and not stopped():
        if not inline(i):
            later(i)
            i += 1
            continue
        coro = factory(i)
        try:
            first = coro.send(None)
        except StopIteration:
            i += 1
            continue
        if i + 1 < count:
            tg.start_soon(start_all, tg, factory, count, stopped, inline, later, i + 1)
        await Resume(coro, first)
        return

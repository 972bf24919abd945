"""Run many coroutines concurrently without paying a task for the ones that never suspend.

`start_all` steps each coroutine once in the current task. A coroutine that finishes in that
first step (a judge that completes without suspending) never costs a task. When one suspends,
the *rest of the loop* moves to a new task in the task group and the current task keeps driving
the suspended coroutine, so every coroutine stays in the task that started it (cancel scopes,
context variables and ``current_task()`` all stay consistent).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator
from time import perf_counter
from typing import Any, TypeVar, cast

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from agentjudge._compat import loop_time

__all__ = ["Resume", "arm", "await_armed", "cancel_scope", "checkpoint_if_cancelled", "start_all"]

T = TypeVar("T")


_backend: Any = None
"""anyio's asyncio backend class (False: not usable here), looked up on first use."""
_running_loop = asyncio._get_running_loop


def _asyncio_backend() -> Any:
    """Anyio's asyncio backend class when a loop runs here and its layout is the one used."""
    global _backend
    if _running_loop() is None:
        return None
    if _backend is None:
        from anyio._backends import _asyncio  # loaded already: an asyncio loop runs

        backend = getattr(_asyncio, "backend_class", None)
        scope = getattr(_asyncio, "CancelScope", None)
        usable = (
            isinstance(scope, type)
            and issubclass(scope, anyio.CancelScope)
            and callable(getattr(backend, "create_cancel_scope", None))
            and callable(getattr(backend, "checkpoint_if_cancelled", None))
        )
        _backend = backend if usable else False
    return _backend


def cancel_scope() -> anyio.CancelScope:
    """``anyio.CancelScope()``, built without anyio's backend lookup on asyncio (~2 us each).

    A running asyncio loop in this thread means the asyncio backend (as
    `agentjudge._compat.loop_time` reads it); elsewhere, or with an anyio whose backend is
    laid out differently, anyio decides.
    """
    backend = _backend or _asyncio_backend()
    if backend and _running_loop() is not None:
        return cast(anyio.CancelScope, backend.create_cancel_scope())
    return anyio.CancelScope()


def checkpoint_if_cancelled() -> Awaitable[None]:
    """``anyio.lowlevel.checkpoint_if_cancelled()`` without the backend lookup on asyncio."""
    backend = _backend or _asyncio_backend()
    if backend and _running_loop() is not None:
        return cast(Awaitable[None], backend.checkpoint_if_cancelled())
    return anyio.lowlevel.checkpoint_if_cancelled()


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


def arm(scope: anyio.CancelScope, seconds: float, began: float) -> None:
    """Give ``scope`` the deadline ``seconds`` after ``began`` (a `perf_counter` reading)."""
    scope.deadline = loop_time() + seconds - (perf_counter() - began)


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
    arm(scope, seconds, began)
    return cast(T, await Resume(coro, first))


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

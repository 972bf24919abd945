"""Run async code on an asyncio loop whose clock jumps: sleeps and timeouts take no real time.

Whenever the loop would block waiting for a timer, the virtual clock advances to that timer
instead; the engine's attempt clocks read it too (`_ATTEMPT_CLOCKS`), so no attempt overruns
its timeout because the machine was slow. When it would block with no timer at all
(everything waits for something that never comes: a wedge), `Wedged` is raised. Only for
code that does no real I/O (e.g. the adaptive controller driven directly).

The adaptive controller also reads how busy its loop's thread was (`thread_busy_time`); on a
virtual loop that clock is virtual too (`VirtualWork`): by default it never advances (virtual
time passes only while the loop waits), so no run depends on the real CPU it took.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import selectors
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from unittest import mock

import anyio

from agentjudge.models import _adaptive

T = TypeVar("T")


class Wedged(Exception):
    """Every task waits and no timer is pending: nothing can ever run again."""


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Wedged("every task waits and no timer is pending")
        self.now += timeout
        return ready


class _VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._jumping = _JumpingSelector()
        super().__init__(self._jumping)

    def time(self) -> float:
        return self._jumping.now


class VirtualWork:
    """CPU-bound work on a virtual loop, and the busy clock that counts it.

    `work` blocks the loop (nothing else runs) for ``seconds`` of its time, as a callback
    computing that long would; `busy_time` is the seconds of such work so far.
    """

    def __init__(self) -> None:
        self.busy = 0.0

    def busy_time(self) -> float:
        """The virtual loop's busy clock (what `thread_busy_time` reads on a real one)."""
        return self.busy

    def work(self, seconds: float) -> None:
        """Block the running virtual loop for ``seconds`` of its time, counted as busy."""
        loop = asyncio.get_running_loop()
        assert isinstance(loop, _VirtualLoop), "VirtualWork needs run_virtual's loop"
        loop._jumping.now += seconds
        self.busy += seconds


def run_virtual(main: Callable[[], Awaitable[T]], work: VirtualWork | None = None) -> T:
    """``main()`` on a virtual-time asyncio loop (see the module docstring).

    ``work``: what the adaptive controller reads as its loop's busy clock (None: never busy).
    """
    clock = (work or VirtualWork()).busy_time
    loops: list[_VirtualLoop] = []

    def new_loop() -> _VirtualLoop:
        loops.append(_VirtualLoop())
        return loops[-1]

    def attempt_clock() -> float:
        return loops[-1].time()

    with contextlib.ExitStack() as patches:
        # create: the clock is patched in even where the controller has none (an older tree)
        patches.enter_context(mock.patch.object(_adaptive, "thread_busy_time", clock, create=True))
        for module in _ATTEMPT_CLOCKS:  # a module that no longer reads it: AttributeError
            engine = importlib.import_module(f"agentjudge.engine.{module}")
            patches.enter_context(mock.patch.object(engine, "perf_counter", attempt_clock))
        return anyio.run(main, backend="asyncio", backend_options={"loop_factory": new_loop})


_ATTEMPT_CLOCKS = ("_leaf", "_fastpath", "_deadline", "_inline", "_scheduler")
"""The engine modules whose attempt clock (``perf_counter``: how long an attempt took, whether
it overran its timeout) `run_virtual` sets to the loop's virtual time. On the real clock a
judge that answers at once still "overran" a 0.1 s timeout when the machine stalled the
process that long mid-attempt (a full garbage collection of a test worker's heap, a busy
machine): it failed the fast-path equivalence property on one path only, once in three
runs under load. On the virtual clock an attempt takes only the time its awaits let pass."""

"""One adaptive rate controller per provider endpoint for a whole Ray run.

Locally each model client owns an `AdaptiveController` (concurrency window, paced rate,
shared pause after a 429). On Ray, N actors would each probe the provider's limit and each
back off on its own, so together they would keep overrunning it. Instead the controllers
live in the run's broker actor (``_ray_limits.LimitBroker``, `RateControllers`), one per
client name and endpoint, and every actor's client obeys it through a `SharedController`:

* before each request the client's ``admit`` waits for the broker's controller to admit it
  (one actor call, awaited);
* the answer's status and capacity signals (what its provider read from the headers or the
  body: rate-limit budget, requested wait) go back to the same controller (one actor call,
  not awaited), so the cluster's requests are paced, paused and cut as one client's would be.

Cost: one awaited actor call per model request (about 1-2 ms on one machine, more across a
network) and one call not awaited: small beside a model call, but a reason why instant
judges never go through it (only model clients with ``adaptive=True`` do).

A run without ``limits`` or ``max_cost`` starts its broker only when a model client first
asks for admission (a `BrokerPromise`: the actor asks the driver, which starts the broker
once and hands it to every actor that asks), so a run whose judges call no model starts no
broker; clients built while the run goes (in a task, per call) still find it.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio

from agentjudge._compat import loop_time
from agentjudge.models._adaptive import AdaptiveController, CapacityDeadline, feedback
from agentjudge.models._headers import CapacitySignals, RateHints

__all__ = ["BrokerPromise", "RateControllers", "SharedController"]

Admitted = tuple[str, float, float, int, bool]
"""The broker's answer to ``admit``: ``("ok", start, 0, 0, False)`` or ``("deadline", wait,
left, status, asked)`` (a `CapacityDeadline`)."""


class RateControllers:
    """The broker's controllers, one per client key (runs on the broker's event loop)."""

    def __init__(self) -> None:
        self._controllers: dict[str, AdaptiveController] = {}

    def _get(self, key: str, ceiling: int) -> AdaptiveController:
        control = self._controllers.get(key)
        if control is None:
            control = self._controllers[key] = AdaptiveController(ceiling)
        return control

    async def admit(self, key: str, ceiling: int, left: float) -> Admitted:
        """Wait for capacity of ``key``'s controller, at most ``left`` seconds of pause."""
        try:
            started = await self._get(key, ceiling).admit(loop_time() + left)
        except CapacityDeadline as exc:
            return ("deadline", exc.wait, exc.left, exc.status, exc.asked)
        return ("ok", started, 0.0, 0, False)

    def feedback(
        self, key: str, started: float, status: int, signals: CapacitySignals, max_wait: float
    ) -> None:
        """What an answer said (see `agentjudge.models._adaptive.feedback`)."""
        control = self._controllers.get(key)
        if control is not None:
            feedback(control, started, status, signals, max_wait)

    def finished(self, key: str) -> None:
        """A request ended telling nothing about capacity."""
        control = self._controllers.get(key)
        if control is not None:
            control.finished()

    def abandoned(self, key: str, admitted: Admitted) -> None:
        """The caller left while waiting: give back capacity it was admitted to."""
        if admitted[0] == "ok":
            self.finished(key)

    def state(self, key: str) -> tuple[float, float | None, int]:
        """(window, rate, throttles) of ``key``'s controller (benchmarks, tests)."""
        control = self._controllers.get(key)
        if control is None:
            return (0.0, None, 0)
        return (control.window, control.rate, control.throttles)


class BrokerPromise:
    """The run's broker, asked of the driver when an actor's first model request needs it.

    `get` (on the worker's event loop) asks once, through ``ask``, and waits; `deliver` (on
    the thread of the actor's method call that brings the driver's answer) hands it over.

    Args:
        ask: Tells the driver that this actor needs the broker (called once, from `get`).
    """

    def __init__(self, ask: Callable[[], None]) -> None:
        self._ask = ask
        self._lock = threading.Lock()
        self._broker: Any = None
        self._arrived: anyio.Event | None = None
        self._wake: Callable[[], Any] | None = None

    def deliver(self, broker: Any) -> None:
        """The driver's answer: the broker's actor handle (thread-safe)."""
        with self._lock:
            self._broker = broker
            wake = self._wake
        if wake is not None:
            wake()

    async def get(self) -> Any:
        """The broker's handle, asking the driver for it the first time."""
        with self._lock:
            if self._broker is not None:
                return self._broker
            arrived, first = self._arrived, self._arrived is None
            if arrived is None:
                self._arrived = arrived = anyio.Event()
                self._wake = partial(asyncio.get_running_loop().call_soon_threadsafe, arrived.set)
        if first:
            self._ask()
        await arrived.wait()
        return self._broker


class SharedController:
    """A client's controller whose state is the broker's (see the module docs).

    Args:
        broker: The ``LimitBroker`` actor handle, or a `BrokerPromise` of it.
        key: The client's name and endpoint.
        ceiling: The client's ``max_concurrency``.
    """

    def __init__(self, broker: Any, key: str, ceiling: int) -> None:
        self._broker = broker
        self._key = key
        self._ceiling = ceiling

    async def admit(self, deadline: float = math.inf) -> float:
        """Wait for the shared controller to admit one request.

        Raises:
            CapacityDeadline: The shared pause lasts beyond ``deadline``.
        """
        if isinstance(self._broker, BrokerPromise):  # until the run's broker is known
            self._broker = await self._broker.get()
        left = deadline - loop_time() if math.isfinite(deadline) else math.inf
        ref = self._broker.admit.remote(self._key, self._ceiling, left)
        try:
            answer: Admitted = await ref
        except BaseException:
            self._broker.abandoned.remote(self._key, ref)  # Ray passes the answer once known
            raise
        if answer[0] == "deadline":
            raise CapacityDeadline(answer[1], answer[2], answer[3], answer[4])
        return answer[1]

    def succeeded(self, started: float, hints: RateHints | None) -> None:
        """The request was answered (``hints``: the rate-limit budget it reported)."""
        signals = CapacitySignals(rates=hints)
        self._broker.feedback.remote(self._key, started, 200, signals, 0.0)

    def throttled(
        self, started: float, signals: CapacitySignals, *, status: int, max_wait: float
    ) -> None:
        """The request was refused with a throttling status."""
        self._broker.feedback.remote(self._key, started, status, signals, max_wait)

    def finished(self) -> None:
        """The request ended without telling anything about capacity."""
        self._broker.finished.remote(self._key)

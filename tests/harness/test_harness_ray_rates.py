"""One adaptive controller per endpoint for all Ray actors (`_ray_rates`), without Ray.

The broker is stood in for by an object whose ``method.remote(...)`` schedules the broker's
coroutine on this loop (as a Ray actor call returns an awaitable reference).
"""

from __future__ import annotations

import asyncio
import inspect
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from agentjudge._compat import loop_time
from agentjudge.harness._ray_rates import BrokerPromise, RateControllers, SharedController
from agentjudge.models._adaptive import CapacityDeadline
from agentjudge.models._headers import CapacitySignals


class FakeBroker:
    """``broker.method.remote(*args)``: the `RateControllers` method as a task on this loop."""

    def __init__(self) -> None:
        self.rates = RateControllers()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.rates, name)

        async def call(*args: Any) -> Any:
            # Ray resolves a reference passed as an argument before the call runs.
            args = tuple([await a if isinstance(a, asyncio.Future) else a for a in args])
            result = method(*args)
            return await result if inspect.isawaitable(result) else result

        return SimpleNamespace(remote=lambda *args: asyncio.ensure_future(call(*args)))


async def test_a_throttle_seen_by_one_actor_pauses_the_others() -> None:
    """A's 429 asks for a pause: B's next request waits for it too (one provider limit)."""
    broker = FakeBroker()
    a = SharedController(broker, "openai:m http://x", 10)
    b = SharedController(broker, "openai:m http://x", 10)
    started = await a.admit()
    a.throttled(started, CapacitySignals(retry_after=0.5), status=429, max_wait=60.0)
    await anyio.wait_all_tasks_blocked()  # the feedback call reached the broker
    with pytest.raises(CapacityDeadline) as info:
        await b.admit(loop_time() + 0.1)
    assert info.value.status == 429 and info.value.asked
    assert broker.rates.state("openai:m http://x")[2] == 1


async def test_every_admitted_request_gives_its_capacity_back() -> None:
    """Answers, failures and callers cancelled while waiting all release their slot."""
    broker = FakeBroker()
    one = SharedController(broker, "k", 1)  # a window of 1: a leak would block the next
    started = await one.admit()
    one.succeeded(started, None)
    started = await one.admit()
    one.finished()
    started = await one.admit()
    waiter = asyncio.ensure_future(one.admit())  # waits: the window is full
    await anyio.wait_all_tasks_blocked()
    waiter.cancel()
    one.succeeded(started, None)
    await anyio.wait_all_tasks_blocked()  # the abandoned admission was given back
    with anyio.fail_after(1.0):
        assert await one.admit() > 0
    control = broker.rates._controllers["k"]
    assert control.in_flight == 1


async def test_clients_wait_for_a_broker_asked_of_the_driver_once() -> None:
    """No broker yet (no limits, no max_cost): the first request asks the driver once, every
    controller of the actor waits for the answer (given from another thread), then obeys it;
    a waiter cancelled meanwhile does not stop the others getting it."""
    asked: list[str] = []
    promise = BrokerPromise(lambda: asked.append("broker"))
    broker = FakeBroker()
    a = SharedController(promise, "k", 2)
    b = SharedController(promise, "k", 2)
    gone = asyncio.ensure_future(SharedController(promise, "k", 2).admit())
    first = asyncio.ensure_future(a.admit())
    second = asyncio.ensure_future(b.admit())
    await anyio.wait_all_tasks_blocked()
    assert asked == ["broker"] and not (first.done() or second.done())
    gone.cancel()
    await anyio.to_thread.run_sync(promise.deliver, broker)
    with anyio.fail_after(5):
        assert await first > 0 and await second > 0
    assert broker.rates._controllers["k"].in_flight == 2  # one controller admitted both
    assert await promise.get() is broker and asked == ["broker"]


async def test_a_broker_delivered_before_anyone_asked_is_used_without_asking() -> None:
    """The driver may hand an actor the broker another actor asked for: no second request."""
    promise = BrokerPromise(lambda: pytest.fail("asked although the broker was there"))
    broker = FakeBroker()
    promise.deliver(broker)
    assert await SharedController(promise, "k", 1).admit() > 0

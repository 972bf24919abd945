"""The adaptive controller's latency rule: a queueing provider holds growth, a busy client does not.

The rule stops window growth when the recent latency exceeds three times its minimum. Latency is
measured in the client's process, so a client whose own event loop is saturated (W4, issue
19.11: 100 calls at once on a CPU-bound client) saw its own backlog as a queueing provider,
held its window below ``max_concurrency`` and queued every call in the controller. Answers
that come back while the loop's thread was busy for 2/3 of the last span no longer count.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from virtual_clock import VirtualWork, run_virtual

from agentjudge.core import Message
from agentjudge.models import ModelRequest, OpenAIChat, _loop
from agentjudge.models._adaptive import AdaptiveController, feedback
from agentjudge.models._headers import CapacitySignals
from agentjudge.testing import FakeModelServer, FakeResponse

REQUEST = ModelRequest(messages=(Message(role="user", content="Grade this."),))
CEILING = 64


def drive(
    control: AdaptiveController,
    *,
    calls: int,
    latency: float,
    capacity: int | None = None,
    per_answer: float = 0.0,
) -> list[float]:
    """``CEILING`` callers making ``calls`` calls each on a virtual clock; the windows seen.

    The provider answers after ``latency`` s, serving at most ``capacity`` requests at a time
    (None: all at once: it never queues). After each answer its caller computes for
    ``per_answer`` s, blocking the loop (CPU-bound work on a busy client).
    """
    work = VirtualWork()
    windows: list[float] = []

    async def main() -> None:
        served = anyio.Semaphore(capacity or CEILING * calls)

        async def caller() -> None:
            for _ in range(calls):
                begun = await control.admit()
                async with served:
                    await anyio.sleep(latency)
                feedback(control, begun, 200, CapacitySignals(), 60.0)
                windows.append(control.window)
                work.work(per_answer)

        async with anyio.create_task_group() as tg:
            for _ in range(CEILING):
                tg.start_soon(caller)

    run_virtual(main, work)
    assert control.in_flight == 0
    return windows


def test_a_busy_client_lets_the_window_reach_its_ceiling() -> None:
    """A fast provider, a client busy 2 ms per answer: its own backlog does not hold growth.

    With 20 answers in flight an answer waits up to 40 ms for the loop against a 5 ms
    provider (8x the minimum latency); before, that held the window at about 20 of 64.
    """
    control = AdaptiveController(CEILING)
    windows = drive(control, calls=20, latency=0.005, per_answer=0.002)
    assert control.window == CEILING
    assert windows[-CEILING:] == [CEILING] * CEILING  # and it stays there


def test_a_queueing_provider_still_stops_growth() -> None:
    """A provider serving 4 requests at a time: latency grows with the window, growth stops."""
    control = AdaptiveController(CEILING)
    drive(control, calls=10, latency=0.005, capacity=4)
    assert control.window < CEILING / 2


def test_a_client_busy_under_two_thirds_of_the_time_still_sees_provider_queueing() -> None:
    """0.5 ms of work per answer at 4 answers per 5 ms (a loop busy 40%): the provider is held
    responsible for the latency, as before."""
    control = AdaptiveController(CEILING)
    drive(control, calls=10, latency=0.005, capacity=4, per_answer=0.0005)
    assert control.window < CEILING / 2


async def test_a_provider_with_limited_capacity_holds_growth_over_http() -> None:
    """Over loopback HTTP, a provider serving one request at a time (20 ms) holds growth.

    24 answers would grow the window from 4 to 28 unheld; the latency (about 20 ms per request
    ahead in the provider's queue) stops it on the way (13-17 measured). The client's loop is
    idle most of the time (busy 20-25% of it on a machine at load 10), so the rule applies.
    """
    served = anyio.Semaphore(1)

    async def respond(_: Any) -> FakeResponse:
        async with served:
            await anyio.sleep(0.02)
        return FakeResponse(text="PASS")

    async with (
        FakeModelServer(respond) as server,
        OpenAIChat("m", base_url=server.base_url, max_concurrency=CEILING) as model,
    ):
        async with anyio.create_task_group() as tg:
            for _ in range(24):
                tg.start_soon(model.complete, REQUEST)
        window = model._session.get().controller.window  # type: ignore[attr-defined]
    assert len(server.requests) == 24
    assert window < 24


def test_the_busy_clock_counts_the_threads_work() -> None:
    """Work on the calling thread advances `thread_busy_time` at least by its CPU time."""
    before, cpu = _loop.thread_busy_time(), time.thread_time()
    while time.thread_time() - cpu < 0.05:
        pass
    assert _loop.thread_busy_time() - before >= 0.04  # schedstat may lag by one tick


def test_the_busy_clock_falls_back_to_cpu_time(monkeypatch: Any) -> None:
    """Where the scheduler's statistics cannot be read, the thread's CPU time is the clock."""
    monkeypatch.setattr(_loop, "_SCHEDSTAT", "/nonexistent/schedstat")
    monkeypatch.setattr(_loop, "_schedstat_readable", True)
    before = time.thread_time()
    assert before <= _loop.thread_busy_time() <= time.thread_time()
    assert _loop._schedstat_readable is False

"""RateLimit: request and token budgets are never exceeded in any window."""

from __future__ import annotations

import anyio
import pytest

from agentjudge.core import Message
from agentjudge.models import ModelRequest, OpenAIChat, RateLimit
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

TOLERANCE = 0.03  # client admission -> server arrival jitter on loopback


def ask(max_tokens: int | None = None) -> ModelRequest:
    return ModelRequest(
        messages=(Message(role="user", content="Grade this answer."),), max_tokens=max_tokens
    )


def max_in_window(times: list[float], window: float) -> int:
    """The most timestamps found in any half-open window [t, t + window)."""
    times = sorted(times)
    return max(sum(1 for u in times if t <= u < t + window) for t in times)


async def test_rpm_is_never_exceeded_at_the_server() -> None:
    """With rpm=4 per 0.4 s, no 0.4 s window at the server sees more than 4 requests."""
    limit = RateLimit(rpm=4, period=0.4)
    async with (
        FakeModelServer() as server,
        OpenAIChat("m", base_url=server.base_url, rate_limit=limit, max_concurrency=12) as model,
        anyio.create_task_group() as tg,
    ):
        for _ in range(12):
            tg.start_soon(model.complete, ask())
    times = [r.time for r in server.received]
    assert len(times) == 12
    assert max_in_window(times, 0.4 - TOLERANCE) <= 4
    assert max(times) - min(times) >= 2 * 0.4 - TOLERANCE  # three windows were needed


@pytest.mark.timing
async def test_one_limit_shared_by_two_clients() -> None:
    """Two clients given the same RateLimit share one budget."""
    limit = RateLimit(rpm=3, period=0.3)
    async with (
        FakeModelServer() as server,
        OpenAIChat("a", base_url=server.base_url, rate_limit=limit) as first,
        OpenAIChat("b", base_url=server.base_url, rate_limit=limit) as second,
        anyio.create_task_group() as tg,
    ):
        for _ in range(4):
            tg.start_soon(first.complete, ask())
            tg.start_soon(second.complete, ask())
    assert max_in_window([r.time for r in server.received], 0.3 - TOLERANCE) <= 3


async def test_waiting_for_the_rate_limit_is_queued_time() -> None:
    """A request held back by rpm reports the wait in queued_s."""
    async with (
        FakeModelServer() as server,
        OpenAIChat("m", base_url=server.base_url, rate_limit=RateLimit(rpm=1, period=0.3)) as m,
    ):
        first = await m.complete(ask())
        second = await m.complete(ask())
    assert first.queued_s < 0.1
    assert second.queued_s >= 0.2


async def test_tpm_is_reconciled_from_reported_usage() -> None:
    """Token charges follow the usage the server reports, not the small estimate."""
    usage = {"prompt_tokens": 80, "completion_tokens": 10, "total_tokens": 90}
    limit = RateLimit(tpm=100, period=0.3)
    async with (
        FakeModelServer(FakeResponse(text="ok", usage=usage)) as server,
        OpenAIChat("m", base_url=server.base_url, rate_limit=limit) as model,
    ):
        responses = [await model.complete(ask(max_tokens=5)) for _ in range(3)]
    # estimates are ~9 tokens each: without reconciliation all three would pass at once
    times = [r.time for r in server.received]
    assert times[2] - times[0] >= 0.3 - TOLERANCE
    assert responses[2].queued_s >= 0.2


async def test_settle_replaces_the_estimate() -> None:
    """A lease settled above the estimate makes the next request wait for the window."""
    limit = RateLimit(tpm=100, period=0.3)
    lease = await limit.acquire(10)
    lease.settle(95)
    assert lease.tokens == 95
    start = anyio.current_time()
    await limit.acquire(10)
    assert anyio.current_time() - start >= 0.3 - TOLERANCE


async def test_settling_lower_wakes_a_waiter() -> None:
    """Settling a lease below its estimate admits a waiting request at once."""
    limit = RateLimit(tpm=100, period=60)
    lease = await limit.acquire(90)
    admitted = anyio.Event()

    async def waiter() -> None:
        await limit.acquire(50)
        admitted.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert not admitted.is_set()
        lease.settle(10)
        with anyio.fail_after(2):
            await admitted.wait()


async def test_an_oversized_request_is_admitted_alone() -> None:
    """A request estimated above tpm is admitted when the window is empty (no deadlock)."""
    limit = RateLimit(tpm=10, period=60)
    with anyio.fail_after(1):
        lease = await limit.acquire(1_000)
    assert lease.tokens == 10


async def test_unlimited_is_free() -> None:
    """RateLimit() without budgets never waits."""
    limit = RateLimit()
    assert not limit.enabled
    with anyio.fail_after(1):
        for _ in range(1_000):
            (await limit.acquire(10_000)).settle(5)


@pytest.mark.parametrize(
    "kwargs",
    [{"rpm": 0}, {"tpm": -5}, {"rpm": 1.5}, {"rpm": True}, {"period": 0}, {"period": float("inf")}],
)
def test_bad_budgets_are_rejected(kwargs: dict[str, object]) -> None:
    """Budgets below 1, non-integers and non-positive periods are ValueErrors."""
    with pytest.raises(ValueError, match="RateLimit"):
        RateLimit(**kwargs)  # type: ignore[arg-type]

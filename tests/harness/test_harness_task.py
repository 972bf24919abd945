"""Tasks: sync on threads, async in place, failures and timeouts become error strings."""

from __future__ import annotations

import threading

import anyio
import pytest

from agentjudge.harness import Case
from agentjudge.harness._task import TaskRunner

CASE = Case("c1", "question")


async def test_async_task_runs_in_place() -> None:
    """An async task is awaited on the event loop thread."""
    loop_thread = threading.get_ident()
    seen: list[int] = []

    async def task(case: Case) -> str:
        seen.append(threading.get_ident())
        return f"answer to {case.input}"

    runner = TaskRunner(task, timeout=5, threads=2)
    assert runner.is_async
    assert await runner(CASE) == ("answer to question", None)
    assert seen == [loop_thread]


async def test_sync_task_runs_on_a_worker_thread() -> None:
    """A sync task never runs on the event loop thread."""
    loop_thread = threading.get_ident()

    def task(case: Case) -> int:
        return threading.get_ident()

    runner = TaskRunner(task, timeout=5, threads=2)
    output, error = await runner(CASE)
    assert error is None
    assert output != loop_thread


async def test_raising_task_becomes_type_and_message() -> None:
    """An exception from the task is reported as 'TypeName: message'."""

    def task(case: Case) -> str:
        raise KeyError("missing")

    async def bare(case: Case) -> str:
        raise RuntimeError

    assert await TaskRunner(task, timeout=5, threads=1)(CASE) == (None, "KeyError: 'missing'")
    assert await TaskRunner(bare, timeout=5, threads=1)(CASE) == (None, "RuntimeError")


async def test_task_past_its_timeout_is_an_error() -> None:
    """A task that never returns is cut off at the per-case timeout."""

    async def hang(case: Case) -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    output, error = await TaskRunner(hang, timeout=0.05, threads=1)(CASE)
    assert output is None
    assert error == "TimeoutError: the task did not finish within 0.05s"


async def test_sync_task_past_its_timeout_is_abandoned() -> None:
    """A blocked sync task is abandoned at the timeout; its thread finishes later."""
    release = threading.Event()

    def block(case: Case) -> str:
        release.wait(5)
        return "late"

    try:
        _, error = await TaskRunner(block, timeout=0.05, threads=1)(CASE)
        assert error is not None and error.startswith("TimeoutError")
    finally:
        release.set()


async def test_task_raising_its_own_timeout_error_keeps_its_message() -> None:
    """A TimeoutError raised by the task itself is reported as the task's error."""

    async def task(case: Case) -> str:
        raise TimeoutError("upstream took too long")

    assert await TaskRunner(task, timeout=5, threads=1)(CASE) == (
        None,
        "TimeoutError: upstream took too long",
    )


async def test_cancellation_is_not_turned_into_an_error() -> None:
    """Cancelling the caller propagates instead of producing an error row."""
    started = anyio.Event()

    async def hang(case: Case) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = TaskRunner(hang, timeout=None, threads=1)
    outcome: list[object] = []
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            outcome.append(await runner(CASE))

        tg.start_soon(call)
        await started.wait()
        tg.cancel_scope.cancel()
    assert outcome == []


def test_bad_knobs_are_refused() -> None:
    """A non-callable task or a non-positive timeout is a ValueError."""
    with pytest.raises(ValueError, match="callable"):
        TaskRunner(42, timeout=1, threads=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        TaskRunner(lambda c: c, timeout=0, threads=1)


async def test_keyboard_interrupt_or_system_exit_stop_the_run() -> None:
    """KeyboardInterrupt/SystemExit from a task become TaskInterrupted, not an error row."""
    from agentjudge.harness._task import TaskInterrupted

    def task(case: Case) -> str:
        raise SystemExit(3)

    with pytest.raises(TaskInterrupted, match="SystemExit: 3") as info:
        await TaskRunner(task, timeout=5, threads=1)(CASE)
    assert isinstance(info.value.__cause__, SystemExit)


async def test_stuck_sync_tasks_are_bounded() -> None:
    """Sync tasks stuck past their timeout are bounded; past the bound a case errors at once."""
    from agentjudge.judging import MAX_ABANDONED_THREADS, abandoned_threads
    from agentjudge.judging._faults import wait_abandoned_threads

    release = threading.Event()

    def stuck(case: Case) -> str:
        release.wait(30)
        return "late"

    base = abandoned_threads()
    runner = TaskRunner(stuck, timeout=0.02, threads=64)
    errors: list[str | None] = []
    try:
        # A call whose thread had not started when it timed out leaves no thread behind and
        # is not counted (a loaded machine makes some), so the bound is met within a few more.
        for _ in range(4 * MAX_ABANDONED_THREADS):
            output, error = await runner(CASE)
            assert output is None
            errors.append(error)
            if error is not None and error.startswith("ThreadsExhausted"):
                break
        assert abandoned_threads() - base <= MAX_ABANDONED_THREADS
    finally:
        release.set()
    assert errors[0] is not None and errors[0].startswith("TimeoutError")
    assert errors[-1] is not None and errors[-1].startswith("ThreadsExhausted")
    # the released threads finish and leave the count
    assert await anyio.to_thread.run_sync(wait_abandoned_threads, base, 30)


async def test_sync_task_storm_leaves_no_phantom_abandoned_threads() -> None:
    """Sync tasks timed out while waiting for a thread are not counted; the count returns."""
    from agentjudge.judging import abandoned_threads
    from agentjudge.judging._faults import wait_abandoned_threads

    release = threading.Event()
    ran: list[str] = []

    def blocked(case: Case) -> bool:
        ran.append(case.id)
        return release.wait(30)

    base = abandoned_threads()
    runner = TaskRunner(blocked, timeout=0.1, threads=4)
    errors: list[str | None] = []

    async def one() -> None:
        errors.append((await runner(CASE))[1])

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(64):
                tg.start_soon(one)
        assert all(e is not None and e.startswith("TimeoutError") for e in errors)
        assert len(errors) == 64
        assert len(ran) < 64  # most never got one of the 4 threads: they must not count
    finally:
        release.set()
    assert await anyio.to_thread.run_sync(wait_abandoned_threads, base, 10)
    assert await TaskRunner(lambda case: "ok", timeout=5, threads=1)(CASE) == ("ok", None)

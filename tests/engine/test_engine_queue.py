"""Members that cannot get a slot wait in the evaluator's queue, first come first served."""

from __future__ import annotations

import asyncio

import anyio

from agentjudge import Evaluator, Jury
from agentjudge.testing import ConcurrencyProbe, ScriptedJudge


async def test_waiting_members_cost_no_task() -> None:
    """With every slot taken, 200 waiting evaluations create no task per waiting member."""
    gate = anyio.Event()
    probe = ConcurrencyProbe()
    judges = [ScriptedJudge(True, gate=gate, probe=probe, name=f"j{i}") for i in range(5)]
    async with Evaluator(judges, max_concurrency=5) as ev:
        handles = [ev.submit(input=i) for i in range(200)]
        await judges[4].started.wait()
        await anyio.wait_all_tasks_blocked()  # every driver has reached its queue
        tasks = len(asyncio.all_tasks())
        assert tasks < 200 + 5 * 3, tasks  # drivers + the running members, not 5 x 200
        gate.set()
        for h in handles:
            assert len(await h) == 5
    assert probe.max_in_flight == 5
    assert ev.limiter.borrowed_tokens == 0


async def test_evaluations_complete_in_submission_order() -> None:
    """Under saturation the members of one evaluation start together (case-major order)."""
    done: list[int] = []
    judges = [ScriptedJudge(True, latency=0.005, name=f"j{i}") for i in range(3)]
    async with Evaluator(Jury(judges), max_concurrency=3) as ev:

        async def one(i: int) -> None:
            await ev.submit(input=i)
            done.append(i)

        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(one, i)
    assert done == sorted(done)


async def test_cancelled_queued_members_never_run_and_return_slots() -> None:
    """Cancelling evaluations whose members are still queued runs none of them."""
    gate = anyio.Event()
    blocker = ScriptedJudge(True, gate=gate, name="blocker")
    queued = [ScriptedJudge(True, name=f"q{i}") for i in range(3)]
    async with Evaluator([blocker, *queued], max_concurrency=1) as ev:
        first = ev.submit(input=0)
        await blocker.started.wait()
        later = [ev.submit(input=i) for i in range(1, 20)]
        await anyio.wait_all_tasks_blocked()
        for h in later:
            h.cancel()
        first.cancel()
        gate.set()
    assert sum(j.calls for j in queued) == 0
    assert ev.limiter.borrowed_tokens == 0

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from agentjudge.core import Context, Status
from agentjudge.engine import Evaluator
from agentjudge.judges import FileContent, MatchMode


@pytest.mark.timing
async def test_thousand_file_judgments_do_not_block_the_loop(tmp_path: Path) -> None:
    """1,000 file judgments under an Evaluator run while a heartbeat keeps ticking."""
    count = 1000
    for i in range(count):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n" * 50)
    judges = [
        FileContent(f"f{i}.txt", f"file {i}", MatchMode.CONTAINS, name=f"file-{i}")
        for i in range(count)
    ]
    evaluator = Evaluator(judges, max_concurrency=100, retry=None)

    ticks = 0
    longest_gap = 0.0
    done = anyio.Event()

    async def heartbeat() -> None:
        nonlocal ticks, longest_gap
        last = time.monotonic()
        while not done.is_set():
            await anyio.sleep(0.002)
            now = time.monotonic()
            longest_gap = max(longest_gap, now - last)
            last = now
            ticks += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        with anyio.fail_after(30):
            results = await evaluator.evaluate(Context(workspace=tmp_path))
        done.set()

    assert len(results) == count
    assert all(r.status is Status.PASS for r in results)
    assert [r.name for r in results[:3]] == ["file-0", "file-1", "file-2"]
    assert ticks >= 5
    assert longest_gap < 1.0  # generous: the loop was never blocked for long

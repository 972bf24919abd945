"""W4's measuring process: one tree's agentjudge against a fake provider in another process.

``bench_llm.py`` starts the server (``--serve``) and runs this script once per tree and round,
with the tree to measure first on ``PYTHONPATH`` (the working tree, or a `git worktree` of the
baseline commit), so both packages see the same server, workload and machine moment. It uses
only the public API that every measured commit has, and prints one JSON line per variant:

    {"variant": ..., "wall_s": ..., "cpu_s": ..., "package": <agentjudge path>}

``gc_s`` is the CPU time the garbage collector ran (timed with ``gc.callbacks``), ``gc_young``
and ``gc_older`` its collections of generation 0 and of the older ones (collections follow
the objects allocated and kept alive, so they count allocations without slowing the calls).
``loop_passes`` and ``loop_callbacks`` count the passes through the asyncio event loop and the
callbacks (task steps, I/O events) it ran during the measured calls: unlike time, they do not
depend on the machine's load. ``cpu_s`` is this process's CPU time over the measured calls: on
a shared machine it is steadier than the wall time, which also counts time the process waited
for a core.

Variants (each warmed up on `WARM_UP` calls first, then ``--requests`` calls at
``--concurrency``):
``raw_aiohttp`` (the reference: one aiohttp session, POST + JSON decode), ``chat``
(`OpenAIChat.complete`), ``plain`` (an `LLMJudge` through an `Evaluator`), ``structured``
(``LLMJudge(output_model=...)``), ``jury`` (3 `LLMJudge`s in a `Jury`, ``requests / 3``
cases, so the same number of calls), ``budget`` (the plain judge's Evaluator with a token
`Budget` it never reaches: every request's bound estimated, reserved and settled).
Clients and Evaluators get ``max_concurrency`` equal to
the concurrency: a client's default (16) would otherwise cap every variant.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anyio
from pydantic import BaseModel

import agentjudge
from agentjudge import Context, Evaluator, Jury, LLMJudge, Message, ModelRequest, OpenAIChat
from agentjudge.engine import Budget

ANSWER = "The answer matches the reference.\nAnswer: YES"
PROMPT = "Question: {{input}}\nAnswer: {{output}}\nIs the answer correct?"
BODY = {
    "model": "judge",
    "messages": [
        {"role": "user", "content": "Question: what is 2+2?\nAnswer: 4\nIs the answer correct?"}
    ],
}
WARM_UP = 300
"""Calls before the measured ones: enough for an adaptive client to open all its connections.

Its slow start admits 4 requests at first and one more per answer, so after 100 calls it
had opened 40-51 of its 100 connections and opened the rest inside the measured calls, where
raw aiohttp had opened all 100 in its warm-up (W4 read that as the client's cost: OpenAIChat
1.04-1.28x over raw aiohttp with 100, 1.01-1.17x with 300, 2026-11-26)."""


class Grade(BaseModel):
    """The structured judge's answer (the server sends ``{"passed": true, ...}``)."""

    passed: bool
    reasoning: str


Timing = tuple[float, float]
"""(wall seconds, CPU seconds) of one measured stretch."""


LOOP = {"passes": 0, "handles": 0}
"""Passes through the asyncio loop and callbacks (task steps, I/O) it ran: load-independent."""
_run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]


def _counted_run_once(loop: Any) -> None:
    LOOP["passes"] += 1
    LOOP["handles"] += len(loop._ready)
    _run_once(loop)


asyncio.base_events.BaseEventLoop._run_once = _counted_run_once  # type: ignore[attr-defined]

GC = {"gc_s": 0.0, "gc_young": 0, "gc_older": 0}
"""CPU seconds the garbage collector ran, and its young (generation 0) and older collections."""
_gc_started = [0.0]


def _on_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _gc_started[0] = time.process_time()
        return
    GC["gc_s"] += time.process_time() - _gc_started[0]
    GC["gc_young" if info["generation"] == 0 else "gc_older"] += 1


gc.callbacks.append(_on_gc)


class Clock:
    """Wall and CPU time, loop passes and callbacks of what runs inside ``with Clock():``."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.loop = dict(LOOP)
        self.gc = dict(GC)
        return self

    def __exit__(self, *_: object) -> None:
        self.timing: Timing = (time.perf_counter() - self.wall, time.process_time() - self.cpu)
        Clock.last = {k: LOOP[k] - self.loop[k] for k in LOOP}
        Clock.last.update({k: GC[k] - self.gc[k] for k in GC})

    last: dict[str, float] = {}
    """The loop counts of the last measured stretch."""


async def pool(total: int, concurrency: int, call: Callable[[int], Awaitable[None]]) -> Timing:
    """Timing of ``total`` calls made by ``concurrency`` workers pulling from one counter."""
    numbers = iter(range(total))

    async def worker() -> None:
        for i in numbers:
            await call(i)

    with Clock() as clock:
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
    return clock.timing


async def raw_aiohttp(base_url: str, total: int, concurrency: int) -> Timing:
    url = f"{base_url}/chat/completions"
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def call(_: int) -> None:
            async with session.post(url, json=BODY) as response:
                data = await response.json()
                assert data["choices"][0]["message"]["content"] == ANSWER

        await pool(WARM_UP, concurrency, call)
        return await pool(total, concurrency, call)


async def chat(base_url: str, total: int, concurrency: int) -> Timing:
    request = ModelRequest(messages=tuple(Message(**m) for m in BODY["messages"]))
    async with OpenAIChat(
        "judge", base_url=base_url, api_key="test", max_concurrency=concurrency
    ) as model:

        async def call(_: int) -> None:
            assert (await model.complete(request)).text == ANSWER

        await pool(WARM_UP, concurrency, call)
        return await pool(total, concurrency, call)


async def judged(base_url: str, total: int, concurrency: int, variant: str) -> Timing:
    """``total`` judge calls through an Evaluator (a jury makes 3 per case)."""
    async with OpenAIChat(
        "judge", base_url=base_url, api_key="test", max_concurrency=concurrency
    ) as model:
        if variant in ("plain", "budget"):
            subject: Any = LLMJudge("correct", model, PROMPT)
        elif variant == "structured":
            subject = LLMJudge("graded", model, PROMPT, output_model=Grade)
        else:
            subject = Jury([LLMJudge(f"juror-{k}", model, PROMPT) for k in range(3)])
        per_case = 3 if variant == "jury" else 1
        budget = Budget(tokens=10**15) if variant == "budget" else None
        evaluator = Evaluator(subject, max_concurrency=concurrency, budget=budget)
        contexts = [Context(input=f"what is {i}+{i}?", output=str(2 * i)) for i in range(total)]
        cases = max(1, concurrency // per_case)

        async def run(count: int) -> Timing:
            passed = 0
            with Clock() as clock:
                async for case in evaluator.run(contexts[:count], concurrency=cases):
                    passed += case.verdict.judgment.is_pass
            assert passed == count, f"{variant}: {count - passed} of {count} cases did not pass"
            return clock.timing

        await run(WARM_UP // per_case)
        return await run(total // per_case)


async def main(args: argparse.Namespace) -> None:
    for variant in args.variants.split(","):
        if variant == "raw_aiohttp":
            wall, cpu = await raw_aiohttp(args.base_url, args.requests, args.concurrency)
        elif variant == "chat":
            wall, cpu = await chat(args.base_url, args.requests, args.concurrency)
        else:
            wall, cpu = await judged(args.base_url, args.requests, args.concurrency, variant)
        line = {
            "variant": variant,
            "wall_s": round(wall, 4),
            "cpu_s": round(cpu, 4),
            "loop_passes": Clock.last.get("passes", 0),
            "loop_callbacks": Clock.last.get("handles", 0),
            "gc_s": round(Clock.last.get("gc_s", 0.0), 5),
            "gc_young": Clock.last.get("gc_young", 0),
            "gc_older": Clock.last.get("gc_older", 0),
            "package": agentjudge.__file__,
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--requests", type=int, default=1_000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--variants", default="raw_aiohttp,chat,plain,structured,jury,budget")
    anyio.run(main, parser.parse_args())

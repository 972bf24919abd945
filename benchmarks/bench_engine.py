"""Engine benchmark: agentjudge vs plain anyio and plain asyncio, same process, same work.

Run: ``make bench`` or ``uv run python benchmarks/bench_engine.py [W1 W2 W3 W5]``.

Each workload runs in a fresh subprocess (so peak-RSS growth is its own); inside it the engine
runs first, then the two references:

* plain anyio: one task per judge call in a task group, guarded by a CapacityLimiter (what a
  user would write by hand);
* plain asyncio: ``asyncio.gather`` over coroutines guarded by an ``asyncio.Semaphore`` (the
  cheapest correct scheduler in Python).

Prints one JSON line per workload with per-judgment microseconds, wall times, the ratios
engine/anyio and engine/asyncio, and peak-RSS growth in MiB.
"""

from __future__ import annotations

import asyncio
import gc
import json
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agentjudge import (
    Cascade,
    Context,
    Evaluator,
    Judgment,
    Jury,
    Tier,
    TierPolicy,
    judge,
)

PASS = Judgment.passed("ok")
FAIL = Judgment.failed("no")


def rss_mib() -> float:
    """Peak RSS of this process so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def instant_judges(n: int) -> list[Any]:
    def make(i: int) -> Any:
        @judge(f"j{i}")
        async def j(ctx: Context) -> Judgment:
            return PASS

        return j

    return [make(i) for i in range(n)]


def sleeping_judges(n: int, delay: float) -> list[Any]:
    def make(i: int) -> Any:
        @judge(f"s{i}")
        async def j(ctx: Context) -> Judgment:
            await anyio.sleep(delay)
            return PASS

        return j

    return [make(i) for i in range(n)]


# ---------------------------------------------------------------- references
async def ref_anyio(
    calls: list[tuple[Callable[[Context], Awaitable[Judgment]], Context]], cap: int
):
    limiter = anyio.CapacityLimiter(cap)
    out: list[Judgment] = []

    async def one(fn: Callable[[Context], Awaitable[Judgment]], ctx: Context) -> None:
        async with limiter:
            out.append(await fn(ctx))

    async with anyio.create_task_group() as tg:
        for fn, ctx in calls:
            tg.start_soon(one, fn, ctx)
    return out


async def ref_asyncio(
    calls: list[tuple[Callable[[Context], Awaitable[Judgment]], Context]], cap: int
) -> list[Judgment]:
    sem = asyncio.Semaphore(cap)

    async def one(fn: Callable[[Context], Awaitable[Judgment]], ctx: Context) -> Judgment:
        async with sem:
            return await fn(ctx)

    return await asyncio.gather(*(one(fn, ctx) for fn, ctx in calls))


def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    gc.collect()
    start = time.perf_counter()
    anyio.run(fn)
    return time.perf_counter() - start


# ---------------------------------------------------------------- workloads
def workload_many(cases: int, judges: list[Any], cap: int) -> dict[str, Any]:
    """Submit every case at once into one evaluator and await all handles."""
    contexts = [Context(input=i) for i in range(cases)]
    calls = [(j, c) for c in contexts for j in judges]
    results: dict[str, Any] = {}

    async def engine_submit() -> None:
        async with Evaluator(judges, max_concurrency=cap) as ev:
            handles = [ev.submit(c) for c in contexts]
            for h in handles:
                await h

    async def engine_run() -> None:
        ev = Evaluator(judges, max_concurrency=cap)
        async for _ in ev.run(contexts, concurrency=max(1, cap // len(judges))):
            pass

    rss0 = rss_mib()
    results["engine_submit_s"] = timed(engine_submit)
    results["engine_run_s"] = timed(engine_run)
    results["engine_rss_growth_mib"] = round(rss_mib() - rss0, 1)
    results["anyio_s"] = timed(lambda: ref_anyio(calls, cap))
    results["asyncio_s"] = timed(lambda: ref_asyncio(calls, cap))
    return results


def w1() -> dict[str, Any]:
    n_cases, n_judges = 2000, 5
    r = workload_many(n_cases, instant_judges(n_judges), 100)
    return summarize("W1", r, n_cases * n_judges, engine_key="engine_submit_s")


def w2() -> dict[str, Any]:
    n_cases, n_judges = 1000, 5
    r = workload_many(n_cases, sleeping_judges(n_judges, 0.05), 100)
    out = summarize("W2", r, n_cases * n_judges, engine_key="engine_submit_s")
    ideal = n_cases * n_judges * 0.05 / 100
    out["ideal_s"] = ideal
    out["efficiency_engine"] = round(ideal / r["engine_submit_s"], 3)
    out["efficiency_engine_run"] = round(ideal / r["engine_run_s"], 3)
    out["efficiency_anyio"] = round(ideal / r["anyio_s"], 3)
    out["efficiency_asyncio"] = round(ideal / r["asyncio_s"], 3)
    return out


def w3() -> dict[str, Any]:
    n_cases, n_judges, cap = 20_000, 5, 100
    judges = instant_judges(n_judges)
    r: dict[str, Any] = {}

    def contexts() -> Any:
        return (Context(input=i) for i in range(n_cases))

    async def engine_run() -> None:
        ev = Evaluator(judges, max_concurrency=cap)
        async for _ in ev.run(contexts(), concurrency=cap // n_judges):
            pass

    rss0 = rss_mib()
    r["engine_run_s"] = timed(engine_run)
    r["engine_rss_growth_mib"] = round(rss_mib() - rss0, 1)
    calls = [(j, c) for c in contexts() for j in judges]
    rss1 = rss_mib()
    r["anyio_s"] = timed(lambda: ref_anyio(calls, cap))
    r["anyio_rss_growth_mib"] = round(rss_mib() - rss1, 1)
    r["asyncio_s"] = timed(lambda: ref_asyncio(calls, cap))
    return summarize("W3", r, n_cases * n_judges, engine_key="engine_run_s")


def w5() -> dict[str, Any]:
    n_cases, cap = 200, 100

    def member(name: str, delay: float, verdict: Judgment) -> Any:
        @judge(name)
        async def j(ctx: Context) -> Judgment:
            await anyio.sleep(delay)
            return verdict

        return j

    fast = [member(f"cheap{i}", 0.02, PASS) for i in range(4)] + [member("reject", 0.005, FAIL)]
    expensive = member("expensive", 1.0, PASS)
    cascade = Cascade(
        [
            Tier("cheap", Jury(fast), TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("expensive", expensive, TierPolicy.FINAL),
        ]
    )
    contexts = [Context(input=i) for i in range(n_cases)]
    r: dict[str, Any] = {}

    async def engine() -> None:
        async with Evaluator(cascade, max_concurrency=cap) as ev:
            handles = [ev.submit(c) for c in contexts]
            for h in handles:
                v = await h.verdict()
                assert v.judgment.status == "fail"

    async def hand_anyio() -> None:
        limiter = anyio.CapacityLimiter(cap)

        async def case(ctx: Context) -> None:
            failed = False
            async with anyio.create_task_group() as tg:

                async def one(fn: Any) -> None:
                    nonlocal failed
                    async with limiter:
                        j = await fn(ctx)
                    if j.status == "fail":
                        failed = True
                        tg.cancel_scope.cancel()

                for fn in fast:
                    tg.start_soon(one, fn)
            if not failed:
                async with limiter:
                    await expensive(ctx)

        async with anyio.create_task_group() as tg:
            for c in contexts:
                tg.start_soon(case, c)

    rss0 = rss_mib()
    r["engine_s"] = timed(engine)
    r["engine_rss_growth_mib"] = round(rss_mib() - rss0, 1)
    r["anyio_s"] = timed(hand_anyio)
    r["asyncio_s"] = None
    out = summarize("W5", r, n_cases * 5, engine_key="engine_s")
    out["no_short_circuit_floor_s"] = round(n_cases * 1.0 / cap, 2)
    return out


def summarize(name: str, r: dict[str, Any], judgments: int, *, engine_key: str) -> dict[str, Any]:
    eng = r[engine_key]
    out: dict[str, Any] = {"workload": name, "judgments": judgments}
    out.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
    out["engine_us_per_judgment"] = round(eng / judgments * 1e6, 2)
    out["anyio_us_per_judgment"] = round(r["anyio_s"] / judgments * 1e6, 2)
    if r.get("asyncio_s"):
        out["asyncio_us_per_judgment"] = round(r["asyncio_s"] / judgments * 1e6, 2)
        out["ratio_vs_asyncio"] = round(eng / r["asyncio_s"], 3)
    out["ratio_vs_anyio"] = round(eng / r["anyio_s"], 3)
    out["peak_rss_mib"] = round(rss_mib(), 1)
    return out


WORKLOADS: dict[str, Callable[[], dict[str, Any]]] = {"W1": w1, "W2": w2, "W3": w3, "W5": w5}


def main() -> None:
    """Run each requested workload in its own subprocess and print its JSON line."""
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(WORKLOADS[sys.argv[2]]()), flush=True)
        return
    names = sys.argv[1:] or list(WORKLOADS)
    for name in names:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", name], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            print(json.dumps({"workload": name, "error": proc.stderr[-2000:]}), flush=True)
        else:
            print(proc.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()

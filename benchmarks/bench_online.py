"""Online evaluation benchmark (issue 21): what ``offer()`` adds to a request handler.

Run: ``uv run python benchmarks/bench_online.py [--rate 5000] [--seconds 10] [--capacity 500]``.

A paced load generator calls a request handler ``rate`` times per second for ``seconds``
seconds, in the same process as a `BackgroundEvaluator` whose judge is an LLM judge over a
loopback `FakeModelServer`: ``workers`` concurrent evaluations of ``latency`` seconds each,
i.e. ``capacity`` evaluations per second, ten times fewer than the traffic by default. Three
handlers are timed in the same run (nanosecond clock around the handler body):

* ``noop``: a handler that does nothing (the timer's own cost: the floor);
* ``offer``: a handler that offers the exchange to the background evaluator;
* ``awaited``: a handler that awaits a 3-judge jury of instant judges (today's awaited path,
  the baseline to beat), run at the same pace.

Prints one JSON line per handler (p50/p99/max microseconds, added p99 over ``noop``) and one
for the background evaluator (offered, accepted, shed, completed, cancelled, backlog high-water
mark, peak RSS). Target: ``offer`` adds < 50 µs at p99.

``--http`` measures the service instead: a FastAPI app on uvicorn in a child process (with its
background evaluator and the fake model server), loaded over HTTP from this process by
``--connections`` concurrent clients posting ``/chat`` for ``--seconds``, while one more
client polls ``/health``; prints ``/health`` p50/p99 in milliseconds and the service's
counters. Target: ``/health`` p99 < 10 ms while the judges shed load.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
from collections.abc import Awaitable, Callable
from time import perf_counter, perf_counter_ns
from typing import Any

import anyio

from agentjudge import BackgroundEvaluator, CorrectnessJudge, Evaluator, Jury
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse, ScriptedJudge

Handler = Callable[[int], Awaitable[None]]


def percentiles(samples_ns: list[int]) -> dict[str, float]:
    """p50 / p99 / max of the samples, in microseconds."""
    ordered = sorted(samples_ns)
    if not ordered:
        return {"p50_us": 0.0, "p99_us": 0.0, "max_us": 0.0}
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "p50_us": round(statistics.median(ordered) / 1000, 2),
        "p99_us": round(p99 / 1000, 2),
        "max_us": round(ordered[-1] / 1000, 2),
    }


async def paced(handler: Handler, rate: float, seconds: float) -> list[int]:
    """Call ``handler`` ``rate`` times per second for ``seconds``, timing each call (ns)."""
    samples: list[int] = []
    tick = 0.01  # release the calls due every 10 ms together
    per_tick = rate * tick
    start = perf_counter()
    due = 0.0
    i = 0
    while perf_counter() - start < seconds:
        due += per_tick
        while i < int(due):
            began = perf_counter_ns()
            await handler(i)
            samples.append(perf_counter_ns() - began)
            i += 1
        next_tick = start + (due / per_tick) * tick
        await anyio.sleep(max(0.0, next_tick - perf_counter()))
    return samples


def peak_rss_mib() -> float:
    """Peak resident set size of this process, MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


async def bench_offer(args: argparse.Namespace, background: BackgroundEvaluator) -> list[int]:
    async def handler(i: int) -> None:
        background.offer(input=f"question {i}", output=f"answer {i}", key=f"trace-{i}")

    return await paced(handler, args.rate, args.seconds)


async def bench_awaited(args: argparse.Namespace) -> list[int]:
    jury = Jury([ScriptedJudge(True, name=f"j{k}") for k in range(3)])
    evaluator = Evaluator(jury)

    async def handler(i: int) -> None:
        await evaluator.verdict(input=f"question {i}", output=f"answer {i}")

    return await paced(handler, args.rate, args.seconds)


async def bench_noop(args: argparse.Namespace) -> list[int]:
    async def handler(i: int) -> None:
        return None

    return await paced(handler, args.rate, args.seconds)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run the three handlers and the background evaluator; the JSON rows."""
    rows: list[dict[str, Any]] = []
    noop = percentiles(await bench_noop(args))
    rows.append({"handler": "noop", **noop})
    workers = max(1, round(args.capacity * args.latency))
    answer = FakeResponse(text="Answer: YES\nReasoning: fine", latency=args.latency)
    async with (
        FakeModelServer(default=answer) as server,
        OpenAIChat("judge", base_url=server.base_url, api_key="bench") as model,
    ):
        evaluator = Evaluator(CorrectnessJudge(model), max_concurrency=workers, timeout=30)
        background = evaluator.background(
            max_backlog=args.backlog, workers=workers, drain_timeout=args.drain
        )
        async with background:
            offer = percentiles(await bench_offer(args, background))
            during = background.statistics()
        stats = background.statistics()
    rows.append({"handler": "offer", **offer, "added_p99_us": _added(offer, noop)})
    awaited = percentiles(await bench_awaited(args))
    rows.append({"handler": "awaited_jury_3", **awaited, "added_p99_us": _added(awaited, noop)})
    rows.append(
        {
            "background": True,
            "rate": args.rate,
            "seconds": args.seconds,
            "capacity_per_s": args.capacity,
            "workers": workers,
            "offered": stats["offered"],
            "accepted": stats["accepted"],
            "shed": stats["shed"],
            "completed_during_load": during["completed"],
            "completed": stats["completed"],
            "errored": stats["errored"],
            "cancelled": stats["cancelled"],
            "backlog_high_water": stats["backlog_high_water"],
            "peak_rss_mib": peak_rss_mib(),
            "accounted": stats["offered"]
            == sum(stats[k] for k in ("sampled_out", "shed", "completed", "errored", "cancelled")),
        }
    )
    return rows


def _added(row: dict[str, float], noop: dict[str, float]) -> float:
    return round(row["p99_us"] - noop["p99_us"], 2)


def make_service(args: argparse.Namespace) -> Any:
    """The FastAPI app of ``--http`` (served in the child process)."""
    from contextlib import AsyncExitStack, asynccontextmanager

    from fastapi import FastAPI

    workers = max(1, round(args.capacity * args.latency))
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        answer = FakeResponse(text="Answer: YES\nReasoning: fine", latency=args.latency)
        async with AsyncExitStack() as stack:
            server = await stack.enter_async_context(FakeModelServer(default=answer))
            model = await stack.enter_async_context(
                OpenAIChat("judge", base_url=server.base_url, api_key="bench")
            )
            evaluator = Evaluator(CorrectnessJudge(model), max_concurrency=workers, timeout=30)
            background = evaluator.background(
                max_backlog=args.backlog,
                workers=workers,
                drain_timeout=args.drain,
                sample_rate=args.sample_rate,
            )
            state["background"] = background
            await stack.enter_async_context(background)
            yield

    app = FastAPI(lifespan=lifespan)

    @app.post("/chat")
    async def chat(body: dict[str, str]) -> dict[str, str]:
        answer = f"echo: {body['q']}"
        state["background"].offer(input=body["q"], output=answer, key=body["q"])
        return {"answer": answer}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        return dict(state["background"].statistics())

    return app


def serve(args: argparse.Namespace) -> None:
    """Child process of ``--http``: serve the app on ``--port``."""
    import uvicorn

    uvicorn.run(make_service(args), host="127.0.0.1", port=args.port, log_level="warning")


async def http_load(args: argparse.Namespace) -> dict[str, Any]:
    """Parent process of ``--http``: start the service, load it, poll /health."""
    import socket
    import subprocess
    import sys

    import aiohttp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    knobs = ("capacity", "latency", "backlog", "drain", "sample_rate")
    forwarded = [f"--{k.replace('_', '-')}={getattr(args, k)}" for k in knobs]
    child = subprocess.Popen([sys.executable, __file__, "--serve", f"--port={port}", *forwarded])
    base = f"http://127.0.0.1:{port}"
    health_ms: list[float] = []
    sent = 0
    try:
        connector = aiohttp.TCPConnector(limit=args.connections + 1)
        async with aiohttp.ClientSession(base, connector=connector) as client:
            with anyio.fail_after(30):
                while True:
                    try:
                        async with client.get("/health") as r:
                            await r.read()
                        break
                    except aiohttp.ClientError:
                        await anyio.sleep(0.1)
            stop = perf_counter() + args.seconds

            async def poster() -> None:
                nonlocal sent
                while perf_counter() < stop:
                    async with client.post("/chat", json={"q": f"q{sent}"}) as r:
                        await r.read()
                    sent += 1

            async def prober() -> None:
                async with aiohttp.ClientSession(base) as own:
                    while perf_counter() < stop:
                        began = perf_counter()
                        async with own.get("/health") as r:
                            await r.read()
                        health_ms.append((perf_counter() - began) * 1000)
                        await anyio.sleep(0.01)

            async with anyio.create_task_group() as tg:
                for _ in range(args.connections):
                    tg.start_soon(poster)
                tg.start_soon(prober)
            async with client.get("/stats") as r:
                stats = await r.json()
    finally:
        child.terminate()
        child.wait(timeout=60)
    ordered = sorted(health_ms)
    return {
        "http": True,
        "sample_rate": args.sample_rate,
        "requests_per_s": round(sent / args.seconds, 1),
        "health_n": len(ordered),
        "health_p50_ms": round(statistics.median(ordered), 2) if ordered else None,
        "health_p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2)
        if ordered
        else None,
        **{k: stats[k] for k in ("offered", "accepted", "shed", "completed", "backlog_high_water")},
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rate", type=float, default=5000.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="load duration per handler")
    parser.add_argument("--capacity", type=float, default=500.0, help="evaluations per second")
    parser.add_argument("--latency", type=float, default=0.1, help="model latency, seconds")
    parser.add_argument("--backlog", type=int, default=1000, help="max_backlog")
    parser.add_argument("--drain", type=float, default=5.0, help="drain_timeout, seconds")
    parser.add_argument("--sample-rate", type=float, default=1.0, help="--http: sample_rate")
    parser.add_argument("--http", action="store_true", help="measure /health of a real service")
    parser.add_argument("--connections", type=int, default=32, help="--http: concurrent posters")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark and print one JSON line per row."""
    args = parse(argv)
    if args.serve:
        serve(args)
        return []
    rows = [anyio.run(http_load, args)] if args.http else anyio.run(run, args)
    for row in rows:
        print(json.dumps(row))
    return rows


if __name__ == "__main__":
    main()

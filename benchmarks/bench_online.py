"""Online evaluation benchmark (issue 21): what ``offer()`` adds to a request handler.

Run: ``uv run python benchmarks/bench_online.py [--rate 5000] [--seconds 10] [--capacity 500]``.

A paced load generator calls a request handler ``rate`` times per second for ``seconds``
seconds, in the same process as a `BackgroundEvaluator` whose judge is an LLM judge over a
`FakeModelServer` in a child process of its own (``--model-serve``): ``workers`` concurrent
evaluations of ``latency`` seconds each under the server's rate limit of ``capacity`` requests
per second, i.e. at most ``capacity`` evaluations per second, ten times fewer than the traffic
by default. Three handlers are timed in the same run (nanosecond clock around the handler body):

* ``noop``: a handler that does nothing (the timer's own cost: the floor);
* ``offer``: a handler that offers the exchange to the background evaluator;
* ``awaited``: a handler that awaits a 3-judge jury of instant judges (today's awaited path,
  the baseline to beat), run at the same pace.

Prints one JSON line per handler (p50/p99/max microseconds, added p99 over ``noop``) and one
for the background evaluator (offered, accepted, shed, completed, cancelled, backlog high-water
mark, peak RSS, the model server's requests and throttled requests). Target: ``offer`` adds
< 50 µs at p99.

``--http`` measures the service instead: a FastAPI app on uvicorn in a child process (with its
background evaluator and the fake model server), loaded over HTTP from this process by
``--connections`` concurrent clients posting ``/chat`` for ``--seconds``, while one more
client polls ``/health``; prints ``/health`` p50/p99 in milliseconds and the service's
counters. Target: ``/health`` p99 < 10 ms while the judges shed load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import selectors
import signal
import statistics
from collections.abc import Awaitable, Callable
from time import perf_counter, perf_counter_ns, process_time, thread_time
from typing import Any

import anyio

from agentjudge import BackgroundEvaluator, CorrectnessJudge, Evaluator, Jury
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeRateLimit, FakeResponse, ScriptedJudge

Handler = Callable[[int], Awaitable[None]]
TERMINAL = ("sampled_out", "shed", "completed", "errored", "cancelled")


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


class PassTimer(selectors.DefaultSelector):
    """A selector timing each pass through the asyncio loop in this thread's CPU time.

    A pass is the work between two ``select`` calls: every callback ready in it. A request
    handler ready in a pass waits for all of them, so the longest passes are what the
    background work can add to a request. CPU time, not wall time: a pass that waited for a
    core counts only its own work. Recording while ``measuring`` is True.
    """

    def __init__(self) -> None:
        super().__init__()
        self.measuring = False
        self.passes_ms: list[float] = []
        self._returned = thread_time()
        self._armed = False  # measuring when the pass began (not the one in progress)

    def select(self, timeout: float | None = None) -> Any:
        if self._armed and self.measuring:
            self.passes_ms.append((thread_time() - self._returned) * 1000)
        try:
            return super().select(timeout)
        finally:
            self._returned = thread_time()
            self._armed = self.measuring

    def summary(self) -> dict[str, float]:
        """Passes recorded, and their CPU milliseconds at p50 / p99 / max."""
        ordered = sorted(self.passes_ms) or [0.0]
        return {
            "loop_passes": len(self.passes_ms),
            "pass_cpu_p50_ms": round(statistics.median(ordered), 3),
            "pass_cpu_p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
            "pass_cpu_max_ms": round(ordered[-1], 3),
        }


PASSES = PassTimer()
"""The in-process benchmark's loop selector (see `main`)."""


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
    port = _free_port()
    model = _start([__file__, "--model-serve", f"--port={port}", *_model_knobs(args)])
    try:
        url = model_url(model)
        # the client's own limit (16 by default) would cap the judges at 160 evaluations/s
        client_options = {"max_concurrency": workers}
        async with OpenAIChat("judge", base_url=url, api_key="bench", **client_options) as client:
            evaluator = Evaluator(CorrectnessJudge(client), max_concurrency=workers, timeout=30)
            background = evaluator.background(
                max_backlog=args.backlog, workers=workers, drain_timeout=args.drain
            )
            async with background:
                cpu = process_time()
                PASSES.measuring = True
                offer = percentiles(await bench_offer(args, background))
                PASSES.measuring = False
                cpu = process_time() - cpu
                during = background.statistics()
            stats = background.statistics()
        model.send_signal(signal.SIGTERM)
        served = json.loads(model.communicate(timeout=60)[0].strip().splitlines()[-1])
    finally:
        _stop(model)
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
            "model_requests": served["requests"],
            "model_throttled": served["throttled"],
            "offered": stats["offered"],
            "accepted": stats["accepted"],
            "shed": stats["shed"],
            "completed_during_load": during["completed"],
            # this process's CPU seconds during the load: far below `seconds`, it waited for
            # a core (the judges' throughput then says more about the machine than the code)
            "cpu_s_during_load": round(cpu, 2),
            **PASSES.summary(),
            "completed": stats["completed"],
            "errored": stats["errored"],
            "cancelled": stats["cancelled"],
            "backlog_high_water": stats["backlog_high_water"],
            "peak_rss_mib": peak_rss_mib(),
            "accounted": stats["offered"] == sum(stats[k] for k in TERMINAL),
        }
    )
    return rows


def _added(row: dict[str, float], noop: dict[str, float]) -> float:
    return round(row["p99_us"] - noop["p99_us"], 2)


def _model_knobs(args: argparse.Namespace) -> list[str]:
    return [f"--latency={args.latency}", f"--capacity={args.capacity}"]


def serve_model(args: argparse.Namespace) -> None:
    """``--model-serve``: the in-process benchmark's model, in a child process of its own.

    A `FakeModelServer` answering after ``--latency`` seconds under a provider-like rate limit
    of ``--capacity`` requests per second (so the judges can do at most that many evaluations
    per second). Prints its base URL (as ``python -m agentjudge.testing serve`` does), serves
    until SIGTERM, then prints ``{"requests": ..., "throttled": ...}``.
    """

    async def main() -> None:
        workers = max(1, round(args.capacity * args.latency))
        answer = FakeResponse(text="Answer: YES\nReasoning: fine", latency=args.latency)
        limit = FakeRateLimit(rps=args.capacity, burst=workers)  # the provider's limit
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async with FakeModelServer(default=answer, rate_limit=limit, port=args.port) as server:
                print(f"bench model server: base URL {server.base_url}", flush=True)
                async for _ in signals:
                    break
        print(json.dumps({"requests": len(server.requests), "throttled": server.throttled}))

    anyio.run(main)


def make_service(args: argparse.Namespace) -> Any:
    """The FastAPI app of ``--http`` (served in the service's child process).

    Its judge is an LLM judge over the model server at ``--model-url`` (another process: the
    model is not the service). Leaving the lifespan (SIGTERM) drains the background evaluator
    and prints its final counters and the peak RSS as one JSON line on stdout.
    """
    from contextlib import AsyncExitStack, asynccontextmanager

    from fastapi import FastAPI

    workers = max(1, round(args.capacity * args.latency))
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with AsyncExitStack() as stack:
            # entered first, closed last: its connections are built before the first request
            model = await stack.enter_async_context(
                OpenAIChat("judge", base_url=args.model_url, api_key="bench")
            )
            evaluator = Evaluator(CorrectnessJudge(model), max_concurrency=workers, timeout=30)
            background = evaluator.background(
                max_backlog=args.backlog,
                workers=workers,
                drain_timeout=args.drain,
                sample_rate=args.sample_rate,
            )
            state["background"] = background
            state["rss_before"] = peak_rss_mib()
            async with background:
                yield
        final = {**background.statistics(), "rss_before_mib": state["rss_before"]}
        print(json.dumps({**final, "peak_rss_mib": peak_rss_mib()}), flush=True)

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
    """The service's child process of ``--http``: serve the app on ``--port``."""
    import uvicorn

    uvicorn.run(
        make_service(args), host="127.0.0.1", port=args.port, log_level="warning", access_log=False
    )


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(argv: list[str], *, stdin: bool = False) -> Any:
    """A child process of this interpreter with its stdout (and stdin) piped (text)."""
    import subprocess
    import sys

    return subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE if stdin else None,
        text=True,
    )


def _stop(child: Any) -> None:
    """Terminate ``child`` if it still runs, wait for it and close its pipes."""
    if child.poll() is None:
        child.terminate()
    child.wait(timeout=60)
    for pipe in (child.stdin, child.stdout):
        if pipe is not None and not pipe.closed:
            pipe.close()


def start_model_server(latency: float, port: int = 0) -> Any:
    """``python -m agentjudge.testing serve`` in a child process (see `model_url`)."""
    return _start(
        [
            "-m",
            "agentjudge.testing",
            "serve",
            f"--port={port}",
            f"--latency={latency}",
            "--answer=Answer: YES\nReasoning: fine",
        ]
    )


def model_url(child: Any) -> str:
    """Wait for the model server ``child`` to listen; its base URL."""
    first = child.stdout.readline()  # "agentjudge fake model server: base URL http://..."
    if "base URL " not in first:
        child.kill()
        raise RuntimeError(f"the fake model server did not start: {first!r}")
    return str(first.split("base URL ", 1)[1].strip())


async def paced_posts(client: Any, rate: float, seconds: float) -> int:
    """POST ``/chat`` ``rate`` times per second for ``seconds`` (open loop); how many."""
    sent = 0

    async def post(i: int) -> None:
        async with client.post("/chat", json={"q": f"q{i}"}) as r:
            await r.read()

    async with anyio.create_task_group() as tg:
        start = perf_counter()
        while (elapsed := perf_counter() - start) < seconds:
            while sent < int(elapsed * rate):
                tg.start_soon(post, sent)
                sent += 1
            await anyio.sleep(0.005)
    return sent


SCHED_IDLE = 5
"""The scheduling policy number of SCHED_IDLE (``os.SCHED_IDLE`` on Linux)."""


def runs_at_normal_priority(stat: bytes) -> bool:
    """Whether a ``/proc/<pid>/stat`` text says running or ready to run, and not SCHED_IDLE."""
    fields = stat[stat.rfind(b")") + 2 :].split()  # from field 3 (state) on
    return fields[0] == b"R" and int(fields[38]) != SCHED_IDLE  # field 41: the policy


def runnable() -> int:
    """Processes running or ready to run on the machine now, at a normal priority (Linux).

    A process whose scheduling policy is SCHED_IDLE is left out: it runs only on a core nothing
    else wants, so it cannot delay this benchmark's processes (`make test` runs its parallel part
    that way while the timing tests run). Threads are not counted, only each process's main one.
    One scan reads every ``/proc/<pid>/stat``: a few ms with ~200 processes.
    """
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                count += runs_at_normal_priority(stat.read())
        except OSError:  # gone since the listing, or not ours to read
            continue
    return count


async def count_runnable(into: list[int], every: float = 0.2) -> None:
    """Append `runnable` to ``into`` every ``every`` seconds until cancelled."""
    while True:
        into.append(runnable())
        await anyio.sleep(every)


async def wait_until_serving(client: Any) -> None:
    """Poll ``/health`` until the service answers (60 s at most)."""
    import aiohttp

    with anyio.fail_after(60):
        while True:
            try:
                async with client.get("/health") as r:
                    await r.read()
                return
            except aiohttp.ClientError:
                await anyio.sleep(0.05)


async def http_load(args: argparse.Namespace) -> dict[str, Any]:
    """Parent process of ``--http``: start the model and the service, load it, probe /health.

    The model server and the service start together (the model's port is chosen first); the
    /health prober is a process of its own (``_health_probe.py``), started before the load so
    its first probes warm the service up; only its samples taken during the load are kept.
    """
    from pathlib import Path

    import aiohttp

    model_port, port = _free_port(), _free_port()
    model = start_model_server(args.latency, model_port)
    knobs = ("latency", "backlog", "drain", "sample_rate")
    forwarded = [f"--{k.replace('_', '-')}={getattr(args, k)}" for k in knobs]
    forwarded.append(f"--capacity={args.http_capacity}")
    url = f"http://127.0.0.1:{model_port}/v1"
    service = _start([__file__, "--serve", f"--port={port}", f"--model-url={url}", *forwarded])
    prober = None
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as client:
            await wait_until_serving(client)
            if model_url(model) != url:
                raise RuntimeError(f"the fake model server is not at {url}")
            probe_script = str(Path(__file__).with_name("_health_probe.py"))
            prober = _start([probe_script, "127.0.0.1", str(port), str(args.every)], stdin=True)
            prober.stdout.readline()  # "ready"
            await anyio.sleep(args.warmup)  # its first probes build FastAPI's caches
            counts: list[int] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(count_runnable, counts)
                began = perf_counter()
                sent = await paced_posts(client, args.http_rate, args.seconds)
                ended = perf_counter()
                tg.cancel_scope.cancel()
            prober.stdin.close()
            probes = json.loads(prober.stdout.readline())
            async with client.get("/stats") as r:
                during = await r.json()
        service.send_signal(signal.SIGTERM)  # uvicorn's graceful shutdown: the lifespan drains
        out, _ = service.communicate(timeout=args.drain + 60)
        final = json.loads(out.strip().splitlines()[-1])
    finally:
        for child in (service, model, prober):
            if child is not None:
                _stop(child)
    # no probe answered during the load (a starved machine): the load's length stands for it
    health = sorted(ms for at, ms in probes if began <= at < ended) or [(ended - began) * 1000]
    return {
        "http": True,
        "rate": args.http_rate,
        "seconds": args.seconds,
        "capacity_per_s": args.http_capacity,
        "sample_rate": args.sample_rate,
        "sent": sent,
        "runnable_mean": round(statistics.mean(counts), 2) if counts else 0.0,
        "health_n": len(health),
        "health_p50_ms": round(statistics.median(health), 2),
        "health_p99_ms": round(health[min(len(health) - 1, int(len(health) * 0.99))], 2),
        "health_max_ms": round(health[-1], 2),
        "during": {k: during[k] for k in ("offered", "accepted", "shed", "completed", "backlog")},
        **{k: final[k] for k in (*TERMINAL, "offered", "accepted", "backlog_high_water")},
        "rss_before_mib": final["rss_before_mib"],
        "peak_rss_mib": final["peak_rss_mib"],
        "accounted": final["offered"] == sum(final[k] for k in TERMINAL),
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
    parser.add_argument("--http-rate", type=float, default=200.0, help="--http: requests/s")
    parser.add_argument(
        "--http-capacity", type=float, default=20.0, help="--http: evaluations per second"
    )
    parser.add_argument("--warmup", type=float, default=0.5, help="--http: seconds of probes first")
    parser.add_argument("--every", type=float, default=0.01, help="--http: seconds between probes")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--model-url", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark and print one JSON line per row."""
    args = parse(argv)
    if args.serve or args.model_serve:
        (serve if args.serve else serve_model)(args)
        return []
    if args.http:
        rows = [anyio.run(http_load, args)]
    else:  # the loop's passes are timed (`PassTimer`)
        factory = {"loop_factory": lambda: asyncio.SelectorEventLoop(PASSES)}
        rows = anyio.run(run, args, backend="asyncio", backend_options=factory)
    for row in rows:
        print(json.dumps(row))
    return rows


if __name__ == "__main__":
    main()

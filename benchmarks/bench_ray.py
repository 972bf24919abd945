"""Ray backend benchmark: cases/s in process, with ``--workers 2`` and on Ray with 2 actors.

Run: ``uv run --extra ray python benchmarks/bench_ray.py [CASES]`` (needs ``agentjudge[ray]``).

* ``command``: a CPU-bound judge running a small real command per case (a Python interpreter
  compiling and running a short computation, like a tiny build or test step);
* ``python``: a CPU-bound judge in Python (about 10 ms of bytecode per case, holding the GIL);
* ``instant``: two instant judges on 2,000 cases: the per-case overhead of each path, and a
  check that the Ray run wrote the same rows as the in-process run; a 200-case Ray run
  separates the fixed cost of a run (starting the actors) from the marginal cost per case.

* ``w6`` (``--w6``: only this): W6 of ``bench_llm`` on Ray: 1,000 LLM-judge calls from 4
  actors (concurrency 25 each, 100 in all) against a fake server with a hidden limit of 50
  requests/s (burst 10, 20 ms latency), no limit configured in agentjudge: the actors' clients
  obey one adaptive controller in the run's broker. Targets: 0 errors, about 20 s from the
  first request to the last (the ideal is 20 s). Also the cost of one call to the broker's
  controller (admit + feedback), measured from the driver.

One local Ray instance (100 MB object store) is started first and its start-up time
reported; the Ray runs join it, as runs on an existing cluster do. Prints one JSON line per
measurement and a final summary line.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from agentjudge.harness import Suite, iter_rows, run_suite

HERE = Path(__file__).resolve().parent


def make_dataset(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            row = {"id": f"c{i:05d}", "input": f"q {i}", "expected": f"Q {i}"}
            handle.write(json.dumps(row) + "\n")


def untimed(out: Path) -> dict[str, Any]:
    rows = {}
    for row in iter_rows(out / "results.jsonl"):
        row.pop("duration_s")
        for r in row["results"]:
            r.pop("duration_s", None)
            r.pop("queued_s", None)
        rows[row["id"]] = row
    return rows


def measure(kind: str, mode: str, dataset: Path, out: Path, cases: int) -> dict[str, Any]:
    workers = 1 if mode == "in-process" else 2
    backend = "ray" if mode == "ray" else "local"
    suite = Suite(
        dataset=dataset,
        task="ray_subject.py:task",
        judges=f"ray_subject.py:{kind}_judges",
        base_dir=HERE,
        concurrency=8,
        workers=workers,
        backend=backend,
    )
    start = time.perf_counter()
    summary = anyio.run(lambda: run_suite(suite, out=out, overwrite=True))
    wall = time.perf_counter() - start
    assert summary.cases.total == cases and summary.cases.errors == 0
    result = {
        "judges": kind,
        "mode": mode,
        "cases": cases,
        "wall_s": round(wall, 3),
        "cases_per_s": round(cases / wall, 1),
        "ms_per_case": round(1000 * wall / cases, 3),
    }
    print(json.dumps(result), flush=True)
    return result


async def w6(folder: Path, actors: int = 4, total: int = 1000) -> dict[str, Any]:
    """W6 on Ray (see the module docs): one JSON line."""
    from bench_llm import ANSWER, LATENCY

    from agentjudge.testing import FakeModelServer, FakeRateLimit, FakeResponse

    dataset = folder / "w6.jsonl"
    with dataset.open("w", encoding="utf-8") as handle:  # ~3 KiB rows: 12 chunks for 4 actors
        for i in range(total):
            handle.write(json.dumps({"id": f"c{i:05d}", "input": f"q{i}", "pad": "x" * 3000}))
            handle.write("\n")
    limit = FakeRateLimit(rps=50.0, burst=10)
    answer = FakeResponse(text=ANSWER, latency=LATENCY)
    async with FakeModelServer(answer, rate_limit=limit) as server:
        os.environ["AGENTJUDGE_BENCH_URL"] = server.base_url  # here; the actors get it below
        suite = Suite(
            dataset=dataset,
            task="ray_subject.py:task",
            judges="ray_subject.py:w6_judges",
            base_dir=HERE,
            concurrency=100 // actors,
            judge_timeout=120.0,
            workers=actors,
            backend="ray",
            ray_runtime_env={"env_vars": {"AGENTJUDGE_BENCH_URL": server.base_url}},
        )
        start = time.perf_counter()
        summary = await run_suite(suite, out=folder / "w6", overwrite=True)
        wall = time.perf_counter() - start
        received = server.received
    errors = sum(
        r["judgment"]["status"] == "error"
        for row in iter_rows(folder / "w6" / "results.jsonl")
        for r in row["results"]
    )
    result = {
        "bench": "W6-ray",
        "actors": actors,
        "calls": total,
        "wall_s": round(wall, 2),
        "first_to_last_request_s": round(received[-1].time - received[0].time, 2),
        "ideal_s": total / 50.0,
        "errors": errors,
        "requests": len(received),
        "served_429": server.throttled,
        "share_429": round(server.throttled / max(len(received), 1), 4),
        "cases": summary.cases.total,
    }
    print(json.dumps(result), flush=True)
    return result


def broker_call_ms(calls: int = 500) -> float:
    """Milliseconds of one admit + feedback through the broker, from this process."""
    import ray

    from agentjudge.harness._ray_limits import LimitBroker

    broker = ray.remote(LimitBroker).options(num_cpus=0).remote({}, None)
    ray.get(broker.admit.remote("k", 100, 60.0))  # started
    broker.finished.remote("k")
    start = time.perf_counter()
    for _ in range(calls):
        ray.get(broker.admit.remote("k", 100, 60.0))
        broker.feedback.remote("k", 0.0, 200, {}, 0.0)
    ray.get(broker.state.remote("k"))  # every feedback delivered
    elapsed = time.perf_counter() - start
    ray.kill(broker)
    return round(1000 * elapsed / calls, 3)


def start_ray() -> float:
    """Start the local Ray instance the runs join; returns its start-up seconds."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    start = time.perf_counter()
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 << 20,
        _node_ip_address="127.0.0.1",
    )
    return time.perf_counter() - start


def main_w6() -> None:
    """Only W6 on Ray, and the broker's cost per call."""
    import ray

    ray_init = start_ray()
    with tempfile.TemporaryDirectory() as tmp:
        result = anyio.run(w6, Path(tmp))
    per_call = broker_call_ms()
    ray.shutdown()
    met = result["errors"] == 0 and result["first_to_last_request_s"] <= 21.0
    print(json.dumps({"ray_init_s": round(ray_init, 2), "broker_call_ms": per_call, "met": met}))


def main() -> None:
    if "--w6" in sys.argv:
        main_w6()
        return
    heavy = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    import ray

    ray_init = start_ray()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind, cases in (("command", heavy), ("python", heavy), ("instant", 2000)):
            dataset = folder / f"{kind}.jsonl"
            make_dataset(dataset, cases)
            for mode in ("in-process", "workers-2", "ray"):
                out = folder / f"{kind}-{mode}"
                results[f"{kind}/{mode}"] = measure(kind, mode, dataset, out, cases)
        same = untimed(folder / "instant-in-process") == untimed(folder / "instant-ray")
        # The marginal cost of a case on Ray, without the actors' start-up: 200 vs 2,000 cases.
        make_dataset(folder / "small.jsonl", 200)
        small = measure("instant", "ray", folder / "small.jsonl", folder / "small", 200)
        marginal = (results["instant/ray"]["wall_s"] - small["wall_s"]) / 1800 * 1000
    ray.shutdown()
    instant_here = results["instant/in-process"]["ms_per_case"]
    print(
        json.dumps(
            {
                "ray_init_s": round(ray_init, 2),
                "instant_rows_identical_in_process_vs_ray": same,
                "ray_overhead_ms_per_instant_case": round(
                    results["instant/ray"]["ms_per_case"] - instant_here, 3
                ),
                "ray_marginal_ms_per_instant_case": round(marginal, 3),
                "ray_fixed_s_per_run": round(small["wall_s"] - 200 * marginal / 1000, 2),
                "speedup_ray_over_in_process": {
                    kind: round(
                        results[f"{kind}/in-process"]["wall_s"] / results[f"{kind}/ray"]["wall_s"],
                        2,
                    )
                    for kind in ("command", "python", "instant")
                },
            }
        )
    )


if __name__ == "__main__":
    main()

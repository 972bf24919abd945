"""Harness benchmark: a 100,000-row dataset x 3 instant judges, through `run_suite`.

Run: ``make bench`` or ``uv run python benchmarks/bench_harness.py [ROWS]``.

Targets (issue 7): peak RSS < 150 MiB and >= 20,000 cases/s. Each measurement runs in a fresh
subprocess so its peak RSS is its own:

* ``harness``: `run_suite` end to end (dataset validation pass, task, Evaluator verdict with a
  3-judge majority jury, results.jsonl, summary.json with aggregates and intervals);
* ``harness-workers``: the same with ``workers`` = one per CPU (worker processes run the cases,
  this process reads the dataset and writes the results);
* ``reference``: the same file read / judge / write loop written by hand with plain anyio and
  json (no validation, no Context, no engine, no aggregates): the floor for this work in Python.

Prints one JSON line per measurement and a final line with the ratio harness/reference.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

ROWS = 100_000
CONCURRENCY = 16


def rss_mib() -> float:
    """Peak RSS of this process so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_dataset(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            row = {
                "id": f"case-{i:06d}",
                "input": f"question {i}",
                "expected": f"QUESTION {i}",
                "metadata": {"tags": ["even" if i % 2 == 0 else "odd"]},
            }
            handle.write(json.dumps(row) + "\n")


# ----------------------------------------------------------------------------- harness
def harness(dataset: Path, out: Path, workers: int = 1) -> dict[str, Any]:
    from harness_subject import JUDGES, task

    from agentjudge.harness import Suite, run_suite

    suite = Suite(
        dataset=dataset, concurrency=CONCURRENCY, workers=workers, gates=["exact.mean>=0.99"]
    )
    started = time.perf_counter()
    summary = anyio.run(lambda: run_suite(suite, out=out, overwrite=True, task=task, judges=JUDGES))
    wall = time.perf_counter() - started
    assert summary.cases.total == summary.dataset.rows
    assert summary.passed, summary.gates
    return {"wall_s": round(wall, 3), "cases": summary.cases.total, "workers": workers}


# ----------------------------------------------------------------------------- reference
def reference(dataset: Path, out: Path) -> dict[str, Any]:
    """Read, judge with three async functions, write: by hand, with anyio and json only."""
    passed = {"status": "pass", "reasoning": "ok"}
    failed = {"status": "fail", "reasoning": "no"}
    scored = {"status": "pass", "score": 0.75, "reasoning": "score"}

    async def exact(row: dict[str, Any], output: str) -> dict[str, Any]:
        return passed if output == row["expected"] else failed

    async def length(row: dict[str, Any], output: str) -> dict[str, Any]:
        return scored

    async def always(row: dict[str, Any], output: str) -> dict[str, Any]:
        return passed

    judges = [("exact", exact), ("length", length), ("always", always)]
    encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

    async def main() -> int:
        count = 0
        out.mkdir(parents=True, exist_ok=True)
        source = dataset.open("rb")
        sink = (out / "results.jsonl").open("w", encoding="utf-8")
        try:
            while True:
                lines = await anyio.to_thread.run_sync(source.readlines, 1 << 20)
                if not lines:
                    return count
                batch = []
                for line in lines:
                    row = json.loads(line)
                    output = str(row["input"]).upper()
                    results = [
                        {"name": name, "judgment": await fn(row, output)} for name, fn in judges
                    ]
                    batch.append(
                        encode({"id": row["id"], "output": output, "results": results}) + "\n"
                    )
                count += len(batch)
                await anyio.to_thread.run_sync(sink.write, "".join(batch))
        finally:
            source.close()
            sink.close()

    started = time.perf_counter()
    count = anyio.run(main)
    return {"wall_s": round(time.perf_counter() - started, 3), "cases": count}


def workers_for_bench() -> int:
    """Worker processes for the parallel mode: one per CPU (at least 2, at most 8)."""
    return max(2, min(8, os.cpu_count() or 2))


def child(mode: str, dataset: Path, out: Path) -> None:
    baseline = rss_mib()
    if mode == "reference":
        result = reference(dataset, out)
    else:
        result = harness(dataset, out, 1 if mode == "harness" else workers_for_bench())
    result.update(
        bench="harness",
        mode=mode,
        cases_per_s=round(result["cases"] / result["wall_s"]),
        peak_rss_mib=round(rss_mib(), 1),
        rss_before_run_mib=round(baseline, 1),
    )
    if mode == "harness-workers":
        # The largest worker process's peak (ru_maxrss of the children that were waited for).
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        result["worker_peak_rss_mib"] = round(children, 1)
        result["total_rss_bound_mib"] = round(
            result["peak_rss_mib"] + result["workers"] * children, 1
        )
    print(json.dumps(result))


MODES = ("harness", "harness-workers", "reference")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in MODES:
        child(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
        return
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "data.jsonl"
        make_dataset(dataset, rows)
        outcome: dict[str, dict[str, Any]] = {}
        for mode in MODES:
            proc = subprocess.run(
                [sys.executable, __file__, mode, str(dataset), str(Path(tmp) / mode)],
                capture_output=True,
                text=True,
                check=True,
            )
            line = proc.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            outcome[mode] = json.loads(line)
    h, p, r = outcome["harness"], outcome["harness-workers"], outcome["reference"]
    largest = max(p["peak_rss_mib"], p["worker_peak_rss_mib"])
    print(
        json.dumps(
            {
                "bench": "harness",
                "rows": rows,
                "harness_cases_per_s": h["cases_per_s"],
                "harness_workers_cases_per_s": p["cases_per_s"],
                "workers": p["workers"],
                "reference_cases_per_s": r["cases_per_s"],
                "ratio_wall_harness_over_reference": round(h["wall_s"] / r["wall_s"], 2),
                "ratio_wall_harness_workers_over_reference": round(p["wall_s"] / r["wall_s"], 2),
                "harness_peak_rss_mib": h["peak_rss_mib"],
                "harness_workers_largest_process_rss_mib": largest,
                "targets": {"cases_per_s": 20_000, "peak_rss_mib": 150},
                "one_process_meets_targets": h["cases_per_s"] >= 20_000 and h["peak_rss_mib"] < 150,
                "workers_meet_targets": p["cases_per_s"] >= 20_000 and largest < 150,
            }
        )
    )


if __name__ == "__main__":
    main()

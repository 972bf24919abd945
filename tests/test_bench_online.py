"""The online benchmark runs end to end on a tiny load and accounts for every offer."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_online.py"
BOUND_MS = 10.0
"""The /health p99 the timing test asserts (the issue's target)."""
LOADED = 1.5
"""Runnable processes per core (ours included, idle priority ones not) above which a missed bound
is the machine's."""


def _load() -> ModuleType:
    """benchmarks/ is not a package: import the script by path."""
    spec = importlib.util.spec_from_file_location("bench_online", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_bench_online_smoke() -> None:
    """A 0.2 s run at 500 requests/s prints the three handlers and balanced counters."""
    bench = _load()
    # a short drain (was 1 s, spent in full: 5 workers cannot clear the backlog of 0.2 s at
    # 500/s): what it leaves is cancelled, and the counters must balance all the same
    args = ["--rate", "500", "--seconds", "0.2", "--capacity", "50", "--drain", "0.2"]
    rows = bench.main(args)
    handlers = [row.get("handler") for row in rows[:3]]
    assert handlers == ["noop", "offer", "awaited_jury_3"]
    background = rows[3]
    assert background["offered"] > 0 and background["accounted"] is True


@pytest.mark.timing
@pytest.mark.timeout(180)
def test_health_stays_fast_while_judges_ten_times_slower_than_traffic_shed_load() -> None:
    """Overload of the judges never reaches the request path: /health p99 < 10 ms (timing).

    A real service: FastAPI on uvicorn in a child process, offering every ``POST /chat`` to a
    background evaluator (``max_backlog=100``) whose LLM judge calls a `FakeModelServer` in a
    second child process (the model is not the service: it gets its own process).
    This process sends 200 requests/s for 3 s (open loop: the load the service can serve),
    while the judges can do 20 evaluations/s (2 workers x 100 ms), ten times fewer; a third
    child process probes ``GET /health`` every 10 ms on a connection of its own (about 250
    samples during the load; in this process it shared the load generator's event loop and
    measured that too). SIGTERM then stops the service, whose lifespan drains for at most
    0.2 s and reports the final counters.

    Asserted on every run: each request was offered once, the backlog never grew past its
    bound (high-water mark = 100, RSS grows by less than 32 MiB), most offers were shed, and
    every offer ended in exactly one counter.

    The one wall-clock assertion (why the test is marked ``timing`` and runs at a normal
    priority while the parallel part of ``make test`` runs at idle priority, SCHED_IDLE): the
    best ``/health`` p99 of up to three runs is below the issue's 10 ms. A bound that tight
    cannot be measured under foreign load: with 3.7 runnable processes per core, ``/health``
    of an *idle* service (no chat traffic, no judge) had a p99 of 8-13 ms here, the time the
    service and the prober wait for a core. So when a run misses it while the machine had more
    than ``LOADED`` runnable processes per core (sampled during the load, ours included, idle
    priority ones left out: they yield the core at once), the test is skipped with its
    numbers, as ``-m "not timing"`` would be (docs/reference/benchmarks.md has the
    measurements).
    """
    bench = _load()
    runs = []
    for _ in range(3):
        # Around the 3 s of load, only what it needs: 0.2 s of probes first (the first one builds
        # FastAPI's caches, ~10-16 ms, the next ones answer in 1-2 ms; only the probes during
        # the load count) and a 0.2 s drain (the judges finish ~4 evaluations and the rest of
        # the backlog is cancelled: both ways of ending are still counted). 0.5 s each before.
        row = bench.main(
            ["--http", "--seconds", "3", "--warmup", "0.2", "--backlog", "100", "--drain", "0.2"]
        )[0]
        assert row["offered"] == row["sent"] >= 500  # 200/s for 3 s, minus a slow start
        assert row["backlog_high_water"] == 100
        assert row["shed"] > row["offered"] // 2  # the judges take about a tenth
        assert row["accounted"] is True  # offered == sampled_out+shed+completed+errored+cancelled
        assert row["peak_rss_mib"] - row["rss_before_mib"] < 32
        runs.append(row)
        if row["health_p99_ms"] < BOUND_MS:
            return
        per_core = row["runnable_mean"] / (os.cpu_count() or 1)
        if per_core > LOADED:
            pytest.skip(
                f"machine too loaded to measure a {BOUND_MS} ms p99: {per_core:.1f} runnable "
                f"processes per core; /health p99s {[r['health_p99_ms'] for r in runs]} ms"
            )
    raise AssertionError(f"/health p99 >= {BOUND_MS} ms in {len(runs)} runs: {runs}")


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_the_load_count_leaves_out_idle_priority_processes() -> None:
    """A busy SCHED_IDLE process (as `make test` runs its parallel part) is not foreign load.

    The timing test above skips a missed bound only on a loaded machine: counting the idle
    priority work beside it would skip it on every `make test`.
    """
    bench = _load()
    assert bench.SCHED_IDLE == os.SCHED_IDLE
    spin = "import os\nos.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    spin += "print('idle', flush=True)\nwhile True: pass\n"
    proc = subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE)
    out = proc.stdout
    assert out is not None
    try:
        assert out.readline() == b"idle\n"
        stat = Path(f"/proc/{proc.pid}/stat").read_bytes()
        assert stat.split(b") ", 1)[1][:1] == b"R"  # spinning: running or ready
        assert not bench.runs_at_normal_priority(stat)
        # The same process at the normal policy (SCHED_OTHER, 0) in field 41 counts. (This
        # process's own stat would not do: `make test` runs this test at idle priority.)
        head, fields = stat.split(b") ", 1)
        normal = fields.split(b" ")
        assert normal[38] == b"5"
        normal[38] = b"0"
        assert bench.runs_at_normal_priority(head + b") " + b" ".join(normal))
    finally:
        proc.kill()
        proc.wait()
        out.close()

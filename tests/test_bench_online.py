"""The online benchmark runs end to end on a tiny load and accounts for every offer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_online.py"


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
    rows = bench.main(["--rate", "500", "--seconds", "0.2", "--capacity", "50", "--drain", "1"])
    handlers = [row.get("handler") for row in rows[:3]]
    assert handlers == ["noop", "offer", "awaited_jury_3"]
    background = rows[3]
    assert background["offered"] > 0 and background["accounted"] is True

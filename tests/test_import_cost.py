"""What `import agentjudge` and `agentjudge --help` load (issue 19.12): behaviour, not timing.

Both used to import pydantic models, httpx, aiohttp and jsonschema (0.4-0.7 s and 1.0-1.6 s);
every public name now loads its own subpackage on first use. Timings are in
``benchmarks/bench_llm.py --imports``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("httpx", "aiohttp", "httpx_aiohttp", "jsonschema", "pydantic", "anyio", "tenacity")


def _imported(*args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Top-level modules a fresh interpreter imported running ``python -X importtime ARGS``."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=60
    )
    modules = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return modules, proc


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "import agentjudge"],
        ["-m", "agentjudge", "--help"],
        ["-m", "agentjudge", "run", "-h"],
    ],
    ids=["import", "help", "run-help"],
)
def test_light_entry_points_import_no_heavy_dependency(args: list[str]) -> None:
    """The package import and the CLI's help load none of the HTTP, schema or model libraries."""
    modules, proc = _imported(*args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "agentjudge" in modules
    assert sorted(modules.intersection(HEAVY)) == []


def test_a_public_name_still_loads_on_first_use() -> None:
    """Touching a name imports what it needs; a subpackage is reachable as an attribute."""
    code = (
        "import sys, agentjudge\n"
        "assert 'pydantic' not in sys.modules\n"
        "assert agentjudge.Context is agentjudge.core.Context\n"
        "assert 'pydantic' in sys.modules and 'httpx' not in sys.modules\n"
        "from agentjudge.harness import Suite\n"
        "assert Suite.__module__ == 'agentjudge.harness._suite'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr

"""What `import agentjudge` and `agentjudge --help` load (issue 19.12): behaviour, not timing.

Both used to import pydantic models, httpx, aiohttp and jsonschema (0.4-0.7 s and 1.0-1.6 s);
every public name now loads its own subpackage on first use. Timings are in
``benchmarks/bench_llm.py --imports``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def _passes_in_a_fresh_interpreter(code: str) -> None:
    """Run ``code`` (its own asserts) with ``python -c``; fail with its stderr if it fails."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


# What loads on first use, checked step after step in ONE fresh interpreter (one per step
# cost ~0.5 s of CPU each, four of them). Each step is code with its own asserts; the steps run
# in this order, each in a namespace of its own, and a failing step is reported by its test while
# the later steps still run. A step's "not imported yet" asserts thus hold with every earlier
# step's modules loaded (stricter than alone), and each "imported now" assert follows the "not
# yet" assert of its own step, so it is the step that loaded the module.
FIRST_USE = {
    # A public name loads what it needs; the fake server loads without the evaluator.
    "public name": (
        "import sys, agentjudge\n"
        "assert 'pydantic' not in sys.modules\n"
        "assert agentjudge.Context is agentjudge.core.Context\n"
        "assert 'pydantic' in sys.modules and 'httpx' not in sys.modules\n"
        "from agentjudge.testing import FakeModelServer\n"
        "assert 'agentjudge.engine' not in sys.modules\n"
        "from agentjudge.testing import assert_passes\n"
        "assert 'agentjudge.engine' in sys.modules\n"
        "from agentjudge.harness import Suite\n"
        "assert Suite.__module__ == 'agentjudge.harness._suite'\n"
    ),
    # A worker process's or Ray actor's code loads no gate parser: its suite arrives pickled
    # (not validated again) and only the driver evaluates gates (issue 19.25: ~15 ms of CPU
    # per actor); a suite with gates still has them checked when it is made.
    "worker gates": (
        "import sys\n"
        "from agentjudge.harness._processes import serve_channel\n"
        "from agentjudge.harness import Suite\n"
        "assert 'agentjudge.harness._gates' not in sys.modules, 'the worker loaded the gates'\n"
        "Suite(dataset='data.jsonl', judges='judges.py:judges')\n"
        "assert 'agentjudge.harness._gates' not in sys.modules\n"
        "try:\n"
        "    Suite(dataset='data.jsonl', judges='judges.py:judges', gates=['pass_rat >= 1'])\n"
        "except ValueError as exc:\n"
        "    assert 'pass_rat' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('a gate naming no statistic was accepted')\n"
        "assert 'agentjudge.harness._gates' in sys.modules\n"
    ),
    "provider name": (
        "from agentjudge.models import _registry\n"
        "from agentjudge.harness._loading import names_model\n"
        "assert names_model('OpenAI:gpt-4o-mini')\n"
        "assert _registry._plugin_cache is None, 'entry points read'\n"
        "assert not names_model('task:answer')\n"
        "assert _registry._plugin_cache is not None\n"
    ),
    "packaging": (
        "import sys\n"
        "from agentjudge.judges import normalize_requirement\n"
        "assert 'packaging' not in sys.modules\n"
        "assert normalize_requirement('My_Pkg >= 1.0.0') == 'my-pkg>=1'\n"
        "assert 'packaging' in sys.modules\n"
    ),
    # Last: it sets OpenTelemetry's global provider.
    "telemetry": (
        "import sys\n"
        "from agentjudge.harness._telemetry import Telemetry\n"
        "assert Telemetry.create() is None\n"
        "assert 'opentelemetry.trace' not in sys.modules\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "assert Telemetry.create() is not None\n"
    ),
}
_STEPS = """
import json, sys, traceback
failed = {}
for name, code in json.loads(sys.argv[1]).items():
    try:
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
    except BaseException:
        failed[name] = traceback.format_exc()
print(json.dumps(failed))
"""
FIRST_USE_GROUP = pytest.mark.xdist_group("import-cost-first-use")


@pytest.fixture(scope="module")
def first_use_failures() -> dict[str, str]:
    """The `FIRST_USE` steps that failed in a fresh interpreter, with their tracebacks."""
    proc = subprocess.run(
        [sys.executable, "-c", _STEPS, json.dumps(FIRST_USE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    failures: dict[str, str] = json.loads(proc.stdout)
    return failures


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


@FIRST_USE_GROUP
def test_a_public_name_still_loads_on_first_use(first_use_failures: dict[str, str]) -> None:
    """Touching a name imports what it needs; a subpackage is reachable as an attribute. The
    fake server (``python -m agentjudge.testing serve``) loads without the evaluator."""
    assert "public name" not in first_use_failures, first_use_failures["public name"]


# A real ``python -m agentjudge ARGS`` whose interpreter writes, at exit, which of the modules
# a run needs only on some paths it imported (issue 19.25: ~0.5 s of CPU per CLI process).
_AT_EXIT_PROBE = """
import atexit, json, runpy, sys
OPTIONAL = {optional!r}
def _write():
    with open({out!r}, "w", encoding="utf-8") as f:
        json.dump(sorted(m for m in OPTIONAL if m in sys.modules), f)
atexit.register(_write)
sys.argv = ["agentjudge", *{args!r}]
runpy.run_module("agentjudge", run_name="__main__", alter_sys=True)
"""

HTTP_STACK = ("httpx", "aiohttp", "jsonschema")
"""What only model judges need (every CLI start paid ~0.5 s of CPU for it once)."""
OPTIONAL_MODULES = (
    "agentjudge.harness._report",
    "agentjudge.harness._agreement_report",
    "agentjudge.harness._case_report",
    "agentjudge.harness._calibrate",
    "agentjudge.calibration",
    "opentelemetry.trace",
    "agentjudge.harness._run",
    "agentjudge.engine",
    "agentjudge.judging",
    "agentjudge.core._context",
    "agentjudge.core._results",
    *HTTP_STACK,
    "tenacity",
)
RUNNING = [
    "agentjudge.core._context",
    "agentjudge.core._results",
    "agentjudge.engine",
    "agentjudge.harness._run",
    "agentjudge.judging",
]
"""What a run needs and ``agentjudge report`` does not (the end of the CLI used to import it;
the report imported the judges' runtime, asyncio included, for the mark of a user's frame, and
the case and result models, ~0.1 s of CPU, for annotations and ``agentjudge.core``'s eager
names)."""


def _suite(folder: Path) -> Path:
    """A two-case suite: a module task, a function judge, a gate."""
    (folder / "task.py").write_text("def answer(case):\n    return case.input\n", "utf-8")
    (folder / "judges.py").write_text("def same(ctx):\n    return ctx.output == 'a'\n", "utf-8")
    rows = [{"id": "1", "input": "a"}, {"id": "2", "input": "b"}]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    suite = folder / "agentjudge.toml"
    suite.write_text(
        'dataset = "data.jsonl"\ntask = "task:answer"\njudges = "judges:same"\n'
        'gates = ["same.mean>=0.5"]\n',
        "utf-8",
    )
    return suite


def _cli_imports(folder: Path, *args: str) -> list[str]:
    """Which `OPTIONAL_MODULES` ``python -m agentjudge ARGS`` (run in ``folder``) imported."""
    out = folder / "imported.json"
    code = _AT_EXIT_PROBE.format(optional=OPTIONAL_MODULES, out=str(out), args=list(args))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported: list[str] = json.loads(out.read_text("utf-8"))
    return imported


@pytest.fixture(scope="module")
def cli_imports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Which `OPTIONAL_MODULES` three programs imported: ``run --quiet`` and ``run`` of a suite
    with plain judges, then ``report`` of its results (each a fresh ``python -m agentjudge``)."""
    folder = tmp_path_factory.mktemp("cli-imports")
    suite = _suite(folder)
    return {
        "quiet": _cli_imports(folder, "run", str(suite), "--out", "out", "--quiet"),
        "loud": _cli_imports(folder, "run", str(suite), "--out", "out", "--overwrite"),
        "report": _cli_imports(folder, "report", "out"),
    }


CLI_GROUP = pytest.mark.xdist_group("import-cost-cli")


@CLI_GROUP
def test_cli_run_and_report_import_only_what_they_use(cli_imports: dict[str, list[str]]) -> None:
    """``run --quiet`` prints no report: neither it nor calibration (an uncalibrated suite) is
    imported; ``run`` imports the report to print it; ``report`` neither runs nor calibrates."""
    assert cli_imports["quiet"] == RUNNING
    loud = cli_imports["loud"]
    assert "agentjudge.harness._report" in loud
    assert "agentjudge.harness._calibrate" not in loud
    reporting = ("_agreement_report", "_case_report", "_report")
    assert cli_imports["report"] == [f"agentjudge.harness.{name}" for name in reporting]


@CLI_GROUP
def test_a_run_without_model_judges_loads_no_http_stack(cli_imports: dict[str, list[str]]) -> None:
    """`agentjudge run` of a suite with plain judges imports no httpx, aiohttp or jsonschema.

    Every CLI start paid ~0.5 s of CPU for the model clients before (batch mode's client
    check and the provider registry imported them); the harness's own tests start hundreds.
    (Checked on the runs above, with and without the report; it had a fresh interpreter of
    its own in test_exports.)
    """
    for run in ("quiet", "loud"):
        assert [m for m in HTTP_STACK if m in cli_imports[run]] == [], run


@CLI_GROUP
def test_a_run_whose_calls_succeed_at_once_loads_no_tenacity(
    cli_imports: dict[str, list[str]],
) -> None:
    """tenacity (~10 ms of CPU at start-up) is imported by the first retry, not by the engine:
    the runs above, whose judges answer on their first attempt, never load it (retries
    themselves are tested in tests/engine and tests/models)."""
    for run in ("quiet", "loud", "report"):
        assert "tenacity" not in cli_imports[run], run


@FIRST_USE_GROUP
def test_a_worker_loads_no_gate_parser_and_a_suite_still_checks_its_gates(
    first_use_failures: dict[str, str],
) -> None:
    """The worker code (local worker processes, Ray actors) imports no gate parser; a suite
    made with gates still refuses a bad one."""
    assert "worker gates" not in first_use_failures, first_use_failures["worker gates"]


@FIRST_USE_GROUP
def test_a_built_in_provider_name_reads_no_entry_points(first_use_failures: dict[str, str]) -> None:
    """Deciding that ``openai:...`` names a model does not scan the installed entry points."""
    assert "provider name" not in first_use_failures, first_use_failures["provider name"]


@FIRST_USE_GROUP
def test_the_judges_package_loads_packaging_only_to_compare_requirements(
    first_use_failures: dict[str, str],
) -> None:
    """``packaging`` (~25 ms) is imported by the first requirement comparison, not before."""
    assert "packaging" not in first_use_failures, first_use_failures["packaging"]


@FIRST_USE_GROUP
def test_telemetry_imports_opentelemetry_only_when_a_provider_may_be_set(
    first_use_failures: dict[str, str],
) -> None:
    """No global provider can exist before OpenTelemetry is imported (or named in the
    environment): a run then skips it; one set by the program still gets spans."""
    assert "telemetry" not in first_use_failures, first_use_failures["telemetry"]


def test_the_ray_broker_imports_neither_the_engine_nor_the_retry_policy() -> None:
    """A Ray run's broker actor is an interpreter of its own that imports `LimitBroker`'s
    module: it holds plain numbers (leases, dollars, rate controllers) and loads neither the
    engine (the actors' `LeasedBudget`, an engine `Budget`, is imported on the actors only) nor
    the retry policy (`agentjudge.models` loads `RetryPolicy` on first use): ~0.2 s of CPU less
    per broker."""
    code = (
        "import sys\n"
        "from agentjudge.harness._ray_limits import LimitBroker, LimitKeeper\n"
        "assert 'agentjudge.engine' not in sys.modules, 'the broker imported the engine'\n"
        "assert 'tenacity' not in sys.modules, 'the broker imported the retry policy'\n"
        "assert LimitKeeper(None, 'a').budget(None) is None\n"
        "assert 'agentjudge.engine' not in sys.modules\n"
    )
    # (An actor's keeper builds its `LeasedBudget` in test_harness_ray's max_cost run.)
    _passes_in_a_fresh_interpreter(code)

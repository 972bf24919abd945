"""The plugin in real pytest processes: across xdist workers, and the docs page's example.

These tests start interpreters (xdist's workers, ``sys.executable``), so conftest marks them
``slow``. Each run's controller is this process (``runpytest_inprocess``); its workers are real
interpreters, so the outcomes still cross process boundaries.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import blocks, write_files

pytest_plugins = ["pytester"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "pytest.md"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
DATA = "\n".join(f'{{"id": "c{i}", "input": {i}, "expected": {i % 4}}}' for i in range(8))
TESTS = """
import pytest
from agentjudge import judge
from agentjudge.testing import assert_eval

@judge(name="Exact")
def exact(ctx):
    return ctx.output == ctx.expected

@pytest.mark.agentjudge_dataset("data.jsonl")
@pytest.mark.anyio
async def test_rows(case, agentjudge_evaluator):
    evaluator = agentjudge_evaluator(exact)
    await assert_eval(evaluator, input=case.input, output=case.input, expected=case.expected)
"""


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str, asyncio: bool = False
) -> pytest.RunResult:
    """``pytest -n 2 ARGS`` loading only the plugins the test uses.

    The controller runs in this process; its two workers are new interpreters, as in any
    ``pytest -n 2`` (a controller of its own cost another ~1.5 s of CPU per run). With every
    installed plugin autoloaded (hypothesis, pytest-asyncio, platformdirs, timeout) each worker
    costs about 2.5 times the CPU at start-up; they inherit the environment and the ``-p``
    options.
    """
    plugins = ["xdist", "_agentjudge_pytest", "anyio"] + (["pytest_asyncio.plugin"] * asyncio)
    loads = [arg for plugin in plugins for arg in ("-p", plugin)]
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest_inprocess(*loads, "-n", "2", *args)


def _blocks(lang: str) -> list[str]:
    return [b.code for b in blocks(PAGE.read_text("utf-8")) if b.lang == lang]


@pytest.mark.timeout(240)  # three interpreters import agentjudge: slow on a loaded machine
def test_summary_and_gates_cover_every_xdist_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers' outcomes reach the controller: one summary, one gate verdict, exit 1."""
    pytester.makeini(INI)
    pytester.makefile(".jsonl", data=DATA)
    pytester.makepyfile(test_rows=TESTS)
    result = _run(pytester, monkeypatch, "--agentjudge-gate", "exact.pass_rate>=0.9")
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(
        [
            "8 outcomes checked with assert_passes / assert_eval*",
            "Exact * 8 * 0.500 * 4 * 4 * 0 * 0",
            "  FAIL  exact.pass_rate>=0.9  (value 0.5000)",
            "agentjudge gates FAILED (1 of 1): the session fails",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Both workers ran tests, so both tallies were needed for the 8 outcomes above.
    assert {"[gw0]", "[gw1]"} <= set(re.findall(r"\[gw\d\]", result.stdout.str()))


@pytest.mark.timeout(240)
def test_docs_example_runs_with_xdist_and_its_gate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The how-to page's dataset and test pass under `-n 2` with the page's gate."""
    pytester.makeini(INI)
    written = write_files(PAGE.read_text("utf-8"), pytester.path)
    assert written == ["capitals.jsonl", "test_capitals.py"]
    # pytest-asyncio loaded too (strict mode), as in most projects: the page's anyio test
    # runs under it unchanged.
    result = _run(
        pytester, monkeypatch, "--agentjudge-gate", "correctness.pass_rate>=0.9", asyncio=True
    )
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    shown = next(block for block in _blocks("text") if "agentjudge gates passed" in block)
    table = [line for line in shown.splitlines() if line.startswith(("judge", "correctness"))]
    result.stdout.fnmatch_lines([*table, "agentjudge gates passed"])


def test_loading_the_plugin_imports_no_agentjudge() -> None:
    """pytest loads the plugin in every session: that imports pytest, not agentjudge."""
    code = (
        "import sys, _agentjudge_pytest\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'agentjudge')\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)

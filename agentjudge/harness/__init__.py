"""Offline evaluation harness: JSONL datasets, runs, results files, gates, reports, CLI.

```python
import anyio
from agentjudge.harness import Suite, run_suite

suite = Suite(dataset="data.jsonl", task="task:answer", judges="judges:build",
              gates=["citation_precision.mean>=0.9", "errors.rate<=0.02"])
summary = anyio.run(lambda: run_suite(suite, out=".agentjudge/run"))
print(summary.passed, summary.judges["citation_precision"].mean)
```

The same from a shell: ``agentjudge run agentjudge.toml --out .agentjudge/run``.

`__all__` holds what a user programs against: cases, suites, the run, its summary types, the
results reader and the reports. The plumbing (gate parsing, the task runner, dataset row
parsing, results scanning and repair, bootstrap statistics, the CLI) lives in the private
modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentjudge._lazy import lazy_attribute

if TYPE_CHECKING:
    from agentjudge.harness._baseline import load_summary
    from agentjudge.harness._case import Case, TaskOutput
    from agentjudge.harness._dataset import Dataset
    from agentjudge.harness._http_task import ModelTask
    from agentjudge.harness._report import render_compare, render_report
    from agentjudge.harness._results import ResultsError, iter_rows
    from agentjudge.harness._run import RunAborted, RunConfigError, run_suite
    from agentjudge.harness._suite import Suite, load_suite
    from agentjudge.harness._summary import (
        BaselineJudge,
        BaselineOutcome,
        CasesSummary,
        DatasetInfo,
        FlippedCase,
        GateOutcome,
        JudgeSummary,
        RunSummary,
    )
    from agentjudge.harness._telemetry import Telemetry

# Loaded on first use (PEP 562), so the command line starts without pydantic models, httpx or
# jsonschema: `agentjudge --help` imports none of them.
_LAZY: dict[str, str] = {
    "load_summary": "agentjudge.harness._baseline",
    "Case": "agentjudge.harness._case",
    "TaskOutput": "agentjudge.harness._case",
    "Dataset": "agentjudge.harness._dataset",
    "render_compare": "agentjudge.harness._report",
    "render_report": "agentjudge.harness._report",
    "ResultsError": "agentjudge.harness._results",
    "iter_rows": "agentjudge.harness._results",
    "RunAborted": "agentjudge.harness._run",
    "RunConfigError": "agentjudge.harness._run",
    "run_suite": "agentjudge.harness._run",
    "Suite": "agentjudge.harness._suite",
    "load_suite": "agentjudge.harness._suite",
    "BaselineJudge": "agentjudge.harness._summary",
    "BaselineOutcome": "agentjudge.harness._summary",
    "CasesSummary": "agentjudge.harness._summary",
    "DatasetInfo": "agentjudge.harness._summary",
    "FlippedCase": "agentjudge.harness._summary",
    "GateOutcome": "agentjudge.harness._summary",
    "JudgeSummary": "agentjudge.harness._summary",
    "RunSummary": "agentjudge.harness._summary",
    "Telemetry": "agentjudge.harness._telemetry",
    "ModelTask": "agentjudge.harness._http_task",
}

__all__ = [
    "BaselineJudge",
    "BaselineOutcome",
    "Case",
    "CasesSummary",
    "Dataset",
    "DatasetInfo",
    "FlippedCase",
    "GateOutcome",
    "JudgeSummary",
    "ModelTask",
    "ResultsError",
    "RunAborted",
    "RunConfigError",
    "RunSummary",
    "Suite",
    "TaskOutput",
    "Telemetry",
    "iter_rows",
    "load_suite",
    "load_summary",
    "render_compare",
    "render_report",
    "run_suite",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

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

from agentjudge.harness._baseline import load_summary
from agentjudge.harness._case import Case, TaskOutput
from agentjudge.harness._dataset import Dataset
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

if TYPE_CHECKING:
    from agentjudge.harness._http_task import ModelTask

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
    # ModelTask needs agentjudge.models (httpx): imported on first use, not with the CLI.
    if name == "ModelTask":
        from agentjudge.harness._http_task import ModelTask

        return ModelTask
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

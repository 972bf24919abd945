"""Parallel runs (``workers`` > 1): the same rows and aggregates as in process, failures, CLI."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import harness_workers_support as support
import pytest
from cli_support import cli

from agentjudge.harness import RunAborted, RunConfigError, Suite, iter_rows, run_suite
from agentjudge.harness._dataset import Dataset, limit_rows
from agentjudge.harness._summary import RunAggregate
from agentjudge.harness._task import TaskInterrupted

TASK = """
import os
import anyio

async def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    if case.input == "slow":
        await anyio.sleep(30)
    return case.input.upper()

def pid(case):
    return os.getpid()
"""

JUDGES = """
from agentjudge.core import Judgment

async def exact(ctx):
    return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("differs")

def half(ctx):
    return 0.5

judges = [exact, half]
"""

# ~12 KiB rows: a hundred make several 256 KiB dataset chunks (what the parallel runs hand out),
# with a quarter of the cases 3 KiB rows needed for as many chunks (each case costs CPU to run).
PAD = "x" * 12_000


def rows(n: int, special: dict[int, str] | None = None) -> list[dict[str, Any]]:
    special = special or {}
    out = []
    for i in range(n):
        text = special.get(i, f"q{i}")
        out.append(
            {
                "id": f"r{i:04d}",
                "input": text,
                "expected": text.upper() if i % 3 else "nope",
                "metadata": {"tags": ["even" if i % 2 == 0 else "odd"], "pad": PAD},
            }
        )
    return out


def make_suite(tmp_path: Path, data: list[dict[str, Any]], **settings: Any) -> Suite:
    (tmp_path / "data.jsonl").write_text(
        "# a comment line\n\n" + "".join(json.dumps(r) + "\n" for r in data), encoding="utf-8"
    )
    (tmp_path / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    settings.setdefault("task", "task.py:answer")
    return Suite(
        dataset=Path("data.jsonl"),
        judges="judges.py:judges",
        base_dir=tmp_path,
        concurrency=4,
        **settings,
    )


def run(suite: Suite, out: Path, **kw: Any) -> Any:
    return anyio.run(lambda: run_suite(suite, out=out, **kw))


def untimed(row: dict[str, Any]) -> dict[str, Any]:
    """A results row without its timing fields (they differ between any two runs)."""
    row = dict(row)
    row.pop("duration_s")
    row["results"] = [
        {k: v for k, v in r.items() if k not in ("duration_s", "queued_s")} for r in row["results"]
    ]
    return row


def by_id(out: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for row in iter_rows(out / "results.jsonl"):
        assert row["id"] not in found, f"{row['id']} written twice"
        found[row["id"]] = untimed(row)
    return found


def test_workers_write_the_same_rows_and_aggregates_as_one_process(tmp_path: Path) -> None:
    """Two worker processes produce exactly the rows and aggregates of an in-process run."""
    data = rows(100, {5: "boom", 17: "boom"})
    one = run(make_suite(tmp_path, data), tmp_path / "one")
    two = run(make_suite(tmp_path, data, workers=2), tmp_path / "two")
    assert by_id(tmp_path / "one") == by_id(tmp_path / "two")
    assert len(by_id(tmp_path / "two")) == 100
    assert two.cases == one.cases
    assert two.cases.errors == 2
    assert two.judges == one.judges
    assert two.verdict == one.verdict
    assert two.config["workers"] == 2
    assert two.status == "completed"
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert summary["cases"]["total"] == 100


def test_cases_run_in_the_worker_processes(tmp_path: Path) -> None:
    """The task runs in at most ``workers`` other processes, never in the run's own."""
    summary = run(make_suite(tmp_path, rows(75), task="task.py:pid", workers=2), tmp_path / "o")
    pids = {row["output"] for row in iter_rows(tmp_path / "o" / "results.jsonl")}
    assert summary.cases.total == 75
    assert 1 <= len(pids) <= 2
    assert os.getpid() not in pids


def test_objects_reach_the_workers_pickled(tmp_path: Path) -> None:
    """A task and judges given as module-level objects are pickled to the workers."""
    suite = make_suite(tmp_path, rows(50, {3: "boom"}), workers=2)
    summary = run(suite, tmp_path / "o", task=support.upper, judges=[support.exact, support.half])
    assert summary.cases.total == 50
    assert summary.cases.errors == 1
    assert list(summary.judges) == ["exact", "half"]
    assert summary.judges["half"].mean == 0.5


def test_unpicklable_objects_are_a_configuration_error(tmp_path: Path) -> None:
    """A lambda task with workers > 1 fails before any process starts, saying what to do."""
    suite = make_suite(tmp_path, rows(3), workers=2)
    with pytest.raises(RunConfigError, match=r"closures and lambdas cannot be pickled"):
        run(suite, tmp_path / "o", task=lambda case: case.input)
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_task_timeouts_in_workers_are_error_rows(tmp_path: Path) -> None:
    """A task past its timeout in a worker is an error row and the run goes on."""
    suite = make_suite(tmp_path, rows(20, {4: "slow"}), workers=2, task_timeout=0.3)
    summary = run(suite, tmp_path / "o")
    found = by_id(tmp_path / "o")
    assert len(found) == 20
    assert found["r0004"]["error"] == "TimeoutError: the task did not finish within 0.3s"
    assert summary.cases.errors == 1


def test_limit_and_resume_with_workers_run_each_case_once(tmp_path: Path) -> None:
    """``limit`` takes the first rows; a resumed parallel run adds only the missing ones."""
    data = rows(75)
    first = run(make_suite(tmp_path, data, workers=2, limit=7), tmp_path / "o")
    assert first.cases.total == 7
    assert sorted(by_id(tmp_path / "o")) == [f"r{i:04d}" for i in range(7)]
    again = run(make_suite(tmp_path, data, workers=2), tmp_path / "o", resume=True)
    assert sorted(by_id(tmp_path / "o")) == [f"r{i:04d}" for i in range(75)]
    assert again.cases.total == 75
    assert again.resumed


def test_a_worker_that_dies_aborts_the_run(tmp_path: Path) -> None:
    """A worker process that exits mid-run aborts it; what was written stays valid."""
    suite = make_suite(tmp_path, rows(30, {12: "die"}), workers=2)
    with pytest.raises(RunAborted, match=r"worker process \d exited unexpectedly \(exit code 7\)"):
        run(suite, tmp_path / "o", task=support.upper)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["status"] == "aborted"
    assert "r0012" not in by_id(tmp_path / "o")


def test_a_task_interrupt_in_a_worker_stops_the_run(tmp_path: Path) -> None:
    """KeyboardInterrupt raised by a task in a worker stops the run as TaskInterrupted."""
    suite = make_suite(tmp_path, rows(10, {2: "interrupt"}), workers=2)
    with pytest.raises(RunAborted) as info:
        run(suite, tmp_path / "o", task=support.upper)
    assert isinstance(info.value.__cause__, TaskInterrupted)
    assert "KeyboardInterrupt" in str(info.value)


def test_cli_workers_flag(tmp_path: Path) -> None:
    """``agentjudge run --workers 2`` through the CLI's entry point (`cli_support`)."""
    make_suite(tmp_path, rows(40))
    proc = cli(
        tmp_path, "run", "--dataset", "data.jsonl", "--task", "task.py:answer",
        "--judges", "judges.py:judges", "--workers", "2", "--out", "out",
        "--gate", "errors.rate<=0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(by_id(tmp_path / "out")) == 40
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["config"]["workers"] == 2


def test_cli_rejects_zero_workers(tmp_path: Path) -> None:
    """``--workers 0`` is a usage error (exit 2) naming the flag."""
    proc = cli(tmp_path, "run", "--workers", "0")
    assert proc.returncode == 2
    assert "--workers" in proc.stderr


# ----------------------------------------------------------------------------- parts
def test_limit_rows_counts_rows_like_the_parser(tmp_path: Path) -> None:
    """`limit_rows` cuts after N rows; blank, comment and BOM-prefixed lines count as parsed."""
    lines = ['\ufeff{"id": "a", "input": 1}', "", "  # note", '{"id": "b", "input": 2}']
    lines += [f'{{"id": "c{i}", "input": {i}}}' for i in range(10)]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    dataset = Dataset.open(path)
    for limit in (0, 1, 2, 3, 12, 50, None):
        chunks = list(limit_rows(dataset.iter_raw(hint=40), limit, dataset.label))
        ids = [case.id for chunk in chunks for case in dataset.parse_chunk(chunk)]
        expected = ["a", "b", *[f"c{i}" for i in range(10)]]
        assert ids == (expected if limit is None else expected[:limit])


def test_merged_aggregates_equal_one_aggregate_of_all_rows(tmp_path: Path) -> None:
    """`RunAggregate.merge` of two shares equals folding every row into one aggregate."""
    run(make_suite(tmp_path, rows(60, {1: "boom"})), tmp_path / "o")
    all_rows = list(iter_rows(tmp_path / "o" / "results.jsonl"))
    whole = RunAggregate(["exact", "half"], seed=3)
    left, right = RunAggregate(["exact", "half"], seed=3), RunAggregate(["exact", "half"], seed=3)
    for i, row in enumerate(all_rows):
        whole.add_row(row)
        (left if i % 2 else right).add_row(row)
    left.merge(right)
    assert left.cases_summary() == whole.cases_summary()
    assert left.judge_summaries() == whole.judge_summaries()
    assert left.verdict_summary() == whole.verdict_summary()


def test_telemetry_with_workers_records_the_run_span_and_says_what_it_skips(
    tmp_path: Path,
) -> None:
    """With workers, only the run span is recorded and the summary warns about the rest."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentjudge.harness._telemetry import Telemetry

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry.create(tracer_provider=tracer_provider)
    assert telemetry is not None
    summary = run(make_suite(tmp_path, rows(12), workers=2), tmp_path / "o", telemetry=telemetry)
    assert summary.cases.total == 12
    assert [s.name for s in exporter.get_finished_spans()] == ["agentjudge.run"]
    assert any("telemetry is recorded only with workers = 1" in w for w in summary.warnings)


def test_objects_from_an_interactive_main_are_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task defined in a notebook/REPL (``__main__`` without a file) is refused up front."""
    import types

    def answer(case: Any) -> str:
        return str(case.input)

    answer.__module__ = "__main__"
    answer.__qualname__ = "answer"
    fake_main = types.ModuleType("__main__")
    fake_main.answer = answer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    suite = make_suite(tmp_path, rows(3), workers=2)
    with pytest.raises(RunConfigError, match=r"interactive session"):
        run(suite, tmp_path / "o", task=answer)

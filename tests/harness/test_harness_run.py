"""run_suite in process: contexts, errors, resume, limits, baselines, telemetry, aborts."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.harness import (
    RunAborted,
    RunConfigError,
    Suite,
    iter_rows,
    render_report,
    run_suite,
)
from agentjudge.harness._progress import ProgressState, clock
from agentjudge.harness._task import TaskInterrupted
from agentjudge.harness._telemetry import Telemetry

JUDGES = """
from agentjudge.core import Judgment

SEEN = []

async def exact(ctx):
    SEEN.append(ctx)
    return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("differs")

def half(ctx):
    return 0.5

judges = [exact, half]
"""

TASK = """
def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    return case.input.upper()
"""


def make_suite(
    tmp_path: Path,
    rows: list[dict[str, Any]],
    *,
    task: str = TASK,
    judges: str = JUDGES,
    **settings: Any,
) -> Suite:
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    (tmp_path / "task.py").write_text(textwrap.dedent(task), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(judges), encoding="utf-8")
    return Suite(
        dataset=Path("data.jsonl"),
        task="task.py:answer",
        judges=settings.pop("judges_ref", "judges.py:judges"),
        base_dir=tmp_path,
        **settings,
    )


ROWS = [
    {"id": "a", "input": "x", "expected": "X", "metadata": {"tags": ["t1"]}},
    {"id": "b", "input": "y", "expected": "nope"},
    {"id": "c", "input": "boom", "expected": "?"},
]


def run(suite: Suite, out: Path, **kw: Any) -> Any:
    return anyio.run(lambda: run_suite(suite, out=out, **kw))


def judges_module(tmp_path: Path) -> Any:
    import sys

    return next(
        m
        for name, m in sys.modules.items()
        if name.startswith("agentjudge_user_")
        and getattr(m, "__file__", "") == str(tmp_path / "judges.py")
    )


def test_judges_see_case_fields_and_errored_cases_are_not_judged(tmp_path: Path) -> None:
    """Context carries input/output/expected/metadata+case_id; a task error is never judged."""
    suite = make_suite(tmp_path, ROWS)
    summary = run(suite, tmp_path / "out")
    seen = {ctx.metadata["case_id"]: ctx for ctx in judges_module(tmp_path).SEEN}
    assert sorted(seen) == ["a", "b"]
    ctx = seen["a"]
    assert (ctx.input, ctx.output, ctx.expected) == ("x", "X", "X")
    assert dict(ctx.metadata) == {"tags": ["t1"], "case_id": "a"}
    assert ctx.status == "success" and ctx.duration is not None
    rows = {r["id"]: r for r in iter_rows(tmp_path / "out" / "results.jsonl")}
    assert rows["c"]["error"] == "RuntimeError: kaboom"
    assert (rows["c"]["results"], rows["c"]["verdict"]) == ([], None)
    assert list(rows["a"]) == [
        "id", "input", "output", "expected", "metadata", "results", "verdict", "duration_s", "error"
    ]  # fmt: skip
    assert summary.cases.model_dump() == {"total": 3, "errors": 1, "error_rate": 1 / 3}
    assert summary.judges["exact"].counts == {"pass": 1, "fail": 1, "abstain": 0, "error": 0}
    assert summary.judges["exact"].mean == 0.5
    assert summary.judges["half"].mean == 0.5
    assert summary.status == "completed" and summary.passed is True


def test_summary_file_matches_the_contract(tmp_path: Path) -> None:
    """summary.json holds the contract keys, ISO 8601 UTC timestamps and the dataset digest."""
    suite = make_suite(tmp_path, ROWS, gates=["exact.pass_rate>=0.5", "errors.rate<=0.1"])
    summary = run(suite, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "summary.json").read_text())
    for key in (
        "run_id",
        "started_at",
        "completed_at",
        "dataset",
        "config",
        "judges",
        "cases",
        "gates",
    ):
        assert key in data
    assert data["started_at"].endswith("Z") and data["completed_at"].endswith("Z")
    assert set(data["dataset"]) >= {"path", "sha256", "rows"} and data["dataset"]["rows"] == 3
    assert set(data["judges"]["exact"]) >= {"mean", "pass_rate", "counts", "ci95"}
    assert data["gates"] == [
        {"expr": "exact.pass_rate>=0.5", "value": 0.5, "passed": True},
        {"expr": "errors.rate<=0.1", "value": pytest.approx(1 / 3), "passed": False},
    ]
    assert summary.passed is False


def test_run_ids_are_unique_within_one_second(tmp_path: Path) -> None:
    """Two runs started in the same second get different ids and folders do not collide."""
    suite = make_suite(tmp_path, ROWS[:1])
    first = run(suite, tmp_path / "one")
    second = run(suite, tmp_path / "two")
    assert first.run_id != second.run_id
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", first.run_id)


def test_existing_results_need_resume_or_overwrite(tmp_path: Path) -> None:
    """A second run into the same folder is refused unless resuming or overwriting."""
    suite = make_suite(tmp_path, ROWS)
    out = tmp_path / "out"
    run(suite, out)
    with pytest.raises(RunConfigError, match="already exists: pass --resume"):
        run(suite, out)
    again = run(suite, out, overwrite=True)
    assert again.cases.total == 3
    assert sum(1 for _ in iter_rows(out / "results.jsonl")) == 3


def test_resume_skips_done_ids_and_summarises_the_whole_file(tmp_path: Path) -> None:
    """After a partial run and a torn line, resume runs only the rest; each id appears once."""
    rows = [{"id": f"r{i}", "input": f"q{i}", "expected": f"Q{i}"} for i in range(10)]
    suite = make_suite(tmp_path, rows)
    out = tmp_path / "out"
    run(suite.with_overrides(limit=4), out)
    results = out / "results.jsonl"
    with results.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "r9", "output": "torn')  # a crash mid-write
    summary = run(suite, out, resume=True)
    ids = [r["id"] for r in iter_rows(results)]
    assert sorted(ids) == sorted(r["id"] for r in rows)
    assert len(ids) == len(set(ids)) == 10
    assert summary.resumed is True
    assert summary.warnings == [
        f"{results} line 5 was cut short (a crash?); it was removed and that case runs again"
    ]
    assert summary.cases.total == 10
    assert summary.judges["exact"].counts["pass"] == 10


def test_limit_runs_the_first_cases(tmp_path: Path) -> None:
    """limit=N runs the first N cases of the file."""
    suite = make_suite(tmp_path, ROWS, limit=2)
    summary = run(suite, tmp_path / "out")
    assert sorted(r["id"] for r in iter_rows(tmp_path / "out" / "results.jsonl")) == ["a", "b"]
    assert summary.cases.total == 2


def test_baseline_regression_and_flips(tmp_path: Path) -> None:
    """A mean drop beyond max_regression fails; cases that stopped passing are listed."""
    good = make_suite(tmp_path, ROWS)
    run(good, tmp_path / "base")
    worse_task = 'def answer(case):\n    return "wrong"\n'
    (tmp_path / "task2.py").write_text(worse_task, encoding="utf-8")
    worse = good.with_overrides(
        task="task2.py:answer",
        baseline=tmp_path / "base" / "summary.json",
        max_regression=0.1,
    )
    summary = run(worse, tmp_path / "new")
    assert summary.baseline is not None
    exact = summary.baseline.judges["exact"]
    assert (exact.baseline_mean, exact.mean, exact.regressed) == (0.5, 0.0, True)
    assert summary.baseline.judges["half"].regressed is False
    assert [(f.id, f.before, f.after) for f in summary.baseline.flipped] == [("a", "pass", "fail")]
    assert summary.baseline.passed is False and summary.passed is False
    lenient = worse.with_overrides(max_regression=0.6)
    assert run(lenient, tmp_path / "lenient").passed is True
    strict_flips = lenient.with_overrides(max_flips=0)
    assert run(strict_flips, tmp_path / "flips").passed is False


def test_baseline_settings_need_a_baseline(tmp_path: Path) -> None:
    """max_regression without a baseline, or a missing baseline file, is a config error."""
    suite = make_suite(tmp_path, ROWS, max_regression=0.1)
    with pytest.raises(RunConfigError, match="need a baseline"):
        run(suite, tmp_path / "out")
    missing = make_suite(tmp_path, ROWS, baseline=Path("nope/summary.json"))
    with pytest.raises(RunConfigError, match="baseline: summary not found"):
        run(missing, tmp_path / "out")


def test_factories_classes_and_mappings_resolve(tmp_path: Path) -> None:
    """A factory, a judge class and a table of references all become judges."""
    judges = JUDGES + textwrap.dedent(
        """
        class Always:
            name = "always"
            async def __call__(self, ctx):
                return Judgment.passed("ok")

        def build():
            return {"first": exact, "second": Always()}
        """
    )
    factory = make_suite(tmp_path, ROWS[:1], judges=judges, judges_ref="judges.py:build")
    assert list(run(factory, tmp_path / "f").judges) == ["first", "second"]
    cls = factory.with_overrides(judges="judges.py:Always")
    assert list(run(cls, tmp_path / "c").judges) == ["always"]
    table = factory.with_overrides(judges={"x": "judges.py:exact", "y": "judges.py:half"})
    assert list(run(table, tmp_path / "t").judges) == ["x", "y"]


def test_missing_settings_name_what_to_set(tmp_path: Path) -> None:
    """No dataset, task or judges: the error says which setting and flag."""
    base = make_suite(tmp_path, ROWS)
    for field, flag in (("dataset", "--dataset"), ("task", "--task"), ("judges", "--judges")):
        data = base.model_dump()
        data[field] = None
        suite = Suite.model_validate({**data, "base_dir": tmp_path})
        with pytest.raises(RunConfigError, match=flag):
            run(suite, tmp_path / "out")


def test_unknown_gate_judge_fails_before_any_case_runs(tmp_path: Path) -> None:
    """A gate naming no judge is refused before the results file exists."""
    suite = make_suite(tmp_path, ROWS, gates=["exakt.mean>=0.5"])
    with pytest.raises(
        RunConfigError,
        match=r"unknown judge 'exakt' \(did you mean 'exact'\?\); valid: exact, half",
    ):
        run(suite, tmp_path / "out")
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_crash_mid_run_keeps_results_and_marks_summary_aborted(tmp_path: Path) -> None:
    """SystemExit from the task aborts the run; finished rows stay, summary says aborted."""
    rows = [{"id": f"r{i}", "input": "q", "expected": "Q"} for i in range(5)]
    task = """
    COUNT = 0
    async def answer(case):
        global COUNT
        COUNT += 1
        if COUNT == 3:
            raise SystemExit("simulated crash")
        return case.input.upper()
    """
    suite = make_suite(tmp_path, rows, task=task, concurrency=1)
    with pytest.raises(RunAborted, match="SystemExit: simulated crash") as info:
        run(suite, tmp_path / "out")
    assert isinstance(info.value.__cause__, TaskInterrupted)
    report = render_report(tmp_path / "out")
    assert "note: this run did not complete (aborted)" in report
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["status"] == "aborted"
    assert summary["passed"] is None
    ids = [r["id"] for r in iter_rows(tmp_path / "out" / "results.jsonl")]
    assert ids == ["r0", "r1"]
    assert summary["cases"]["total"] == 2


def test_unexpected_exception_is_wrapped_in_run_aborted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception escaping the pipeline becomes RunAborted with the cause chained."""
    import agentjudge.harness._pipeline as run_module

    real = run_module.encode_case
    calls = 0

    def flaky(*args: Any) -> str:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError("disk full")
        return real(*args)

    monkeypatch.setattr(run_module, "encode_case", flaky)
    suite = make_suite(tmp_path, ROWS, concurrency=1)
    with pytest.raises(RunAborted, match="OSError: disk full") as info:
        run(suite, tmp_path / "out")
    assert isinstance(info.value.__cause__, OSError)
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["status"] == "aborted"
    assert [r["id"] for r in iter_rows(tmp_path / "out" / "results.jsonl")] == ["a"]


def test_telemetry_records_spans_and_metrics(tmp_path: Path) -> None:
    """Run, case and judge spans and the three instruments are recorded via the SDK."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry.create(tracer_provider=tracer_provider, meter_provider=meter_provider)
    assert telemetry is not None
    run(make_suite(tmp_path, ROWS), tmp_path / "out", telemetry=telemetry)

    spans = exporter.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (run_span,) = by_name["agentjudge.run"]
    assert len(by_name["agentjudge.case"]) == 3
    assert len(by_name["agentjudge.judge"]) == 4  # 2 judged cases x 2 judges
    for case_span in by_name["agentjudge.case"]:
        assert case_span.parent.span_id == run_span.context.span_id
    errored = [s for s in by_name["agentjudge.case"] if "agentjudge.case.error" in s.attributes]
    assert [s.attributes["agentjudge.case.id"] for s in errored] == ["c"]
    case_ids = {s.context.span_id for s in by_name["agentjudge.case"]}
    assert all(s.parent.span_id in case_ids for s in by_name["agentjudge.judge"])

    data = reader.get_metrics_data()
    metrics = {
        m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    assert {
        "agentjudge.judge.duration",
        "agentjudge.judge.results",
        "agentjudge.queue.wait",
    } <= set(metrics)
    counts = {
        (p.attributes["judge"], p.attributes["status"]): p.value
        for p in metrics["agentjudge.judge.results"].data.data_points
    }
    assert counts == {("exact", "pass"): 1, ("exact", "fail"): 1, ("half", "pass"): 2}


def test_telemetry_is_off_without_a_configured_provider() -> None:
    """With only the OpenTelemetry API's default providers, nothing is recorded."""
    assert Telemetry.create() is None


class _Stream:
    """A text stream that records writes and signals the first progress line."""

    def __init__(self) -> None:
        self.text = ""
        self.progress_line = anyio.Event()

    def write(self, text: str) -> int:
        self.text += text
        if "cases (" in text:
            self.progress_line.set()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_plain_progress_lines_while_running(tmp_path: Path) -> None:
    """Off a terminal, progress lines go to the stream while cases run, then a final line."""
    stream = _Stream()
    rows = [{"id": f"r{i}", "input": "q", "expected": "Q"} for i in range(3)]

    async def task(case: Any) -> str:
        if case.id == "r1":
            await stream.progress_line.wait()  # finish only once a progress line was printed
        return "Q"

    suite = make_suite(tmp_path, rows, concurrency=1)
    summary = anyio.run(
        lambda: run_suite(
            suite,
            out=tmp_path / "out",
            progress="auto",
            progress_interval=0.01,
            progress_stream=stream,  # type: ignore[arg-type]
            task=task,
        )
    )
    assert summary.cases.total == 3
    assert re.search(r"agentjudge: [01]/3 cases \(\d+%\), 0 errors, [\d.]+ cases/s", stream.text)
    assert stream.text.rstrip().splitlines()[-1].startswith("agentjudge: 3/3 cases done in")


def test_rich_progress_renders_a_bar(tmp_path: Path) -> None:
    """progress='rich' renders rich's bar with the case count and errors."""
    import io

    stream = io.StringIO()
    summary = anyio.run(
        lambda: run_suite(
            make_suite(tmp_path, ROWS),
            out=tmp_path / "out",
            progress="rich",
            progress_stream=stream,
        )
    )
    assert summary.cases.total == 3
    assert "3/3" in stream.getvalue() and "1 error " in stream.getvalue()
    assert "ETA" in stream.getvalue()  # the time remaining, labelled


def test_plain_progress_line_shows_the_eta() -> None:
    """The plain line estimates the time remaining from the rate so far (none before a case)."""
    state = ProgressState(100)
    state.started = 1000.0
    assert "ETA" not in state.line(now=1010.0)  # nothing finished: no rate to go by
    state.done = 25
    assert state.line(now=1010.0) == (
        "agentjudge: 25/100 cases (25%), 0 errors, 2.5 cases/s, ETA 30s"
    )
    state.done = 1
    assert state.line(now=1010.0).endswith("0.1 cases/s, ETA 16m30s")
    state.done = 100
    assert "ETA" not in state.line(now=1010.0)
    assert [clock(s) for s in (0.4, 59.6, 61, 3599, 7620)] == [
        "0s",
        "1m00s",
        "1m01s",
        "59m59s",
        "2h07m",
    ]


def test_model_task_asks_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    """task = 'openai:<model>' with task_url sends each input and judges the reply text."""
    from agentjudge.testing import FakeModelServer, FakeResponse

    def reply(body: Any) -> FakeResponse:
        return FakeResponse(text=body["messages"][-1]["content"].upper())

    rows = [
        {"id": "s", "input": "x", "expected": "X"},
        {"id": "m", "input": {"messages": [{"role": "user", "content": "y"}]}, "expected": "Y"},
        {"id": "j", "input": {"k": 1}, "expected": '{"K": 1}'},
    ]
    judges = """
    from agentjudge.core import Judgment

    def exact(ctx):
        return ctx.output.text == ctx.expected

    judges = [exact]
    """

    async def go() -> Any:
        async with FakeModelServer(default=reply) as server:
            suite = make_suite(tmp_path, rows, judges=judges).with_overrides(
                task="openai:assistant", task_url=server.base_url
            )
            summary = await run_suite(suite, out=tmp_path / "out")
            return summary, server.requests

    summary, requests = anyio.run(go)
    assert summary.judges["exact"].counts["pass"] == 3
    assert {r["model"] for r in requests} == {"assistant"}
    rows_out = {r["id"]: r for r in iter_rows(tmp_path / "out" / "results.jsonl")}
    assert rows_out["s"]["output"]["text"] == "X"
    assert rows_out["s"]["output"]["usage"]["input_tokens"] is not None


def test_task_url_needs_a_model_task(tmp_path: Path) -> None:
    """task_url with a Python task is a configuration error."""
    suite = make_suite(tmp_path, ROWS, task_url="http://127.0.0.1:9/v1")
    with pytest.raises(RunConfigError, match="task_url is only used with a model task"):
        run(suite, tmp_path / "out")


def test_judge_function_with_defaults_is_not_mistaken_for_a_factory(tmp_path: Path) -> None:
    """A reference whose no-argument call returns no judge explains what was expected."""
    judges = """
    def maybe(ctx=None):
        return True
    """
    suite = make_suite(tmp_path, ROWS, judges=judges, judges_ref="judges.py:maybe")
    with pytest.raises(RunConfigError, match="returned a bool; expected a judge"):
        run(suite, tmp_path / "out")


TIMEOUT_TASK = """
import anyio

async def answer(case):
    if case.input == "hang":
        await anyio.sleep(30)
    if case.input == "stubborn":
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            return "swallowed"  # returns after its timeout struck
    if case.input == "slow-ok":
        await anyio.sleep(0.01)
    return case.input.upper()
"""


@pytest.mark.parametrize("concurrency", [1, 3])
@pytest.mark.timing
def test_task_timeouts_become_error_rows_and_the_run_goes_on(
    tmp_path: Path, concurrency: int
) -> None:
    """Tasks past the timeout are error rows (also one that swallows the cancellation);
    the cases before and after them, instant or not, are judged normally."""
    inputs = ["x", "hang", "y", "stubborn", "slow-ok", "hang", "z"]
    rows = [{"id": f"r{i}", "input": v, "expected": v.upper()} for i, v in enumerate(inputs)]
    suite = make_suite(tmp_path, rows, task=TIMEOUT_TASK, task_timeout=0.2, concurrency=concurrency)
    summary = run(suite, tmp_path / "out")
    by_id = {r["id"]: r for r in iter_rows(tmp_path / "out" / "results.jsonl")}
    assert sorted(by_id) == [f"r{i}" for i in range(len(inputs))]
    for i, value in enumerate(inputs):
        row = by_id[f"r{i}"]
        if value in ("hang", "stubborn"):
            assert row["error"] == "TimeoutError: the task did not finish within 0.2s"
            assert row["verdict"] is None and row["results"] == []
            assert row["duration_s"] >= 0.2
        else:
            assert row["error"] is None
            assert row["output"] == value.upper()
            assert [r["name"] for r in row["results"]] == ["exact", "half"]
    assert summary.cases.errors == 3

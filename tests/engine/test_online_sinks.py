"""Online sinks: JSONL rows the harness reads, rotation, SQLite, slow and failing sinks, OTel."""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from engine_support import wait_until

from agentjudge import Evaluator, Judgment, OnlineResult
from agentjudge.engine import JsonlSink, OtelEventSink, SqliteSink
from agentjudge.harness._report import render_report
from agentjudge.harness._results import iter_rows
from agentjudge.testing import ScriptedJudge


def judges() -> list[ScriptedJudge]:
    return [
        ScriptedJudge(Judgment.passed("fine", score=0.9, label="relevant"), name="relevance"),
        ScriptedJudge(Judgment.failed("wrong"), name="correctness"),
        ScriptedJudge(True, name="format"),
    ]


async def test_jsonl_sink_writes_harness_rows_that_report_reads(tmp_path: Path) -> None:
    """The JSONL sink writes results rows; `agentjudge report` reads the folder."""
    out = tmp_path / "online" / "results.jsonl"
    async with Evaluator(judges()).background(sinks=[JsonlSink(out)]) as background:
        for i in range(5):
            background.offer(input=f"q{i}", output=f"a{i}", key=f"t{i}", route="/chat")
    rows = list(iter_rows(out))
    assert len(rows) == 5
    row = rows[0]
    assert list(row)[:6] == ["id", "input", "output", "expected", "metadata", "extra"]
    assert row["extra"]["route"] == "/chat" and row["extra"]["key"] == row["id"].split("#")[0]
    assert [r["name"] for r in row["results"]] == ["relevance", "correctness", "format"]
    assert row["verdict"]["status"] == "pass" and row["error"] is None
    report = render_report(out.parent)
    assert "relevance" in report and "correctness" in report and "cases: 5" in report


async def test_jsonl_sink_rotates_by_size(tmp_path: Path) -> None:
    """Past max_bytes the file is rotated to .1, .2 ...; at most `backups` are kept."""
    out = tmp_path / "results.jsonl"
    sink = JsonlSink(out, max_bytes=600, backups=2)
    async with Evaluator(judges()).background(sinks=[sink], workers=1) as background:
        for i in range(12):
            background.offer(input=f"q{i}")
            await wait_until(lambda n=i + 1: background.statistics()["sink_written"] == n)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["results.jsonl", "results.jsonl.1", "results.jsonl.2"]
    total = sum(len(list(iter_rows(tmp_path / name))) for name in files)
    assert 0 < total < 12  # the oldest were rotated away
    assert all(p.stat().st_size <= 600 or len(list(iter_rows(p))) == 1 for p in tmp_path.iterdir())


async def test_sqlite_sink_schema_and_rows(tmp_path: Path) -> None:
    """SQLite rows: one per evaluation (full row as JSON), one per judge result, WAL mode."""
    db_path = tmp_path / "online.db"
    async with Evaluator(judges()).background(sinks=[SqliteSink(db_path)]) as background:
        for i in range(4):
            background.offer(input=f"q{i}", key=f"user-{i}")
    db = sqlite3.connect(db_path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT count(*) FROM evaluations").fetchone() == (4,)
        status, row = db.execute(
            "SELECT status, row FROM evaluations WHERE key = 'user-2'"
        ).fetchone()
        assert status == "pass" and json.loads(row)["input"] == "q2"
        rates = dict(
            db.execute(
                "SELECT name, avg(status = 'pass') FROM judge_results GROUP BY name"
            ).fetchall()
        )
        assert rates == {"relevance": 1.0, "correctness": 0.0, "format": 1.0}
        assert db.execute(
            "SELECT json_extract(row, '$.extra.key') FROM evaluations ORDER BY id LIMIT 1"
        ).fetchone() == ("user-0",)
    finally:
        db.close()


class StuckSink:
    """A sink that blocks until released, then records what it got."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.entered = anyio.Event()
        self.batches: list[int] = []

    async def write(self, batch: Sequence[OnlineResult], /) -> None:
        self.entered.set()
        await self.release.wait()
        self.batches.append(len(batch))


class BrokenSink:
    """A sink whose writes always fail."""

    async def write(self, batch: Sequence[OnlineResult], /) -> None:
        raise OSError("disk on fire")


async def test_a_slow_sink_never_blocks_offers_and_its_losses_are_counted() -> None:
    """A stuck sink fills its buffer; further results are counted in sink_dropped."""
    stuck, fast = StuckSink(), []
    options = {"sinks": [stuck, fast.append], "sink_buffer": 3, "workers": 1}
    async with Evaluator(ScriptedJudge(True)).background(**options) as background:  # type: ignore[arg-type]
        background.offer(input=0)
        await stuck.entered.wait()
        for i in range(1, 10):
            assert background.offer(input=i)  # never blocked by the sink
        await wait_until(lambda: background.statistics()["completed"] == 10)
        stats = background.statistics()
        assert stats["sink_dropped"] == 6  # 9 results behind the stuck write, room for 3
        stuck.release.set()
    assert len(fast) == 10  # the other sink lost nothing
    assert stuck.batches == [1, 3]


async def test_a_failing_sink_counts_errors(caplog: pytest.LogCaptureFixture) -> None:
    """A sink that raises loses its batches counted in sink_errors, logged, never raised."""
    async with Evaluator(ScriptedJudge(True)).background(sinks=[BrokenSink()]) as background:
        for i in range(3):
            background.offer(input=i)
    stats = background.statistics()
    assert stats["sink_errors"] == 3 and stats["completed"] == 3
    assert "disk on fire" in caplog.text


async def test_a_sink_still_stuck_at_shutdown_counts_as_dropped() -> None:
    """A sink that never finishes is cancelled after the drain timeout; its batch is dropped."""
    stuck = StuckSink()
    options = {"sinks": [stuck], "drain_timeout": 0.01}
    async with Evaluator(ScriptedJudge(True)).background(**options) as background:  # type: ignore[arg-type]
        background.offer(input=0)
        await stuck.entered.wait()
    assert background.statistics()["sink_dropped"] == 1


async def test_otel_events_are_parented_to_the_offering_span() -> None:
    """gen_ai.evaluation.result events carry the semconv attributes and the caller's span."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider

    exporter = InMemoryLogRecordExporter()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    tracer = TracerProvider().get_tracer("test")
    sink = OtelEventSink(logger_provider=logs)
    async with Evaluator(judges()).background(sinks=[sink]) as background:
        with tracer.start_as_current_span("chat") as span:
            background.offer(input="q", output="a", metadata={"response_id": "resp-1"})
        background.offer(input="no span")
    records = [d.log_record for d in exporter.get_finished_logs()]
    assert len(records) == 8  # 3 judges + the verdict, for each of two offers
    assert {r.event_name for r in records} == {"gen_ai.evaluation.result"}
    parented = [r for r in records if r.trace_id == span.get_span_context().trace_id]
    assert len(parented) == 4
    assert {r.span_id for r in parented} == {span.get_span_context().span_id}
    by_name = {r.attributes["gen_ai.evaluation.name"]: r.attributes for r in parented}
    assert by_name["relevance"]["gen_ai.evaluation.score.value"] == 0.9
    assert by_name["relevance"]["gen_ai.evaluation.score.label"] == "relevant"
    assert by_name["correctness"]["gen_ai.evaluation.score.label"] == "fail"
    assert by_name["correctness"]["gen_ai.evaluation.explanation"] == "wrong"
    assert by_name["verdict"]["gen_ai.response.id"] == "resp-1"


async def test_otel_error_results_carry_error_type() -> None:
    """An ERROR result's event has error.type and no label."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    exporter = InMemoryLogRecordExporter()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    judge = ScriptedJudge(True, error=ValueError("bad"), fail_times=1, name="j")
    sink = OtelEventSink(logger_provider=logs, verdict_name=None)
    async with Evaluator(judge).background(sinks=[sink]) as background:
        background.offer(input="q")
    (record,) = [d.log_record for d in exporter.get_finished_logs()]
    assert record.attributes["error.type"] == "ValueError"
    assert "gen_ai.evaluation.score.label" not in record.attributes


async def test_counters_are_exported_as_otel_instruments() -> None:
    """meter_provider= exports the counters as agentjudge.online.* instruments."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    async with Evaluator(ScriptedJudge(True)).background(meter_provider=provider) as background:
        for i in range(3):
            background.offer(input=i)
    data = reader.get_metrics_data()
    assert data is not None
    values = {
        m.name: m.data.data_points[0].value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    assert values["agentjudge.online.offered"] == 3
    assert values["agentjudge.online.completed"] == 3
    assert values["agentjudge.online.backlog"] == 0


async def test_the_offering_trace_context_is_restored_around_the_evaluation() -> None:
    """Judges run under the span that was current when offer() was called."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    seen: list[int] = []

    async def traced_judge(ctx: object) -> bool:
        seen.append(trace.get_current_span().get_span_context().span_id)
        return True

    tracer = TracerProvider().get_tracer("test")
    evaluator = Evaluator(traced_judge)
    async with evaluator.background(trace_context=True) as background:
        with tracer.start_as_current_span("request") as span:
            background.offer(input="q")
    assert seen == [span.get_span_context().span_id]


async def test_agentjudge_report_reads_a_jsonl_sink_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`agentjudge report FOLDER` (the CLI) prints the per-judge table of an online folder."""
    from agentjudge.harness._cli import main

    async with Evaluator(judges()).background(sinks=[JsonlSink(tmp_path / "results.jsonl")]) as bg:
        for i in range(3):
            bg.offer(input=f"q{i}")
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "relevance" in out and "cases: 3" in out


async def test_agentjudge_report_reads_the_rotated_files_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rotated JSONL sink folder is reported whole: results.jsonl.N ... .1, results.jsonl."""
    from agentjudge.harness._cli import main

    sink = JsonlSink(tmp_path / "results.jsonl", max_bytes=600, backups=20)
    async with Evaluator(judges()).background(sinks=[sink], workers=1) as background:
        for i in range(8):
            background.offer(input=f"q{i}", key=f"k{i}")
            await wait_until(lambda n=i + 1: background.statistics()["sink_written"] == n)
    assert (tmp_path / "results.jsonl.3").exists()  # rotated at least three times
    assert main(["report", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["cases"]["total"] == 8
    assert main(["report", str(tmp_path)]) == 0
    assert "cases: 8" in capsys.readouterr().out


async def _results(n: int) -> list[OnlineResult]:
    got: list[OnlineResult] = []
    async with Evaluator(judges()).background(sinks=[got.append]) as background:
        for i in range(n):
            background.offer(input=f"q{i}", output=f"a{i}", key=f"t{i}")
    return got


class Ticker:
    """A task that counts its turns on the event loop (what a request handler would get)."""

    def __init__(self) -> None:
        self.ticks = 0
        self.started = anyio.Event()

    async def run(self) -> None:
        while True:
            self.started.set()
            await anyio.lowlevel.checkpoint()
            self.ticks += 1


@pytest.mark.parametrize("kind", ["callback", "jsonl", "sqlite", "otel"])
async def test_sinks_yield_to_the_loop_within_a_big_batch(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sink's per-result work is sliced: request handlers run between the slices.

    With the slice set to 0 s the loop gets a turn after every result, so the other task has
    run between any two results' encodings (the built-in sinks' Python work is on the loop, in
    slices; only the I/O goes to a thread).
    """
    from agentjudge.engine import _sinks, _stores

    batch = await _results(20)
    monkeypatch.setattr(_sinks, "SLICE_S", 0.0)
    seen: list[int] = []
    ticker = Ticker()
    row = _stores.online_row

    def recording_row(result: OnlineResult) -> str:
        seen.append(ticker.ticks)
        return row(result)

    monkeypatch.setattr(_stores, "online_row", recording_row)
    sink: Any
    if kind == "callback":
        sink = _sinks.CallbackSink(lambda result: seen.append(ticker.ticks))
    elif kind == "jsonl":
        sink = JsonlSink(tmp_path / "results.jsonl")
    elif kind == "sqlite":
        sink = SqliteSink(tmp_path / "online.db")
    else:
        from opentelemetry.sdk._logs import LoggerProvider

        sink = OtelEventSink(logger_provider=LoggerProvider())
        emit = sink._emit

        def recording_emit(result: OnlineResult) -> None:
            seen.append(ticker.ticks)
            emit(result)

        monkeypatch.setattr(sink, "_emit", recording_emit)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker.run)
        await ticker.started.wait()
        await sink.write(batch)
        tg.cancel_scope.cancel()
    if kind == "sqlite":
        await sink.aclose()
    assert len(seen) == 20
    assert all(a < b for a, b in itertools.pairwise(seen)), seen

"""Issue 12 in process: nothing lost (accounting, stray cancellation, bad text), clear errors."""

from __future__ import annotations

import asyncio
import errno
import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.exceptions import DatasetError
from agentjudge.harness import Case, RunAborted, Suite, iter_rows, run_suite
from agentjudge.harness._dataset import MAX_NESTING, Dataset
from agentjudge.harness._pipeline import CaseRunner, JudgeInterrupted
from agentjudge.harness._run import CasesLost
from agentjudge.harness._task import TaskRunner
from agentjudge.harness._writer import ResultsWriter, WriteFailed, write_failed

TASK = """
import asyncio

async def stray(case):
    # A stray CancelledError: a future someone else cancelled, nobody cancelled the run.
    if case.input.startswith("stray"):
        fut = asyncio.get_running_loop().create_future()
        fut.cancel()
        await fut
    return case.input.upper()

def undecodable(case):
    # What a subprocess's bytes decoded with errors="surrogateescape" look like.
    if case.input == "bad":
        return b"caf\\xe9".decode("utf-8", "surrogateescape")
    return case.input.upper()

def echo(case):
    return case.input
"""

JUDGES = """
import asyncio

from agentjudge.core import Judgment

def exact(ctx):
    if ctx.input == "reason":
        return Judgment.failed(b"r\\xe9sum\\xe9".decode("utf-8", "surrogateescape"))
    return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("differs")

async def stray_judge(ctx):
    # A judge's own stray CancelledError on some cases: that judge's ERROR, never lost rows.
    if ctx.input.startswith("stray"):
        fut = asyncio.get_running_loop().create_future()
        fut.cancel()
        await fut
    return True

def interrupting(ctx):
    if ctx.input == "last":
        raise SystemExit(4)
    return True

judges = [exact]
"""


def make_suite(tmp_path: Path, data: list[dict[str, Any]], task: str, **settings: Any) -> Suite:
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in data), encoding="utf-8"
    )
    (tmp_path / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    return Suite(
        dataset=Path("data.jsonl"),
        task=f"task.py:{task}",
        judges=settings.pop("judges", "judges.py:judges"),
        base_dir=tmp_path,
        **settings,
    )


def words(n: int, special: dict[int, str] | None = None) -> list[dict[str, Any]]:
    special = special or {}
    return [
        {"id": f"c{i:03d}", "input": special.get(i, f"w{i}"), "expected": f"W{i}"} for i in range(n)
    ]


def run(suite: Suite, out: Path, **kw: Any) -> Any:
    return anyio.run(lambda: run_suite(suite, out=out, **kw))


def summary_status(out: Path) -> str:
    return str(json.loads((out / "summary.json").read_text())["status"])


# ----------------------------------------------------------------------------- item 1
async def test_stray_cancelled_error_from_a_task_is_its_error() -> None:
    """A task raising CancelledError nobody asked for returns an error naming CancelledError."""

    async def stray(case: Case) -> str:
        fut = asyncio.get_running_loop().create_future()
        fut.cancel()
        await fut
        return "unreachable"

    for timeout in (None, 5.0):
        output, error = await TaskRunner(stray, timeout=timeout, threads=1)(Case("c", "x"))
        assert output is None
        assert error is not None and error.startswith("CancelledError: ")
        assert "not cancelled" in error


@pytest.mark.parametrize("workers", [1, 2])
def test_stray_cancelled_error_from_a_task_is_an_errored_row(tmp_path: Path, workers: int) -> None:
    """Every case gets a row; the stray-cancelling ones are error rows naming CancelledError."""
    data = words(30, {4: "stray-a", 17: "stray-b"})
    suite = make_suite(tmp_path, data, "stray", workers=workers, concurrency=4)
    summary = run(suite, tmp_path / "out")
    rows = {r["id"]: r for r in iter_rows(tmp_path / "out" / "results.jsonl")}
    assert sorted(rows) == [r["id"] for r in data]
    errored = sorted(i for i, r in rows.items() if r["error"] is not None)
    assert errored == ["c004", "c017"]
    assert rows["c004"]["error"].startswith("CancelledError")
    assert summary.status == "completed" and summary.cases.errors == 2


@pytest.mark.parametrize("workers", [1, 2])
def test_stray_cancelled_error_from_a_judge_loses_no_row(tmp_path: Path, workers: int) -> None:
    """100 cases, a judge cancelling itself on 10: 100 rows, those 10 judgments ERROR."""
    special = {i: f"stray-{i}" for i in range(0, 100, 10)}
    data = words(100, special)
    suite = make_suite(
        tmp_path, data, "echo", workers=workers, concurrency=8, judges="judges.py:stray_judge"
    )
    summary = run(suite, tmp_path / "out")
    rows = {r["id"]: r for r in iter_rows(tmp_path / "out" / "results.jsonl")}
    assert len(rows) == 100
    bad = sorted(
        i for i, r in rows.items() if r["results"][0].get("error_type") == "CancelledError"
    )
    assert bad == [f"c{i:03d}" for i in special]
    assert all(rows[i]["results"][0]["judgment"]["status"] == "error" for i in bad)
    assert summary.status == "completed" and summary.cases.total == 100


def _losing(ids: set[str]) -> Any:
    """`CaseRunner.finish_case` that makes the cases ``ids`` vanish (a stray cancellation).

    Fault injection: it stands for any bug that ends a worker without a row, which the
    accounting must catch whatever its cause.
    """
    original = CaseRunner.finish_case

    async def finish_case(self: CaseRunner, case: Case, *args: Any) -> Any:
        if case.id in ids:
            fut = asyncio.get_running_loop().create_future()
            fut.cancel()
            await fut
        return await original(self, case, *args)

    return finish_case


def test_a_vanished_case_aborts_the_run_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cases in != rows out: RunAborted (CasesLost) naming the missing ids, summary aborted."""
    monkeypatch.setattr(CaseRunner, "finish_case", _losing({"c005"}))
    data = words(60)
    suite = make_suite(tmp_path, data, "echo", concurrency=1)
    out = tmp_path / "out"
    with pytest.raises(RunAborted) as info:
        run(suite, out)
    lost = info.value.__cause__
    assert isinstance(lost, CasesLost)
    written = {r["id"] for r in iter_rows(out / "results.jsonl")}
    assert written == {f"c{i:03d}" for i in range(5)}
    assert lost.missing == [f"c{i:03d}" for i in range(5, 60)]
    message = str(info.value)
    assert "60 cases handed out, 5 rows written" in message
    assert "missing: c005, c006," in message and "c024" in message and "c025" not in message
    assert "and 35 more" in message
    assert summary_status(out) == "aborted"

    monkeypatch.undo()
    summary = run(suite, out, resume=True)
    ids = [r["id"] for r in iter_rows(out / "results.jsonl")]
    assert sorted(ids) == [r["id"] for r in data] and summary.status == "completed"


# ----------------------------------------------------------------------------- item 2
@pytest.mark.parametrize(
    ("row", "field"),
    [
        ('{"id": "a", "input": "x\\ud800y"}', "'input'"),
        ('{"id": "a", "input": 1, "metadata": {"k": ["ok", "\\udfff"]}}', "'metadata.k[1]'"),
        ('{"id": "a", "input": 1, "extra": {"\\ud834": 1}}', "'extra.\\ud834'"),
        ('{"id": "\\udc80", "input": 1}', "'id'"),
    ],
)
def test_lone_surrogate_in_a_dataset_row_is_a_dataset_error(
    tmp_path: Path, row: str, field: str
) -> None:
    """A JSON escape decoding to a lone surrogate is rejected up front, naming line and field."""
    path = tmp_path / "data.jsonl"
    path.write_text('{"id": "ok", "input": "fine"}\n' + row + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        Dataset.open(path)
    message = str(info.value)
    assert "data.jsonl line 2: field " + field in message
    assert "lone surrogate" in message


def test_valid_surrogate_pairs_and_escaped_backslashes_are_accepted(tmp_path: Path) -> None:
    """A surrogate pair (one character) and an escaped backslash before 'ud800' are fine."""
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"id": "a", "input": "\\ud83d\\ude00"}\n{"id": "b", "input": "\\\\ud800"}\n',
        encoding="utf-8",
    )
    cases = list(Dataset.open(path).iter_cases())
    assert [c.input for c in cases] == ["\U0001f600", "\\ud800"]


@pytest.mark.parametrize("workers", [1, 2])
def test_undecodable_text_is_written_escaped_with_a_warning(tmp_path: Path, workers: int) -> None:
    """Lone surrogates in output/reasoning: rows written backslash-escaped with a warning."""
    data = words(12, {3: "bad", 7: "reason"})
    suite = make_suite(tmp_path, data, "undecodable", workers=workers, concurrency=4)
    summary = run(suite, tmp_path / "out")
    assert summary.status == "completed"
    rows = {r["id"]: r for r in iter_rows(tmp_path / "out" / "results.jsonl")}
    assert sorted(rows) == [r["id"] for r in data]
    assert rows["c003"]["output"] == "caf\\udce9"
    assert rows["c003"]["warnings"] == [
        "output: text that is not valid Unicode (lone surrogates) was written with backslash "
        "escapes (backslashreplace)"
    ]
    reasoning = rows["c007"]["results"][0]["judgment"]["reasoning"]
    assert reasoning == "r\\udce9sum\\udce9"
    assert rows["c007"]["warnings"][0].startswith("results")
    assert all("warnings" not in r for i, r in rows.items() if i not in ("c003", "c007"))


def test_one_unwritable_row_never_drops_the_others(tmp_path: Path) -> None:
    """A batch with a row UTF-8 cannot hold writes every row; the good ones byte for byte."""
    path = tmp_path / "results.jsonl"
    good = ['{"id":"a","output":"ok"}\n', '{"id":"c","output":"\u00e9"}\n']
    with ResultsWriter(path) as writer:
        writer.write([good[0], '{"id":"b","output":"\udcff"}\n', good[1]])
    lines = path.read_text("utf-8").splitlines(keepends=True)
    assert [lines[0], lines[2]] == good
    assert json.loads(lines[1])["output"] == "\\udcff"


# ----------------------------------------------------------------------------- item 3
def test_a_judge_raising_system_exit_aborts_after_writing_finished_rows(tmp_path: Path) -> None:
    """SystemExit from a judge: RunAborted (JudgeInterrupted); every finished row is written."""
    data = [*words(20), {"id": "z", "input": "last", "expected": "LAST"}]
    suite = make_suite(
        tmp_path, data, "echo", judges="judges.py:interrupting", concurrency=1, workers=1
    )
    with pytest.raises(RunAborted, match="a judge raised SystemExit: 4 on case 'z'") as info:
        run(suite, tmp_path / "out")
    assert isinstance(info.value.__cause__, JudgeInterrupted)
    assert isinstance(info.value.__cause__.__cause__, SystemExit)
    ids = [r["id"] for r in iter_rows(tmp_path / "out" / "results.jsonl")]
    assert sorted(ids) == [r["id"] for r in data[:-1]]
    assert summary_status(tmp_path / "out") == "aborted"


# ----------------------------------------------------------------------------- item 5
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux /dev/full")
def test_disk_full_is_one_clear_line_naming_the_file() -> None:
    """Writing to a full device raises WriteFailed: 'no space left writing <file>'."""
    with ResultsWriter(Path("/dev/full")) as writer, pytest.raises(WriteFailed) as info:
        writer.write(['{"id":"a"}\n'])
    assert str(info.value) == "no space left writing /dev/full"
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.__cause__.errno == errno.ENOSPC


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (errno.EDQUOT, "disk quota exceeded writing out/results.jsonl"),
        (errno.EFBIG, "file too large (the process's file size limit, ulimit -f, was reached)"),
        (errno.EIO, "I/O error writing out/results.jsonl"),
    ],
)
def test_other_write_failures_are_named(code: int, text: str) -> None:
    """Quota, file size limit and I/O errors each get a one-line message naming the file."""
    message = str(write_failed(OSError(code, "raw"), "out/results.jsonl"))
    assert message.startswith(text) and message.endswith("writing out/results.jsonl")


# ----------------------------------------------------------------------------- item 13
def test_deeply_nested_row_is_a_dataset_error(tmp_path: Path) -> None:
    """10,000 levels of nesting: DatasetError naming file and line, not RecursionError."""
    path = tmp_path / "data.jsonl"
    deep = "[" * 10_000 + "]" * 10_000
    path.write_text('{"id": "a", "input": 1}\n{"id": "b", "input": ' + deep + "}\n", "utf-8")
    with pytest.raises(DatasetError, match=r"data.jsonl line 2: arrays/objects nested more than"):
        Dataset.open(path)


def test_nesting_limit_is_exact_and_the_deepest_allowed_row_runs(tmp_path: Path) -> None:
    """A row nested MAX_NESTING levels runs end to end; one level more is a dataset error."""
    lists = MAX_NESTING - 1  # the row object itself is the first level
    ok = {"id": "deep", "input": "w0", "expected": "W0", "metadata": {}}
    line = json.dumps(ok)[:-1] + ', "extra": ' + "[" * lists + "]" * lists + "}"
    (tmp_path / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(line + "\n", encoding="utf-8")
    suite = Suite(dataset=Path("data.jsonl"), task="task.py:undecodable", judges="judges.py:judges",
                  base_dir=tmp_path)  # fmt: skip
    assert run(suite, tmp_path / "out").cases.total == 1
    deeper = json.dumps(ok)[:-1] + ', "extra": ' + "[" * MAX_NESTING + "]" * MAX_NESTING + "}"
    (tmp_path / "data.jsonl").write_text(deeper + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=f"more than {MAX_NESTING} levels"):
        Dataset.open(tmp_path / "data.jsonl")


def test_an_abort_with_several_errors_names_the_first_and_counts_the_others() -> None:
    """Two workers failing together: the first error and "1 more", never "ExceptionGroup"."""
    from agentjudge.harness._processes import WorkerFailed
    from agentjudge.harness._run import _leading_error

    first, second = WorkerFailed("slot 1 died"), WorkerFailed("slot 2 died")
    nested = ExceptionGroup("outer", [ExceptionGroup("inner", [first]), second])
    assert _leading_error(nested) == (first, 1)
    assert _leading_error(ExceptionGroup("one", [ExceptionGroup("inner", [first])])) == (first, 0)
    assert _leading_error(first) == (first, 0)
    interrupted = BaseExceptionGroup("mixed", [first, KeyboardInterrupt()])
    assert _leading_error(interrupted) == (interrupted, 0)  # re-raised as it is

"""Failing cases everywhere: report lists them, says why judges errored, compare lists changes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from agentjudge.harness import Suite, iter_rows, load_suite, render_report, run_suite
from agentjudge.harness._cases import failing_cases
from agentjudge.harness._cli import main
from agentjudge.harness._report import format_summary, render_compare
from agentjudge.harness._row_schema import results_row_schema

ROOT = Path(__file__).resolve().parents[2]

JUDGES = """
from agentjudge.core import Check, Judgment

def exact(ctx):
    if ctx.output == ctx.expected:
        return Judgment.passed("same")
    return Judgment.failed("differs", checks=[Check(name="equal", passed=False, message="no")])

def picky(ctx):
    return Judgment.abstained("nothing to say") if ctx.input == "y" else Judgment.passed("ok")

def flaky(ctx):
    raise ConnectionError("connection refused by 127.0.0.1:9")

judges = [exact, picky]
errors = [exact, flaky]
"""

TASK = """
def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    return case.input.upper()
"""

ROWS = [
    {"id": "a", "input": "x", "expected": "X", "metadata": {"tags": ["t1"]}},
    {"id": "b", "input": "y", "expected": "nope"},
    {"id": "c", "input": "boom", "expected": "?"},
    {"id": "d", "input": "z", "expected": "Z"},
]


def make_suite(tmp_path: Path, *, task: str = TASK, judges: str = "judges", **kw: Any) -> Suite:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "task.py").write_text(textwrap.dedent(task))
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES))
    return Suite(
        dataset=Path("data.jsonl"),
        task="task.py:answer",
        judges=f"judges.py:{judges}",
        base_dir=tmp_path,
        **kw,
    )


def run(suite: Suite, out: Path, **kw: Any) -> Any:
    return anyio.run(lambda: run_suite(suite, out=out, **kw))


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- the shipped example
def test_rag_qa_report_names_the_task_error_and_the_failing_cases(tmp_path: Path) -> None:
    """`make run`: rag-030 (task error, with the user's frame marked), rag-018, rag-028 appear."""
    out = tmp_path / "rag_qa"
    run(load_suite(ROOT / "examples" / "rag_qa" / "agentjudge.toml"), out)
    text = render_report(out)
    listed = text[text.index("cases needing attention:") :]
    assert "1 task error" in listed and "3 failing" in listed
    positions = [listed.index(f"{i}  ") for i in ("rag-030", "rag-018", "rag-028")]
    assert positions == sorted(positions)  # task error first, then more judges failing first
    assert "rag-030  TASK ERROR" in listed
    assert "ValueError: case rag-030: the question is empty" in listed
    assert "> examples/rag_qa/task.py:" in listed  # the user's frame, marked
    assert "rag-018  FAIL (verdict fail)" in listed and "rag-028  FAIL (verdict fail)" in listed
    assert "Expected route 'troubleshooting', got 'general'" in listed  # a judge's reasoning
    assert "errors (most common reasons):" in text
    assert "1x ValueError: case rag-030: the question is empty" in text
    schema = jsonschema.Draft202012Validator(results_row_schema())
    for row in iter_rows(out / "results.jsonl"):
        assert not list(schema.iter_errors(row)), row["id"]


def test_run_prints_the_cases_needing_attention_after_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`agentjudge run` (not --quiet) prints the error reasons and the listed cases too."""
    suite = str(ROOT / "examples" / "rag_qa" / "agentjudge.toml")
    code, text, _ = cli(capsys, "run", suite, "--out", str(tmp_path), "--progress", "off")
    assert code == 0
    assert "1x ValueError: case rag-030: the question is empty" in text
    assert "rag-030  TASK ERROR" in text and "rag-028  FAIL" in text
    code, text, _ = cli(
        capsys,
        "run",
        suite,
        "--out",
        str(tmp_path),
        "--overwrite",
        "--progress",
        "off",
        "--cases",
        "0",
    )
    assert "cases needing attention" not in text and "result: PASSED" in text


# --------------------------------------------------------------------------- severity
def row(case_id: str, verdict: str | None, *statuses: str, error: str | None = None) -> dict:
    results = [
        {"name": f"j{i}", "judgment": {"status": s, "reasoning": s, "checks": []}}
        for i, s in enumerate(statuses)
    ]
    return {
        "id": case_id,
        "results": results,
        "verdict": None if verdict is None else {"status": verdict, "reasoning": ""},
        "error": error,
    }


SEVERITY_ROWS = [
    row("ok", "pass", "pass", "pass"),
    row("abstain-one", "pass", "pass", "abstain"),
    row("fail-one", "fail", "fail", "pass"),
    row("judge-fail", "pass", "fail", "pass"),
    row("fail-two", "fail", "fail", "fail"),
    row("abstained", "abstain", "abstain", "abstain"),
    row("zz-task", None, error="RuntimeError: x"),
    row("judge-error", "fail", "error", "fail"),
    row("aa-task", None, error="RuntimeError: y"),
]


def test_severity_order_kinds_and_ties() -> None:
    """Task errors, judge errors, verdict FAIL (more judges failing first), judge-only FAIL,
    verdict ABSTAIN, judge-only ABSTAIN; ties by id; passing cases never listed."""
    found = failing_cases(SEVERITY_ROWS, None)
    assert [c.id for c in found.cases] == [
        "aa-task",
        "zz-task",
        "judge-error",
        "fail-two",
        "fail-one",
        "judge-fail",
        "abstained",
        "abstain-one",
    ]
    assert found.counts == {"task_error": 2, "judge_error": 1, "fail": 3, "abstain": 2}
    assert found.total == 8
    assert [c.kind for c in found.cases[:3]] == ["task_error", "task_error", "judge_error"]


def test_the_limit_bounds_the_list_not_the_counts() -> None:
    """--cases N lists the N most severe; 0 lists none; every case is counted either way."""
    assert [c.id for c in failing_cases(iter(SEVERITY_ROWS), 2).cases] == ["aa-task", "zz-task"]
    none = failing_cases(iter(SEVERITY_ROWS), 0)
    assert none.cases == [] and none.total == 8
    assert none.task_errors[0].count == 1


# --------------------------------------------------------------------------- errors and tracebacks
def test_a_judge_that_always_errored_is_explained_with_its_traceback(tmp_path: Path) -> None:
    """Every judgment of a judge errored: the report gives the reason with its count, and each
    listed case the judge's traceback with the user's frame marked."""
    out = tmp_path / "out"
    run(make_suite(tmp_path, judges="errors", allow_errors=True), out)
    text = render_report(out)
    assert "flaky: 3 of 3 judgments errored (every one)" in text
    assert "3x ConnectionError: connection refused by 127.0.0.1:9" in text
    assert "task: 1 of 4 cases errored" in text and "1x RuntimeError: kaboom" in text
    listed = text[text.index("cases needing attention:") :]
    assert "c  TASK ERROR" in listed
    assert "judges.py:" in listed and "in flaky" in listed
    assert [line for line in listed.splitlines() if line.strip().startswith("> ")]


def test_tracebacks_survive_resume_and_show_in_the_case_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows written before a resume keep their tracebacks; `report --case` prints them."""
    suite = make_suite(tmp_path, judges="errors", allow_errors=True)
    out = tmp_path / "out"
    run(suite.model_copy(update={"limit": 3}), out)
    run(suite, out, resume=True)
    rows = {r["id"]: r for r in iter_rows(out / "results.jsonl")}
    assert len(rows) == 4
    assert rows["c"]["traceback"][-1].startswith("> ") and "in answer" in rows["c"]["traceback"][-1]
    flaky = next(r for r in rows["a"]["results"] if r["name"] == "flaky")
    assert flaky["traceback"][-1].startswith("> ") and flaky["traceback"][-1].endswith("flaky")
    code, text, _ = cli(capsys, "report", str(out), "--case", "c")
    assert code == 0
    assert "task error: RuntimeError: kaboom" in text and "in answer" in text
    code, text, _ = cli(capsys, "report", str(out), "--case", "a")
    assert "flaky: ERROR" in text and "error_type ConnectionError" in text and "in flaky" in text


# --------------------------------------------------------------------------- report flags
def test_report_json_and_case_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json: summary, tags and attention as JSON; --case ID --json: the row; unknown id: 2."""
    out = tmp_path / "out"
    run(make_suite(tmp_path), out)
    code, text, _ = cli(capsys, "report", str(out), "--json", "--cases", "1")
    data = json.loads(text)
    assert code == 0
    assert data["summary"]["cases"]["total"] == 4
    assert data["by_tag"]["t1"]["cases"] == 1
    attention = data["attention"]
    assert attention["counts"] == {"task_error": 1, "judge_error": 0, "fail": 1, "abstain": 0}
    assert [c["id"] for c in attention["cases"]] == ["c"]
    code, text, _ = cli(capsys, "report", str(out), "--cases", "all")
    assert "\nb  FAIL (verdict fail)" in text
    assert "failed check equal: no" in text
    assert "nothing to say" in text  # the abstaining judge's reasoning on the same case
    code, text, _ = cli(capsys, "report", str(out), "--cases", "0")
    assert "cases needing attention: 2 of 4" in text and "--cases N" in text
    code, text, _ = cli(capsys, "report", str(out), "--case", "b", "--json")
    assert json.loads(text)["id"] == "b"
    code, _, err = cli(capsys, "report", str(out), "--case", "bb")
    assert code == 2 and "no case 'bb'" in err and "did you mean 'b'" in err
    with pytest.raises(SystemExit) as usage:
        main(["report", str(out), "--cases", "-1"])
    assert usage.value.code == 2
    assert "expected a whole number >= 0 or 'all', got '-1'" in capsys.readouterr().err


def test_schema_results_includes_the_traceback_fields(capsys: pytest.CaptureFixture[str]) -> None:
    """`agentjudge schema --results`: the results row schema, tracebacks included."""
    code, text, _ = cli(capsys, "schema", "--results")
    schema = json.loads(text)
    assert code == 0
    assert "traceback" in schema["properties"]
    assert "traceback" in schema["$defs"]["JudgeResult"]["properties"]


# --------------------------------------------------------------------------- compare and baseline
WRONG_TASK = """
def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    return "wrong" if case.input == "x" else case.input.upper()
"""


def test_compare_lists_each_judges_changed_cases_with_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare A B: per judge, PASS -> not pass cases with the reasons before and after,
    bounded by --cases."""
    a, b = tmp_path / "a", tmp_path / "b"
    run(make_suite(tmp_path), a)
    run(make_suite(tmp_path / "v2", task=WRONG_TASK), b)  # another folder: another module
    text = render_compare(a, b)
    assert "exact pass -> not pass: 1" in text
    block = text[text.index("exact pass -> not pass: 1") :]
    assert "a: pass -> fail" in block
    assert "before: same" in block and "after:  differs" in block
    code, text, _ = cli(capsys, "compare", str(a), str(b), "--cases", "0")
    assert code == 0 and "... and 1 more (--cases N)" in text and "before: same" not in text


def test_baseline_block_lists_judge_flips_with_reasons(tmp_path: Path) -> None:
    """run --baseline: the summary records each flip's reasons and the printed block shows them."""
    a, b = tmp_path / "a", tmp_path / "b"
    run(make_suite(tmp_path), a)
    summary = run(make_suite(tmp_path / "v2", task=WRONG_TASK, baseline=a / "summary.json"), b)
    flip = summary.baseline.judges["exact"].flipped_cases[0]
    assert (flip.id, flip.before_reason, flip.after_reason) == ("a", "same", "differs")
    assert summary.baseline.flipped[0].id == "a"
    assert summary.baseline.flipped[0].after_reason is not None
    text = format_summary(summary)
    assert "exact pass -> not pass: 1" in text and "before: same" in text


# --------------------------------------------------------------------------- secrets
async def test_an_api_key_echoed_by_the_provider_never_reaches_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An LLM judge whose provider echoes the key in a 401: report, --case and --json show
    [REDACTED] (the client's redaction) and the traceback holds no message at all."""
    from agentjudge.judges import LLMJudge
    from agentjudge.models import OpenAIChat
    from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

    key = "sk-live-0123456789abcdef"
    (tmp_path / "data.jsonl").write_text('{"id": "q1", "input": "x"}\n')
    echo = FakeResponse(status=401, text=f"Incorrect API key provided: {key}.")
    async with (
        FakeModelServer(echo) as server,
        OpenAIChat("m", base_url=server.base_url, api_key=key) as model,
    ):
        await run_suite(
            Suite(dataset=tmp_path / "data.jsonl", allow_errors=True),
            out=tmp_path / "out",
            task=lambda case: "answer",
            judges=LLMJudge("graded", model, "{{output}}"),
        )
    out = str(tmp_path / "out")
    text = render_report(out)
    assert "graded: 1 of 1 judgment errored (every one)" in text
    assert "1x ModelHTTPError: openai:m: HTTP 401" in text
    for args in (["--case", "q1"], ["--json"], ["--case", "q1", "--json"]):
        code, printed, _ = cli(capsys, "report", out, *args)
        assert code == 0 and "[REDACTED]" in printed
        assert key not in printed
    assert key not in text

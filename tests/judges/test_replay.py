"""ReplayJudge: answers from a JSONL log; bad rows refused at construction; costs reach the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentjudge import Context, Evaluator, Status
from agentjudge.exceptions import DatasetError
from agentjudge.judges import ReplayJudge


def write_log(path: Path, *rows: dict[str, Any] | str) -> Path:
    """Write rows (dicts as JSON, strings verbatim) one per line."""
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def case(case_id: str) -> Context:
    return Context(input="q", output="a", metadata={"case_id": case_id})


async def test_rows_replay_as_judgments_with_every_documented_field(tmp_path: Path) -> None:
    """Each documented key reaches the judgment: status, label, score, confidence, reasoning."""
    log = write_log(
        tmp_path / "cheap.jsonl",
        "# written by my judge on 2026-11-01",
        {"id": "a", "status": "pass", "label": "relevant", "score": 0.8, "confidence": 0.93,
         "reasoning": "on topic", "metadata": {"prompt_version": 3}},
        "",
        {"id": "b", "status": "fail", "confidence": 0.4},
        {"id": "c", "status": "abstain"},
    )  # fmt: skip
    judge = ReplayJudge(log)
    assert (judge.name, len(judge)) == ("cheap", 3)
    a = await judge(case("a"))
    assert (a.status, a.label, a.score, a.confidence) == (Status.PASS, "relevant", 0.8, 0.93)
    assert a.reasoning == "on topic" and a.metadata["prompt_version"] == 3
    assert a.metadata["replay"] == f"{log} line 2"
    b = await judge(case("b"))
    assert (b.status, b.confidence) == (Status.FAIL, 0.4)
    c = await judge(case("c"))
    assert c.status is Status.ABSTAIN and "no reasoning" in c.reasoning


async def test_a_case_missing_from_the_log_is_an_error_naming_case_and_file(
    tmp_path: Path,
) -> None:
    """A case the log lacks, or a context without a case id, is ERROR naming it, never a pass."""
    log = write_log(tmp_path / "t.jsonl", {"id": "a", "status": "pass"})
    judge = ReplayJudge(log)
    missing = await judge(case("zz"))
    assert missing.status is Status.ERROR
    assert "'zz'" in missing.reasoning and str(log) in missing.reasoning
    no_id = await judge(Context(input="q"))
    assert no_id.status is Status.ERROR and "case_id" in no_id.reasoning
    async with Evaluator(judge) as ev:  # the engine records it as an ERROR result too
        verdict = await ev.verdict(case("zz"))
    assert verdict.judgment.status is Status.ERROR


async def test_a_key_function_finds_the_case_id(tmp_path: Path) -> None:
    """key= looks cases up by any function of the context."""
    log = write_log(tmp_path / "t.jsonl", {"id": "q1", "status": "fail"})
    judge = ReplayJudge(log, name="mine", key=lambda ctx: ctx.input)
    assert (await judge(Context(input="q1"))).status is Status.FAIL
    assert (await judge(Context(input=7))).status is Status.ERROR


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": "a", "status": "ok"}', "line 2: field 'status'"),
        ('{"id": "a", "status": "pass", "confidance": 0.9}', "line 2: unknown field 'confidance'"),
        ('{"status": "pass"}', "line 2: missing required field 'id'"),
        ('{"id": "a"}', "line 2: missing required field 'status'"),
        ('{"id": "", "status": "pass"}', "line 2: field 'id' must be a non-blank string"),
        ('{"id": "a", "status": "pass", "score": 1.5}', "line 2: field 'score'"),
        ('{"id": "a", "status": "pass", "confidence": NaN}', "line 2: field 'confidence'"),
        ('{"id": "a", "status": "error", "confidence": 0.5}', "line 2: field 'confidence'"),
        ('{"id": "a", "status": "abstain", "score": 0.5}', "line 2: field 'score'"),
        ('{"id": "a", "status": "pass", "cost_usd": -1}', "line 2: field 'cost_usd'"),
        ('{"id": "a", "status": "pass", "cost_usd": "0.1"}', "line 2: field 'cost_usd'"),
        ('{"id": "a", "status": "pass", "usage": {"input_tokens": -1}}',
         "line 2: field 'usage.input_tokens'"),
        ('{"id": "a", "status": "pass", "usage": {"tokens": 5}}', "line 2: field 'usage.tokens'"),
        ('{"id": "a", "status": "pass", "calls": 0}', "line 2: field 'calls'"),
        ('{"id": "a", "status": "pass", "cached": "yes"}', "line 2: field 'cached'"),
        ('{"id": "a", "status": "pass", "metadata": []}', "line 2: field 'metadata'"),
        ('{"id": "a", "status": "pass", "metadata": {"aggregation": 1}}',
         "line 2: field 'metadata.aggregation'"),
        ('{"id": "z", "status": "pass"', "line 2: not valid JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
        ('{"id": "ok", "status": "pass"}', "line 2: duplicate id 'ok' (first on line 1)"),
    ],
)  # fmt: skip
def test_a_bad_row_is_refused_at_construction_naming_file_line_and_field(
    tmp_path: Path, line: str, expected: str
) -> None:
    """A malformed row raises DatasetError naming the file, the 1-based line and the field."""
    log = write_log(tmp_path / "bad.jsonl", {"id": "ok", "status": "pass"}, line)
    with pytest.raises(DatasetError) as caught:
        ReplayJudge(log)
    assert str(caught.value).startswith(f"{log} {expected}")


def test_an_unreadable_log_is_a_dataset_error(tmp_path: Path) -> None:
    """A missing file or invalid UTF-8 is a DatasetError naming the file."""
    with pytest.raises(DatasetError, match="cannot read replay log"):
        ReplayJudge(tmp_path / "absent.jsonl")
    (tmp_path / "latin.jsonl").write_bytes(b'{"id": "caf\xe9", "status": "pass"}\n')
    with pytest.raises(DatasetError, match="not valid UTF-8"):
        ReplayJudge(tmp_path / "latin.jsonl")


async def test_cost_and_usage_land_in_metadata_like_a_model_judge(tmp_path: Path) -> None:
    """cost_usd, usage, model, client, cached and calls use the keys of calls_metadata."""
    log = write_log(
        tmp_path / "big.jsonl",
        {"id": "a", "status": "pass", "cost_usd": 0.25, "model": "gpt-x", "calls": 2,
         "usage": {"input_tokens": 800, "output_tokens": 5}},
        {"id": "b", "status": "pass", "cached": True},
    )  # fmt: skip
    judge = ReplayJudge(log, model="openai:gpt-x")
    a = (await judge(case("a"))).metadata
    assert (a["model"], a["client"], a["cached"], a["calls"]) == ("gpt-x", "openai:gpt-x", False, 2)
    assert a["cost_usd"] == 0.25
    assert dict(a["usage"]) == {"input_tokens": 800, "output_tokens": 5}
    b = (await judge(case("b"))).metadata
    assert (b["model"], b["cached"]) == ("openai:gpt-x", True)
    assert "cost_usd" not in b and "usage" not in b and "calls" not in b

"""The results file: row encoding, torn-line tolerance, repair before appending."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentjudge.core import Check, JudgeResult, Judgment
from agentjudge.harness import ResultsError, TaskOutput, iter_rows
from agentjudge.harness._results import (
    encode_row,
    judge_result_dict,
    judgment_dict,
    scan_results,
)
from agentjudge.harness._writer import ResultsWriter

JUDGMENTS = [
    Judgment.passed("fine"),
    Judgment.failed("no", score=0.25, label="low", checks=(Check.fail("c", "bad"),)),
    Judgment.abstained("n/a", label="skip", metadata={"a": [1, {"b": True}]}),
    Judgment.errored("boom"),
]


@pytest.mark.parametrize("judgment", JUDGMENTS)
def test_judgment_dict_matches_pydantic_json_dump(judgment: Judgment) -> None:
    """The encoded hand-built dump equals model_dump(mode='json', exclude_none=True), in order."""
    expected = judgment.model_dump(mode="json", exclude_none=True)
    got = json.loads(encode_row(judgment_dict(judgment)))
    assert got == expected
    assert list(got) == list(expected)


def test_judge_result_dict_round_trips() -> None:
    """JudgeResult.model_validate reads the dump back to an equal result."""
    results = [
        JudgeResult(name="a", judgment=JUDGMENTS[1], attempts=2, duration_s=0.5, queued_s=0.1),
        JudgeResult(name="b", judgment=None, sampled=False, attempts=0),
        JudgeResult(
            name="c", judgment=JUDGMENTS[3], tier="t1", metric_key="m", error_type="TimeoutError"
        ),
    ]
    for r in results:
        assert JudgeResult.model_validate(json.loads(encode_row(judge_result_dict(r)))) == r


def test_encode_row_is_one_compact_line_with_odd_values() -> None:
    """Rows are one newline-terminated JSON line; models, dataclasses, NaN are made JSON."""

    @dataclass
    class Point:
        x: int

    row = {"id": "a", "output": TaskOutput("t", citations=["c"]), "p": Point(1), "f": math.nan}
    line = encode_row(row)
    assert line.endswith("\n") and line.count("\n") == 1
    back = json.loads(line)
    assert back["output"]["citations"] == ["c"]
    assert back["p"] == {"x": 1}
    assert back["f"] == "nan"


def test_encode_row_survives_unencodable_values() -> None:
    """Circular structures and odd dict keys are written as their repr, not an abort."""
    loop: list[object] = []
    loop.append(loop)
    back = json.loads(encode_row({"id": "a", "output": loop, "odd": {(1, 2): "x"}, "n": 1}))
    assert back == {"id": "a", "output": "[[...]]", "odd": "{(1, 2): 'x'}", "n": 1}


def write_rows(path: Path, rows: list[dict[str, object]], tail: str = "") -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail, encoding="utf-8")


def test_scan_tolerates_and_repairs_a_torn_last_line(tmp_path: Path) -> None:
    """A cut-off last line is reported, skipped, and truncated away when repairing."""
    path = tmp_path / "results.jsonl"
    write_rows(path, [{"id": "a"}, {"id": "b"}], tail='{"id": "c", "outp')
    seen: list[str] = []
    scan = scan_results(path, lambda r: seen.append(r["id"]))
    assert (scan.rows, scan.torn_line, seen) == (2, 3, ["a", "b"])
    assert [r["id"] for r in iter_rows(path)] == ["a", "b"]
    scan_results(path, repair=True)
    assert path.read_text().endswith('{"id": "b"}\n')
    with ResultsWriter(path) as writer:
        writer.write([encode_row({"id": "c"})])
    assert [r["id"] for r in iter_rows(path)] == ["a", "b", "c"]


def test_complete_last_row_without_newline_is_kept_and_terminated(tmp_path: Path) -> None:
    """A final complete object lacking its newline counts; repair adds the newline."""
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}', encoding="utf-8")
    scan = scan_results(path, repair=True)
    assert (scan.rows, scan.torn_line) == (2, None)
    assert path.read_text() == '{"id": "a"}\n{"id": "b"}\n'


def test_corruption_before_the_last_line_is_an_error(tmp_path: Path) -> None:
    """Only the last line may be torn; damage earlier names the line."""
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "a"}\n{"id": \n{"id": "c"}\n', encoding="utf-8")
    with pytest.raises(ResultsError, match="line 2: not a JSON row"):
        scan_results(path)
    path.write_text('{"id": "a"}\n[1]\n{"id": "c"}\n', encoding="utf-8")
    with pytest.raises(ResultsError, match="line 2: not a results row"):
        list(iter_rows(path))


def test_malformed_row_content_is_reported_with_its_line(tmp_path: Path) -> None:
    """A row the aggregator cannot read names its line."""
    path = tmp_path / "results.jsonl"
    write_rows(path, [{"id": "a"}, {"id": "b"}])

    def explode(row: dict[str, object]) -> None:
        if row["id"] == "b":
            raise KeyError("results")

    with pytest.raises(ResultsError, match="line 2: malformed results row"):
        scan_results(path, explode)


def test_writer_flushes_each_write(tmp_path: Path) -> None:
    """What `write` returned from is visible to another reader at once."""
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path)
    writer.write([encode_row({"id": "a"}), encode_row({"id": "b"})])
    assert [r["id"] for r in iter_rows(path)] == ["a", "b"]
    writer.close()
    writer.close()
    with pytest.raises(ResultsError, match="closed"):
        writer.write([encode_row({"id": "c"})])

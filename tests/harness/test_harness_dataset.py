"""Datasets: streaming JSONL parsing with messages naming file, line and field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agentjudge.exceptions import DatasetError
from agentjudge.harness import Case, Dataset, TaskOutput


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, text: str, name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        Dataset.open(path)
    return str(info.value)


def test_open_counts_rows_skips_blank_and_comment_lines(tmp_path: Path) -> None:
    """Blank and '#' lines are skipped; rows and sha256 describe the file."""
    text = (
        '# header\n{"id": "a", "input": 1}\n\n   \n  # indented comment\n{"id": "b", "input": 2}\n'
    )
    path = write(tmp_path, text)
    ds = Dataset.open(path)
    assert ds.rows == 2
    assert ds.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert [c.id for c in ds.iter_cases()] == ["a", "b"]


def test_case_fields_and_extras_are_kept(tmp_path: Path) -> None:
    """input, expected, metadata and extra fields reach the Case."""
    row = {"id": "q1", "input": {"q": "hi"}, "expected": [1, 2], "metadata": {"t": 1}, "tag": "x"}
    path = write(tmp_path, json.dumps(row) + "\n")
    (case,) = Dataset.open(path).iter_cases()
    assert case.input == {"q": "hi"}
    assert case.expected == [1, 2]
    assert case.metadata == {"t": 1}
    assert case.extras == {"tag": "x"}


def test_null_input_is_allowed_but_missing_input_is_not(tmp_path: Path) -> None:
    """An explicit null input is a value; an absent one names the field and the id."""
    ok = write(tmp_path, '{"id": "a", "input": null}\n', "ok.jsonl")
    assert next(Dataset.open(ok).iter_cases()).input is None
    bad = write(tmp_path, '{"id": "a", "input": 1}\n{"id": "b"}\n')
    assert error_of(bad) == "data.jsonl line 2 (id 'b'): missing required field 'input'"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"input": 1}', "data.jsonl line 3: missing required field 'id'"),
        (
            '{"id": 7, "input": 1}',
            "data.jsonl line 3: field 'id' must be a non-blank string, got number 7",
        ),
        (
            '{"id": "  ", "input": 1}',
            "data.jsonl line 3: field 'id' must be a non-blank string, got '  '",
        ),
        (
            '{"id": null, "input": 1}',
            "data.jsonl line 3: field 'id' must be a non-blank string, got null",
        ),
        ("[1, 2]", "data.jsonl line 3: expected a JSON object, got array"),
        ('"text"', "data.jsonl line 3: expected a JSON object, got string"),
        (
            '{"id": "a", "input": 1, "metadata": [1]}',
            "data.jsonl line 3 (id 'a'): field 'metadata' must be a JSON object, got array",
        ),
        ('{"id": "a", "input": NaN}', "data.jsonl line 3: invalid JSON: NaN is not valid JSON"),
        (
            '{"id": "a" "input": 1}',
            "data.jsonl line 3, column 12: invalid JSON: Expecting ',' delimiter",
        ),
    ],
)
def test_bad_rows_name_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    """Each malformed row gives a message with the file, the 1-based line and the field."""
    path = write(tmp_path, "# comment\n\n" + line + "\n")
    assert error_of(path) == message


def test_duplicate_ids_are_rejected_exactly(tmp_path: Path) -> None:
    """A repeated id names both lines; ids differing only in case are distinct."""
    path = write(
        tmp_path,
        '{"id": "Q1", "input": 1}\n{"id": "q1", "input": 1}\n{"id": "Q1", "input": 2}\n',
    )
    assert error_of(path) == (
        "data.jsonl line 3: duplicate id 'Q1' (first on line 1; ids are compared exactly)"
    )


def test_missing_file_and_folder_are_dataset_errors(tmp_path: Path) -> None:
    """A missing path or a folder is a DatasetError naming the path."""
    assert "dataset file not found" in error_of(tmp_path / "nope.jsonl")
    assert "is a folder" in error_of(tmp_path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are reported with their line."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"id": "a", "input": 1}\n{"id": "b", "input": "\xff"}\n')
    assert error_of(path).startswith("data.jsonl line 2: not valid UTF-8")


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark at the start of the file is ignored."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "input": 1}\n')
    assert Dataset.open(path).rows == 1


def test_iter_cases_streams_lazily(tmp_path: Path) -> None:
    """Cases are yielded before later lines are read (a bad last line raises only at the end)."""
    path = write(tmp_path, '{"id": "a", "input": 1}\n{"id": "b", "input": 2}\nnot json\n')
    ds = Dataset(path=path, sha256="0" * 64, rows=3)
    cases = ds.iter_cases()
    assert next(cases).id == "a"
    assert next(cases).id == "b"
    with pytest.raises(DatasetError, match="line 3"):
        next(cases)


def test_iter_raw_chunks_keep_line_numbers(tmp_path: Path) -> None:
    """Raw chunks carry 1-based line numbers; parse_chunk drops blank and comment lines."""
    text = "# c\n" + "".join(f'{{"id": "c{i}", "input": {i}}}\n' for i in range(5))
    ds = Dataset.open(write(tmp_path, text))
    chunks = list(ds.iter_raw(hint=40))
    assert len(chunks) > 1
    flat = [lineno for chunk in chunks for lineno, _ in chunk]
    assert flat == [1, 2, 3, 4, 5, 6]
    cases = [c for chunk in chunks for c in ds.parse_chunk(chunk)]
    assert [c.id for c in cases] == ["c0", "c1", "c2", "c3", "c4"]


def test_case_constructor_positional_and_schema() -> None:
    """Case(id, input, ...) takes id and input positionally; the schema requires both."""
    case = Case("a", "question", expected="answer", tag="t")
    assert (case.id, case.input, case.expected, case.extras) == (
        "a",
        "question",
        "answer",
        {"tag": "t"},
    )
    with pytest.raises(ValueError, match="input"):
        Case("a")
    with pytest.raises(ValueError, match="non-blank"):
        Case(" ", 1)
    schema = Case.model_json_schema()
    assert schema["required"] == ["id", "input"]
    assert schema["additionalProperties"] is True


def test_task_output_positional_text() -> None:
    """TaskOutput(text, ...) takes the text positionally and str() gives it back."""
    out = TaskOutput("hello", citations=["a"], route="r", refused=False)
    assert str(out) == "hello"
    assert out.citations == ("a",)

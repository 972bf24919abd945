"""Dataset formats besides JSONL: CSV, JSON arrays, YAML; record-precise errors; format hints."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_support import cli

from agentjudge.exceptions import DatasetError
from agentjudge.harness import Dataset, Suite, iter_rows, run_suite
from agentjudge.harness._dataset import limit_rows


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path, fmt: str | None = None) -> str:
    with pytest.raises(DatasetError) as info:
        Dataset.open(path, format=fmt)
    return str(info.value)


def dumps(path: Path) -> list[dict[str, Any]]:
    return [case.model_dump(exclude_unset=True) for case in Dataset.open(path).iter_cases()]


CSV = (
    "id, input ,expected,human,tags,metadata.source.url,metadata.lang,note\n"
    'q1,"What is 2, plus 2?",4,PASS,math; easy,http://x,en,\n'
    "q2,,,,,,,hello\n"
    "\n"
    'q3,"two\nlines",x,0.5,;,,,\n'
    "q4, spaced ,,False,,,,\n"
)


def test_csv_columns_map_to_fields_as_documented(tmp_path: Path) -> None:
    """Header names are stripped; cells stay strings; empty optional cells are absent."""
    ds = Dataset.open(write(tmp_path, "data.csv", CSV))
    assert (ds.format, ds.rows, ds.labelled) == ("csv", 4, 3)
    assert dumps(ds.path) == [
        {
            "id": "q1",
            "input": "What is 2, plus 2?",
            "expected": "4",
            "human": "pass",
            "metadata": {"tags": ["math", "easy"], "source": {"url": "http://x"}, "lang": "en"},
        },
        {"id": "q2", "input": "", "note": "hello"},
        {"id": "q3", "input": "two\nlines", "expected": "x", "human": "0.5"},
        {"id": "q4", "input": " spaced ", "human": "fail"},
    ]


def test_csv_cells_may_be_longer_than_csvs_default_cap(tmp_path: Path) -> None:
    """A 1 MiB input cell is read whole (csv's default cap is 128 KiB)."""
    big = "x" * (1 << 20)
    (case,) = Dataset.open(write(tmp_path, "data.csv", f"id,input\nq1,{big}\n")).iter_cases()
    assert case.input == big


def test_csv_records_are_numbered_by_their_first_line(tmp_path: Path) -> None:
    """A record after a blank line and a quoted multi-line cell names its own first line."""
    text = 'id,input\nq1,"a\nb"\n\nq2,x\n,y\n'
    assert error_of(write(tmp_path, "data.csv", text)) == (
        "data.csv line 6: field 'id' must be a non-blank string, got ''"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "ID,Input\nq1,x\n",
            "data.csv line 1 (the header): no 'id' column (columns: ID, Input); column names "
            "are case-sensitive: rename 'ID'; columns map to id, input, expected, human, tags, "
            "metadata.<key> and extras",
        ),
        ("id,input,\nq1,x,\n", "data.csv line 1 (the header): column 3 has no name"),
        (
            "id,input,id\nq1,x,y\n",
            "data.csv line 1 (the header): column 'id' appears twice (columns 1 and 3)",
        ),
        (
            "id,input,metadata\nq1,x,{}\n",
            "data.csv line 1 (the header): a 'metadata' column cannot hold an object in CSV; "
            "use one 'metadata.<key>' column per key (dotted keys nest)",
        ),
        (
            "id,input,metadata.a,metadata.a.b\nq1,x,1,2\n",
            "data.csv line 1 (the header): column 'metadata.a' is a value and 'metadata.a.b' "
            "puts a key inside it; keep one",
        ),
        (
            "id,input,tags,metadata.tags\nq1,x,a,b\n",
            "data.csv line 1 (the header): both 'tags' and 'metadata.tags' columns; keep one",
        ),
        (
            "id,input\nq1,x\nq2,a,b\n",
            "data.csv line 3: 3 cells, but the header names 2 columns (quote cells that "
            "contain commas)",
        ),
        ('id,input\nq1,"x\n', "data.csv line 2: invalid CSV: unexpected end of data"),
        (
            "id,input\nq1,x\nq1,y\n",
            "data.csv line 3: duplicate id 'q1' (first on line 2; ids are compared exactly)",
        ),
        (b"id,input\nq1,\xff\n", "data.csv line 2: not valid UTF-8 (byte 4 of the line)"),
    ],
)
def test_csv_errors_name_file_line_and_column(
    tmp_path: Path, text: str | bytes, message: str
) -> None:
    """Each malformed CSV names the file, the line and the column or field at fault."""
    assert error_of(write(tmp_path, "data.csv", text)) == message


def test_json_array_rows_and_line_numbers(tmp_path: Path) -> None:
    """Each element of a JSON array is a row, checked like a JSONL line at its first line."""
    ok = write(tmp_path, "ok.json", '\ufeff[\n {"id": "a", "input": [1, {"b": null}]}\n]\n')
    assert dumps(ok) == [{"id": "a", "input": [1, {"b": None}]}]
    text = '[{"id": "a", "input": 1},\n\n  {"id": "b",\n   "metadata": 3, "input": 2}]'
    assert error_of(write(tmp_path, "data.json", text)) == (
        "data.json line 3 (id 'b'): field 'metadata' must be a JSON object, got number"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"id": "a", "input": NaN}]', "data.json line 1: invalid JSON: NaN is not valid JSON"),
        (
            '[{"id": "a", "input": 1}\n {"id": "b"}]',
            "data.json line 2, column 2: invalid JSON: expected ',' or ']' after an array element",
        ),
        (
            '[{"id": "a", "input": 1}] x',
            "data.json line 1, column 27: invalid JSON: extra data after the array",
        ),
        ('[{"id": "a", "input": 1},\n 5]', "data.json line 2: expected a JSON object, got number"),
        (
            '{"id": "a", "input": 1}\n',
            "data.json line 1: expected a JSON array of objects (one per case), got '{'; a file "
            "with one object per line is JSONL (use --format jsonl or a .jsonl extension)",
        ),
        (
            '[{"id": "a", "input": "\\ud800"}]',
            "data.json line 1: field 'input' holds a lone surrogate ('\\ud800'), which is not "
            "valid Unicode text (write the character itself, or both halves of a surrogate pair)",
        ),
    ],
)
def test_json_errors_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    """A malformed JSON dataset names the file, the line (and column) and the field."""
    assert error_of(write(tmp_path, "data.json", text)) == message


YAML = """\
# cases
- id: a
  input: hi
  metadata: {tags: [x]}
- id: b
  input: 2
  expected: [1, 2.5]
  human: true
"""


def test_yaml_rows(tmp_path: Path) -> None:
    """A YAML sequence of mappings is read with YAML's own types (numbers, lists, booleans)."""
    ds = Dataset.open(write(tmp_path, "data.yml", YAML))
    assert (ds.format, ds.rows, ds.labelled) == ("yaml", 2, 1)
    assert dumps(ds.path) == [
        {"id": "a", "input": "hi", "metadata": {"tags": ["x"]}},
        {"id": "b", "input": 2, "expected": [1, 2.5], "human": True},
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "- id: a\n  input: 1\n- id: b\n  input: 2\n  metadata:\n    when: 2024-01-01\n",
            "data.yaml line 3 (id 'b'): field 'metadata.when' is a date, which JSON cannot "
            "hold (quote it to keep it as text)",
        ),
        (
            "- id: a\n  input: 1\n  metadata:\n    x: 1\n    x: 2\n",
            "data.yaml line 5: key 'x' repeats (first on line 4)",
        ),
        (
            "- id: a\n  input: .nan\n",
            "data.yaml line 1 (id 'a'): field 'input' is nan, which is not valid JSON",
        ),
        (
            "- id: a\n  input: 1\n- 7\n",
            "data.yaml line 3: expected a mapping ('id: ...', 'input: ...'), got int",
        ),
        (
            "id: a\ninput: 1\n",
            "data.yaml line 1: expected a YAML sequence of mappings (one "
            "'- id: ...' item per case)",
        ),
        (
            "- id: a\n  input: [\n",
            "data.yaml line 3, column 1: invalid YAML: expected the node "
            "content, but found '<stream end>'",
        ),
        (
            "- id: a\n- id: b\n  input: 1\n",
            "data.yaml line 1 (id 'a'): missing required field 'input'",
        ),
    ],
)
def test_yaml_errors_name_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    """What JSON cannot hold, repeated keys and malformed YAML name the line and the field."""
    assert error_of(write(tmp_path, "data.yaml", text)) == message


def test_yaml_without_pyyaml_says_which_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without PyYAML a YAML dataset is a dataset error naming agentjudge[yaml]."""
    monkeypatch.setitem(sys.modules, "yaml", None)
    assert "install agentjudge[yaml] (PyYAML)" in error_of(write(tmp_path, "data.yaml", YAML))


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("id,input,expected\nq1,hi,there\n", "this looks like CSV (use --format csv or a .csv "),
        ('[\n{"id": "a", "input": 1}\n]\n', "this looks like a JSON array (use --format json"),
        ('[{"id": "a", "input": 1}]\n', "this looks like a JSON array (use --format json"),
        ("# c\n- id: a\n  input: 1\n", "this looks like YAML (use --format yaml or a .yaml "),
    ],
)
def test_other_formats_given_as_jsonl_say_what_they_look_like(
    tmp_path: Path, text: str, hint: str
) -> None:
    """A CSV, JSON array or YAML file read as JSONL names the format it seems to be in."""
    message = error_of(write(tmp_path, "data.jsonl", text))
    assert message.startswith("data.jsonl line ")
    assert hint in message


def test_format_overrides_the_extension_and_unknown_formats_are_named(tmp_path: Path) -> None:
    """An explicit format wins over the extension; an unknown one lists the known ones."""
    path = write(tmp_path, "cases.txt", "id,input\nq1,x\n")
    assert Dataset.open(path, format="csv").rows == 1
    assert error_of(path, "xml") == "unknown dataset format 'xml' (known: jsonl, csv, json, yaml)"


def test_chunks_hash_and_limits_work_for_every_format(tmp_path: Path) -> None:
    """sha256 is the file's bytes; chunks parse to the cases; a limit cuts at a record."""
    text = "id,input\n" + "".join(f'q{i},"line\n{i}"\n' for i in range(50))
    path = write(tmp_path, "data.csv", text)
    ds = Dataset.open(path)
    assert ds.sha256 == hashlib.sha256(text.encode()).hexdigest()
    chunks = list(ds.iter_raw(hint=64))
    assert len(chunks) > 1
    assert [c.id for chunk in chunks for c in ds.parse_chunk(chunk)] == [f"q{i}" for i in range(50)]
    limited = limit_rows(ds.iter_raw(hint=64), 7, ds.label)
    assert [c.id for chunk in limited for c in ds.parse_chunk(chunk)] == [f"q{i}" for i in range(7)]


TASK = "def answer(case):\n    return case.input.upper()\n"
JUDGES = textwrap.dedent(
    """
    from agentjudge.core import Judgment

    def exact(ctx):
        return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("no")
    """
)


def _suite(tmp_path: Path, dataset: str, **settings: Any) -> Suite:
    write(tmp_path, "task.py", TASK)
    write(tmp_path, "judges.py", JUDGES)
    return Suite(
        dataset=Path(dataset),
        task="task.py:answer",
        judges="judges.py:exact",
        base_dir=tmp_path,
        **settings,
    )


def test_a_csv_run_resumes_and_warns_when_the_file_changed(tmp_path: Path) -> None:
    """A run over a CSV file (dataset_format set) resumes by id and hashes the file's bytes."""
    write(tmp_path, "cases.txt", "id,input,expected\na,x,X\nb,y,nope\n")
    suite = _suite(tmp_path, "cases.txt", dataset_format="csv", limit=1)
    first = anyio.run(lambda: run_suite(suite, out=tmp_path / "o"))
    assert first.dataset.rows == 2
    write(tmp_path, "cases.txt", "id,input,expected\na,x,X\nb,y,nope\nc,z,Z\n")
    again = anyio.run(
        lambda: run_suite(suite.with_overrides(limit=10), out=tmp_path / "o", resume=True)
    )
    ids = [row["id"] for row in iter_rows(tmp_path / "o" / "results.jsonl")]
    assert ids[0] == "a" and sorted(ids) == ["a", "b", "c"]  # rows land as cases finish
    assert again.judges["exact"].counts["pass"] == 2
    assert any("another version of the dataset" in w for w in again.warnings)


def test_cli_format_flag_and_yaml_with_workers(tmp_path: Path) -> None:
    """``--format`` reads a dataset whatever its name; worker processes parse YAML chunks."""
    write(tmp_path, "task.py", TASK)
    write(tmp_path, "judges.py", JUDGES)
    yaml_rows = "".join(f"- {{id: c{i}, input: a, expected: A}}\n" for i in range(20))
    write(tmp_path, "cases.data", yaml_rows)
    done = cli(
        tmp_path,
        *("run", "--dataset", "cases.data", "--format", "yaml", "--workers", "2", "--out", "w"),
        *("--task", "task.py:answer", "--judges", "judges.py:exact", "--progress", "off"),
    )
    assert done.returncode == 0, done.stderr
    assert len(list(iter_rows(tmp_path / "w" / "results.jsonl"))) == 20


def _open_fds_to(path: Path) -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if _target(fd) == str(path))


def _target(fd: Path) -> str:
    try:
        return str(fd.readlink())
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd (Linux)")
def test_a_csv_error_closes_the_file_at_once(tmp_path: Path) -> None:
    """A malformed CSV leaves no open handle behind while its error is still held.

    The error's traceback keeps the reading frames alive; the file was closed only when the
    garbage collector broke that cycle (a ResourceWarning in CI).
    """
    path = write(tmp_path, "data.csv", "id,input,id\n" + "q1,x,y\n" * 1000)
    with pytest.raises(DatasetError, match="appears twice") as info:
        Dataset.open(path)
    assert info.value.__traceback__ is not None
    assert _open_fds_to(path.resolve()) == 0

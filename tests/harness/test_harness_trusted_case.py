"""Datasets' fast path: cases built without validation equal validated ones; both passes agree."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from agentjudge.exceptions import DatasetError
from agentjudge.harness import Case, Dataset
from agentjudge.harness._case import _DEFAULTS, _SHAPES
from agentjudge.harness._dataset import parse_case


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def validated(line: str) -> Case:
    """The case as pydantic validation builds it (a null metadata counts as absent)."""
    row = json.loads(line)
    if "metadata" in row and row["metadata"] is None:
        del row["metadata"]
    return Case.model_validate(row)


def hash_outcome(case: Case) -> object:
    try:
        return hash(case)
    except TypeError as exc:
        return str(exc)


def assert_same(fast: Case, slow: Case) -> None:
    """Everything observable about the two cases is the same."""
    assert type(fast) is Case
    assert fast == slow
    assert slow == fast
    assert list(fast.__dict__.items()) == list(slow.__dict__.items())
    assert fast.model_extra is not None
    assert slow.model_extra is not None
    assert list(fast.model_extra.items()) == list(slow.model_extra.items())
    assert fast.extras == slow.extras
    assert fast.model_fields_set == slow.model_fields_set
    assert type(fast.model_fields_set) is set
    assert fast.__pydantic_private__ is slow.__pydantic_private__ is None
    assert list(fast.model_dump().items()) == list(slow.model_dump().items())
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert fast.model_dump_json() == slow.model_dump_json()
    assert repr(fast) == repr(slow)
    assert hash_outcome(fast) == hash_outcome(slow)
    assert pickle.loads(pickle.dumps(fast)) == slow
    assert copy.deepcopy(fast) == slow
    assert fast.model_copy(update={"expected": 1}) == slow.model_copy(update={"expected": 1})
    for name in fast.model_extra:
        assert getattr(fast, name) == getattr(slow, name)
    with pytest.raises(ValidationError, match="frozen"):
        fast.id = "other"  # type: ignore[misc]


ROWS: list[dict[str, Any]] = [
    {"id": "a", "input": "q"},
    {"id": "a", "input": None},
    {"id": "a", "input": "q", "expected": "e"},
    {"id": "a", "input": "q", "expected": None},
    {"id": "a", "input": "q", "expected": "e", "metadata": {"tags": ["x"], "n": 1}},
    {"id": "a", "input": "q", "expected": "e", "metadata": {}},
    {"id": "a", "input": "q", "metadata": None},
    {"id": "a", "input": "q", "expected": "e", "metadata": None},
    {"id": "a", "input": "q", "metadata": {"k": "v"}},
    {"id": "a", "input": "q", "metadata": {"k": "v"}, "expected": [1, 2]},
    {"id": "a", "input": "q", "expected": "e", "metadata": {"k": 1}, "tag": "t", "n": 2},
    {"tag": "t", "metadata": {"k": 1}, "input": {"q": [1, {"deep": None}]}, "id": "a"},
    {"input": "q", "id": "a", "_private_looking": 1, "model_config": "x"},
    {"id": "é ✓", "input": {"nested": {"list": [1.5, True, None, "s"]}}, "extra": {"a": [[]]}},
    {"id": "a", "input": 2**80, "expected": -0.0, "metadata": {"big": 1e300}},
]


@pytest.mark.parametrize("row", ROWS, ids=lambda row: ",".join(row))
def test_parsed_case_is_indistinguishable_from_validated(row: dict[str, Any]) -> None:
    """parse_case builds the same Case as Case.model_validate, for every row shape."""
    line = json.dumps(row)
    assert_same(parse_case(line, 1, "data.jsonl"), validated(line))


@pytest.mark.parametrize("row", ROWS[:4], ids=lambda row: ",".join(row))
def test_cases_do_not_share_values(row: dict[str, Any]) -> None:
    """Two cases parsed without metadata get their own empty metadata and extras."""
    line = json.dumps(row)
    first, second = parse_case(line, 1, "d"), parse_case(line, 2, "d")
    assert first.metadata == second.metadata == {}
    assert first.metadata is not second.metadata
    assert first.model_extra is not second.model_extra


def test_model_copy_leaves_other_cases_alone() -> None:
    """Copying a case with updates changes neither its fields set nor another case's."""
    line = '{"id": "a", "input": 1}'
    first, second = parse_case(line, 1, "d"), parse_case(line, 2, "d")
    copied = first.model_copy(update={"expected": 2, "tag": "t"})
    assert copied.model_fields_set == {"id", "input", "expected", "tag"}
    assert copied.extras == {"tag": "t"}
    assert first.model_fields_set == second.model_fields_set == {"id", "input"}
    assert first.extras == second.extras == {}
    assert parse_case(line, 3, "d").model_fields_set == {"id", "input"}


def test_dataset_streams_cases_equal_to_validated(tmp_path: Path) -> None:
    """parse_chunk and iter_cases yield the validated cases, in file order."""
    lines = [json.dumps({**row, "id": f"{row['id']}{i}"}) for i, row in enumerate(ROWS)]
    path = tmp_path / "data.jsonl"
    path.write_text("# rows\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    ds = Dataset.open(path)
    assert ds.rows == len(ROWS)
    chunked = [case for chunk in ds.iter_raw(hint=64) for case in ds.parse_chunk(chunk)]
    streamed = list(ds.iter_cases())
    for case_a, case_b, line in zip(chunked, streamed, lines, strict=True):
        assert_same(case_a, validated(line))
        assert_same(case_b, validated(line))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


# The strategies `rows` draws from, built once rather than at every draw (building them, a
# filter's lambda and a union each time, was a large part of the property test's CPU).
_IDS = st.text(min_size=1, max_size=6).filter(str.strip)
_METADATA = st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=3)
_EXTRAS = st.dictionaries(
    st.text(max_size=6).filter(lambda k: k not in Case.model_fields), json_values, max_size=3
)


@st.composite
def rows(draw: st.DrawFn) -> dict[str, Any]:
    fields: dict[str, Any] = {"id": draw(_IDS), "input": draw(json_values)}
    if draw(st.booleans()):
        fields["expected"] = draw(json_values)
    if draw(st.booleans()):
        fields["metadata"] = draw(_METADATA)
    extras = draw(_EXTRAS)
    items = list(fields.items()) + list(extras.items())
    return dict(draw(st.permutations(items)))


@given(rows())
def test_any_row_parses_as_validation_would(row: dict[str, Any]) -> None:
    """For any valid row, in any key order, the fast path equals pydantic validation."""
    line = json.dumps(row)
    assert_same(parse_case(line, 1, "data.jsonl"), validated(line))


def test_field_prefixes_follow_declaration_order() -> None:
    """The rows used as a case's __dict__ as they are have the fields in declaration order."""
    order = tuple(Case.model_fields)
    assert tuple(name for name, _, _ in _DEFAULTS) == order
    for keys, (fields_set, missing) in _SHAPES.items():
        assert keys + tuple(name for name, _, _ in missing) == order
        assert fields_set == set(keys)


BAD_LINES = [
    '{"input": 1}',
    '{"id": 7, "input": 1}',
    '{"id": true, "input": 1}',
    '{"id": "  ", "input": 1}',
    '{"id": null, "input": 1}',
    '{"id": [], "input": 1}',
    '{"id": "a"}',
    "[1, 2]",
    '"text"',
    "null",
    '{"id": "a", "input": 1, "metadata": [1]}',
    '{"id": "a", "input": 1, "metadata": "m"}',
    '{"id": "a", "input": NaN}',
    '{"id": "a", "input": -Infinity}',
    '{"id": "a" "input": 1}',
    '{"id": "a", "input": 1} {"id": "b"}',
    '{"id": "a", "input": 1}}',
    '{"id": "a", "input": tru}',
    "{",
]


@pytest.mark.parametrize("line", BAD_LINES)
def test_validation_and_run_passes_raise_the_same_error(tmp_path: Path, line: str) -> None:
    """A bad row gets the same message from open, parse_chunk, iter_cases and parse_case."""
    path = tmp_path / "data.jsonl"
    path.write_text('{"id": "ok", "input": 0}\n# c\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as opened:
        Dataset.open(path)
    message = str(opened.value)
    assert message.startswith("data.jsonl line 3")
    ds = Dataset(path=path, sha256="0" * 64, rows=2)
    with pytest.raises(DatasetError) as chunked:
        for chunk in ds.iter_raw():
            ds.parse_chunk(chunk)
    with pytest.raises(DatasetError) as streamed:
        list(ds.iter_cases())
    with pytest.raises(DatasetError) as single:
        parse_case(line, 3, "data.jsonl")
    assert str(chunked.value) == str(streamed.value) == str(single.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '  {"id": "a" "input": 1}',
            "data.jsonl line 4, column 14: invalid JSON: Expecting ',' delimiter",
        ),
        ('{"id": "a", "input": 1} x', "data.jsonl line 4, column 25: invalid JSON: Extra data"),
        ("", "data.jsonl line 4, column 1: invalid JSON: Expecting value"),
        (
            '{"id": "a", "input": Infinity}',
            "data.jsonl line 4: invalid JSON: Infinity is not valid JSON",
        ),
    ],
)
def test_parse_case_words_json_errors_like_the_json_decoder(text: str, message: str) -> None:
    """parse_case reports invalid JSON with json's wording and column, whitespace included."""
    with pytest.raises(DatasetError) as info:
        parse_case(text, 4, "data.jsonl")
    assert str(info.value) == message


def test_parse_case_accepts_json_whitespace_around_the_row() -> None:
    """Text with JSON whitespace around the object parses as it did through json's decoder."""
    case = parse_case(' \t{"id": "a", "input": 1}\r\n ', 1, "data.jsonl")
    assert_same(case, validated('{"id": "a", "input": 1}'))


def test_iter_raw_default_chunks_are_bounded(tmp_path: Path) -> None:
    """The default chunk holds about 256 KiB of lines, so a chunk's cases never pile up."""
    line = json.dumps({"id": "x" * 10, "input": "y" * 1000}) + "\n"
    path = tmp_path / "data.jsonl"
    path.write_text(line * 1000, encoding="utf-8")
    chunks = list(Dataset(path=path, sha256="0" * 64, rows=1000).iter_raw())
    assert len(chunks) >= 3
    assert all(sum(len(raw) for _, raw in chunk) < (1 << 18) + len(line) for chunk in chunks)
    assert [lineno for chunk in chunks for lineno, _ in chunk] == list(range(1, 1001))

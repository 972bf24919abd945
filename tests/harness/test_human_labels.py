"""Human labels in datasets: checked, never shown to a judge, carried back in the results row."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.exceptions import DatasetError
from agentjudge.harness import Case, Dataset, Suite, iter_rows, run_suite

SENTINEL = "HUMAN-LABEL-SENTINEL"

JUDGES = """
from agentjudge.core import Judgment

SEEN = []

def nosy(ctx):
    # Everything the judge is given, as text: the context's fields, dump and repr.
    SEEN.append((ctx.metadata["case_id"], repr(ctx) + repr(ctx.model_dump()) + str(vars(ctx))))
    return Judgment.passed("ok")

judges = [nosy]
"""

TASK = """
def answer(case):
    return case.input
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_every_kind_of_human_label_reaches_the_case(tmp_path: Path) -> None:
    """Labels, status words, booleans and numbers are kept as given; null means unlabelled."""
    rows = [
        {"id": "a", "input": 1, "human": "relevant"},
        {"id": "b", "input": 1, "human": "pass"},
        {"id": "c", "input": 1, "human": False},
        {"id": "d", "input": 1, "human": 4},
        {"id": "e", "input": 1, "human": 0.5},
        {"id": "f", "input": 1, "human": None},
        {"id": "g", "input": 1},
    ]
    dataset = Dataset.open(write_rows(tmp_path / "data.jsonl", rows))
    cases = {case.id: case for case in dataset.iter_cases()}
    assert {k: c.human for k, c in cases.items()} == {
        "a": "relevant", "b": "pass", "c": False, "d": 4, "e": 0.5, "f": None, "g": None
    }  # fmt: skip
    assert type(cases["c"].human) is bool and type(cases["d"].human) is int
    assert all(case.extras == {} for case in cases.values())
    assert (dataset.rows, dataset.labelled) == (7, 5)
    assert cases["a"] == Case.model_validate(rows[0])


@pytest.mark.parametrize(
    ("value", "shown"),
    [({"x": 1}, "object"), (["pass"], "array"), ("  ", "'  '"), ("", "''")],
)
def test_a_bad_human_label_names_file_line_and_field(
    tmp_path: Path, value: object, shown: str
) -> None:
    """An object, array or blank string is a dataset error naming file, line and 'human'."""
    path = write_rows(tmp_path / "data.jsonl", [{"id": "a", "input": 1}, {"id": "b", "input": 1}])
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "c", "input": 1, "human": value}) + "\n")
    with pytest.raises(DatasetError) as info:
        Dataset.open(path)
    assert str(info.value) == (
        "data.jsonl line 3 (id 'c'): field 'human' must be a non-blank label string, a status "
        f"word, true/false (pass/fail) or a finite number, got {shown}"
    )


@pytest.mark.parametrize("value", [{"x": 1}, [1], " ", float("nan"), b"pass"])
def test_case_rejects_an_unusable_human_label(value: object) -> None:
    """Case(...) refuses what the dataset refuses (and non-finite numbers)."""
    with pytest.raises(ValueError, match="human"):
        Case("a", 1, human=value)


@pytest.mark.parametrize("workers", [1, 2])
def test_judges_never_see_the_label_and_rows_carry_it_back(tmp_path: Path, workers: int) -> None:
    """The label reaches no judge's context; the results row has it as a top-level key."""
    rows = [
        {"id": "a", "input": "x", "metadata": {"m": 1}, "human": SENTINEL, "tag": "t"},
        {"id": "b", "input": "y"},
        {"id": "c", "input": "z", "human": True},
    ]
    write_rows(tmp_path / "data.jsonl", rows)
    (tmp_path / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    suite = Suite(
        dataset=Path("data.jsonl"),
        task="task.py:answer",
        judges="judges.py:judges",
        base_dir=tmp_path,
        workers=workers,
    )
    anyio.run(lambda: run_suite(suite, out=tmp_path / "out"))
    written = {row["id"]: row for row in iter_rows(tmp_path / "out" / "results.jsonl")}
    assert written["a"]["human"] == SENTINEL
    assert written["a"]["extra"] == {"tag": "t"}
    assert "human" not in written["b"]
    assert written["c"]["human"] is True
    assert list(written["a"])[:7] == [
        "id", "input", "output", "expected", "metadata", "extra", "human"
    ]  # fmt: skip
    if workers == 1:  # the judges ran in this process: look at what they were given
        import sys

        module = next(
            m
            for name, m in sys.modules.items()
            if name.startswith("agentjudge_user_")
            and getattr(m, "__file__", "") == str(tmp_path / "judges.py")
        )
        seen = dict(module.SEEN)
        assert sorted(seen) == ["a", "b", "c"]
        assert all(SENTINEL not in text and "human" not in text for text in seen.values())

"""The code examples in docs/concepts/voting.md run and their assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "concepts" / "voting.md"


def python_blocks() -> list[str]:
    """The fenced python blocks of the voting concepts page."""
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_voting_doc_has_examples() -> None:
    """The voting page carries at least one runnable example."""
    assert python_blocks()


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_voting_doc_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Each python example on the voting page executes without error."""
    code = python_blocks()[index]
    exec(compile(code, f"{DOC.name}[block {index}]", "exec"), {"__name__": "__doc_example__"})
    assert "Weighted average score 0.75" in capsys.readouterr().out

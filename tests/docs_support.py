"""Reading the code blocks of the docs, for the tests that run them.

Markers: an HTML comment on the line right before a fence says what the block is (it renders
as nothing):

- ``<!-- fragment -->``: a piece of a program (a signature, an excerpt needing names defined
  elsewhere); it is not run, and its fence is ``py`` rather than ``python`` so that the pages
  whose blocks run in one namespace skip it too.
- ``<!-- file: NAME -->``: the content of the file NAME of a worked example (a dataset, a suite,
  a module); the page's own test writes it to disk and runs the page's commands on it.

Every other ``python`` block runs, standalone or in its page's own test
(tests/test_docs_examples.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_MARKER = re.compile(r"<!--\s*(fragment|file:\s*(\S+))\s*-->")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    lang: str
    code: str
    line: int  # 1-based line of the opening fence
    marker: str | None  # "fragment", "file" or None
    file: str | None  # the NAME of a ``file:`` marker

    @property
    def is_python(self) -> bool:
        return self.lang in ("python", "py")


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with the marker right before each."""
    found: list[Block] = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = _MARKER.fullmatch(before)
        kind = None if marker is None else ("fragment" if marker[2] is None else "file")
        found.append(
            Block(
                lang=match[1],
                code=match[2],
                line=text.count("\n", 0, match.start()) + 1,
                marker=kind,
                file=None if marker is None else marker[2],
            )
        )
    return found


def write_files(text: str, folder: Path) -> list[str]:
    """Write every ``<!-- file: NAME -->`` block of a page into ``folder``; their names."""
    names = []
    for block in blocks(text):
        if block.file is not None:
            (folder / block.file).write_text(block.code, encoding="utf-8")
            names.append(block.file)
    return names


def shell_commands(text: str) -> list[str]:
    """The commands of a page's ``bash`` blocks, one per line, trailing ``  # comments`` cut."""
    commands = []
    for block in blocks(text):
        if block.lang == "bash":
            for line in block.code.splitlines():
                command = line.split("  #")[0].strip()
                if command:
                    commands.append(command)
    return commands

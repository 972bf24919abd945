"""The test files that can hold ``timing`` tests (`make test` runs those beside the rest, at a
higher priority).

The timing part of `make test` collects only these files: collecting the whole suite costs
about 12 s of CPU, more than the timing tests themselves. The rule reads each module's text
(a ``timing`` marker written anywhere in it); tests/conftest.py checks, whenever the whole
suite is collected, that every test carrying it is in a file the rule finds, so a new one
cannot be skipped by both parts. (The ``ray`` tests ran here too until 2026-11-26; they now
run in the parallel part as one ``xdist_group``, handed out first.)

Run as a script, it prints the files, one per line (the Makefile's input).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

__all__ = ["SERIAL_MARKERS", "holds_serial_tests", "serial_files"]

SERIAL_MARKERS = ("timing",)
TESTS = Path(__file__).resolve().parent
_MARK = re.compile(r"\bmark\.timing\b")


def holds_serial_tests(path: Path) -> bool:
    """True if ``path`` marks a test ``timing`` (as the Makefile's list sees it)."""
    return bool(_MARK.search(path.read_text(encoding="utf-8")))


def serial_files() -> list[Path]:
    """Every test module under tests/ that `holds_serial_tests`, sorted."""
    return sorted(p for p in TESTS.rglob("test_*.py") if holds_serial_tests(p))


if __name__ == "__main__":
    root = TESTS.parent
    sys.stdout.write("".join(f"{p.relative_to(root)}\n" for p in serial_files()))

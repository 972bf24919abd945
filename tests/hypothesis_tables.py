"""Hypothesis's table of the characters ``st.text()`` draws from, built once per clone.

The first ``st.text()`` a process draws asks which of the 1.1 million code points UTF-8 encodes
(hypothesis's ``codec-v2-utf-8`` table) and keeps the answer in ``.hypothesis/unicode_data``.
Hypothesis finds it by encoding every code point on its own, ~2.4 s of CPU on every fresh
clone (on a fresh clone every xdist worker computed it again at its first text draw, until the
table was built once under a lock). The answer is known: every code point but the surrogates,
each one round-tripping. `utf8_intervals` proves that with a few whole-range encodes (~0.05 s)
and `seed_utf8_table` writes it where and how hypothesis reads it, before hypothesis looks.
Should hypothesis move or reshape the file, it does not find or cannot read ours and computes
its own as before (its reader falls back on any error); tests/test_hypothesis_tables.py
checks that it reads ours.

`build_once` then builds the rest (the category table, ~0.25 s) under a lock: the first
process computes and writes it, every later one reads the file (~20 ms). tests/conftest.py
calls it when a collection ends; `make test` runs this file as a script beside the first
collections where the clone has no table yet.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["build_once", "seed_utf8_table", "utf8_intervals"]

LOCK = Path(__file__).resolve().parent / "__pycache__" / "hypothesis-text-tables.lock"
SURROGATES = (0xD800, 0xDFFF)
"""The code points UTF-8 cannot encode (RFC 3629: they are not Unicode scalar values)."""


def _round_trips(first: int, last: int) -> bool:
    text = "".join(map(chr, range(first, last + 1)))
    return text.encode("utf-8").decode("utf-8") == text


def utf8_intervals() -> tuple[list[list[int]], list[list[int]]]:
    """The code points UTF-8 encodes, and those that do not decode back (none), as intervals.

    Proven, not assumed: both ranges around the surrogates encode and decode back whole, and
    no surrogate encodes. Raises AssertionError if this Python's codec says otherwise.
    """
    low, high = SURROGATES
    assert _round_trips(0, low - 1) and _round_trips(high + 1, sys.maxunicode)
    for point in range(low, high + 1):
        try:
            chr(point).encode("utf-8")
        except UnicodeEncodeError:
            continue
        raise AssertionError(f"UTF-8 encoded the surrogate U+{point:04X}")
    return [[0, low - 1], [high + 1, sys.maxunicode]], []


def seed_utf8_table() -> Path | None:
    """Write hypothesis's UTF-8 table (`utf8_intervals`) where it has none; its path, or None.

    None where this hypothesis has no such table (its private ``charmap_file`` is gone).
    """
    try:
        from hypothesis.internal.charmap import charmap_file
    except ImportError:  # pragma: no cover - another hypothesis: it computes its own
        return None
    path = Path(charmap_file("codec-v2-utf-8"))
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent)
    os.close(fd)
    with gzip.GzipFile(temp, "wb", mtime=1) as table:  # as hypothesis writes it
        table.write(json.dumps(list(utf8_intervals())).encode())
    os.replace(temp, path)
    return path


def build_once() -> None:
    """Build (or read) hypothesis's text tables, one process at a time (POSIX file lock)."""
    from hypothesis import strategies as st

    LOCK.parent.mkdir(exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: each process builds its own
        seed_utf8_table()
        st.text().validate()
        return
    with LOCK.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process building it: wait, then read it
        seed_utf8_table()
        st.text().validate()


if __name__ == "__main__":
    build_once()

"""Hypothesis's table of the characters ``st.text()`` draws from, built once per clone.

The first ``st.text()`` a process draws computes which of the 1.1 million code points UTF-8
encodes (~2.5 s of CPU) and keeps the answer in ``.hypothesis/unicode_data``; on a fresh clone
every xdist worker computed it again at its first text draw (the first ``test_models_json_fast``
property took ~3.9 s of CPU instead of ~1 s). `build_once` builds it under a lock: the first
process computes and writes it, every later one reads the file (~20 ms). tests/conftest.py
calls it when a collection ends; `make test` runs this file as a script beside the first
collections where the clone has no table yet, so the table is built while they collect
instead of after (~1.5 s of wall on a fresh clone).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["build_once"]

LOCK = Path(__file__).resolve().parent / "__pycache__" / "hypothesis-text-tables.lock"


def build_once() -> None:
    """Build (or read) hypothesis's text tables, one process at a time (POSIX file lock)."""
    from hypothesis import strategies as st

    LOCK.parent.mkdir(exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: each process builds its own
        st.text().validate()
        return
    with LOCK.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process building it: wait, then read it
        st.text().validate()


if __name__ == "__main__":
    build_once()

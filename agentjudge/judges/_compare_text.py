"""Text comparison: whitespace-normalised text, bytes for binary files."""

from __future__ import annotations

import difflib

from agentjudge.judges._compare_base import (
    norm_ws,
)


def compare_text(expected: bytes, actual: bytes) -> list[str]:
    """Whitespace-normalised text equality with a short diff; binary files compare bytes."""
    try:
        e_text = expected.decode("utf-8")
        a_text = actual.decode("utf-8")
    except UnicodeDecodeError:
        return _compare_bytes(expected, actual)
    if "\x00" in e_text or "\x00" in a_text:
        return _compare_bytes(expected, actual)
    if norm_ws(e_text) == norm_ws(a_text):
        return []
    e_lines = [norm_ws(line) for line in e_text.splitlines() if line.strip()]
    a_lines = [norm_ws(line) for line in a_text.splitlines() if line.strip()]
    diff = list(difflib.unified_diff(e_lines, a_lines, "expected", "actual", n=0, lineterm=""))[2:]
    shown = diff[:12]
    if len(diff) > 12:
        shown.append(f"... ({len(diff) - 12} more diff lines)")
    if not shown:
        shown = ["text differs (after whitespace normalisation)"]
    return ["text differs (whitespace-normalised):\n" + "\n".join(shown)]


def _compare_bytes(expected: bytes, actual: bytes) -> list[str]:
    if expected == actual:
        return []
    limit = min(len(expected), len(actual))
    at = next((i for i in range(limit) if expected[i] != actual[i]), limit)
    return [f"binary content differs at byte {at}"]

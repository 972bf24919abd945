r"""The results file: one JSON object per finished case, appended and flushed as cases finish.

Row keys, in order: ``id``, ``input``, ``output``, ``expected``, ``metadata``, ``results`` (one
`JudgeResult` dump per judge that ran), ``verdict`` (the aggregate `Judgment` dump, null for an
errored case), ``duration_s`` (the task's wall time), ``error`` (null unless the task raised or
timed out: ``"TypeName: message"``). Cases that went through a cascade also carry ``tiers``.
A case with a ``human`` label carries it as a top-level ``human`` key (after ``metadata`` and
``extra``); unlabelled cases have no such key. An error row whose task raised also carries
``traceback`` (after ``error``): the last frames, ``"path:line in function"``, the user's own
frames prefixed with ``"> "`` (`agentjudge.judging.short_traceback`); a judge that raised has
the same list as its result's ``traceback``. Neither holds source lines or values.

Durability: lines are written by one writer, in batches of whatever finished while the previous
batch was being written, each batch followed by a flush to the operating system. Killing the
process loses at most the cases in flight and the lines not yet handed to the OS; an OS crash
can lose what the OS had not yet put on disk (no fsync per line; `ResultsWriter.close` syncs).
A line cut short by a crash (a "torn" last line) is detected and cut off by `scan_results`.

Text that UTF-8 cannot hold (a lone surrogate, e.g. from bytes decoded with
``errors="surrogateescape"`` in a task's output or a judge's reasoning) never stops the writer:
only the rows holding it are rewritten, each such character as the text ``\udcff``
(Python's ``backslashreplace``), and the row gains ``"warnings"`` naming the fields concerned.
A write the operating system refuses (disk full, quota, file size limit, I/O error) raises
`WriteFailed` with one line naming the cause and the file.

The encoding (`encode_case`, `encode_row` and their caches) lives in `agentjudge.core._rows`,
one layer down, so that the engine's online JSONL sink writes the same rows; it is re-exported
here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentjudge.core._rows import (
    encode_case,
    encode_row,
    judge_result_dict,
    judgment_dict,
    tier_dict,
    to_jsonable,
)
from agentjudge.exceptions import AgentJudgeError

__all__ = [
    "ResultsError",
    "ResultsScan",
    "encode_case",
    "encode_row",
    "iter_rows",
    "judge_result_dict",
    "judgment_dict",
    "scan_results",
    "tier_dict",
    "to_jsonable",
]


class ResultsError(AgentJudgeError, ValueError):
    """A results file is corrupt somewhere other than its last line, or cannot be used."""


# ----------------------------------------------------------------------------- reading
class ResultsScan(BaseModel):
    """What `scan_results` found in an existing results file."""

    rows: int = 0
    """Complete rows."""
    valid_bytes: int = 0
    """Length of the file up to the end of the last complete row."""
    torn_line: int | None = None
    """1-based line number of a torn last line, if there was one."""


def _parse_line(raw: bytes, lineno: int, label: str, last: bool) -> dict[str, Any] | None:
    """The row on ``raw``; None for a torn last line.

    A proper prefix of a JSON object is never itself a JSON object, so a last line that parses
    to an object is complete even when its newline is missing.
    """
    try:
        row = json.loads(raw)
    except ValueError:
        if last:
            return None
        raise ResultsError(
            f"{label} line {lineno}: not a JSON row; only the last line may be torn"
        ) from None
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        if last and not raw.endswith(b"\n"):
            return None
        raise ResultsError(f"{label} line {lineno}: not a results row (no string 'id')")
    return row


def _iter_parsed(
    path: Path,
) -> Iterator[tuple[int, bytes, dict[str, Any] | None]]:
    """Yield ``(lineno, raw, row)``; ``row`` is None for blank lines and a torn last line."""
    label = str(path)
    with path.open("rb") as handle:
        previous: bytes | None = None
        lineno = 0
        for raw in handle:
            if previous is not None:
                if previous.strip():
                    yield lineno, previous, _parse_line(previous, lineno, label, last=False)
                else:
                    yield lineno, previous, None
            lineno += 1
            previous = raw
        if previous is not None:
            row = _parse_line(previous, lineno, label, last=True) if previous.strip() else None
            yield lineno, previous, row


def scan_results(
    path: Path, on_row: Callable[[dict[str, Any]], None] | None = None, *, repair: bool = False
) -> ResultsScan:
    """Read a results file row by row, tolerating a torn last line.

    Args:
        path: The results file.
        on_row: Called with every complete row, in file order.
        repair: Cut a torn last line off the file (and end the last row with a newline), so
            that appending continues from a clean end.

    Raises:
        ResultsError: a line other than the last is not a JSON row.
    """
    scan = ResultsScan()
    offset = 0
    ends_with_newline = True
    for lineno, raw, row in _iter_parsed(path):
        if row is None:
            if raw.strip():
                scan.torn_line = lineno
            else:
                offset += len(raw)
            continue
        if on_row is not None:
            try:
                on_row(row)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ResultsError(
                    f"{path} line {lineno}: malformed results row ({type(exc).__name__}: {exc})"
                ) from None
        scan.rows += 1
        offset += len(raw)
        ends_with_newline = raw.endswith(b"\n")
    scan.valid_bytes = offset
    if repair and (scan.torn_line is not None or not ends_with_newline):
        with path.open("r+b") as handle:
            handle.truncate(offset)
            if not ends_with_newline:
                handle.seek(offset)
                handle.write(b"\n")
                scan.valid_bytes += 1
    return scan


def iter_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Stream the complete rows of a results file (a torn last line is skipped).

    Raises:
        ResultsError: a line other than the last is not a JSON row.
    """
    for _, _, row in _iter_parsed(path):
        if row is not None:
            yield row

r"""JSONL datasets, streamed line by line with errors naming the file, the line and the field.

A dataset file holds one JSON object per line::

    {"id": "q1", "input": "What is 2 + 2?", "expected": "4", "metadata": {"tags": ["math"]}}

Blank lines and lines whose first non-blank character is ``#`` are skipped; line numbers in
messages are 1-based and count every physical line. ``id`` is required and must be a non-blank
string; ids are compared exactly (``"Q1"`` and ``"q1"`` are different cases). ``input`` is
required (any JSON value, ``null`` included); ``expected`` is optional (any JSON value);
``metadata`` is optional and must be an object. ``human`` is optional: a person's label for the
case (a non-blank string such as ``"relevant"`` or a status word ``"pass"``, a boolean meaning
pass/fail, or a finite number); ``null`` means unlabelled, like leaving it out. Judges never see
it; the results row carries it back. ``messages`` is optional: the conversation or agent
trajectory as a list of chat messages (OpenAI chat format, tool calls included), checked
message by message; judges see it as ``ctx.messages`` unless the task returns a trajectory of
its own. Other fields are kept as the case's extras.
``NaN`` and ``Infinity`` are not JSON and are rejected, and so are text that is not valid Unicode
(a lone surrogate such as ``"\ud800"``, which JSON's escapes can express but UTF-8 cannot
store) and values nested more than `MAX_NESTING` levels deep.

Every row goes through one checking function, `_row`: `Dataset.open` runs it over the whole
file (with the SHA-256 and the duplicate-id check) without building cases, and the run builds
each `Case` straight from a row it accepted, without validating it a second time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.core import TrajectoryError, as_trajectory
from agentjudge.exceptions import DatasetError
from agentjudge.harness._case import Case, case_from_row, human_label_problem
from agentjudge.harness._formats import (
    JSON_DECODER,
    MAX_NESTING,
    DatasetFormat,
    format_for,
    looks_like,
    open_file,
    records,
)

__all__ = ["MAX_NESTING", "Dataset", "parse_case"]

_READ_CHUNK = 1 << 20
# `iter_raw`'s default: a chunk's cases stay alive until the harness has handed them all out,
# so smaller chunks keep memory down and fewer objects outlive the young GC generations.
_CHUNK_HINT = 1 << 18
_BOM = b"\xef\xbb\xbf"


_decoder = JSON_DECODER
# `raw_decode` reads one JSON value without the whitespace handling of `decode` (about twice
# as fast); `_row` leaves anything unusual, and the wording of errors, to `decode`. (The
# decoder's private scanner under it would save another ~8% of the decoding, ~40 ns a row: not
# worth depending on `json` internals.)
_scan = _decoder.raw_decode


# A lone surrogate can only come from a JSON escape (UTF-8 bytes cannot encode one): rows
# whose text has no such escape need no further look.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _row(text: str, lineno: int, label: str) -> dict[str, Any]:
    """Decode one dataset line's text and check it against the row schema.

    The one place rows are checked: `Dataset.open` relies on it instead of building cases, and
    `case_from_row` relies on it to skip pydantic validation, so the validation pass and the
    run cannot disagree about a row.

    Args:
        text: The line, without its newline (neither blank nor a comment).
        lineno: Its 1-based line number (for messages).
        label: The file name used in messages.

    Returns:
        The decoded row: ``id`` is a non-blank string, ``input`` is present, and ``metadata`` is
        absent or an object (a ``null`` metadata is dropped).

    Raises:
        DatasetError: naming ``label``, ``lineno`` and the field at fault.
    """
    try:
        row, end = _scan(text, 0)
    except (ValueError, RecursionError):
        end = -1
    if end != len(text):
        # Surrounding whitespace, trailing data or an error: the full decoder decides and words it.
        row = _decode_slowly(text, lineno, label)
    if not isinstance(row, dict):
        raise DatasetError(f"{label} line {lineno}: expected a JSON object, got {_type_name(row)}")
    if text.count("[") + text.count("{") > MAX_NESTING and _too_deep(row):
        raise DatasetError(_too_deep_message(label, lineno))
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        _reject_lone_surrogates(row, lineno, label)
    if "id" not in row:
        raise DatasetError(f"{label} line {lineno}: missing required field 'id'")
    case_id = row["id"]
    if not isinstance(case_id, str) or not case_id.strip():
        raise DatasetError(
            f"{label} line {lineno}: field 'id' must be a non-blank string, got {_shown(case_id)}"
        )
    if "input" not in row:
        raise DatasetError(
            f"{label} line {lineno} (id {case_id!r}): missing required field 'input'"
        )
    if "metadata" in row:
        metadata = row["metadata"]
        if metadata is None:
            del row["metadata"]
        elif not isinstance(metadata, dict):
            raise DatasetError(
                f"{label} line {lineno} (id {case_id!r}): field 'metadata' must be a JSON object, "
                f"got {_type_name(metadata)}"
            )
    if "human" in row:
        _check_human(row, lineno, label)
    if "messages" in row:
        _check_messages(row, lineno, label)
    return row


def _check_messages(row: dict[str, Any], lineno: int, label: str) -> None:
    """Check a row's ``messages`` trajectory (a ``null`` one is dropped: no trajectory)."""
    value = row["messages"]
    if value is None:
        del row["messages"]
        return
    where = f"{label} line {lineno} (id {row['id']!r})"
    if not isinstance(value, list):
        raise DatasetError(
            f"{where}: field 'messages' must be a list of chat messages, got {_type_name(value)}"
        )
    try:
        found = as_trajectory(value, "field")
    except TrajectoryError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    if found is None:
        raise DatasetError(
            f"{where}: field 'messages' must be a list of chat messages (objects with a 'role'), "
            f"got a list starting with {_type_name(value[0])}"
        )


def _check_human(row: dict[str, Any], lineno: int, label: str) -> None:
    """Check a row's ``human`` label (a ``null`` one is dropped: unlabelled)."""
    human = row["human"]
    if human is None:
        del row["human"]
        return
    problem = human_label_problem(human)
    if problem is not None:
        raise DatasetError(
            f"{label} line {lineno} (id {row['id']!r}): field 'human' must be a non-blank label "
            f"string, a status word, true/false (pass/fail) or a finite number, got {_shown(human)}"
        )


def _decode_slowly(text: str, lineno: int, label: str) -> Any:
    """``json``'s full decoder on ``text``, its errors turned into `DatasetError`."""
    try:
        return _decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{label} line {lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise DatasetError(f"{label} line {lineno}: invalid JSON: {exc}") from None
    except RecursionError:
        raise DatasetError(_too_deep_message(label, lineno)) from None


def _too_deep_message(label: str, lineno: int) -> str:
    return (
        f"{label} line {lineno}: arrays/objects nested more than {MAX_NESTING} levels deep; "
        "flatten the row (or store the deep value as a JSON string)"
    )


def _too_deep(row: dict[str, Any]) -> bool:
    """Whether ``row`` nests arrays/objects more than `MAX_NESTING` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(row, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            return True
        items = value.values() if isinstance(value, dict) else value
        stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return False


def _reject_lone_surrogates(row: dict[str, Any], lineno: int, label: str) -> None:
    r"""Raise `DatasetError` naming the first field (in file order) holding a lone surrogate.

    Python decodes the JSON escape ``"\ud800"`` to a string no UTF-8 file can hold; such a
    row would be accepted here and then make every attempt to write its results fail.
    """
    stack: list[tuple[str, Any]] = [(key, value) for key, value in reversed(row.items())]
    while stack:
        path, value = stack.pop()
        found = _LONE_SURROGATE.search(path) or (
            _LONE_SURROGATE.search(value) if isinstance(value, str) else None
        )
        if found is not None:
            raise DatasetError(
                f"{label} line {lineno}: field {path!a} holds a lone surrogate "
                f"({found.group()!a}), which is not valid Unicode text (write the character "
                "itself, or both halves of a surrogate pair)"
            )
        if isinstance(value, dict):
            stack.extend((f"{path}.{key}", item) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(value))))


def _shown(case_id: object) -> str:
    """How a bad id is shown in its message."""
    if isinstance(case_id, str):
        return repr(case_id)
    if isinstance(case_id, bool | int | float):
        return f"{_type_name(case_id)} {json.dumps(case_id)}"
    return _type_name(case_id)


def _rows(lines: Iterable[tuple[int, bytes]], label: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The checked rows (see `_row`) among physical lines, blank and comment lines skipped.

    Args:
        lines: ``(1-based line number, raw line)`` pairs, in file order.
        label: The file name used in messages.

    Yields:
        ``(line number, row)`` for each row, lazily: a bad line raises only when reached.

    Raises:
        DatasetError: a line is not UTF-8, or its row is malformed.
    """
    for lineno, raw in lines:
        if lineno == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"{label} line {lineno}: not valid UTF-8 (byte {exc.start + 1} of the line)"
            ) from None
        if text and text[0] != "#":
            yield lineno, _row(text, lineno, label)


def parse_case(text: str, lineno: int, label: str) -> Case:
    """Parse one non-blank, non-comment dataset line into a `Case`.

    Args:
        text: The line, without its newline.
        lineno: Its 1-based line number (for messages).
        label: The file name used in messages.

    Returns:
        The case, equal to ``Case.model_validate`` of the row (a ``null`` metadata counts as
        absent).

    Raises:
        DatasetError: naming ``label``, ``lineno`` and the field at fault.
    """
    return case_from_row(_row(text, lineno, label))


def _read(
    path: Path, label: str, hint: int, fmt: DatasetFormat = "jsonl"
) -> Iterator[list[tuple[int, bytes]]]:
    """Stream the file's rows as ``(lineno, raw row)``, about ``hint`` bytes a chunk.

    JSONL: the physical lines as they are. Other formats: one JSON text per record, numbered
    with the line the record starts on (`agentjudge.harness._formats`).
    """
    if fmt != "jsonl":
        yield from _chunked(records(path, fmt, label), hint)
        return
    with open_file(path, label, _READ_CHUNK) as handle:
        count = 0
        while lines := handle.readlines(hint):
            yield list(enumerate(lines, count + 1))
            count += len(lines)


def _chunked(pairs: Iterator[tuple[int, bytes]], hint: int) -> Iterator[list[tuple[int, bytes]]]:
    chunk: list[tuple[int, bytes]] = []
    size = 0
    for pair in pairs:
        chunk.append(pair)
        size += len(pair[1])
        if size >= hint:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _sha256(path: Path, label: str) -> str:
    digest = hashlib.sha256()
    with open_file(path, label) as handle:
        while block := handle.read(_READ_CHUNK):
            digest.update(block)
    return digest.hexdigest()


_NO_CASES = {
    "jsonl": "no line holds a case (blank and '#' lines are not cases)",
    "csv": "no record after the header line",
    "json": "the array holds no object",
    "yaml": "the document holds no item",
}
_LOOKS_LIKE = {"csv": "CSV", "json": "a JSON array", "yaml": "YAML"}


def _with_hint(exc: DatasetError, chunk: list[tuple[int, bytes]]) -> DatasetError:
    """``exc`` (the first row of a JSONL file failed) with the format the file seems to be in."""
    first = next(
        (raw for _, raw in chunk if raw.strip() and not raw.lstrip().startswith(b"#")), b""
    )
    other = looks_like(first)
    if other is None:
        return exc
    return DatasetError(
        f"{exc}; this looks like {_LOOKS_LIKE[other]} (use --format {other} or a .{other} "
        "extension)"
    )


def limit_rows(
    chunks: Iterator[list[tuple[int, bytes]]], limit: int | None, label: str
) -> Iterator[list[tuple[int, bytes]]]:
    """``chunks`` (of `Dataset.iter_raw`) cut off after the first ``limit`` rows (None: all).

    Rows are counted by the parser itself (`_rows`: blank and ``#`` lines are not rows), so
    with a limit the chunks up to it are parsed once more here.

    Raises:
        DatasetError: a row became malformed since `Dataset.open` checked it.
    """
    if limit is None:
        yield from chunks
        return
    left = limit
    for chunk in chunks:
        if left <= 0:
            return
        for lineno, _ in _rows(chunk, label):
            left -= 1
            if left == 0:
                yield [pair for pair in chunk if pair[0] <= lineno]
                return
        yield chunk


class Dataset(BaseModel):
    """A validated JSONL dataset file; cases are streamed from disk, never held all at once.

    Create one with `Dataset.open`, which reads the whole file once (streaming) to check every
    row, reject duplicate ids and compute the file's SHA-256, so a bad row stops a run before
    any task starts.
    """

    model_config = ConfigDict(frozen=True)

    path: Path
    """The dataset file."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the file's bytes when it was opened."""
    rows: int = Field(ge=0)
    """Number of cases (blank and comment lines excluded)."""
    labelled: int = Field(default=0, ge=0)
    """Number of cases carrying a ``human`` label."""
    format: DatasetFormat = "jsonl"
    """How the file is read: ``"jsonl"``, ``"csv"``, ``"json"`` (an array) or ``"yaml"``."""

    @property
    def label(self) -> str:
        """The file name used in messages."""
        return display_path(self.path)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, format: str | None = None) -> Dataset:
        """Validate ``path`` row by row (bounded memory apart from the set of ids).

        Args:
            path: The dataset file.
            format: ``"jsonl"``, ``"csv"``, ``"json"`` or ``"yaml"``; None chooses by the
                extension (``.csv``, ``.json``, ``.yaml``/``.yml``; anything else is JSONL).

        Raises:
            DatasetError: the file is missing or unreadable, or a row is malformed (the message
                names the file, the 1-based line and the field), or an id repeats.
        """
        file = Path(path)
        label = display_path(file)
        fmt = format_for(file, format)
        digest = hashlib.sha256()
        seen: dict[str, int] = {}
        rows = labelled = 0
        for chunk in _read(file, label, _READ_CHUNK, fmt):
            if fmt == "jsonl":
                for _, raw in chunk:
                    digest.update(raw)
            # The checks cover the whole schema, so no Case is built here.
            try:
                for lineno, row in _rows(chunk, label):
                    case_id = row["id"]
                    first = seen.get(case_id)
                    if first is not None:
                        raise DatasetError(
                            f"{label} line {lineno}: duplicate id {case_id!r} (first on line "
                            f"{first}; ids are compared exactly)"
                        )
                    seen[case_id] = lineno
                    rows += 1
                    labelled += "human" in row
            except DatasetError as exc:
                if fmt == "jsonl" and rows == 0:
                    raise _with_hint(exc, chunk) from None
                raise
        sha256 = digest.hexdigest() if fmt == "jsonl" else _sha256(file, label)
        return cls(path=file, sha256=sha256, rows=rows, labelled=labelled, format=fmt)

    def require_cases(self) -> None:
        """Refuse an empty dataset, which a run could only fail on (nothing to judge).

        Raises:
            DatasetError: the file holds no case.
        """
        if self.rows == 0:
            raise DatasetError(f"dataset {self.label} is empty: {_NO_CASES[self.format]}")

    def iter_raw(self, hint: int = _CHUNK_HINT) -> Iterator[list[tuple[int, bytes]]]:
        """Stream the file's physical lines as ``(lineno, bytes)``, about ``hint`` bytes a chunk.

        Only blocking I/O happens here, so a harness reads chunks on a worker thread and
        parses them with `parse_chunk` on its own thread (parsing on the worker thread would
        fight the event loop for the GIL).
        """
        return _read(self.path, self.label, hint, self.format)

    def parse_chunk(self, chunk: list[tuple[int, bytes]]) -> list[Case]:
        """The cases on a chunk of `iter_raw` (blank and comment lines dropped).

        Raises:
            DatasetError: a row became malformed since `open` checked it.
        """
        return [case_from_row(row) for _, row in _rows(chunk, self.label)]

    def iter_cases(self) -> Iterator[Case]:
        """Stream the cases in file order.

        Raises:
            DatasetError: a row became malformed since `open` checked it.
        """
        label = self.label
        for chunk in self.iter_raw():
            for _, row in _rows(chunk, label):
                yield case_from_row(row)

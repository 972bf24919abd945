"""JSONL datasets, streamed line by line with errors naming the file, the line and the field.

A dataset file holds one JSON object per line::

    {"id": "q1", "input": "What is 2 + 2?", "expected": "4", "metadata": {"tags": ["math"]}}

Blank lines and lines whose first non-blank character is ``#`` are skipped; line numbers in
messages are 1-based and count every physical line. ``id`` is required and must be a non-blank
string; ids are compared exactly (``"Q1"`` and ``"q1"`` are different cases). ``input`` is
required (any JSON value, ``null`` included); ``expected`` is optional (any JSON value);
``metadata`` is optional and must be an object. Other fields are kept as the case's extras.
``NaN`` and ``Infinity`` are not JSON and are rejected.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.exceptions import DatasetError
from agentjudge.harness._case import Case

__all__ = ["Dataset", "parse_case"]

_READ_CHUNK = 1 << 20


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)


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


def parse_case(text: str, lineno: int, label: str) -> Case:
    """Parse one non-blank, non-comment dataset line into a `Case`.

    Args:
        text: The line, without its newline.
        lineno: Its 1-based line number (for messages).
        label: The file name used in messages.

    Raises:
        DatasetError: naming ``label``, ``lineno`` and the field at fault.
    """
    where = f"{label} line {lineno}"
    try:
        row = _decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}, column {exc.colno}: invalid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise DatasetError(f"{where}: invalid JSON: {exc}") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {_type_name(row)}")
    if "id" not in row:
        raise DatasetError(f"{where}: missing required field 'id'")
    case_id = row["id"]
    if not isinstance(case_id, str) or not case_id.strip():
        if isinstance(case_id, str):
            shown = repr(case_id)
        elif isinstance(case_id, bool | int | float):
            shown = f"{_type_name(case_id)} {json.dumps(case_id)}"
        else:
            shown = _type_name(case_id)
        raise DatasetError(f"{where}: field 'id' must be a non-blank string, got {shown}")
    if "input" not in row:
        raise DatasetError(f"{where} (id {case_id!r}): missing required field 'input'")
    metadata = row.get("metadata")
    if metadata is None:
        row.pop("metadata", None)
    elif not isinstance(metadata, dict):
        raise DatasetError(
            f"{where} (id {case_id!r}): field 'metadata' must be a JSON object, "
            f"got {_type_name(metadata)}"
        )
    try:
        return Case.model_validate(row)
    except ValueError as exc:  # pragma: no cover - the checks above cover the schema
        raise DatasetError(f"{where} (id {case_id!r}): {exc}") from None


def _open(path: Path, label: str) -> BinaryIO:
    try:
        return path.open("rb", buffering=_READ_CHUNK)
    except FileNotFoundError:
        raise DatasetError(f"dataset file not found: {label}") from None
    except IsADirectoryError:
        raise DatasetError(f"dataset path is a folder, not a JSONL file: {label}") from None
    except OSError as exc:
        raise DatasetError(f"cannot read dataset file {label}: {exc.strerror or exc}") from None


def _iter_lines(path: Path, label: str) -> Iterator[tuple[int, bytes]]:
    """Yield ``(lineno, raw line)`` for every physical line, streaming."""
    with _open(path, label) as handle:
        yield from enumerate(handle, start=1)


def _decode_line(raw: bytes, lineno: int, label: str) -> str | None:
    """The line's text, or None when it is blank or a comment."""
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{label} line {lineno}: not valid UTF-8 (byte {exc.start + 1} of the line)"
        ) from None
    if not text or text.startswith("#"):
        return None
    return text


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

    @property
    def label(self) -> str:
        """The file name used in messages."""
        return display_path(self.path)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Dataset:
        """Validate ``path`` row by row (bounded memory apart from the set of ids).

        Raises:
            DatasetError: the file is missing or unreadable, or a row is malformed (the message
                names the file, the 1-based line and the field), or an id repeats.
        """
        file = Path(path)
        label = display_path(file)
        digest = hashlib.sha256()
        seen: dict[str, int] = {}
        rows = 0
        for lineno, raw in _iter_lines(file, label):
            digest.update(raw)
            text = _decode_line(raw, lineno, label)
            if text is None:
                continue
            case = parse_case(text, lineno, label)
            first = seen.get(case.id)
            if first is not None:
                raise DatasetError(
                    f"{label} line {lineno}: duplicate id {case.id!r} (first on line {first}; "
                    "ids are compared exactly)"
                )
            seen[case.id] = lineno
            rows += 1
        return cls(path=file, sha256=digest.hexdigest(), rows=rows)

    def iter_raw(self, hint: int = _READ_CHUNK) -> Iterator[list[tuple[int, bytes]]]:
        """Stream the file's physical lines as ``(lineno, bytes)``, about ``hint`` bytes a chunk.

        Only blocking I/O happens here, so a harness reads chunks on a worker thread and
        parses them with `parse_chunk` on its own thread (parsing on the worker thread would
        fight the event loop for the GIL).
        """
        with _open(self.path, self.label) as handle:
            lineno = 0
            while True:
                lines = handle.readlines(hint)
                if not lines:
                    return
                chunk = []
                for raw in lines:
                    lineno += 1
                    chunk.append((lineno, raw))
                yield chunk

    def parse_chunk(self, chunk: list[tuple[int, bytes]]) -> list[Case]:
        """The cases on a chunk of `iter_raw` (blank and comment lines dropped).

        Raises:
            DatasetError: a row became malformed since `open` checked it.
        """
        label = self.label
        cases = []
        for lineno, raw in chunk:
            text = _decode_line(raw, lineno, label)
            if text is not None:
                cases.append(parse_case(text, lineno, label))
        return cases

    def iter_cases(self) -> Iterator[Case]:
        """Stream the cases in file order.

        Raises:
            DatasetError: a row became malformed since `open` checked it.
        """
        label = self.label
        for chunk in self.iter_raw():
            for lineno, raw in chunk:
                text = _decode_line(raw, lineno, label)
                if text is not None:
                    yield parse_case(text, lineno, label)

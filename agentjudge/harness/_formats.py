"""Dataset formats besides JSONL: CSV, a JSON array of objects, YAML (the ``yaml`` extra).

Each format is turned into the dataset's one row shape and then checked by the same function
as a JSONL line (`agentjudge.harness._dataset`): a record becomes ``(line, JSON text)``, the
line being where the record starts in the file, so every message names the file, that line
and the field exactly as for JSONL. The format is chosen by `format_for`: an explicit
``--format`` / ``dataset_format``, else the extension (``.csv``, ``.json``, ``.yaml``/``.yml``;
anything else is JSONL).

CSV (RFC 4180, UTF-8, an optional BOM): the first non-blank record is the header; its names
are stripped of surrounding spaces and are case-sensitive. Columns map to fields:

* ``id`` (required column; a blank cell is an error), ``input`` (required column; an empty
  cell is the empty string);
* ``expected``, ``human``, ``tags``, ``metadata.<key>`` and any other column are optional,
  and an empty cell in them means "absent" (no expected value, unlabelled, no tags, no such
  metadata key, no such extra);
* cells are strings, never converted: ``"4"`` stays the string ``"4"`` (use JSONL, JSON or
  YAML for numbers, lists or objects), except that ``human`` cells ``pass``/``true`` and
  ``fail``/``false`` (any case) become the status words ``"pass"`` and ``"fail"``;
* ``metadata.<key>`` columns build ``metadata``; a dotted key nests (``metadata.source.url``
  is ``{"source": {"url": ...}}``);
* ``tags`` is ``;``-separated (``"math; easy"`` is ``["math", "easy"]``, spaces around each
  tag stripped, empty ones dropped) and becomes ``metadata.tags`` (none left: no tags);
* every other column is kept as an extra of the case.

A JSON dataset is one array of objects (each object is a JSONL row); YAML is a sequence of
mappings whose values must be what JSON can hold (a YAML date, a set or binary data is an
error naming the field: quote it).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import importlib
import json
import math
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal, get_args

from agentjudge.exceptions import DatasetError

__all__ = [
    "DATASET_FORMATS",
    "JSON_DECODER",
    "MAX_NESTING",
    "DatasetFormat",
    "format_for",
    "looks_like",
    "open_file",
    "records",
    "yaml_module",
]

DatasetFormat = Literal["jsonl", "csv", "json", "yaml"]
"""The dataset formats (see the module docstring)."""

DATASET_FORMATS: tuple[str, ...] = get_args(DatasetFormat)

MAX_NESTING = 500
"""Arrays and objects nested deeper than this in a row are a dataset error.

Python's JSON decoder, encoder and ``repr`` recurse, and fail (``RecursionError``) somewhere
near 1000 levels depending on how deep the caller already is; a fixed limit well below that
makes a row either valid everywhere (validation, the run, the results file) or rejected up front.
"""

_EXTENSIONS: dict[str, DatasetFormat] = {
    ".csv": "csv",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
}
TAG_SEPARATOR = ";"
"""What separates the tags in a CSV ``tags`` cell."""
_HUMAN_WORDS = {"pass": "pass", "true": "pass", "fail": "fail", "false": "fail"}
_FIELDS = ("id", "input", "expected", "human", "tags")
_BOM = "\ufeff"


def format_for(path: Path, explicit: str | None = None) -> DatasetFormat:
    """The format of the dataset at ``path``: ``explicit`` when given, else by its extension.

    Raises:
        DatasetError: ``explicit`` is not a known format.
    """
    if explicit is None:
        return _EXTENSIONS.get(path.suffix.lower(), "jsonl")
    for known in get_args(DatasetFormat):
        if explicit == known:
            return known  # type: ignore[no-any-return]
    raise DatasetError(f"unknown dataset format {explicit!r} (known: {', '.join(DATASET_FORMATS)})")


def yaml_module() -> Any:
    """PyYAML, imported on first use.

    Raises:
        DatasetError: it is not installed; the message says which extra provides it.
    """
    try:
        return importlib.import_module("yaml")
    except ImportError:
        raise DatasetError(
            "reading a YAML dataset needs PyYAML: install agentjudge[yaml] (PyYAML), "
            "or convert the file to JSONL, JSON or CSV"
        ) from None


def records(path: Path, fmt: DatasetFormat, label: str) -> Iterator[tuple[int, bytes]]:
    """``(line, JSON text of the row)`` for each record of a CSV, JSON or YAML dataset.

    The rows are not checked here beyond what the format itself requires: the dataset's row
    check runs on the JSON text, with the record's first line in its messages.

    Raises:
        DatasetError: the file is not valid in its format (file, line and column named).
    """
    if fmt == "csv":
        yield from _csv_records(path, label)
    elif fmt == "json":
        yield from _json_records(_text(path, label), label)
    elif fmt == "yaml":
        yield from _yaml_records(_text(path, label), label)
    else:  # pragma: no cover - JSONL is read line by line by the dataset itself
        raise AssertionError(fmt)


def open_file(path: Path, label: str, buffering: int = -1) -> BinaryIO:
    """``path`` opened for reading bytes; a missing or unreadable file is a `DatasetError`."""
    try:
        return path.open("rb", buffering=buffering)
    except FileNotFoundError:
        raise DatasetError(f"dataset file not found: {label}") from None
    except IsADirectoryError:
        raise DatasetError(f"dataset path is a folder, not a file: {label}") from None
    except OSError as exc:
        raise DatasetError(f"cannot read dataset file {label}: {exc.strerror or exc}") from None


def _text(path: Path, label: str) -> str:
    with open_file(path, label) as handle:
        data = handle.read()
    try:
        return data.decode("utf-8").removeprefix(_BOM)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DatasetError(f"{label} line {line}: not valid UTF-8") from None


def _encoded(row: dict[str, Any]) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass")


# ----------------------------------------------------------------------------- CSV
def _csv_lines(path: Path, label: str) -> Generator[str, None, None]:
    """The file's lines, decoded, newlines kept (what `csv.reader` wants)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open_file(path, label) as handle:
        for lineno, raw in enumerate(handle, 1):
            try:
                text = decoder.decode(raw)
            except UnicodeDecodeError as exc:
                raise DatasetError(
                    f"{label} line {lineno}: not valid UTF-8 (byte {exc.start + 1} of the line)"
                ) from None
            yield text.removeprefix(_BOM) if lineno == 1 else text


class _Columns:
    """What a CSV header says about each column: where its cell goes in the row."""

    def __init__(self, header: list[str], label: str, lineno: int) -> None:
        self.names = [name.strip() for name in header]
        self.label = label
        self.where = f"{label} line {lineno} (the header)"
        seen: dict[str, int] = {}
        for number, name in enumerate(self.names, 1):
            if not name:
                raise DatasetError(f"{self.where}: column {number} has no name")
            if name in seen:
                raise DatasetError(
                    f"{self.where}: column {name!r} appears twice (columns {seen[name]} "
                    f"and {number})"
                )
            seen[name] = number
        for required in ("id", "input"):
            if required not in seen:
                raise DatasetError(self._missing(required))
        self.paths = [self._path(name) for name in self.names]

    def _missing(self, name: str) -> str:
        near = [n for n in self.names if n.lower() == name]
        hint = f"; column names are case-sensitive: rename {near[0]!r}" if near else ""
        return (
            f"{self.where}: no {name!r} column (columns: {', '.join(self.names)}){hint}; "
            "columns map to id, input, expected, human, tags, metadata.<key> and extras"
        )

    def _path(self, name: str) -> tuple[str, ...]:
        if name == "metadata":
            raise DatasetError(
                f"{self.where}: a 'metadata' column cannot hold an object in CSV; "
                "use one 'metadata.<key>' column per key (dotted keys nest)"
            )
        if not name.startswith("metadata."):
            return (name,)
        keys = tuple(name.split(".")[1:])
        if not all(key.strip() for key in keys):
            raise DatasetError(f"{self.where}: column {name!r} has an empty metadata key")
        if keys == ("tags",) and "tags" in self.names:
            raise DatasetError(f"{self.where}: both 'tags' and 'metadata.tags' columns; keep one")
        for other in self.names:
            if other.startswith(name + "."):
                raise DatasetError(
                    f"{self.where}: column {name!r} is a value and {other!r} puts a key "
                    "inside it; keep one"
                )
        return ("metadata", *keys)

    def row(self, cells: list[str], lineno: int) -> dict[str, Any]:
        """The dataset row of one record (see the module docstring)."""
        if len(cells) != len(self.names):
            raise DatasetError(
                f"{self.label} line {lineno}: {len(cells)} cells, but the header "
                f"names {len(self.names)} columns (quote cells that contain commas)"
            )
        row: dict[str, Any] = {}
        for path, cell in zip(self.paths, cells, strict=True):
            name = path[0]
            if name == "id" or name == "input":
                row[name] = cell
            elif not cell:
                continue  # an empty optional cell: the field is absent
            elif name == "human":
                row[name] = _HUMAN_WORDS.get(cell.strip().lower(), cell)
            elif name == "tags":
                tags = [t.strip() for t in cell.split(TAG_SEPARATOR) if t.strip()]
                if tags:
                    row.setdefault("metadata", {})["tags"] = tags
            elif name == "metadata":
                target = row.setdefault("metadata", {})
                for key in path[1:-1]:
                    target = target.setdefault(key, {})
                target[path[-1]] = cell
            else:
                row[name] = cell
        return row


_CSV_FIELD_LIMIT = 2**31 - 1
"""`csv`'s cap on one cell (128 KiB by default, process-wide) is raised to this: a case's input
may be a whole document. Raising it only loosens an arbitrary cap for every reader."""


def _csv_records(path: Path, label: str) -> Iterator[tuple[int, bytes]]:
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    lines = _csv_lines(path, label)
    with contextlib.closing(lines):  # an error below must close the file now, not at GC
        yield from _csv_rows(csv.reader(lines, strict=True), label)


def _csv_rows(reader: Any, label: str) -> Iterator[tuple[int, bytes]]:
    columns: _Columns | None = None
    end = 0
    while True:
        start = end + 1
        try:
            cells = next(reader, None)
        except csv.Error as exc:
            raise DatasetError(f"{label} line {reader.line_num}: invalid CSV: {exc}") from None
        if cells is None:
            return
        end = reader.line_num
        if not cells or cells == [""]:
            start = end + 1
            continue  # a blank line
        if columns is None:
            columns = _Columns(cells, label, start)
            continue
        yield start, _encoded(columns.row(cells, start))


# ----------------------------------------------------------------------------- JSON
_SPACE = re.compile(r"[ \t\n\r]*")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


JSON_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
"""The dataset's JSON decoder: ``NaN`` and ``Infinity`` are refused (they are not JSON)."""


def _json_records(text: str, label: str) -> Iterator[tuple[int, bytes]]:
    """Each element of the file's top-level array, as its own text (decoded again later)."""
    where = _Lines(text)
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("[", at):
        got = "nothing" if at == len(text) else f"{text[at]!r}"
        raise DatasetError(
            f"{label} line {where.line(at)}: expected a JSON array of objects (one per case), "
            f"got {got}; a file with one object per line is JSONL (use --format jsonl or a "
            ".jsonl extension)"
        )
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    if text.startswith("]", at):
        at += 1
    else:
        while True:
            try:
                _, end = JSON_DECODER.raw_decode(text, at)
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"{label} line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
                ) from None
            except ValueError as exc:  # NaN / Infinity
                raise DatasetError(f"{label} line {where.line(at)}: invalid JSON: {exc}") from None
            except RecursionError:
                raise DatasetError(
                    f"{label} line {where.line(at)}: arrays/objects nested too deeply"
                ) from None
            yield where.line(at), text[at:end].encode("utf-8", "surrogatepass")
            at = _SPACE.match(text, end).end()  # type: ignore[union-attr]
            if text.startswith(",", at):
                at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                continue
            if text.startswith("]", at):
                at += 1
                break
            raise DatasetError(
                f"{label} line {where.line(at)}, column {where.column(at)}: invalid JSON: "
                "expected ',' or ']' after an array element"
            )
    rest = _SPACE.match(text, at).end()  # type: ignore[union-attr]
    if rest != len(text):
        raise DatasetError(
            f"{label} line {where.line(rest)}, column {where.column(rest)}: invalid JSON: "
            "extra data after the array"
        )


class _Lines:
    """Line and column numbers of offsets into one text, for offsets read in order."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.lineno = 1

    def line(self, offset: int) -> int:
        if offset < self.offset:
            self.offset, self.lineno = 0, 1
        self.lineno += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.lineno

    def column(self, offset: int) -> int:
        return offset - (self.text.rfind("\n", 0, offset) + 1) + 1


# ----------------------------------------------------------------------------- YAML
def _yaml_records(text: str, label: str) -> Iterator[tuple[int, bytes]]:
    """Each item of the document's top-level sequence, constructed and checked for JSON."""
    yaml = yaml_module()
    loader = yaml.SafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise DatasetError(_yaml_error(exc, label)) from None
        if root is None:
            return
        if not isinstance(root, yaml.SequenceNode):
            raise DatasetError(
                f"{label} line {root.start_mark.line + 1}: expected a YAML sequence of "
                "mappings (one '- id: ...' item per case)"
            )
        for item in root.value:
            lineno = item.start_mark.line + 1
            _check_unique_keys(yaml, item, label)
            try:
                value = loader.construct_object(item, deep=True)
            except yaml.MarkedYAMLError as exc:
                raise DatasetError(_yaml_error(exc, label)) from None
            if not isinstance(value, dict):
                raise DatasetError(
                    f"{label} line {lineno}: expected a mapping ('id: ...', 'input: ...'), "
                    f"got {type(value).__name__}"
                )
            _check_json(value, f"{label} line {lineno}", _id_of(value))
            yield lineno, _encoded(value)
    except RecursionError:
        raise DatasetError(f"{label}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def _check_unique_keys(yaml: Any, item: Any, label: str) -> None:
    """Refuse a mapping that repeats a key (PyYAML would keep the last value silently)."""
    stack, visited = [item], set()
    while stack:
        node = stack.pop()
        if id(node) in visited:  # an alias: checked where its anchor is
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    line = key.start_mark.line + 1
                    if (key.tag, key.value) in seen:
                        raise DatasetError(
                            f"{label} line {line}: key {key.value!r} repeats (first on line "
                            f"{seen[key.tag, key.value]})"
                        )
                    seen[key.tag, key.value] = line
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _yaml_error(exc: Any, label: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = (
        f"{label}" if mark is None else f"{label} line {mark.line + 1}, column {mark.column + 1}"
    )
    problem = exc.problem or exc.context or "invalid YAML"
    return f"{where}: invalid YAML: {problem}"


def _id_of(row: dict[Any, Any]) -> str:
    case_id = row.get("id")
    return f" (id {case_id!r})" if isinstance(case_id, str) else ""


_JSON_TYPES = (str, int, float, bool, type(None))


def _check_json(row: dict[Any, Any], where: str, ident: str) -> None:
    """Refuse what JSON cannot hold (non-string keys, dates, sets, bytes, NaN), field named."""
    stack: list[tuple[str, Any, int]] = [("", row, 0)]
    while stack:
        path, value, depth = stack.pop()
        field = f"field {path.lstrip('.')!r}" if path else "the row"
        if isinstance(value, dict):
            if depth >= MAX_NESTING:
                raise DatasetError(f"{where}{ident}: {field} is nested too deeply")
            for key, item in value.items():
                if not isinstance(key, str):
                    raise DatasetError(
                        f"{where}{ident}: {field} has a key {key!r} that is not a string (quote it)"
                    )
                stack.append((f"{path}.{key}", item, depth + 1))
        elif isinstance(value, list):
            if depth >= MAX_NESTING:
                raise DatasetError(f"{where}{ident}: {field} is nested too deeply")
            stack.extend((f"{path}[{i}]", item, depth + 1) for i, item in enumerate(value))
        elif not isinstance(value, _JSON_TYPES):
            raise DatasetError(
                f"{where}{ident}: {field} is a {type(value).__name__}, which JSON "
                "cannot hold (quote it to keep it as text)"
            )
        elif isinstance(value, float) and not math.isfinite(value):
            raise DatasetError(f"{where}{ident}: {field} is {value!r}, which is not valid JSON")


# ----------------------------------------------------------------------------- sniffing
def looks_like(first: bytes) -> DatasetFormat | None:
    """The other format a file whose first JSONL row failed seems to be in, if any.

    Args:
        first: The file's first non-blank, non-comment line (raw).
    """
    text = first.decode("utf-8", "replace").removeprefix(_BOM).strip()
    if re.match(r"\[\s*(\{|$)", text):
        return "json"  # an array of objects, or one opened on a line of its own
    if text.startswith(("{", "[")):
        return None
    if text.startswith(("- ", "---")) or re.match(r"^[A-Za-z_][\w.-]*:(\s|$)", text):
        return "yaml"
    try:
        cells = next(csv.reader([text]))
    except csv.Error:
        return None
    return "csv" if len(cells) >= 2 else None

"""File judges: `FileExists`, `FileContent` and `SupersetDiff`."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from agentjudge.core import Check, Context, Judgment
from agentjudge.judges._paths import (
    DeterministicJudge,
    PathEscapeError,
    WorkspaceError,
    check_reference_files,
    first_names,
    normalise_excludes,
    resolved_then,
)
from agentjudge.judges._safeio import (
    DEFAULT_MAX_BYTES,
    FileTooLargeError,
    NotRegularFileError,
    entry_exists,
    open_regular,
    read_file,
    read_full,
)

__all__ = ["FileContent", "FileExists", "MatchMode", "SupersetDiff"]

_CHUNK = 1 << 16


class MatchMode(StrEnum):
    """How `FileContent` compares a file's text with the expected text."""

    EXACT = "exact"
    """The whole text equals the expected text (no trimming or newline normalisation)."""
    CONTAINS = "contains"
    """The expected text occurs somewhere in the file."""
    REGEX = "regex"
    """The expected regular expression matches somewhere in the file (``re.search``)."""


def _path_text(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if not text.strip():
        raise ValueError("path must be non-blank")
    return text


def _confinement(ctx: Context, allow_outside: bool) -> Path | None:
    """The folder reads are confined to: the workspace, unless the judge allows outside paths."""
    if allow_outside or ctx.workspace is None:
        return None
    return Path(ctx.workspace)


def _max_bytes(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_bytes must be an int >= 0, got {value!r}")
    return value


class FileExists(DeterministicJudge):
    """PASS when a file or folder exists at ``path`` inside the workspace.

    Args:
        path: Path relative to `Context.workspace` (or absolute inside it).
        name: Judge name; defaults to ``"FileExists"``.
        allow_outside: Allow paths that resolve outside the workspace.

    A path escaping the workspace (``..``, symbolic links) is ERROR unless ``allow_outside``.
    The path is looked up by a confined walk (links followed only while they stay inside), so a
    link swapped in mid-check cannot make it report on a file outside the workspace.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        allow_outside: bool = False,
    ) -> None:
        self.path = _path_text(path)
        self.allow_outside = allow_outside
        super().__init__(name, f"Verifies that a file exists at {self.path}")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        try:
            confined = _confinement(ctx, self.allow_outside)
            found = await resolved_then(
                ctx, self.path, entry_exists, confined, allow_outside=self.allow_outside
            )
        except (WorkspaceError, PathEscapeError) as exc:
            return Judgment.errored(str(exc), metadata={"path": self.path})
        except OSError as exc:
            return Judgment.errored(
                f"Cannot look for {self.path}: {exc.strerror or exc}", metadata={"path": self.path}
            )
        if found:
            return Judgment.passed(
                f"File exists at {self.path}",
                checks=(Check.ok("file_exists", f"Found {self.path}"),),
                metadata={"path": self.path},
            )
        return Judgment.failed(
            f"File not found at {self.path}",
            checks=(Check.fail("file_exists", f"Not found: {self.path}"),),
            metadata={"path": self.path},
        )


class FileContent(DeterministicJudge):
    """PASS when the text of the file at ``path`` matches ``expected``.

    Checks, in order: ``file_exists``, ``file_readable``, ``content_match``. A missing file is
    FAIL with the single failing check ``file_exists``. A file that cannot be read as text (a
    folder, no permission, a binary file, invalid UTF-8) is ERROR naming the file and the reason.

    Args:
        path: Path relative to `Context.workspace`.
        expected: Expected text, substring or regular expression (see `MatchMode`).
        mode: `MatchMode.EXACT` (default), `MatchMode.CONTAINS` or `MatchMode.REGEX` (search).
        name: Judge name; defaults to ``"FileContent"``.
        allow_outside: Allow paths that resolve outside the workspace.
        max_bytes: Largest file read (default 64 MiB); a larger file is ERROR naming its size.

    The file is opened without following links out of the workspace (checked on the opened
    file, so swapping in a link mid-check cannot redirect the read) and without blocking: a named
    pipe, socket or device is ERROR ("not a regular file"), never a wait.

    Raises:
        ValueError: ``expected`` is not a string, ``mode`` is unknown, the regular expression
            does not compile (the message names the pattern) or ``max_bytes`` is negative.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        expected: str,
        mode: MatchMode | str = MatchMode.EXACT,
        *,
        name: str | None = None,
        allow_outside: bool = False,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.path = _path_text(path)
        self.max_bytes = _max_bytes(max_bytes)
        if not isinstance(expected, str):
            raise ValueError(f"expected must be a str, got {type(expected).__name__}")
        try:
            self.mode = MatchMode(mode)
        except ValueError:
            allowed = ", ".join(m.value for m in MatchMode)
            raise ValueError(f"mode must be one of {allowed}, got {mode!r}") from None
        self.expected = expected
        self._pattern: re.Pattern[str] | None = None
        if self.mode is MatchMode.REGEX:
            try:
                self._pattern = re.compile(expected)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {expected!r}: {exc}") from None
        self.allow_outside = allow_outside
        super().__init__(name, f"Verifies file content at {self.path} ({self.mode.value} match)")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        meta = {"path": self.path, "mode": self.mode.value}
        exists = Check.ok("file_exists", f"Found {self.path}")
        try:  # the name is resolved and the file read in one hop to a worker thread
            confined = _confinement(ctx, self.allow_outside)
            allow = self.allow_outside
            data = await resolved_then(
                ctx, self.path, read_file, confined, self.max_bytes, allow_outside=allow
            )
        except (WorkspaceError, PathEscapeError) as exc:  # resolving it, or opening it
            return Judgment.errored(str(exc), metadata=meta)
        except (FileNotFoundError, NotADirectoryError):
            return Judgment.failed(
                f"File not found at {self.path}",
                checks=(Check.fail("file_exists", f"Not found: {self.path}"),),
                metadata=meta,
            )
        except NotRegularFileError as exc:
            if exc.kind == "a folder":
                return self._unreadable(exists, "it is a folder, not a file", meta)
            return self._unreadable(exists, f"it is {exc.kind}, not a regular file", meta)
        except FileTooLargeError as exc:
            return self._unreadable(
                exists,
                f"too large ({exc.size} bytes; the limit is max_bytes={exc.limit})",
                meta,
            )
        except OSError as exc:
            return self._unreadable(exists, exc.strerror or str(exc), meta)
        nul = data.find(b"\x00")
        if nul >= 0:
            return self._unreadable(exists, f"binary content (NUL byte at offset {nul})", meta)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._unreadable(
                exists, f"not valid UTF-8 (byte {exc.start}: {exc.reason})", meta
            )
        readable = Check.ok("file_readable", f"Read {len(data)} bytes")
        matched, detail = self._match(text)
        label = self.mode.value.upper()
        if matched:
            return Judgment.passed(
                f"Content {self.mode.value} match in {self.path}",
                checks=(exists, readable, Check.ok("content_match", f"{label} match succeeded")),
                metadata=meta,
            )
        return Judgment.failed(
            f"Content does not {self.mode.value} match in {self.path}: {detail}",
            checks=(
                exists,
                readable,
                Check.fail("content_match", f"{label} match failed: {detail}"),
            ),
            metadata=meta,
        )

    def _unreadable(self, exists: Check, reason: str, meta: dict[str, str]) -> Judgment:
        return Judgment.errored(
            f"Cannot read {self.path} as UTF-8 text: {reason}",
            checks=(exists, Check.fail("file_readable", f"Cannot read {self.path}: {reason}")),
            metadata=meta,
        )

    def _match(self, text: str) -> tuple[bool, str]:
        if self.mode is MatchMode.EXACT:
            if text == self.expected:
                return True, ""
            limit = min(len(text), len(self.expected))
            at = next((i for i in range(limit) if text[i] != self.expected[i]), limit)
            return False, (
                f"first difference at character {at} "
                f"(expected {len(self.expected)} characters, found {len(text)})"
            )
        if self.mode is MatchMode.CONTAINS:
            if self.expected in text:
                return True, ""
            return False, f"{_excerpt(self.expected)} does not occur"
        assert self._pattern is not None
        if self._pattern.search(text) is not None:
            return True, ""
        return False, f"pattern {self.expected!r} has no match"


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def first_difference(a: Path, b: Path) -> int | None:
    """Return the 0-based offset of the first differing byte of two files, None if equal.

    When one file is a prefix of the other, the offset is the shorter file's length.
    Blocking: call it on a worker thread. Special files (pipes...) raise `NotRegularFileError`.
    """
    fa = open_regular(a)
    try:
        fb = open_regular(b)
        try:
            return _first_difference(fa, fb)
        finally:
            os.close(fb)
    finally:
        os.close(fa)


def _first_difference(fa: int, fb: int) -> int | None:
    offset = 0
    while True:
        ca = read_full(fa, _CHUNK)
        cb = read_full(fb, _CHUNK)
        if ca != cb:
            limit = min(len(ca), len(cb))
            for i in range(limit):
                if ca[i] != cb[i]:
                    return offset + i
            return offset + limit
        if not ca:
            return None
        offset += len(ca)


class SupersetDiff(DeterministicJudge):
    """PASS when every file of the reference folder exists byte-for-byte in the workspace.

    The reference folder comes from ``ctx.metadata["expected_dir"]`` (a str or path; relative
    values are relative to the current working directory). Extra workspace files are ignored.
    One check per reference file (sorted, named by its relative POSIX path): missing files and
    differing files are named, the latter with the 0-based offset of the first differing byte.
    The score is matched / total. A missing reference folder, or one without files, is ABSTAIN.

    Args:
        exclude: Relative POSIX paths to skip. ``"a/b"`` skips the file ``a/b`` and the folder
            ``a/b`` with its contents; ``"a/b/"`` skips only the folder. Whole segments only:
            ``"mvnw"`` does not skip ``mvnw.cmd``.
        name: Judge name; defaults to ``"SupersetDiff"``.

    Raises:
        ValueError: an exclude entry is absolute, blank, uses ``..`` or backslashes.
    """

    def __init__(self, exclude: Sequence[str] = (), *, name: str | None = None) -> None:
        self.exclude = normalise_excludes(exclude)
        super().__init__(name, "Verifies the workspace is a superset of the reference folder")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        walked = await check_reference_files(ctx, self.exclude, _superset_file)
        if isinstance(walked, Judgment):
            return walked
        checks, meta = walked
        matched, total = meta["matched_files"], meta["total_files"]
        score = matched / total
        if matched == total:
            return Judgment.passed(
                f"All {total} reference files matched",
                score=score,
                checks=tuple(checks),
                metadata=meta,
            )
        missing = [c.name for c in checks if c.message.startswith("Missing")]
        differing = [c.name for c in checks if not c.passed and c.name not in missing]
        parts = []
        if missing:
            parts.append("missing: " + first_names(missing, ", "))
        if differing:
            parts.append("differing: " + first_names(differing, ", "))
        return Judgment.failed(
            f"{matched} of {total} reference files matched ({'; '.join(parts)})",
            score=score,
            checks=tuple(checks),
            metadata=meta,
        )


def _superset_file(rel: str, expected_path: Path, root: Path) -> Check | str:
    try:
        fe = open_regular(expected_path)
    except OSError as exc:
        return f"Cannot read reference file {rel}: {exc.strerror or exc}"
    try:
        return _superset_compare(rel, fe, root)
    finally:
        os.close(fe)


def _superset_compare(rel: str, fe: int, root: Path) -> Check | str:
    try:
        fa = open_regular(root / rel, within=root)
    except (FileNotFoundError, NotADirectoryError):
        return Check.fail(rel, f"Missing file: {rel}")
    except NotRegularFileError as exc:
        return Check.fail(rel, f"Not a regular file: {rel} ({exc.kind})")
    except PathEscapeError as exc:
        return str(exc)
    except OSError as exc:
        return f"Cannot compare {rel}: {exc.strerror or exc}"
    try:
        offset = _first_difference(fe, fa)
    except OSError as exc:
        return f"Cannot compare {rel}: {exc.strerror or exc}"
    finally:
        os.close(fa)
    if offset is None:
        return Check.ok(rel, "identical")
    return Check.fail(rel, f"Content differs at byte {offset}: {rel}")

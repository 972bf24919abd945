"""Bytecode version judges: `ClassVersionJudge` (Java) and `PycVersionJudge` (CPython)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentjudge.core import Check, Context, Judgment
from agentjudge.judges._paths import (
    DeterministicJudge,
    PathEscapeError,
    WorkspaceError,
    first_names,
    normalise_excludes,
    resolve_in_workspace,
    walk_files,
    workspace_of,
)
from agentjudge.judges._safeio import open_regular, read_full, run_blocking

__all__ = ["PYC_MAGIC_NUMBERS", "ClassVersionJudge", "PycVersionJudge", "pyc_magic_for"]

_CLASS_MAGIC = 0xCAFEBABE


def _head(path: Path, within: Path | None, size: int) -> bytes:
    """The first ``size`` bytes of a regular file, opened confined to ``within`` when given.

    Raises:
        OSError: unreadable or not a regular file (`NotRegularFileError`).
        PathEscapeError: the file lies (or now links) outside ``within``.
    """
    fd = open_regular(path, within=within)
    try:
        return read_full(fd, size)
    finally:
        os.close(fd)


def java_release(major: int) -> str:
    """Human name of a class-file major version, e.g. 61 -> "Java 17"."""
    if major >= 49:
        return f"Java {major - 44}"
    if major >= 45:
        return f"Java 1.{major - 44}"
    return f"unknown major {major}"


def _class_target(value: object, source: str) -> int | str:
    """Parse a class-version target; returns the major version or an error text."""
    if isinstance(value, bool) or not isinstance(value, int):
        return (
            f"{source} must be an int (a class-file major version such as 61, or a Java "
            f"release such as 17), got {type(value).__name__}: {value!r}"
        )
    if value <= 0:
        return f"{source} must be positive, got {value}"
    return value if value >= 45 else 44 + max(value, 1)


class ClassVersionJudge(DeterministicJudge):
    """PASS when every ``.class`` file under ``classes_dir`` has the target major version.

    The target comes from ``target=`` or ``ctx.metadata["target_class_version"]``: a class-file
    major version (52, 55, 61, 65...) or, for values below 45, a Java release (8, 11, 17, 21),
    converted with ``major = release + 44``. A missing target, a missing ``classes_dir`` or one
    without class files is ABSTAIN; a target that is not an int is ERROR. One check per class
    file (its path relative to ``classes_dir``); a file without the ``0xCAFEBABE`` magic is a
    failing check.

    Args:
        classes_dir: Folder of compiled classes, relative to the workspace.
        target: Fixed target (overrides the metadata).
        name: Judge name; defaults to ``"ClassVersionJudge"``.
        allow_outside: Allow ``classes_dir`` (or links in it) to resolve outside the workspace.
    """

    def __init__(
        self,
        classes_dir: str | os.PathLike[str] = "target/classes",
        *,
        target: int | None = None,
        name: str | None = None,
        allow_outside: bool = False,
    ) -> None:
        self.classes_dir = os.fspath(classes_dir)
        if not self.classes_dir.strip():
            raise ValueError("classes_dir must be non-blank")
        if target is not None:
            parsed = _class_target(target, "target")
            if isinstance(parsed, str):
                raise ValueError(parsed)
            target = parsed
        self.target = target
        self.allow_outside = allow_outside
        super().__init__(name, f"Verifies the class-file version of {self.classes_dir}/**.class")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        if self.target is not None:
            target = self.target
        else:
            raw = ctx.metadata.get("target_class_version")
            if raw is None:
                return Judgment.abstained(
                    'No target: ctx.metadata["target_class_version"] is not set'
                )
            parsed = _class_target(raw, 'ctx.metadata["target_class_version"]')
            if isinstance(parsed, str):
                return Judgment.errored(parsed)
            target = parsed
        try:
            folder = await resolve_in_workspace(
                ctx, self.classes_dir, allow_outside=self.allow_outside
            )
            workspace = workspace_of(ctx)
        except (WorkspaceError, PathEscapeError) as exc:
            return Judgment.errored(str(exc))
        return await run_blocking(self._check, folder, workspace, target)

    def _check(self, folder: Path, workspace: Path, target: int) -> Judgment:
        meta: dict[str, Any] = {"classes_dir": self.classes_dir, "target_class_version": target}
        if not folder.is_dir():
            return Judgment.abstained(
                f"No {self.classes_dir} folder in the workspace", metadata=meta
            )
        try:
            files = walk_files(
                folder, suffix=".class", contain=None if self.allow_outside else workspace
            )
        except PathEscapeError as exc:
            return Judgment.errored(str(exc), metadata=meta)
        except OSError as exc:
            return Judgment.errored(f"Cannot list {self.classes_dir}: {exc}", metadata=meta)
        if not files:
            return Judgment.abstained(f"No .class files in {self.classes_dir}", metadata=meta)
        checks: list[Check] = []
        wrong: list[str] = []
        found: set[int] = set()
        expected = f"{target} ({java_release(target)})"
        for rel, path in files:
            try:
                header = _head(path, None if self.allow_outside else workspace, 8)
            except PathEscapeError as exc:
                return Judgment.errored(str(exc), metadata=meta)
            except OSError as exc:
                return Judgment.errored(
                    f"Cannot read {self.classes_dir}/{rel}: {exc.strerror or exc}", metadata=meta
                )
            if len(header) < 8:
                checks.append(Check.fail(rel, f"Not a valid .class file: only {len(header)} bytes"))
                wrong.append(f"{rel} (truncated)")
                continue
            magic = int.from_bytes(header[:4], "big")
            if magic != _CLASS_MAGIC:
                checks.append(
                    Check.fail(rel, f"Not a valid .class file: bad magic number 0x{magic:08X}")
                )
                wrong.append(f"{rel} (bad magic)")
                continue
            major = int.from_bytes(header[6:8], "big")
            found.add(major)
            if major == target:
                checks.append(Check.ok(rel, f"major version {major} ({java_release(major)})"))
            else:
                checks.append(
                    Check.fail(
                        rel,
                        f"major version {major} ({java_release(major)}), expected {expected}",
                    )
                )
                wrong.append(f"{rel} (found {major}, expected {target})")
        meta.update(total_files=len(checks), wrong_files=len(wrong), versions_found=sorted(found))
        if not wrong:
            return Judgment.passed(
                f"All {len(checks)} .class files have major version {expected}",
                checks=tuple(checks),
                metadata=meta,
            )
        shown = first_names(wrong, ", ")
        return Judgment.failed(
            f"{len(wrong)} of {len(checks)} .class files do not have major version {expected}: "
            f"{shown}",
            checks=tuple(checks),
            metadata=meta,
        )


PYC_MAGIC_NUMBERS: dict[tuple[int, int], int] = {
    (3, 6): 3379,
    (3, 7): 3394,
    (3, 8): 3413,
    (3, 9): 3425,
    (3, 10): 3439,
    (3, 11): 3495,
    (3, 12): 3531,
    (3, 13): 3571,
    (3, 14): 3627,
}
"""Final-release ``.pyc`` magic numbers (little-endian 16-bit value before ``b"\\r\\n"``).

The running interpreter's own number (``importlib.util.MAGIC_NUMBER``) is always included.
"""
PYC_MAGIC_NUMBERS[sys.version_info[:2]] = int.from_bytes(importlib.util.MAGIC_NUMBER[:2], "little")

_PRE_311_RANGES = (
    ((3, 6), 3360, 3379),
    ((3, 7), 3390, 3394),
    ((3, 8), 3400, 3413),
    ((3, 9), 3420, 3425),
    ((3, 10), 3430, 3439),
)

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


def pyc_magic_for(version: str) -> int:
    """Return the ``.pyc`` magic number of a CPython version such as ``"3.11"``.

    Raises:
        ValueError: the version is malformed or unknown.
    """
    match = _VERSION.match(version) if isinstance(version, str) else None
    if match is None:
        raise ValueError(f'Python version must look like "3.11", got {version!r}')
    key = (int(match.group(1)), int(match.group(2)))
    if key not in PYC_MAGIC_NUMBERS:
        known = ", ".join(f"{a}.{b}" for a, b in sorted(PYC_MAGIC_NUMBERS))
        raise ValueError(
            f"no known .pyc magic number for Python {version.strip()} (known: {known})"
        )
    return PYC_MAGIC_NUMBERS[key]


def _version_of_magic(magic: int) -> str:
    for (major, minor), number in PYC_MAGIC_NUMBERS.items():
        if number == magic:
            return f"Python {major}.{minor}"
    if magic >= 3450:
        minor = (magic - 2900) // 50
        return f"a Python 3.{minor} pre-release"
    for (major, minor), low, high in _PRE_311_RANGES:
        if low <= magic <= high:
            return f"a Python {major}.{minor} pre-release"
    return "an unknown Python version"


class PycVersionJudge(DeterministicJudge):
    r"""PASS when every ``.pyc`` file in the workspace was compiled for the target Python.

    The target is ``target=`` or ``ctx.metadata["target_python"]`` (``"3.11"``); each file's
    magic number (first two bytes, little-endian, then ``\r\n``) must equal the target's
    final-release number (`PYC_MAGIC_NUMBERS`). No target or no ``.pyc`` files: ABSTAIN; an
    unknown or malformed target: ERROR. One check per file (relative POSIX path).

    Args:
        target: Fixed target version such as ``"3.11"`` (overrides the metadata).
        root: Folder to search, relative to the workspace.
        exclude: Relative POSIX paths under ``root`` to skip (default: the ``.venv/`` folder).
        name: Judge name; defaults to ``"PycVersionJudge"``.
        allow_outside: Allow ``root`` (or links in it) to resolve outside the workspace.

    Raises:
        ValueError: ``target`` is malformed or unknown; bad ``exclude`` entries.
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        root: str | os.PathLike[str] = ".",
        exclude: Sequence[str] = (".venv/",),
        name: str | None = None,
        allow_outside: bool = False,
    ) -> None:
        if target is not None:
            pyc_magic_for(target)
        self.target = target.strip() if target is not None else None
        self.root = os.fspath(root)
        self.exclude = normalise_excludes(exclude)
        self.allow_outside = allow_outside
        super().__init__(name, "Verifies .pyc files were compiled for the target Python")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        target = self.target
        if target is None:
            raw = ctx.metadata.get("target_python")
            if raw is None:
                return Judgment.abstained('No target: ctx.metadata["target_python"] is not set')
            if not isinstance(raw, str):
                return Judgment.errored(
                    'ctx.metadata["target_python"] must be a string such as "3.11", '
                    f"got {type(raw).__name__}: {raw!r}"
                )
            target = raw.strip()
        try:
            magic = pyc_magic_for(target)
        except ValueError as exc:
            return Judgment.errored(f'ctx.metadata["target_python"]: {exc}')
        try:
            folder = await resolve_in_workspace(ctx, self.root, allow_outside=self.allow_outside)
            workspace = workspace_of(ctx)
        except (WorkspaceError, PathEscapeError) as exc:
            return Judgment.errored(str(exc))
        return await run_blocking(self._check, folder, workspace, target, magic)

    def _check(self, folder: Path, workspace: Path, target: str, magic: int) -> Judgment:
        meta: dict[str, Any] = {"target_python": target, "target_magic": magic}
        if not folder.is_dir():
            return Judgment.abstained(f"No folder {self.root} in the workspace", metadata=meta)
        try:
            files = walk_files(
                folder,
                suffix=".pyc",
                excludes=self.exclude,
                contain=None if self.allow_outside else workspace,
            )
        except PathEscapeError as exc:
            return Judgment.errored(str(exc), metadata=meta)
        except OSError as exc:
            return Judgment.errored(f"Cannot list {self.root}: {exc}", metadata=meta)
        if not files:
            return Judgment.abstained(f"No .pyc files under {self.root}", metadata=meta)
        checks: list[Check] = []
        wrong: list[str] = []
        for rel, path in files:
            try:
                header = _head(path, None if self.allow_outside else workspace, 4)
            except PathEscapeError as exc:
                return Judgment.errored(str(exc), metadata=meta)
            except OSError as exc:
                return Judgment.errored(f"Cannot read {rel}: {exc.strerror or exc}", metadata=meta)
            if len(header) < 4 or header[2:4] != b"\r\n":
                checks.append(Check.fail(rel, f"Not a valid .pyc file: bad header {header.hex()}"))
                wrong.append(f"{rel} (bad header)")
                continue
            found = int.from_bytes(header[:2], "little")
            if found == magic:
                checks.append(Check.ok(rel, f"magic {found} (Python {target})"))
            else:
                what = _version_of_magic(found)
                checks.append(
                    Check.fail(rel, f"magic {found} ({what}), expected {magic} (Python {target})")
                )
                wrong.append(f"{rel} ({what})")
        meta.update(total_files=len(checks), wrong_files=len(wrong))
        if not wrong:
            return Judgment.passed(
                f"All {len(checks)} .pyc files were compiled for Python {target}",
                checks=tuple(checks),
                metadata=meta,
            )
        shown = first_names(wrong, ", ")
        return Judgment.failed(
            f"{len(wrong)} of {len(checks)} .pyc files were not compiled for Python {target}: "
            f"{shown}",
            checks=tuple(checks),
            metadata=meta,
        )

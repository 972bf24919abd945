"""Shared helpers of the deterministic judges: workspace paths, walks and the judge base.

Paths a judge is given are resolved inside `Context.workspace`. A path that escapes the
workspace -- through ``..``, an absolute path elsewhere or a symbolic link pointing out -- is
refused (the judge answers ERROR naming the path) unless the judge was built with
``allow_outside=True``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar, TypeVarTuple

from agentjudge.core import Check, Context, Judgment
from agentjudge.judges._safeio import PathEscapeError, run_blocking
from agentjudge.judging import JudgeKind

__all__ = [
    "DeterministicJudge",
    "PathEscapeError",
    "WorkspaceError",
    "check_reference_files",
    "excluded",
    "first_names",
    "normalise_excludes",
    "reference_dir",
    "resolve_in_workspace",
    "resolved_then",
    "walk_files",
    "workspace_of",
]


T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class WorkspaceError(ValueError):
    """A judge cannot use the context's workspace (unset, missing or not a folder)."""


class DeterministicJudge:
    """Base of the built-in deterministic judges: the judge attributes and a repr.

    Subclasses set `description` and implement ``async def __call__(ctx) -> Judgment``.
    """

    kind: JudgeKind = JudgeKind.DETERMINISTIC
    """What kind of work the judge does."""
    resource: str | None = None
    """Name of the Evaluator limit the judge draws on (none)."""
    metric_key: str | None = None
    """Metric the judge reports under, if any."""
    sampling_rate: float | None = None
    """Default sampling rate (None: the Evaluator's default)."""

    def __init__(self, name: str | None = None, description: str = "") -> None:
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValueError(f"name must be a non-blank string, got {name!r}")
        self.name: str = name if name is not None else type(self).__name__
        """The judge's name (defaults to the class name)."""
        self.description: str = description
        """One line for reports."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def workspace_of(ctx: Context) -> Path:
    """Return ``ctx.workspace`` or raise `WorkspaceError` when it is unset."""
    if ctx.workspace is None:
        raise WorkspaceError("Context.workspace is not set; this judge works inside a workspace")
    return Path(ctx.workspace)


def _resolve_sync(
    workspace: Path | None, path: str | os.PathLike[str], allow_outside: bool
) -> Path:
    raw = Path(path)
    if workspace is None:
        if raw.is_absolute() and allow_outside:
            return raw.resolve()
        raise WorkspaceError(
            f"Context.workspace is not set, so {os.fspath(path)!r} cannot be resolved"
        )
    if not workspace.is_dir():
        raise WorkspaceError(f"workspace {str(workspace)!r} is not an existing folder")
    root = workspace.resolve()
    candidate = _resolved(root / raw)
    if not allow_outside and not candidate.is_relative_to(root):
        if raw.is_absolute():
            reason = "an absolute path elsewhere"
        elif _has_link(root, raw):
            reason = "through a symbolic link"
        else:
            reason = "through '..'"
        raise PathEscapeError(
            f"refused {os.fspath(path)!r}: it resolves to {str(candidate)!r}, outside the "
            f"workspace {str(root)!r} ({reason}); pass allow_outside=True to permit this"
        )
    return candidate


def _resolved(path: Path) -> Path:
    """``path.resolve()``; lexically normalised when a link changes while it is resolved.

    Names are only checked here; what is finally read is opened by a confined walk
    (`agentjudge.judges._safeio.open_regular`), which refuses a link leading out at that time.
    """
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop, on Python < 3.13
        return Path(os.path.normpath(path))


def _has_link(root: Path, raw: Path) -> bool:
    current = root
    for part in raw.parts:
        current = current / part
        if current.is_symlink():
            return True
    return False


async def resolve_in_workspace(
    ctx: Context, path: str | os.PathLike[str], *, allow_outside: bool = False
) -> Path:
    """Resolve ``path`` against the context's workspace (on a worker thread).

    Relative paths are joined to the workspace; symbolic links are followed. The answer is a
    name checked once: read through `agentjudge.judges._safeio.open_regular` with
    ``within=`` the workspace, which checks the opened file, not the name.

    Raises:
        WorkspaceError: the workspace is unset or not a folder.
        PathEscapeError: the result lies outside the workspace and ``allow_outside`` is False.
    """
    workspace = None if ctx.workspace is None else Path(ctx.workspace)
    return await run_blocking(_resolve_sync, workspace, path, allow_outside)


def _resolve_then(
    workspace: Path | None,
    path: str | os.PathLike[str],
    allow_outside: bool,
    func: Callable[[Path, *Ts], T],
    *args: *Ts,
) -> T:
    return func(_resolve_sync(workspace, path, allow_outside), *args)


async def resolved_then(
    ctx: Context,
    path: str | os.PathLike[str],
    func: Callable[[Path, *Ts], T],
    *args: *Ts,
    allow_outside: bool = False,
) -> T:
    """`resolve_in_workspace`, then blocking ``func(resolved, *args)``, in one worker-thread hop.

    A judge that resolves a name and then reads it pays for one hand-off to a worker thread,
    not two (each costs the event loop a wake-up of the thread and of itself).

    Raises:
        WorkspaceError: as `resolve_in_workspace`.
        PathEscapeError: as `resolve_in_workspace`, or what ``func`` raises.
    """
    workspace = None if ctx.workspace is None else Path(ctx.workspace)
    return await run_blocking(partial(_resolve_then, workspace, path, allow_outside, func, *args))


def reference_dir(ctx: Context) -> Path | str:
    """Return the reference folder from ``ctx.metadata["expected_dir"]``.

    Returns a `Path` (relative values are taken relative to the current working directory, like
    any Python path), or a string explaining why there is none: the judge abstains with it.
    """
    value: Any = ctx.metadata.get("expected_dir")
    if value is None:
        return 'no reference folder: ctx.metadata["expected_dir"] is not set'
    if not isinstance(value, str | os.PathLike):
        return (
            'ctx.metadata["expected_dir"] must be a str or a path, '
            f"got {type(value).__name__}: {value!r}"
        )
    if isinstance(value, str) and not value.strip():
        return 'ctx.metadata["expected_dir"] is blank'
    return Path(value)


def first_names(names: Sequence[str], sep: str) -> str:
    """The first ten ``names`` joined by ``sep``, then ``" ..."`` when there are more."""
    return sep.join(names[:10]) + (" ..." if len(names) > 10 else "")


def normalise_excludes(exclude: Iterable[str]) -> tuple[str, ...]:
    """Validate exclusion entries: relative POSIX paths; a trailing "/" names a folder.

    Raises:
        ValueError: an entry is not a string, is blank, absolute, uses backslashes or ``..``.
    """
    if isinstance(exclude, str):
        raise ValueError(f"exclude must be a sequence of paths, not the string {exclude!r}")
    result: list[str] = []
    for entry in exclude:
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(f"exclude entries must be non-blank strings, got {entry!r}")
        if "\\" in entry:
            raise ValueError(f"exclude entry {entry!r} must use '/' separators")
        if entry.startswith("/"):
            raise ValueError(f"exclude entry {entry!r} must be relative")
        folder = entry.endswith("/")
        pure = PurePosixPath(entry)
        if ".." in pure.parts:
            raise ValueError(f"exclude entry {entry!r} must not contain '..'")
        text = pure.as_posix()
        if text == ".":
            raise ValueError(f"exclude entry {entry!r} would exclude everything")
        result.append(text + "/" if folder else text)
    return tuple(result)


def excluded(rel: str, excludes: Sequence[str]) -> bool:
    """True when relative POSIX path ``rel`` is excluded.

    An entry ``"a/b"`` excludes the file ``a/b`` and everything inside a folder ``a/b``; an
    entry ``"a/b/"`` excludes only the folder's contents. Matching is by whole path segments,
    so ``"mvnw"`` never excludes ``mvnw.cmd``.
    """
    for entry in excludes:
        if entry.endswith("/"):
            if rel.startswith(entry):
                return True
        elif rel == entry or rel.startswith(entry + "/"):
            return True
    return False


def walk_files(
    root: Path,
    *,
    suffix: str | None = None,
    excludes: Sequence[str] = (),
    contain: Path | None = None,
) -> list[tuple[str, Path]]:
    """List regular files under ``root`` as sorted ``(relative POSIX path, path)`` pairs.

    Blocking: call it on a worker thread. Symbolic links to folders are not descended. When
    ``contain`` is given, a file whose real path lies outside it raises `PathEscapeError`.
    """
    found: list[tuple[str, Path]] = []
    contain_real = contain.resolve() if contain is not None else None

    def on_error(err: OSError) -> None:
        raise err

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        base = Path(dirpath)
        if excludes:
            dirnames[:] = [
                d
                for d in dirnames
                if not excluded((base / d).relative_to(root).as_posix() + "/", excludes)
            ]
        for filename in filenames:
            if suffix is not None and not filename.endswith(suffix):
                continue
            path = base / filename
            rel = path.relative_to(root).as_posix()
            if excluded(rel, excludes):
                continue
            if contain_real is not None and path.is_symlink():
                real = _resolved(path)
                if not real.is_relative_to(contain_real):
                    raise PathEscapeError(
                        f"refused {rel!r}: it is a symbolic link to {str(real)!r}, outside the "
                        f"workspace {str(contain_real)!r}"
                    )
            if path.is_file():
                found.append((rel, path))
    found.sort(key=lambda item: item[0])
    return found


FileCheck = Callable[[str, Path, Path], Check | str]
"""Checks one reference file: ``(relative POSIX path, reference path, workspace folder)`` to a
`Check`, or to the reason the whole judgment is ERROR. Runs on a worker thread; it opens the
workspace file with `agentjudge.judges._safeio.open_regular` confined to the folder."""


async def check_reference_files(
    ctx: Context, excludes: Sequence[str], check_file: FileCheck
) -> Judgment | tuple[list[Check], dict[str, Any]]:
    """Run ``check_file`` on every reference file and its counterpart in the workspace.

    The reference folder is ``ctx.metadata["expected_dir"]`` (see `reference_dir`); its files
    are walked sorted, without ``excludes``, on a worker thread. Returns the finished judgment
    when there is nothing to compare or ``check_file`` answers an error (no reference folder or
    no files in it: ABSTAIN; no workspace, an unlistable reference folder or a workspace path
    escaping through a symbolic link: ERROR). Otherwise returns the checks, one per file in
    order, and the metadata ``expected_dir``, ``matched_files`` and ``total_files``.
    """
    ref = reference_dir(ctx)
    if isinstance(ref, str):
        return Judgment.abstained(ref)
    try:
        workspace = workspace_of(ctx)
    except WorkspaceError as exc:
        return Judgment.errored(str(exc))
    return await run_blocking(_check_files_sync, ref, workspace, excludes, check_file)


def _check_files_sync(
    ref: Path, workspace: Path, excludes: Sequence[str], check_file: FileCheck
) -> Judgment | tuple[list[Check], dict[str, Any]]:
    meta: dict[str, Any] = {"expected_dir": str(ref)}
    if not ref.is_dir():
        return Judgment.abstained(f"Reference folder does not exist: {ref}", metadata=meta)
    if not workspace.is_dir():
        return Judgment.errored(f"workspace {str(workspace)!r} is not an existing folder")
    root = workspace.resolve()
    try:
        files = walk_files(ref, excludes=excludes)
    except OSError as exc:
        return Judgment.errored(f"Cannot list reference folder {ref}: {exc}", metadata=meta)
    if not files:
        return Judgment.abstained(f"No files in reference folder {ref}", metadata=meta)
    checks: list[Check] = []
    for rel, expected_path in files:
        actual_path = root / rel
        real = _resolved(actual_path)
        if not real.is_relative_to(root):
            return Judgment.errored(
                f"refused {rel!r}: it resolves to {str(real)!r}, outside the workspace "
                f"{str(root)!r} through a symbolic link",
                metadata=meta,
            )
        outcome = check_file(rel, expected_path, root)
        if isinstance(outcome, str):
            return Judgment.errored(outcome, metadata=meta)
        checks.append(outcome)
    meta.update(matched_files=sum(1 for c in checks if c.passed), total_files=len(checks))
    return checks, meta

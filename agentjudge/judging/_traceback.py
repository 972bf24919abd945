"""Short tracebacks kept with an error: the last frames, as ``file:line in func``.

A judge or task that raises becomes data (an ERROR judgment, an error row); the short traceback
recorded with it says where it raised without the person having to reproduce the failure. Each
entry is one frame, ``"path:line in function"`` (the function's qualified name), innermost
last. Frames of the user's own code start with `USER_MARK` (``"> "``): frames outside the
agentjudge package, the standard library and installed third-party packages (``site-packages``
/ ``dist-packages``). Paths are shortened: a library's relative to its ``site-packages`` or
standard library folder, the package's as ``agentjudge/...``, others relative to the working
directory when under it (else absolute).

Only file names, line numbers and function names are kept: never source lines, local variables
or the exception's message (the message is in the judgment's reasoning or the row's ``error``,
where provider text is already redacted), so a secret in the code or its data cannot leak here.
"""

from __future__ import annotations

import functools
import os
import sysconfig
import traceback
from pathlib import Path

from agentjudge.core._rows import USER_MARK

__all__ = ["TRACEBACK_FRAMES", "USER_MARK", "short_traceback"]

TRACEBACK_FRAMES = 6
"""Frames kept (the innermost ones; the innermost user frame is always among them)."""
GAP = "..."
"""The entry standing for frames left out between two kept frames."""

_PACKAGE = Path(__file__).resolve().parent.parent
_LIBRARY_ROOTS = tuple(
    sorted(  # the most specific first: a venv's site-packages is inside its lib folder
        {
            str(Path(p).resolve())
            for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if (p := sysconfig.get_paths().get(key))
        },
        key=len,
        reverse=True,
    )
)
_THIRD_PARTY = ("site-packages", "dist-packages")


@functools.lru_cache(maxsize=1024)
def _origin(filename: str) -> str:
    """``"user"``, ``"library"`` (third-party) or ``"internal"`` (agentjudge, stdlib, frozen)."""
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return "internal"
    path = Path(filename)
    if any(part in _THIRD_PARTY for part in path.parts):
        return "library"
    resolved = str(path.resolve())
    if resolved.startswith(str(_PACKAGE) + os.sep):
        return "internal"
    if any(resolved.startswith(root + os.sep) for root in _LIBRARY_ROOTS):
        return "internal"
    return "user"


@functools.lru_cache(maxsize=1024)
def _short_path(filename: str) -> str:
    """``filename`` relative to a library root, the package's folder or the working directory.

    Cached per file name (the working directory is read once per file: a run does not move).
    """
    if filename.startswith("<"):
        return filename
    path = Path(filename).resolve()
    bases = [*(Path(root) for root in _LIBRARY_ROOTS), _PACKAGE.parent, Path.cwd()]
    for base in bases:
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def short_traceback(exc: BaseException, limit: int = TRACEBACK_FRAMES) -> tuple[str, ...] | None:
    """The last ``limit`` frames of ``exc``'s traceback (None when it was never raised).

    When the innermost user frame is older than the last ``limit - 1`` frames, it is kept
    first, followed by `GAP` and the innermost frames, so the user's code is always shown.
    None as well when no frame is the user's and the innermost is agentjudge's or the
    standard library's (a timeout, a refused budget): the error's reason says all there is.
    """
    tb = exc.__traceback__
    if tb is None:
        return None
    frames = [
        (frame.f_code.co_filename, line or 0, frame.f_code.co_qualname)
        for frame, line in traceback.walk_tb(tb)
    ]
    origins = [_origin(filename) for filename, _, _ in frames]
    if origins[-1] == "internal" and "user" not in origins:
        return None  # raised by agentjudge or the stdlib with no user code involved
    users = [origin == "user" for origin in origins]
    keep = list(range(max(0, len(frames) - limit), len(frames)))
    if True in users and not any(users[i] for i in keep):
        last_user = max(i for i, user in enumerate(users) if user)
        keep = [last_user, *range(len(frames) - max(1, limit - 1), len(frames))]
    out: list[str] = []
    previous = None
    for i in keep:
        if previous is not None and i != previous + 1:
            out.append(GAP)
        filename, line, func = frames[i]
        mark = USER_MARK if users[i] else ""
        out.append(f"{mark}{_short_path(filename)}:{line} in {func}")
        previous = i
    return tuple(out)

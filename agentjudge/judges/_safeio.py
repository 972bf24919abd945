"""Confined, non-blocking, bounded and abandonable reads of workspace files.

The workspace belongs to the agent under evaluation, so the judges read it defensively:

- **Confined without races.** `open_regular` with ``within=`` walks the path one component at
  a time from a descriptor of the workspace folder (``openat``-style): each component is opened
  with ``O_NOFOLLOW`` relative to its parent's descriptor, so swapping a file or folder for a
  symbolic link between a check and the read cannot lead the read outside. Symbolic links met on
  the way are followed by the walk itself and only while they stay inside the workspace (an
  absolute link must spell the workspace's path); anything else raises `PathEscapeError`.
- **Never blocked by special files.** Every entry is checked with ``lstat`` before it is opened
  and the opened descriptor is checked again with ``fstat``; files are opened with
  ``O_NONBLOCK``, so a named pipe, socket or device raises `NotRegularFileError` instead of
  waiting for a writer.
- **Bounded.** `read_capped` refuses files larger than a limit (`FileTooLargeError`) before
  reading them, and stops reading a file that grows past it.
- **Abandonable.** `run_blocking` runs the blocking work on a worker thread that a timeout or the
  caller's cancellation abandons, so the await always ends when it is cancelled.

POSIX only (``dir_fd`` and ``O_NOFOLLOW``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TypeVar, TypeVarTuple

import anyio.to_thread

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FileTooLargeError",
    "NotRegularFileError",
    "PathEscapeError",
    "describe_mode",
    "entry_exists",
    "open_regular",
    "read_capped",
    "read_file",
    "read_full",
    "run_blocking",
]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Largest file (64 MiB) `FileContent` and coverage reports read by default."""

_LINK_LIMIT = 40
"""Symbolic links (or entries changing under the walk) followed before giving up, as Linux."""
_CHUNK = 1 << 20
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_CHANGED = {errno.ELOOP, errno.ENOTDIR, errno.ENOENT}
"""Errors of ``open`` on an entry ``lstat`` just found usable: it changed; walk it again."""

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class PathEscapeError(ValueError):
    """A path resolves outside the workspace and the judge does not allow that."""


class NotRegularFileError(OSError):
    """The path names something other than a regular file (a folder, pipe, socket, device)."""

    def __init__(self, name: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{kind}, not a regular file", name)
        self.kind = kind
        """What the entry is instead, e.g. ``"a named pipe (FIFO)"``."""


class FileTooLargeError(OSError):
    """The file is larger than the reader's limit; ``size`` and ``limit`` are in bytes."""

    def __init__(self, name: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"too large ({size} bytes; the limit is {limit})", name)
        self.size = size
        """Bytes found (at least; a file growing while read may hold more)."""
        self.limit = limit
        """The limit that was exceeded."""


def describe_mode(mode: int) -> str:
    """What a ``st_mode`` is, for messages: ``"a folder"``, ``"a named pipe (FIFO)"``..."""
    kinds = (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((text for test, text in kinds if test(mode)), "a special file")


async def run_blocking(func: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run blocking ``func(*args)`` on a worker thread that cancellation abandons.

    A timeout or the caller's cancellation ends the await at once; the thread finishes (and
    closes what it opened) on its own.
    """
    return await anyio.to_thread.run_sync(func, *args, abandon_on_cancel=True)


def _require(mode: int, want_dir: bool, name: str) -> None:
    if want_dir:
        if not stat.S_ISDIR(mode):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", name)
    elif not stat.S_ISREG(mode):
        raise NotRegularFileError(name, describe_mode(mode))


class _Walk:
    """One confined walk from the workspace folder; owns the folder descriptors it opens."""

    def __init__(self, root: Path, shown: str) -> None:
        self.root = root
        self.shown = shown
        self.prefixes = {os.path.realpath(root), os.path.abspath(root)}
        self.stack = [os.open(root, _DIR_FLAGS)]
        self.hops = 0
        self.link = ""

    def close(self) -> None:
        for fd in self.stack:
            os.close(fd)
        self.stack.clear()

    def escape(self) -> PathEscapeError:
        how = f"the symbolic link {self.link}" if self.link else "'..'"
        return PathEscapeError(
            f"refused {self.shown!r}: {how} leads outside the workspace {str(self.root)!r}"
        )

    def hop(self) -> None:
        self.hops += 1
        if self.hops > _LINK_LIMIT:
            raise OSError(errno.ELOOP, "too many symbolic links (or entries changing)", self.shown)

    def up(self) -> None:
        if len(self.stack) == 1:
            raise self.escape()
        os.close(self.stack.pop())

    def follow(self, part: str, pending: deque[str]) -> None:
        """Queue the target of the link ``part`` (in the current folder) in its place."""
        self.hop()
        try:
            target = os.readlink(part, dir_fd=self.stack[-1])
        except OSError:
            pending.appendleft(part)  # no longer a link: look at it again
            return
        self.link = f"{part!r} -> {target!r}"
        if os.path.isabs(target):
            pending.extendleft(reversed(self.inside(target)))
            while len(self.stack) > 1:
                os.close(self.stack.pop())
        else:
            pending.extendleft(reversed(target.split("/")))

    def inside(self, target: str) -> list[str]:
        normal = os.path.normpath(target)
        for prefix in self.prefixes:
            if normal == prefix:
                return []
            if normal.startswith(prefix.rstrip("/") + "/"):
                return normal[len(prefix.rstrip("/")) + 1 :].split("/")
        raise self.escape()

    def step(self, part: str, want_dir: bool, pending: deque[str]) -> int | None:
        """Open ``part`` in the current folder; None when a link (or a change) was queued."""
        parent = self.stack[-1]
        mode = os.stat(part, dir_fd=parent, follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            self.follow(part, pending)
            return None
        _require(mode, want_dir, part)
        try:
            fd = os.open(part, _FILE_FLAGS | (os.O_DIRECTORY if want_dir else 0), dir_fd=parent)
        except OSError as exc:
            if exc.errno not in _CHANGED:
                raise
            self.hop()
            pending.appendleft(part)
            return None
        try:
            _require(os.fstat(fd).st_mode, want_dir, part)
        except OSError:
            os.close(fd)
            raise
        return fd

    def open(self, parts: list[str], want_dir: bool) -> int:
        pending = deque(parts)
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                self.up()
                continue
            last = not pending
            fd = self.step(part, want_dir or not last, pending)
            if fd is None:
                continue
            if last:
                return fd
            self.stack.append(fd)
        _require(os.fstat(self.stack[-1]).st_mode, want_dir, self.shown)
        return os.dup(self.stack[-1])


def _relative_parts(path: Path, root: Path) -> list[str]:
    for base in (Path(os.path.realpath(root)), Path(os.path.abspath(root))):
        if path.is_relative_to(base):
            return list(PurePosixPath(path.relative_to(base).as_posix()).parts)
    if not path.is_absolute():
        return list(PurePosixPath(path.as_posix()).parts)
    raise PathEscapeError(f"refused {str(path)!r}: it lies outside the workspace {str(root)!r}")


def open_regular(path: Path, *, within: Path | None = None, directory: bool = False) -> int:
    """Open a regular file (or a folder) for reading without blocking; return the descriptor.

    Blocking: call it through `run_blocking`. With ``within`` (the workspace folder), ``path``
    (absolute under it, or relative to it) is opened by a confined walk that never leaves it;
    without, ``path`` is opened normally (links followed). Either way a special file is refused
    before it is opened and the opened descriptor is checked again.

    Raises:
        FileNotFoundError: ``path`` does not exist (NotADirectoryError: a parent is a file).
        NotRegularFileError: ``path`` is not a regular file (or not a folder, for ``directory``).
        PathEscapeError: the confined walk would leave ``within``.
        OSError: any other failure (permission, too many links...).
    """
    if within is not None:
        walk = _Walk(within, os.fspath(path))
        try:
            return walk.open(_relative_parts(path, within), directory)
        finally:
            walk.close()
    _require(os.stat(path).st_mode, directory, os.fspath(path))
    fd = os.open(path, (_FILE_FLAGS & ~os.O_NOFOLLOW) | (os.O_DIRECTORY if directory else 0))
    try:
        _require(os.fstat(fd).st_mode, directory, os.fspath(path))
    except OSError:
        os.close(fd)
        raise
    return fd


def entry_exists(path: Path, within: Path | None = None) -> bool:
    """True when ``path`` names a file or folder (confined to ``within`` when given).

    Blocking. A named pipe or other special file exists too; a dangling link does not.

    Raises:
        PathEscapeError: the confined walk would leave ``within``.
    """
    try:
        os.close(open_regular(path, within=within))
    except (FileNotFoundError, NotADirectoryError):
        return False
    except NotRegularFileError:
        return True  # a folder, pipe...: refused before it was opened, but it is there
    return True


def read_full(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes from ``fd``: fewer only at the end of the file."""
    data = os.read(fd, size)
    while data and len(data) < size:
        more = os.read(fd, size - len(data))
        if not more:
            break
        data += more
    return data


def read_capped(fd: int, limit: int, name: str) -> bytes:
    """Read all of ``fd`` (a regular file), refusing more than ``limit`` bytes.

    The size is checked before reading, and reading stops as soon as a growing file passes the
    limit, so memory stays bounded by ``limit``.

    Raises:
        FileTooLargeError: the file holds more than ``limit`` bytes.
    """
    size = os.fstat(fd).st_size
    if size > limit:
        raise FileTooLargeError(name, size, limit)
    parts: list[bytes] = []
    total = 0
    want = size + 1  # one read for a file that does not change
    while True:
        chunk = os.read(fd, max(1, min(want, limit + 1 - total)))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        if total > limit:
            raise FileTooLargeError(name, total, limit)
        want = _CHUNK
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_file(path: Path, within: Path | None = None, limit: int = DEFAULT_MAX_BYTES) -> bytes:
    """`open_regular` then `read_capped` (blocking); raises what they raise."""
    fd = open_regular(path, within=within)
    try:
        return read_capped(fd, limit, os.fspath(path))
    finally:
        os.close(fd)

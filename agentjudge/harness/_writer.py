"""Writing results files: the append-only writer, atomic JSON files, dropping rows, write errors.

Every row is written and flushed at once (``--resume`` trusts what is on disk); a row UTF-8
cannot hold is written with ``backslashreplace`` and a warning; an OS write failure becomes
`WriteFailed` naming the cause and the file. Split from `agentjudge.harness._results`, which
encodes and reads rows.

`SpaceReserve` keeps a little disk space for a run's last words: on a full disk the results
file stops growing, but the summary saying "aborted" is still written from the reserve.
`SummaryFile` writes a run's summary: the version asked for last is the one left on disk.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from agentjudge.core._rows import _encoder
from agentjudge.exceptions import AgentJudgeError
from agentjudge.harness._results import ResultsError, _iter_parsed

__all__ = [
    "RESERVE_BYTES",
    "RESERVE_FILE",
    "ResultsWriter",
    "SpaceReserve",
    "SummaryFile",
    "WriteFailed",
    "drop_rows",
    "out_of_space",
    "write_failed",
    "write_json_atomic",
]


class WriteFailed(AgentJudgeError):
    """The operating system refused a write (disk full, quota, file size limit, I/O error).

    The message is one line naming the cause and the file; the `OSError` is chained.
    """


_WRITE_CAUSES = {
    errno.ENOSPC: "no space left",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (the process's file size limit, ulimit -f, was reached)",
    errno.EIO: "I/O error",
    errno.EROFS: "read-only file system",
}


def out_of_space(exc: WriteFailed) -> bool:
    """True when ``exc`` failed for want of space (no space left, disk quota exceeded)."""
    cause = exc.__cause__
    return isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT)


def write_failed(exc: OSError, path: Path | str) -> WriteFailed:
    """`WriteFailed` for ``exc`` raised writing ``path``, e.g. "no space left writing <file>"."""
    cause = _WRITE_CAUSES.get(exc.errno or 0) or exc.strerror or str(exc) or type(exc).__name__
    error = WriteFailed(f"{cause} writing {path}")
    error.__cause__ = exc
    return error


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(text: str) -> str:
    r"""JSON text with each lone surrogate written as the JSON string text ``"\\udcff"``.

    That decodes to a backslash followed by ``udcff``, i.e. ``backslashreplace``.

    A lone surrogate can only stand inside a JSON string of our own encoding (keys included),
    so this applies ``backslashreplace`` to every string of the row.
    """
    return _LONE_SURROGATE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", text)


def _encodable(value: Any) -> bool:
    try:
        _encoder.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        return False
    except (ValueError, TypeError, RecursionError):
        return True  # not ours to judge here; the row as a whole is escaped anyway
    return True


_SURROGATE_WARNING = (
    "text that is not valid Unicode (lone surrogates) was written with backslash escapes "
    "(backslashreplace)"
)


def _repaired(line: str) -> str:
    """``line`` (a results line UTF-8 cannot hold) escaped, with a warning on the row."""
    try:
        row = json.loads(line)
        fields = [key for key, value in row.items() if not _encodable(value)]
        warnings = row.get("warnings")
        row["warnings"] = [
            *(warnings if isinstance(warnings, list) else []),
            f"{', '.join(fields) or 'a field'}: {_SURROGATE_WARNING}",
        ]
        return _escaped(_encoder.encode(row)) + "\n"
    except (ValueError, TypeError, RecursionError):  # not one JSON object: escape the text
        return _escaped(line)


def _utf8(text: str) -> bytes:
    """``text`` (results lines) as UTF-8, rows UTF-8 cannot hold repaired (`_repaired`)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    lines = text.split("\n")
    out = []
    for line in lines[:-1]:
        try:
            out.append((line + "\n").encode("utf-8"))
        except UnicodeEncodeError:
            out.append(_repaired(line + "\n").encode("utf-8"))
    if lines[-1]:  # a last line without its newline (not something the harness writes)
        out.append(_escaped(lines[-1]).encode("utf-8"))
    return b"".join(out)


class ResultsWriter:
    """Appends lines to a results file; every `write` is handed to the OS before returning.

    Unbuffered: nothing is held back in the process, so a failed write leaves nothing to be
    written again later (at most a torn last line, which `scan_results` cuts off).
    Blocking: call it from a worker thread (the harness does) or from synchronous code.

    Raises:
        WriteFailed: the file cannot be opened, written or synced (disk full, ...).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._handle: BinaryIO | None = path.open("ab", buffering=0)
        except OSError as exc:
            raise write_failed(exc, path) from exc

    def write(self, lines: list[str]) -> None:
        """Append ``lines`` (each newline-terminated) and hand them to the OS.

        Rows that UTF-8 cannot hold are written escaped with a warning (see the module notes);
        the other rows of the batch are written unchanged.
        """
        handle = self._handle
        if handle is None:
            raise ResultsError(f"{self.path} is closed")
        data = memoryview(_utf8("".join(lines)))
        try:
            while data:
                data = data[handle.write(data) or 0 :]
        except OSError as exc:
            raise write_failed(exc, self.path) from exc

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Sync to disk and close (idempotent)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                os.fsync(handle.fileno())
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # a device: nothing to sync
                    raise write_failed(exc, self.path) from exc
            finally:
                handle.close()


def write_json_atomic(path: Path, text: str) -> None:
    """Write ``path`` through a synced temporary file, renamed into place.

    The temporary file is removed again if anything fails, so a reader sees the previous
    content or the new one, never half of it.

    Raises:
        WriteFailed: the OS refused (disk full, ...); ``path`` keeps its previous content.
    """
    with _replacing(path) as handle:
        handle.write(text.encode("utf-8"))


def drop_rows(path: Path, ids: Collection[str]) -> int:
    """Rewrite the results file without the rows whose id is in ``ids`` (atomically).

    The other lines are copied byte for byte through a synced temporary file renamed into
    place, so a crash leaves the old file or the new one. Returns how many rows were dropped.

    Raises:
        WriteFailed: the OS refused (disk full, ...); ``path`` keeps its previous content.
    """
    dropped = 0
    with _replacing(path) as handle:
        for _, raw, row in _iter_parsed(path):
            if row is not None and row["id"] in ids:
                dropped += 1
                continue
            handle.write(raw)
    return dropped


@contextmanager
def _replacing(path: Path) -> Iterator[BinaryIO]:
    """A synced temporary file that replaces ``path`` when the block ends without error.

    On any failure the temporary file is removed and ``path`` keeps its previous content; an
    OS error becomes `WriteFailed`.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise write_failed(exc, path) from exc
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Sync ``folder`` so a rename in it survives a crash (best effort: not every OS can)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


RESERVE_FILE = ".agentjudge-reserve"
"""The ballast file `SpaceReserve` keeps in a run's output folder while the run lasts."""
RESERVE_BYTES = 256 * 1024
"""Bytes held back: several times the summary of a large run (tens of judges and juries)."""


class SpaceReserve:
    """Disk space held back for a run's summary: a ballast file, deleted when space runs out.

    `hold` writes ``size`` incompressible bytes to ``path`` (so no compressing file system
    stores it in less) when the run starts. When the summary cannot be written for want of
    space, `release` deletes the file and the summary is written again into the space it
    freed; at the end of the run, `release` removes it in any case. Best effort: a reserve
    that cannot be written (the disk is full already, a file size limit) is not held, and
    nothing of it is left behind. Blocking: call it from a worker thread.
    """

    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self.path = path
        self.size = size
        self.held = False

    def hold(self) -> bool:
        """Write the ballast file; True when it was written whole."""
        try:
            with self.path.open("wb") as handle:
                handle.write(os.urandom(self.size))
        except OSError:
            self.release()
            return False
        self.held = True
        return True

    def release(self) -> bool:
        """Delete the ballast file; True when it was held (its space is free again)."""
        held, self.held = self.held, False
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)
        return held


class SummaryFile:
    """A run's ``summary.json``: rewritten atomically; the version asked for last wins.

    Writes run on worker threads, and one may still be running after the task that asked for
    it was cancelled: ``Task.cancel()`` (asyncio's Ctrl-C handler, a caller's cancellation)
    cuts anyio's shields short, so the "completed" summary being written when it came goes on
    beside the "aborted" one written because of it. Writes therefore take turns (they share
    one temporary file name), and a version older than the one on disk is not written.

    Args:
        path: The summary file.
        reserve: Given up, and the write tried again, when the disk is full.
    """

    def __init__(self, path: Path, reserve: SpaceReserve) -> None:
        self.path = path
        self.reserve = reserve
        self._turn = threading.Lock()
        self._asked = 0
        self._written = 0

    def ask(self) -> int:
        """Number the next version; call it where versions are decided (the event loop)."""
        self._asked += 1
        return self._asked

    def write(self, text: str, version: int) -> None:
        """Write ``text`` as ``version``, unless a later version is on disk (blocking).

        Raises:
            WriteFailed: the OS refused (disk full with no reserve left, ...).
        """
        with self._turn:
            if version < self._written:
                return
            try:
                write_json_atomic(self.path, text)
            except WriteFailed as exc:
                if not out_of_space(exc) or not self.reserve.release():
                    raise
                write_json_atomic(self.path, text)
            self._written = version

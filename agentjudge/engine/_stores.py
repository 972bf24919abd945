"""Sinks that store online evaluations: `JsonlSink` (rotated files) and `SqliteSink`.

Both write the harness's results row (`agentjudge.core._rows.encode_case`): ``id`` (the key
and the offer's sequence number, ``"<key>#<n>"``, or ``"online-<n>"`` without a key),
``input``, ``output``, ``expected``, ``metadata`` (the context's), ``extra`` (``key``,
``route``, ``offered_at``, ``queued_s``), ``results``, ``verdict``, ``duration_s`` (the
evaluation's), ``error`` (null unless the evaluation itself raised) and ``tiers`` for cascades.
So ``agentjudge report DIR`` reads a JSONL sink's folder as it reads a run's.

Rows are encoded on the event loop in slices (`agentjudge.engine._sinks.in_slices`: it yields
to the request handlers every half millisecond) and written on a worker thread
(``anyio.to_thread``), one batch per call, so the event loop never waits for the disk and the
thread holds the interpreter lock for little more than the I/O itself.

SQLite schema (``SqliteSink``; WAL journal, one ``BEGIN IMMEDIATE`` transaction and two
``executemany`` inserts per batch)::

    CREATE TABLE evaluations (
        id          INTEGER PRIMARY KEY,  -- insertion order
        row_id      TEXT NOT NULL,        -- the row's "id"
        key         TEXT,                 -- offer(key=...)
        route       TEXT,                 -- offer(route=...)
        offered_at  TEXT NOT NULL,        -- ISO 8601 UTC
        queued_s    REAL NOT NULL,        -- seconds in the backlog
        duration_s  REAL NOT NULL,        -- seconds evaluating
        status      TEXT,                 -- the verdict: pass, fail, abstain, error (NULL: raised)
        score       REAL,                 -- the verdict's score, if any
        label       TEXT,
        reasoning   TEXT,
        error       TEXT,                 -- "Type: message" when the evaluation raised
        row         TEXT NOT NULL         -- the full results row (JSON; use json_extract)
    );
    CREATE TABLE judge_results (
        evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
        name        TEXT NOT NULL,        -- the judge
        sampled     INTEGER NOT NULL,     -- 0: not sampled (status NULL)
        status      TEXT, score REAL, label TEXT, confidence REAL, reasoning TEXT,
        error_type  TEXT, attempts INTEGER NOT NULL, duration_s REAL NOT NULL,
        queued_s    REAL NOT NULL, tier TEXT
    );
    -- indexes: evaluations(offered_at), evaluations(key), judge_results(name, status)

For example, each judge's pass rate over the last hour::

    SELECT name, avg(status = 'pass') FROM judge_results JOIN evaluations e
      ON e.id = evaluation_id
    WHERE status IN ('pass', 'fail') AND e.offered_at >= datetime('now', '-1 hour')
    GROUP BY name;
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentjudge.core._rows import encode_case
from agentjudge.engine._sinks import OnlineResult, in_slices

if TYPE_CHECKING:
    import sqlite3

__all__ = ["JsonlSink", "SqliteSink", "online_row"]


def online_row(result: OnlineResult) -> str:
    """The results line of one online evaluation (newline-terminated JSON)."""
    ctx = result.context
    head: dict[str, Any] = {
        "input": ctx.input,
        "output": ctx.output,
        "expected": ctx.expected,
        "metadata": ctx.metadata,
        "extra": {
            "key": result.key,
            "route": result.route,
            "offered_at": result.offered_at.isoformat(),
            "queued_s": result.queued_s,
        },
    }
    return encode_case(result.id, head, result.verdict, result.duration_s, result.error)


class JsonlSink:
    """Appends results rows to ``path``, rotated by size.

    Args:
        path: The file (its folder is created); ``results.jsonl`` in a folder makes the
            folder readable by ``agentjudge report``.
        max_bytes: Rotate before a batch would grow the file past this size (None: never).
        backups: Rotated files kept: ``path.1`` (newest) to ``path.<backups>``.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, max_bytes: int | None = 100_000_000, backups: int = 5
    ) -> None:
        if max_bytes is not None and (isinstance(max_bytes, bool) or max_bytes < 1):
            raise ValueError(f"max_bytes must be >= 1 or None, got {max_bytes!r}")
        if isinstance(backups, bool) or not isinstance(backups, int) or backups < 0:
            raise ValueError(f"backups must be an integer >= 0, got {backups!r}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"

    async def write(self, batch: Sequence[OnlineResult], /) -> None:
        """Append the batch's rows (encoded in slices on the loop, written on a worker thread)."""
        data = "".join(await in_slices(batch, online_row)).encode("utf-8", "backslashreplace")
        await anyio.to_thread.run_sync(self._append, data)

    def _append(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if self.max_bytes is not None and size and size + len(data) > self.max_bytes:
            self._rotate()
        with self.path.open("ab") as handle:
            handle.write(data)

    def _rotate(self) -> None:
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
            return
        for n in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{n + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY, row_id TEXT NOT NULL, key TEXT, route TEXT,
    offered_at TEXT NOT NULL, queued_s REAL NOT NULL, duration_s REAL NOT NULL,
    status TEXT, score REAL, label TEXT, reasoning TEXT, error TEXT, row TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS judge_results (
    evaluation_id INTEGER NOT NULL REFERENCES evaluations(id), name TEXT NOT NULL,
    sampled INTEGER NOT NULL, status TEXT, score REAL, label TEXT, confidence REAL,
    reasoning TEXT, error_type TEXT, attempts INTEGER NOT NULL, duration_s REAL NOT NULL,
    queued_s REAL NOT NULL, tier TEXT
);
CREATE INDEX IF NOT EXISTS evaluations_by_time ON evaluations(offered_at);
CREATE INDEX IF NOT EXISTS evaluations_by_key ON evaluations(key);
CREATE INDEX IF NOT EXISTS judge_results_by_name ON judge_results(name, status);
"""


_Values = tuple[tuple[Any, ...], list[tuple[Any, ...]]]


def _values(result: OnlineResult) -> _Values:
    """One evaluation's ``evaluations`` row (without its id) and ``judge_results`` rows."""
    verdict = result.verdict
    j = None if verdict is None else verdict.judgment
    row = (
        result.id,
        result.key,
        result.route,
        result.offered_at.isoformat(),
        result.queued_s,
        result.duration_s,
        None if j is None else j.status.value,
        None if j is None else j.score,
        None if j is None else j.label,
        None if j is None else j.reasoning,
        result.error,
        online_row(result).encode("utf-8", "backslashreplace").decode("utf-8"),
    )
    judges = [] if verdict is None else [_judge_values(r) for r in verdict.results]
    return row, judges


class SqliteSink:
    """Inserts online evaluations into a SQLite database (schema in the module docstring).

    Args:
        path: The database file (created with its folder and tables when missing).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"SqliteSink({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            import sqlite3  # on first use: `import agentjudge` stays light

            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    async def write(self, batch: Sequence[OnlineResult], /) -> None:
        """Insert the batch in one transaction (rows built on the loop, inserted on a thread)."""
        values = await in_slices(batch, _values)
        await anyio.to_thread.run_sync(self._insert, values)

    def _insert(self, values: Sequence[_Values]) -> None:
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")  # the write lock first: the ids below stay ours
        try:
            (last,) = db.execute("SELECT coalesce(max(id), 0) FROM evaluations").fetchone()
            db.executemany(
                "INSERT INTO evaluations (id, row_id, key, route, offered_at, queued_s, "
                "duration_s, status, score, label, reasoning, error, row) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(last + n, *row) for n, (row, _) in enumerate(values, 1)],
            )
            db.executemany(
                "INSERT INTO judge_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(last + n, *judge) for n, (_, judges) in enumerate(values, 1) for judge in judges],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    async def aclose(self) -> None:
        """Close the database connection."""
        db, self._db = self._db, None
        if db is not None:
            await anyio.to_thread.run_sync(db.close)


def _judge_values(r: Any) -> tuple[Any, ...]:
    j = r.judgment
    return (
        r.name,
        int(r.sampled),
        None if j is None else j.status.value,
        None if j is None else j.score,
        None if j is None else j.label,
        None if j is None else j.confidence,
        None if j is None else j.reasoning,
        r.error_type,
        r.attempts,
        r.duration_s,
        r.queued_s,
        r.tier,
    )

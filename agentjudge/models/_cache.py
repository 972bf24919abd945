"""`SqliteCache`: a content-addressed response cache on a SQLite file, with single-flight.

The key is a SHA-256 over the client name (``"openai:gpt-4o-mini"``), the messages, the
request parameters (temperature, max_tokens, the client's extra body...), the response schema,
``sample_index`` and ``logprobs`` (when set; a stored answer keeps its token logprobs). Only
complete answers are stored: a structured request whose answer failed its schema (``parsed is
None``) is not cached, so the next run asks again.

SQLite runs on worker threads (never on the event loop) through one connection guarded by a
thread lock, so one cache can be shared by every client and task of a process. Identical
requests in flight at the same time make one call: the first becomes the leader, the others
wait for its answer (and count as hits). If the leader fails, the waiters receive the same
error; if it is cancelled, one waiter takes over.

A hit costs nothing: its response is marked ``cached=True`` and its ``usage`` reports zero
input and output tokens (the tokens the original call used stay in ``raw``), so judges record
``cost_usd`` 0 and budgets and summaries count no tokens for it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread

from agentjudge.models._schema import plain_json
from agentjudge.models._types import ModelRequest, ModelResponse, Usage

__all__ = ["SqliteCache"]

_KEY_VERSION = 1
_NOTHING_BILLED = Usage(input_tokens=0, output_tokens=0)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


_HIT: dict[str, Any] = {"cached": True, "queued_s": 0.0, "usage": _NOTHING_BILLED}
"""How a stored answer is marked when it is served again: cached, nothing queued or billed."""


@dataclass(eq=False)
class _Flight:
    done: anyio.Event = field(default_factory=anyio.Event)
    response: ModelResponse | None = None
    error: BaseException | None = None


class SqliteCache:
    """Model responses stored in a SQLite file, keyed by the full request.

    Args:
        path: The database file (created with its parent folders when missing).

    Attributes:
        hits: Requests answered without a new model call (stored answers and requests that
            joined an identical one in flight).
        misses: Requests that had to call the model.
    """

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = Path(path)
        self.hits = 0
        self.misses = 0
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._inflight: dict[str, _Flight] = {}

    def __repr__(self) -> str:
        return f"SqliteCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"

    def __getstate__(self) -> dict[str, object]:
        """Pickled as its path (and counters): a copy opens its own connection on first use.

        Copies in several processes share the SQLite file safely (WAL mode); single-flight
        works within each process.
        """
        return {"path": self.path, "hits": self.hits, "misses": self.misses}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(SqliteCache(state["path"]).__dict__)
        self.hits = state["hits"]
        self.misses = state["misses"]

    # -- keys -------------------------------------------------------------------------------------

    @staticmethod
    def key(client: str, request: ModelRequest, params: Mapping[str, Any] | None = None) -> str:
        """The content address of ``request`` sent by the client named ``client``."""
        material = {
            "v": _KEY_VERSION,
            "client": client,
            "messages": [[m.role, m.content] for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "schema": plain_json(request.response_schema),
            "sample_index": request.sample_index,
            "params": plain_json(params or {}),
        }
        if request.logprobs is not None:  # only when asked: the keys of other requests stay put
            material["logprobs"] = request.logprobs
        encoded = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(encoded.encode()).hexdigest()

    # -- the async API ----------------------------------------------------------------------------

    async def get(self, key: str) -> ModelResponse | None:
        """The stored response for ``key`` (marked ``cached``), or None. Counts nothing."""
        text = await anyio.to_thread.run_sync(self._get_sync, key)
        if text is None:
            return None
        try:
            response = ModelResponse.model_validate_json(text)
        except ValueError:
            return None  # an unreadable row is a miss; the next put overwrites it
        return response.model_copy(update=_HIT)

    async def put(self, key: str, client: str, response: ModelResponse) -> None:
        """Store ``response`` under ``key``."""
        text = response.model_copy(update={"cached": False, "queued_s": 0.0}).model_dump_json()
        await anyio.to_thread.run_sync(self._put_sync, key, client, text)

    async def fetch(
        self,
        key: str,
        compute: Callable[[], Awaitable[ModelResponse]],
        *,
        client: str = "",
    ) -> ModelResponse:
        """The stored response for ``key``, else ``await compute()`` (stored when complete).

        Identical keys in flight at once share one ``compute()``.
        """
        while True:
            flight = self._inflight.get(key)
            if flight is None:
                break
            await flight.done.wait()
            if flight.response is not None:
                self.hits += 1
                return flight.response.model_copy(update=_HIT)
            if flight.error is not None:
                raise flight.error
            # the leader was cancelled: try to lead
        flight = _Flight()
        self._inflight[key] = flight
        try:
            stored = await self.get(key)
            if stored is not None:
                self.hits += 1
                flight.response = stored
                return stored
            self.misses += 1
            response = await compute()
            flight.response = response
            if response.parsed is not None or response.schema_error is None:
                await self.put(key, client or response.model or "", response)
            return response
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            del self._inflight[key]
            flight.done.set()

    async def clear(self) -> None:
        """Delete every stored response (counters are kept)."""
        await anyio.to_thread.run_sync(self._clear_sync)

    async def aclose(self) -> None:
        """Close the database connection (it reopens on next use)."""
        await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Close the database connection synchronously."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    async def __aenter__(self) -> Self:
        await anyio.to_thread.run_sync(self._open_sync)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- worker-thread side -----------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                connection.commit()
            except sqlite3.DatabaseError as exc:
                connection.close()
                raise ValueError(
                    f"{self.path}: cannot use this file as a response cache ({exc}); "
                    "give SqliteCache a new path or delete the file"
                ) from None
            self._connection = connection
        return self._connection

    def _open_sync(self) -> None:
        with self._lock:
            self._db()

    def _get_sync(self, key: str) -> str | None:
        with self._lock:
            row = (
                self._db()
                .execute("SELECT response FROM responses WHERE key = ?", (key,))
                .fetchone()
            )
        return None if row is None else str(row[0])

    def _put_sync(self, key: str, client: str, text: str) -> None:
        with self._lock:
            db = self._db()
            db.execute(
                "INSERT OR REPLACE INTO responses (key, client, response, created_at) "
                "VALUES (?, ?, ?, ?)",
                (key, client, text, time.time()),
            )
            db.commit()

    def _clear_sync(self) -> None:
        with self._lock:
            db = self._db()
            db.execute("DELETE FROM responses")
            db.commit()

"""`Pipe`: a bounded FIFO between tasks of one event loop, cheaper than a memory object stream.

A memory object stream checkpoints on every send and receive and builds waiter objects when
it blocks; at tens of thousands of cases a second that is a large share of the harness's
time. A pipe only waits when it must (empty or full); callers add one checkpoint per case.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import anyio

__all__ = ["Pipe"]

T = TypeVar("T")


class Pipe(Generic[T]):
    """A bounded first-in first-out queue for tasks on one event loop.

    Args:
        limit: Items held at most; `put` waits while the pipe is full.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self._items: deque[T] = deque()
        self._limit = limit
        self._closed = False
        self._readable = anyio.Event()
        self._writable = anyio.Event()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._closed

    async def put(self, item: T) -> None:
        """Append ``item``, waiting while the pipe is full.

        Raises:
            anyio.ClosedResourceError: the pipe was closed.
        """
        while len(self._items) >= self._limit and not self._closed:
            if self._writable.is_set():
                self._writable = anyio.Event()
            await self._writable.wait()
        if self._closed:
            raise anyio.ClosedResourceError
        self._items.append(item)
        self._readable.set()

    async def get(self) -> T | None:
        """The next item, waiting while the pipe is empty; None once closed and drained."""
        while not self._items:
            if self._closed:
                return None
            if self._readable.is_set():
                self._readable = anyio.Event()
            await self._readable.wait()
        item = self._items.popleft()
        self._writable.set()
        return item

    def take_all(self) -> list[T]:
        """Everything waiting now, without waiting for more."""
        items = list(self._items)
        self._items.clear()
        self._writable.set()
        return items

    def close(self) -> None:
        """No more puts; getters drain what is left, then get None. Wakes every waiter."""
        self._closed = True
        self._readable.set()
        self._writable.set()

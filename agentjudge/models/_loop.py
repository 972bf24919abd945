"""Per-event-loop state: objects (locks, limiters, HTTP clients) that must not cross loops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from agentjudge._compat import running_loop

__all__ = ["LoopLocal", "current_loop"]

T = TypeVar("T")


def current_loop() -> object:
    """An object identifying the running event loop (the asyncio loop, the trio token...)."""
    return running_loop()


class LoopLocal(Generic[T]):
    """Holds one value per event loop: made by ``factory`` the first time a loop asks.

    Only the most recent loop's value is kept; a client reused by a later ``anyio.run`` gets
    fresh locks and limiters instead of ones bound to a closed loop. A pickled copy keeps only
    the factory (which must be picklable itself, e.g. a class).
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._loop: object | None = None
        self._value: T | None = None

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its value: a copy in another process makes its own on first use."""
        return {"_factory": self._factory, "_loop": None, "_value": None}

    def get(self) -> T:
        """The value for the running loop."""
        loop = current_loop()
        if self._loop is not loop or self._value is None:
            self._value = self._factory()
            self._loop = loop
        return self._value

    def peek(self) -> T | None:
        """The value made for the last loop that asked, if any (no loop needed)."""
        return self._value

    def is_current(self) -> bool:
        """True when the held value belongs to the running loop."""
        return self._value is not None and self._loop is current_loop()

    def clear(self) -> None:
        """Forget the held value."""
        self._loop = None
        self._value = None

"""`RateLimit`: requests-per-minute and tokens-per-minute budgets shared by a client's calls.

Both budgets are token buckets whose tokens come back exactly one ``period`` after they were
spent (a sliding-window log). That is stricter than a classic refilling bucket: in *any* window
of ``period`` seconds at most ``rpm`` requests start and at most ``tpm`` tokens are charged,
never a burst of twice the budget at a window edge.

Tokens are estimated before a call (prompt characters / 4 plus the output allowance) and
reconciled from the response's usage afterwards (`RateLease.settle`), so the budget follows
what the API actually counted.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import anyio

from agentjudge.models._loop import LoopLocal

__all__ = ["RateLease", "RateLimit"]


@dataclass(eq=False)
class _Entry:
    time: float
    tokens: int
    live: bool = True


class RateLease:
    """One admitted request; `settle` corrects its token charge once usage is known."""

    __slots__ = ("_entry", "_limit")

    def __init__(self, limit: RateLimit | None, entry: _Entry | None) -> None:
        self._limit = limit
        self._entry = entry

    @property
    def tokens(self) -> int:
        """The tokens currently charged for this request."""
        return self._entry.tokens if self._entry is not None else 0

    def settle(self, tokens: int | None) -> None:
        """Replace the estimate with the real token count (None keeps the estimate)."""
        if tokens is None or self._entry is None or self._limit is None:
            return
        self._limit._settle(self._entry, max(0, int(tokens)))


_NO_LEASE = RateLease(None, None)


class RateLimit:
    """Requests and tokens allowed per period (a minute by default); None means unlimited.

    One instance is shared by everything that uses it: give the same `RateLimit` to several
    clients to make them share one budget.

    Args:
        rpm: Requests allowed to start in any window of ``period`` seconds.
        tpm: Tokens (input + output) allowed in any window of ``period`` seconds. A single
            request estimated above ``tpm`` is admitted alone, when the window is empty.
        period: The window length in seconds (60; tests use shorter windows).

    Raises:
        ValueError: A budget below 1 or a period that is not a positive finite number.
    """

    def __init__(
        self, rpm: int | None = None, tpm: int | None = None, *, period: float = 60.0
    ) -> None:
        for label, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(
                    f"RateLimit {label} must be an integer >= 1 or None, got {value!r}"
                )
        if (
            isinstance(period, bool)
            or not isinstance(period, int | float)
            or not math.isfinite(period)
            or period <= 0
        ):
            raise ValueError(
                f"RateLimit period must be a positive number of seconds, got {period!r}"
            )
        self.rpm = rpm
        self.tpm = tpm
        self.period = float(period)
        self._entries: deque[_Entry] = deque()
        self._tokens_in_window = 0
        self._lock: LoopLocal[anyio.Lock] = LoopLocal(anyio.Lock)
        self._changed: LoopLocal[anyio.Event] = LoopLocal(anyio.Event)

    def __repr__(self) -> str:
        return f"RateLimit(rpm={self.rpm!r}, tpm={self.tpm!r}, period={self.period!r})"

    @property
    def enabled(self) -> bool:
        """True when any budget is set."""
        return self.rpm is not None or self.tpm is not None

    async def acquire(self, tokens: int = 0) -> RateLease:
        """Wait until a request estimated at ``tokens`` fits both budgets, then charge it.

        Waiters are admitted first come, first served.
        """
        if not self.enabled:
            return _NO_LEASE
        tokens = max(0, int(tokens))
        if self.tpm is not None:
            tokens = min(tokens, self.tpm)
        async with self._lock.get():
            while True:
                now = anyio.current_time()
                self._expire(now)
                wait = self._wait_needed(now, tokens)
                if wait <= 0:
                    entry = _Entry(now, tokens)
                    self._entries.append(entry)
                    self._tokens_in_window += tokens
                    return RateLease(self, entry)
                changed = self._changed.get()
                with anyio.move_on_after(wait):
                    await changed.wait()

    def _expire(self, now: float) -> None:
        horizon = now - self.period
        entries = self._entries
        while entries and entries[0].time <= horizon:
            entry = entries.popleft()
            entry.live = False
            self._tokens_in_window -= entry.tokens

    def _wait_needed(self, now: float, tokens: int) -> float:
        entries = self._entries
        wait = 0.0
        if self.rpm is not None and len(entries) >= self.rpm:
            # the request that must leave the window for the count to drop below rpm
            wait = entries[len(entries) - self.rpm].time + self.period - now
        if self.tpm is not None and entries and self._tokens_in_window + tokens > self.tpm:
            excess = self._tokens_in_window + tokens - self.tpm
            freed = 0
            for entry in entries:
                freed += entry.tokens
                if freed >= excess:
                    break
            wait = max(wait, entry.time + self.period - now)
        return wait

    def _settle(self, entry: _Entry, tokens: int) -> None:
        if entry.live:
            self._tokens_in_window += tokens - entry.tokens
        entry.tokens = tokens
        if self._changed.is_current():
            event = self._changed.get()
            self._changed.clear()
            event.set()

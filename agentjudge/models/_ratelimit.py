"""`RateLimit`: requests-per-minute and tokens-per-minute budgets shared by a client's calls.

Both budgets are token buckets whose tokens come back exactly one ``period`` after the request
that spent them *finished*. A request holds its tokens while in flight; when it completes
(`RateLease.settle`) its charge is corrected to the tokens the API reported and a timer of one
``period`` starts. Because a request reaches the server between its admission and its
completion, two requests that use the same token arrive at the server at least ``period``
apart: in *any* window of ``period`` seconds, as seen by the server, at most ``rpm`` requests
arrive and at most ``tpm`` tokens are charged. (A classic refilling bucket allows a burst of
twice the budget at a window edge; admission timestamps alone are off by the network delay.)

Token charges start as an estimate (prompt characters / 4 plus the output allowance) and are
reconciled from the response's usage.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import anyio

from agentjudge._compat import loop_time
from agentjudge.models._loop import LoopLocal

__all__ = ["RateLease", "RateLimit"]


@dataclass(eq=False)
class _Spent:
    time: float
    tokens: int
    live: bool = True


class RateLease:
    """One admitted request; call `settle` exactly once when it finished (success or not)."""

    __slots__ = ("_limit", "_settled", "_spent", "tokens")

    def __init__(self, limit: RateLimit | None, tokens: int) -> None:
        self._limit = limit
        self.tokens = tokens
        """The tokens charged for this request (the estimate until settled)."""
        self._settled = limit is None
        self._spent: _Spent | None = None

    def settle(self, tokens: int | None = None) -> None:
        """The request finished: charge ``tokens`` (None keeps the estimate) from now on.

        The request's budget share comes back one period later. Settling twice corrects the
        token charge again without releasing anything twice.
        """
        if self._limit is None:
            return
        charged = self.tokens if tokens is None else max(0, int(tokens))
        if self._settled:
            if self._spent is not None:
                self._limit._correct(self._spent, charged)
            self.tokens = charged
            return
        self._settled = True
        self._spent = self._limit._release(self.tokens, charged)
        self.tokens = charged


_UNLIMITED = RateLease(None, 0)
"""The lease of every request when no budget is set (settling it does nothing)."""


class RateLimit:
    """Requests and tokens allowed per period (a minute by default); None means unlimited.

    One instance is shared by everything that uses it: give the same `RateLimit` to several
    clients to make them share one budget (e.g. one API key).

    Args:
        rpm: Requests allowed to reach the server in any window of ``period`` seconds.
        tpm: Tokens (input + output) allowed in any window of ``period`` seconds. A single
            request estimated above ``tpm`` is admitted alone, when nothing else is charged.
        period: The window length in seconds (60; tests and benchmarks use shorter windows).

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
        self._spent: deque[_Spent] = deque()  # finished requests, oldest first
        self._spent_tokens = 0
        self._in_flight = 0
        self._in_flight_tokens = 0
        self._lock: LoopLocal[anyio.Lock] = LoopLocal(anyio.Lock)
        self._changed: LoopLocal[anyio.Event] = LoopLocal(anyio.Event)

    def __repr__(self) -> str:
        return f"RateLimit(rpm={self.rpm!r}, tpm={self.tpm!r}, period={self.period!r})"

    def __getstate__(self) -> dict[str, object]:
        """Pickled as configuration only: a copy in another process starts with a full budget.

        Each process then spends its own budget; with ``workers=N`` give each worker's copy
        ``rpm / N`` (and ``tpm / N``) if the provider's limit is shared.
        """
        return {"rpm": self.rpm, "tpm": self.tpm, "period": self.period}

    def __setstate__(self, state: dict[str, object]) -> None:
        fresh = RateLimit(state["rpm"], state["tpm"], period=state["period"])  # type: ignore[arg-type]
        self.__dict__.update(fresh.__dict__)

    @property
    def enabled(self) -> bool:
        """True when any budget is set."""
        return self.rpm is not None or self.tpm is not None

    @property
    def in_flight(self) -> int:
        """Admitted requests that have not settled yet."""
        return self._in_flight

    def unlimited_lease(self) -> RateLease | None:
        """The lease `acquire` returns at once when no budget is set; None when one is.

        Such a lease charges nothing and settling it does nothing, so one is shared.
        """
        return None if self.enabled else _UNLIMITED

    async def acquire(self, tokens: int = 0) -> RateLease:
        """Wait until a request estimated at ``tokens`` fits both budgets, then charge it.

        Waiters are admitted first come, first served. Settle the returned lease when the
        request finished, whatever the outcome.
        """
        free = self.unlimited_lease()
        if free is not None:
            return free
        tokens = max(0, int(tokens))
        if self.tpm is not None:
            tokens = min(tokens, self.tpm)
        async with self._lock.get():
            while True:
                now = loop_time()
                self._expire(now)
                wait = self._wait_needed(now, tokens)
                if wait <= 0:
                    self._in_flight += 1
                    self._in_flight_tokens += tokens
                    return RateLease(self, tokens)
                changed = self._changed.get()
                with anyio.move_on_after(wait):
                    await changed.wait()

    # -- bookkeeping ------------------------------------------------------------------------------

    def _expire(self, now: float) -> None:
        horizon = now - self.period
        spent = self._spent
        while spent and spent[0].time <= horizon:
            entry = spent.popleft()
            entry.live = False
            self._spent_tokens -= entry.tokens

    def _wait_needed(self, now: float, tokens: int) -> float:
        """0 when the request fits now, else how long until it might (inf: until a settle)."""
        spent = self._spent
        wait = 0.0
        if self.rpm is not None:
            excess = self._in_flight + len(spent) + 1 - self.rpm
            if excess > 0:
                wait = (
                    spent[excess - 1].time + self.period - now if excess <= len(spent) else math.inf
                )
        if self.tpm is not None:
            excess = self._in_flight_tokens + self._spent_tokens + tokens - self.tpm
            if excess > 0:
                freed = 0
                until = math.inf
                for entry in spent:
                    freed += entry.tokens
                    if freed >= excess:
                        until = entry.time + self.period - now
                        break
                wait = max(wait, until)
        return wait

    def _release(self, estimate: int, tokens: int) -> _Spent:
        self._in_flight -= 1
        self._in_flight_tokens -= estimate
        entry = _Spent(loop_time(), tokens)
        self._spent.append(entry)
        self._spent_tokens += tokens
        self._notify()
        return entry

    def _correct(self, entry: _Spent, tokens: int) -> None:
        if entry.live:
            self._spent_tokens += tokens - entry.tokens
        entry.tokens = tokens
        self._notify()

    def _notify(self) -> None:
        if self._changed.is_current():
            event = self._changed.get()
            self._changed.clear()
            event.set()

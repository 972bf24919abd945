"""The seam between a spending limit (the engine's `Budget`) and the model calls it limits.

The engine sets `spend_gate` around each attempt of a metered judge; a model client reads it
once per request it is about to send. Without a budget it is None and the client sends as
usual (one ``ContextVar.get``). With one, the client asks the gate to `SpendGate.reserve` an
upper bound of the request's cost before sending it, and `SpendHold.settle` s the hold with
what the answer really used (or `SpendHold.release` s it when no answer came). All the
accounting -- what is spent, what is reserved, when to wait and when to refuse -- lives in the
gate; the client only prices the request.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

__all__ = ["SpendGate", "SpendHold", "spend_gate"]


class SpendHold(Protocol):
    """What one request reserved; settled or released exactly once."""

    def settle(self, usd: float | None, tokens: int | None) -> None:
        """Replace the reservation by what the answer used (None: unknown, the bound counts)."""

    def release(self) -> None:
        """Give the reservation back: the request got no answer (it failed or was cancelled)."""


class SpendGate(Protocol):
    """Admits the model requests of one judge attempt against a spending limit."""

    async def reserve(self, client: str, usd: float | None, tokens: int) -> SpendHold:
        """Reserve at most ``usd`` dollars (None: the model has no price) and ``tokens`` tokens.

        Waits while requests in flight hold the room; raises the budget's exception when the
        request can never fit.
        """
        ...


spend_gate: ContextVar[SpendGate | None] = ContextVar("agentjudge_spend_gate", default=None)
"""The gate of the attempt running in this task (set by the engine; None without a budget)."""

"""What the engine learns about each judge while it runs; the plan itself never changes.

A judge that completed its first step without suspending `INSTANT_AFTER` times in a row, and
never suspended, is *instant*: the fast path (`agentjudge.engine._fastpath`) runs it inline,
without a task or a timeout scope of its own. One suspension demotes it for good.
"""

from __future__ import annotations

__all__ = ["INSTANT_AFTER", "Learned"]

INSTANT_AFTER = 8
"""Inline completions in a row after which a leaf counts as instant."""


class Learned:
    """Per-leaf facts learned at run time, indexed by `Leaf.index`; owned by one evaluator."""

    __slots__ = ("streak", "suspends")

    def __init__(self, count: int) -> None:
        self.streak = [0] * count
        """Attempts in a row that completed without suspending."""
        self.suspends = [False] * count
        """Set for good once an attempt suspended."""

    def instant(self, index: int) -> bool:
        """True after `INSTANT_AFTER` inline completions in a row and no suspension ever."""
        return self.streak[index] >= INSTANT_AFTER and not self.suspends[index]

    def completed_inline(self, index: int) -> None:
        """An attempt completed (or raised) in its first step."""
        self.streak[index] += 1

    def suspended(self, index: int) -> None:
        """An attempt suspended: never instant again."""
        self.suspends[index] = True

"""The broker's side of cluster-wide ``max_cost`` on Ray: the dollar leases' state.

`DollarLeases` applies the rule of `_ray_budget` (see there) in the run's broker actor and
answers each renewal with an `Allowance`. It is kept apart from `_ray_budget.LeasedBudget` (the
actors' side, a `agentjudge.engine.Budget`) so the broker, an interpreter of its own started
for one run, imports no engine: it holds plain numbers (~0.2 s of CPU less per broker).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SLICES", "Allowance", "DollarLeases"]

SLICES = 4
"""Without others waiting, a holder's spare headroom is ``max_cost / (SLICES * holders)``."""


@dataclass(frozen=True)
class Allowance:
    """The broker's answer to one holder's renewal."""

    limit: float
    """The most the holder may have spent and reserved (dollars)."""
    others_spent: float
    """Dollars spent by the other holders (a dead one: what it had used)."""
    others_reserved: float
    """Dollars the other live holders' calls in flight reserve."""
    out: str | None
    """The first refusal's message once some holder refused a call, else None."""


@dataclass
class _Account:
    expires: float
    live: bool = True
    limit: float = 0.0
    counted: float = 0.0
    spent: float = 0.0
    used: float = 0.0
    wanting: float = 0.0


class DollarLeases:
    """Dollar allowances of the holders within one ``max_cost`` (the broker's state).

    Args:
        cap: ``max_cost`` (dollars).
        lease: Seconds an allowance lasts without renewal.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(self, cap: float, lease: float, clock: Callable[[], float] = time.monotonic):
        self.cap = cap
        self.lease = lease
        self.clock = clock
        self.accounts: dict[str, _Account] = {}
        self.out: str | None = None

    def counted(self) -> float:
        """Dollars the holders are counted for (never above ``cap``)."""
        return sum(a.counted for a in self.accounts.values())

    def renew(
        self, holder: str, spent: float, reserved: float, wanting: float, out: str | None = None
    ) -> Allowance:
        """Renew ``holder``'s allowance (see the module docs)."""
        now = self.clock()
        for account in self.accounts.values():
            if account.live and account.expires < now:
                self._close(account)  # expired: only what it had used stays counted
        me = self.accounts.setdefault(holder, _Account(expires=now))
        me.expires, me.live = now + self.lease, True
        me.spent, me.used, me.wanting = spent, spent + reserved, wanting
        self.out = self.out or out
        others = [a for a in self.accounts.values() if a is not me]
        free = self.cap - sum(a.counted for a in others) - me.used
        headroom = wanting
        if not any(a.live and a.wanting > 0 for a in others):
            live = 1 + sum(a.live for a in others)
            headroom = max(wanting, self.cap / (SLICES * live))
        previous = me.limit
        me.limit = me.used + max(0.0, min(headroom, free))
        me.counted = max(previous, me.limit, me.used)
        return Allowance(
            limit=me.limit,
            others_spent=sum(a.spent if a.live else a.used for a in others),
            others_reserved=sum(a.used - a.spent for a in others if a.live),
            out=self.out,
        )

    def drop(self, holder: str, spent: float, reserved: float) -> None:
        """``holder`` ended: what it used stays counted, the rest of its allowance is free."""
        account = self.accounts.get(holder)
        if account is not None:
            account.spent, account.used = spent, spent + reserved
            self._close(account)

    @staticmethod
    def _close(account: _Account) -> None:
        account.live = False
        account.wanting = 0.0
        account.limit = account.counted = account.used
        account.spent = account.used

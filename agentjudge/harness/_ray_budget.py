"""Cluster-wide ``max_cost`` on Ray: leases of dollars from the run's broker actor.

Each Ray actor's Evaluator has a `LeasedBudget`: a `Budget` of the whole ``max_cost`` whose
room to reserve comes from the broker (`_ray_dollars.DollarLeases`, held by
``_ray_limits.LimitBroker``).
With every renewal (every ``RENEW_SECONDS``, with the limits' leases) an actor reports what
its calls spent, what its calls in flight reserve, and what its waiting calls need; it gets
back its *allowance*: the most it may have spent and reserved, and what the other actors
spent. The rule:

* a holder is counted for ``max(previous allowance, new allowance, spent + reserved)`` until
  its next renewal, and an allowance only grows out of what no one is counted for: the
  allowances never sum above ``max_cost``, so the actors together stay within it as one
  budget does (a call reserves its upper bound before it is sent);
* an allowance is what the holder used plus some headroom: what its waiting calls need, and,
  while no other actor waits, a slice of ``max_cost`` (``SLICES`` per holder) so calls rarely
  wait for the broker. While another actor waits, a holder keeps no spare headroom: one
  actor cannot sit on dollars others need;
* a call is refused (``BudgetExhausted``) by the rule of one budget applied to the cluster's
  totals: when the dollars spent by every actor plus its bound pass ``max_cost``. The first
  refusal's message goes to the broker, and every actor refuses every later call with it;
* a lease lasts ``LEASE_SECONDS`` after the holder's last renewal. A dead actor's allowance
  then shrinks to what it had used at its last renewal (spent + reserved): its spare headroom
  comes back to the others. An actor that cannot renew in time stops reserving.

**The bound.** Spending passes ``max_cost`` only by (a) what calls in flight cost beyond
their reservation (as in one process, see `agentjudge.engine.Budget`), and (b) per actor
that died, what it reserved after its last renewal (at most its headroom then: one slice,
``max_cost / (SLICES * actors)``, or its waiting calls' bounds).
"""

from __future__ import annotations

from agentjudge.engine import Budget
from agentjudge.engine._budget import _exhausted, _Hold, _Meter
from agentjudge.harness._ray_dollars import Allowance

__all__ = ["LeasedBudget"]


class LeasedBudget(Budget):
    """The `Budget` of ``max_cost`` as one Ray actor sees it: its room comes from leases.

    Its dollar limit (the local meter's) is the actor's allowance, set by `lease`; a call
    that does not fit waits for a larger one. Refusals follow the cluster's totals (see the
    module docs).

    Args:
        cap: ``max_cost`` (dollars), for the whole cluster.
    """

    def __init__(self, cap: float) -> None:
        super().__init__(usd=cap)
        self.cap = cap
        self._usd = self._meters[0]
        self._usd.limit = 0.0  # nothing may be reserved before the broker grants it
        self.wanting = 0.0
        """Dollars the calls waiting for room need."""
        self._others_spent = 0.0
        self._others_reserved = 0.0

    @property
    def spent(self) -> float:
        """Dollars this actor's calls spent."""
        return self._usd.spent

    @property
    def reserved(self) -> float:
        """Dollars this actor's calls in flight reserve."""
        return self._usd.reserved

    @property
    def refusal(self) -> str | None:
        """The message every call is refused with once the budget is exhausted, else None."""
        return self._out

    def lease(self, allowance: Allowance) -> None:
        """Apply the broker's answer (waiting calls look again)."""
        self._usd.limit = allowance.limit
        self._others_spent = allowance.others_spent
        self._others_reserved = allowance.others_reserved
        if allowance.out is not None and self._out is None:
            self._out = allowance.out
        self._wake()

    def lapse(self) -> None:
        """The lease may have expired: reserve nothing more until the next allowance."""
        self._usd.limit = self._usd.spent + self._usd.reserved

    async def _reserve(self, judge: str, client: str, usd: float | None, tokens: int) -> _Hold:
        self.wanting += usd or 0.0
        try:
            return await super()._reserve(judge, client, usd, tokens)
        finally:
            self.wanting -= usd or 0.0

    def _refusal(self, judge: str, client: str, amounts: tuple[float | None, ...]) -> str | None:
        usd = amounts[0]
        if self._out is None and usd is not None:
            mine = self._usd
            cluster = _Meter(
                "usd",
                self.cap,
                self._others_spent + mine.spent,
                self._others_reserved + mine.reserved,
            )
            if cluster.spent + usd > cluster.limit:
                self._out = _exhausted(cluster, judge, usd)
        if self._out is not None or usd is not None:
            return self._out
        return super()._refusal(judge, client, amounts)  # no price: the message of one budget

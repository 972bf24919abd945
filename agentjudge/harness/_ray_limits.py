"""Cluster-wide ``limits`` on Ray: token leases from one small broker actor.

Each Ray actor's Evaluator keeps its per-resource limiters, but their sizes come from a
`LimitBroker` (one Ray actor per run): every `RENEW_SECONDS` an actor's `keep_limits` task
reports, per limited resource, the tokens in use and the calls waiting, and sets its limiter
to the grant it gets back. The broker's rule keeps the cluster within each limit:

* a holder is counted for ``max(previous grant, in use, new grant)`` tokens until its next
  renewal (it may still lend its previous grant until the answer arrives, and calls in
  flight keep their tokens), and a new grant only comes out of what no one else is counted
  for; so the counts never sum above the limit;
* while others wait, a holder gets no more than a fair share (the limit over the holders
  with demand), so one busy actor cannot starve the others; with no one waiting it may take
  every free token;
* a lease lasts `LEASE_SECONDS` after the holder's last renewal: a dead actor's tokens
  come back when it expires. An actor that cannot renew in time sets its limiters to 0
  (calls already in flight finish).

The broker's logic is a plain class (`Leases`, tested without Ray); `LimitBroker` is it as a
Ray actor. Cost: one small actor call per actor every `RENEW_SECONDS` (not per judge call).

The broker's interpreter imports this module to build `LimitBroker`: it imports no engine (the
actors' `_ray_budget.LeasedBudget` is imported where an actor uses it), ~0.2 s of CPU less
for every run that starts a broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from agentjudge.harness._ray_dollars import Allowance, DollarLeases
from agentjudge.harness._ray_rates import (
    Admitted,
    BrokerPromise,
    RateControllers,
    SharedController,
)
from agentjudge.models._headers import CapacitySignals

if TYPE_CHECKING:
    from agentjudge.harness._ray_budget import LeasedBudget

__all__ = [
    "LEASE_SECONDS",
    "RENEW_SECONDS",
    "Leases",
    "LimitBroker",
    "LimitKeeper",
    "keep_limits",
]

RENEW_SECONDS = 0.05
"""How often an actor renews its leases (and so how soon freed tokens move)."""
LEASE_SECONDS = 5.0
"""How long a lease lasts without renewal (a dead actor's tokens come back after this)."""

Spend = tuple[float, float, float, str | None]
"""What a holder reports of its budget: dollars spent, reserved, wanted, its refusal (if any)."""


@dataclass
class _Holder:
    expires: float
    grant: dict[str, int] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)
    waiting: dict[str, int] = field(default_factory=dict)


class Leases:
    """Per-resource token leases shared by the holders (the broker's state).

    Args:
        caps: Tokens per resource (the suite's ``limits``).
        lease: Seconds a lease lasts without renewal.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        caps: Mapping[str, int],
        lease: float = LEASE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.caps = dict(caps)
        self.lease = lease
        self.clock = clock
        self.holders: dict[str, _Holder] = {}
        self.last_taker: dict[str, str] = {}
        """Per resource, the last holder that went from no grant to one (turns)."""

    def counted(self, resource: str) -> int:
        """Tokens the holders are counted for (never above the cap)."""
        return sum(h.counted.get(resource, 0) for h in self.holders.values())

    def renew(
        self, holder: str, using: Mapping[str, int], waiting: Mapping[str, int]
    ) -> dict[str, int]:
        """Renew ``holder``'s leases; returns its new grant per resource."""
        now = self.clock()
        for name in [n for n, h in self.holders.items() if h.expires < now and n != holder]:
            del self.holders[name]  # expired: its tokens are free again
        me = self.holders.setdefault(holder, _Holder(expires=now))
        me.expires = now + self.lease
        me.waiting = dict(waiting)
        for resource, cap in self.caps.items():
            in_use = using.get(resource, 0)
            others = [h for n, h in self.holders.items() if n != holder]
            free = cap - sum(h.counted.get(resource, 0) for h in others)
            previous = me.grant.get(resource, 0)
            want = in_use + me.waiting.get(resource, 0)
            if any(h.waiting.get(resource, 0) for h in others):
                share = self._share(resource, cap, others, previous)
                if share == 1 and not previous and self.last_taker.get(resource) == holder:
                    share = 0  # taking turns: it had the last turn, another waits
                want = min(want, share)
            new = max(0, min(want, free))
            if new and not previous:
                self.last_taker[resource] = holder
            me.grant[resource] = new
            me.counted[resource] = max(previous, in_use, new)
        return dict(me.grant)

    @staticmethod
    def _share(resource: str, cap: int, others: list[_Holder], previous: int) -> int:
        """The most a holder may have while others wait.

        The limit over the holders with demand; with more of them than tokens, one token in
        turn (a holder with a grant gives it up, one without may take a free one).
        """
        active = 1 + sum(
            1 for h in others if h.waiting.get(resource, 0) or h.counted.get(resource, 0)
        )
        share = cap // active
        if share >= 1:
            return share
        return 0 if previous else 1

    def drop(self, holder: str) -> None:
        """Forget ``holder`` (it ended: every call of its own finished)."""
        self.holders.pop(holder, None)


class LimitBroker:
    """The run's broker as one Ray actor (made one by ``_ray.RayPool``; no CPU reserved).

    It holds the `Leases` of the ``limits``, the `DollarLeases` of ``max_cost`` (None: no
    dollar leases) and the shared rate controllers (`_ray_rates.RateControllers`). Its
    methods are coroutines: they all run on the actor's one event loop.
    """

    def __init__(self, caps: Mapping[str, int], max_cost: float | None = None) -> None:
        self._leases = Leases(caps)
        self._dollars = None if max_cost is None else DollarLeases(max_cost, LEASE_SECONDS)
        self._rates = RateControllers()

    async def renew(
        self,
        holder: str,
        using: Mapping[str, int],
        waiting: Mapping[str, int],
        spend: Spend | None = None,
    ) -> tuple[dict[str, int], Allowance | None]:
        """See `Leases.renew` and `DollarLeases.renew` (``spend``: the holder's dollars)."""
        grant = self._leases.renew(holder, using, waiting)
        if self._dollars is None or spend is None:
            return grant, None
        return grant, self._dollars.renew(holder, *spend)

    async def drop(self, holder: str, spend: Spend | None = None) -> None:
        """See `Leases.drop` and `DollarLeases.drop`."""
        self._leases.drop(holder)
        if self._dollars is not None and spend is not None:
            self._dollars.drop(holder, spend[0], spend[1])

    async def admit(self, key: str, ceiling: int, left: float) -> Admitted:
        """See `RateControllers.admit`."""
        return await self._rates.admit(key, ceiling, left)

    async def feedback(
        self, key: str, started: float, status: int, signals: CapacitySignals, max_wait: float
    ) -> None:
        """See `RateControllers.feedback`."""
        self._rates.feedback(key, started, status, signals, max_wait)

    async def finished(self, key: str) -> None:
        """See `RateControllers.finished`."""
        self._rates.finished(key)

    async def abandoned(self, key: str, admitted: Admitted) -> None:
        """See `RateControllers.abandoned`."""
        self._rates.abandoned(key, admitted)

    async def state(self, key: str) -> tuple[float, float | None, int]:
        """See `RateControllers.state`."""
        return self._rates.state(key)


@dataclass(frozen=True)
class LimitKeeper:
    """What an actor's worker needs to hold leases: the broker and its own holder name."""

    broker: Any
    """The `LimitBroker` actor handle; None while the run has started none (no leases)."""
    holder: str
    leases: bool = True
    """Whether the run has ``limits`` or ``max_cost`` (leases to renew; then ``broker`` is
    set from the start)."""
    promise: BrokerPromise | None = None
    """Where a model client waits for the broker when ``broker`` is None (set on the actor)."""

    def on_actor(self, promise: BrokerPromise) -> LimitKeeper:
        """This keeper in the actor that asks for the broker through ``promise``."""
        return replace(self, promise=promise)

    def budget(self, max_cost: float | None) -> LeasedBudget | None:
        """The actor's budget of the cluster's ``max_cost`` (None without one)."""
        if max_cost is None:
            return None
        from agentjudge.harness._ray_budget import LeasedBudget  # on actors only

        return LeasedBudget(max_cost)

    def controller(self, key: str, ceiling: int) -> SharedController:
        """The controller of a model client in this actor: the broker's for ``key``."""
        return SharedController(self.promise if self.broker is None else self.broker, key, ceiling)

    async def keep(
        self, evaluator: Any, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Size ``evaluator``'s limiters and budget by the broker's grants until cancelled.

        Returns at once when the run has no leases (nothing to size).
        """
        if not self.leases:
            task_status.started()
            return
        await keep_limits(self.broker, self.holder, evaluator, task_status)


def _spend(budget: LeasedBudget | None) -> Spend | None:
    if budget is None:
        return None
    return budget.spent, budget.reserved, budget.wanting, budget.refusal


async def keep_limits(
    broker: Any, holder: str, evaluator: Any, task_status: TaskStatus[None]
) -> None:
    """Renew the leases of ``holder`` every `RENEW_SECONDS` and apply the grants.

    Signals ``task_status`` once every limiter is at 0 (nothing is lent before a grant).
    """
    import ray  # only ever called inside a Ray actor

    from agentjudge.harness._ray_budget import LeasedBudget  # on actors only

    limiters = {name: evaluator.resource_limiter(name) for name in evaluator.statistics().resources}
    for limiter in limiters.values():
        limiter.total_tokens = 0  # nothing until the broker grants it
    budget = evaluator.budget if isinstance(evaluator.budget, LeasedBudget) else None
    task_status.started()
    renewed = time.monotonic()
    try:
        while True:
            stats = evaluator.statistics().resources
            using = {name: s.borrowed for name, s in stats.items()}
            waiting = {name: s.queued for name, s in stats.items()}
            asked = time.monotonic()
            get: Callable[[], Any] = partial(
                ray.get,
                broker.renew.remote(holder, using, waiting, _spend(budget)),
                timeout=LEASE_SECONDS / 2,
            )
            answer: tuple[dict[str, int], Allowance | None] | None
            try:
                answer = await anyio.to_thread.run_sync(get, abandon_on_cancel=True)
            except ray.exceptions.GetTimeoutError:
                answer = None
            if answer is not None:
                renewed = asked
                grant, allowance = answer
                for name, tokens in grant.items():
                    limiters[name].total_tokens = tokens
                if budget is not None and allowance is not None:
                    budget.lease(allowance)
            elif time.monotonic() - renewed > LEASE_SECONDS / 2:
                for limiter in limiters.values():
                    limiter.total_tokens = 0  # the lease may have expired: lend nothing
                if budget is not None:
                    budget.lapse()
            await anyio.sleep(RENEW_SECONDS)
    finally:
        broker.drop.remote(holder, _spend(budget))

"""Cluster-wide ``max_cost`` on Ray: the dollar leases (`_ray_budget`), without Ray."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.engine import BudgetExhausted
from agentjudge.harness._ray_budget import LeasedBudget
from agentjudge.harness._ray_dollars import SLICES, Allowance, DollarLeases


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_lone_holder_gets_what_it_waits_for_plus_a_slice() -> None:
    leases = DollarLeases(1.0, lease=5.0)
    assert leases.renew("a", 0.0, 0.0, 0.0).limit == pytest.approx(1.0 / SLICES)
    assert leases.renew("a", 0.2, 0.05, 0.5).limit == pytest.approx(0.25 + 0.5)
    assert leases.counted() <= 1.0


def test_a_waiting_holder_gets_the_headroom_an_idle_one_gives_back() -> None:
    """While b waits, a keeps no spare headroom; what it gave back is b's a renewal later."""
    leases = DollarLeases(1.0, lease=5.0)
    assert leases.renew("a", 0.0, 0.0, 0.9).limit == pytest.approx(0.9)
    assert leases.renew("b", 0.0, 0.0, 0.5).limit == pytest.approx(0.1)  # a counted for 0.9
    assert leases.renew("a", 0.3, 0.0, 0.0).limit == pytest.approx(0.3)  # b waits: no spare
    assert leases.renew("b", 0.0, 0.0, 0.5).limit == pytest.approx(0.1)  # a may still hold 0.9
    assert leases.renew("a", 0.3, 0.0, 0.0).limit == pytest.approx(0.3)
    assert leases.renew("b", 0.0, 0.0, 0.5).limit == pytest.approx(0.5)
    assert leases.counted() <= 1.0


def test_a_dead_holders_spare_dollars_come_back_and_its_spending_stays_counted() -> None:
    clock = Clock()
    leases = DollarLeases(1.0, lease=5.0, clock=clock)
    leases.renew("dead", 0.4, 0.1, 0.5)  # allowed 1.0, used 0.5 at its last renewal
    clock.now = 4.9
    assert leases.renew("b", 0.0, 0.0, 0.8).limit == 0.0
    clock.now = 5.1
    answer = leases.renew("b", 0.0, 0.0, 0.8)
    assert answer.limit == pytest.approx(0.5)  # what the dead one had not used
    assert answer.others_spent == pytest.approx(0.5)  # its reservations count as spent


def test_an_ended_holder_keeps_only_what_it_spent() -> None:
    leases = DollarLeases(1.0, lease=5.0)
    leases.renew("a", 0.0, 0.0, 0.9)
    leases.drop("a", 0.3, 0.0)
    assert leases.renew("b", 0.0, 0.0, 0.7).limit == pytest.approx(0.7)


def test_the_first_refusal_reaches_every_holder() -> None:
    leases = DollarLeases(1.0, lease=5.0)
    leases.renew("b", 0.0, 0.0, 0.0)
    leases.renew("a", 0.9, 0.0, 0.0, "budget exhausted: ...")
    assert leases.renew("b", 0.0, 0.0, 0.0).out == "budget exhausted: ..."


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("abc"),
            st.sampled_from(["reserve", "settle", "renew", "apply", "die"]),
            st.floats(0.01, 0.4),
        ),
        max_size=80,
    )
)
def test_holders_together_never_use_more_than_the_cap(
    steps: list[tuple[str, str, float]],
) -> None:
    """Holders reserve within the allowance they applied; answers are applied late.

    With no holder dying, what they used never passes the cap; a holder that dies (its lease
    expires) lets the others use its spare headroom, so the total passes the cap by at most
    what the dead ones reserved after their last renewal.
    """
    cap = 1.0
    clock = Clock()
    leases = DollarLeases(cap, lease=5.0, clock=clock)
    limit = dict.fromkeys("abc", 0.0)
    used = dict.fromkeys("abc", 0.0)
    reported = dict.fromkeys("abc", 0.0)
    pending: dict[str, Allowance | None] = dict.fromkeys("abc", None)
    dead: set[str] = set()
    for holder, action, amount in steps:
        if holder in dead:
            continue
        if action == "reserve" and used[holder] + amount <= limit[holder]:
            used[holder] += amount
        elif action == "settle":
            used[holder] = max(used[holder] - amount / 2, reported[holder])  # a cheaper answer
        elif action == "renew" and pending[holder] is None:
            reported[holder] = used[holder]
            pending[holder] = leases.renew(holder, used[holder], 0.0, amount)
        elif action == "apply" and pending[holder] is not None:
            limit[holder], pending[holder] = pending[holder].limit, None  # type: ignore[union-attr]
        elif action == "die":
            dead.add(holder)
            clock.now += 10.0  # its lease expires
        after_death = sum(used[h] - reported[h] for h in dead)
        assert sum(used.values()) <= cap + after_death + 1e-9


async def test_a_leased_budget_waits_for_room_and_refuses_on_the_clusters_totals() -> None:
    """A call beyond the allowance waits for a larger one; the cluster's spending refuses."""
    budget = LeasedBudget(1.0)
    gate = budget.gate("judge")
    reserved = anyio.Event()

    async def call() -> None:
        hold = await gate.reserve("openai:m", 0.3, 10)
        reserved.set()
        hold.settle(0.3, 10)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        assert budget.wanting == pytest.approx(0.3) and not reserved.is_set()
        budget.lease(Allowance(limit=0.5, others_spent=0.0, others_reserved=0.0, out=None))
    assert budget.spent == pytest.approx(0.3) and budget.wanting == 0.0
    budget.lease(Allowance(limit=1.0, others_spent=0.6, others_reserved=0.0, out=None))
    with pytest.raises(BudgetExhausted, match=r"\$0\.9000 spent of the \$1\.0000 limit"):
        await gate.reserve("openai:m", 0.2, 10)  # 0.3 here + 0.6 elsewhere + 0.2 > 1.0
    assert budget.refusal is not None and budget.exhausted


async def test_a_leased_budget_adopts_another_actors_refusal() -> None:
    budget = LeasedBudget(1.0)
    budget.lease(Allowance(limit=0.5, others_spent=0.9, others_reserved=0.0, out="gone: $1"))
    with pytest.raises(BudgetExhausted, match="gone: \\$1"):
        await budget.gate("judge").reserve("openai:m", 0.01, 1)

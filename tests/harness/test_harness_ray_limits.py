"""The lease rule of cluster-wide limits (`_ray_limits.Leases`), without Ray."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentjudge.harness._ray_limits import Leases

R = "openai:m"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_one_holder_takes_what_it_needs_up_to_the_limit() -> None:
    leases = Leases({R: 3})
    assert leases.renew("a", {R: 0}, {R: 0}) == {R: 0}
    assert leases.renew("a", {R: 0}, {R: 5}) == {R: 3}


def test_a_waiting_holder_gets_tokens_once_the_busy_one_gave_them_back() -> None:
    """A busy holder is cut to a fair share; its tokens move only after it reports less use."""
    leases = Leases({R: 4})
    assert leases.renew("a", {R: 0}, {R: 9}) == {R: 4}
    assert leases.renew("b", {R: 0}, {R: 9}) == {R: 0}  # all 4 counted to a
    assert leases.renew("a", {R: 4}, {R: 5}) == {R: 2}  # b waits: a's share is 2
    assert leases.renew("b", {R: 0}, {R: 9}) == {R: 0}  # a may still have 4 in flight
    assert leases.renew("a", {R: 2}, {R: 5}) == {R: 2}
    assert leases.renew("b", {R: 0}, {R: 9}) == {R: 2}
    assert leases.counted(R) == 4


def test_fewer_tokens_than_holders_take_turns() -> None:
    leases = Leases({R: 1})
    assert leases.renew("a", {R: 0}, {R: 3}) == {R: 1}
    assert leases.renew("b", {R: 0}, {R: 3}) == {R: 0}
    assert leases.renew("a", {R: 1}, {R: 2}) == {R: 0}  # b waits: a gives its token up
    assert leases.renew("a", {R: 0}, {R: 2}) == {R: 0}  # ... and does not take it back first
    assert leases.renew("b", {R: 0}, {R: 3}) == {R: 1}


def test_a_dead_holders_tokens_come_back_when_its_lease_expires() -> None:
    clock = Clock()
    leases = Leases({R: 2}, lease=5.0, clock=clock)
    assert leases.renew("dead", {R: 0}, {R: 2}) == {R: 2}
    clock.now = 4.9
    assert leases.renew("b", {R: 0}, {R: 2}) == {R: 0}
    clock.now = 5.1
    assert leases.renew("b", {R: 0}, {R: 2}) == {R: 2}


@given(
    st.lists(
        st.tuples(st.sampled_from("abc"), st.sampled_from(["start", "end", "renew", "apply"])),
        max_size=80,
    )
)
def test_calls_in_flight_never_exceed_the_limit(steps: list[tuple[str, str]]) -> None:
    """Holders start calls up to the grant they applied, report, apply answers later."""
    cap = 3
    leases = Leases({R: cap})
    applied = dict.fromkeys("abc", 0)
    pending: dict[str, int | None] = dict.fromkeys("abc", None)
    flying = dict.fromkeys("abc", 0)
    for holder, action in steps:
        if action == "start" and flying[holder] < applied[holder]:
            flying[holder] += 1
        elif action == "end" and flying[holder]:
            flying[holder] -= 1
        elif action == "renew" and pending[holder] is None:
            pending[holder] = leases.renew(holder, {R: flying[holder]}, {R: 2})[R]
        elif action == "apply" and pending[holder] is not None:
            applied[holder], pending[holder] = pending[holder] or 0, None
        assert sum(flying.values()) <= cap
        assert leases.counted(R) <= cap

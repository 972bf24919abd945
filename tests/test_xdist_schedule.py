"""`make test`'s scheduler (tests/xdist_schedule.py) hands out work exactly as xdist's loadgroup.

Both schedulers get the same collections and the same completions, in orders hypothesis draws,
and must send the same tests to the same workers at the same moments, shut the same workers
down and agree on what is pending. A crashed worker gets its unfinished tests re-queued by
both (xdist also re-queues the finished units, sent on with no test in them).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from xdist.scheduler import LoadGroupScheduling
from xdist_schedule import LeanLoadGroup


class Node:
    """A stand-in for xdist's WorkerController that records what the scheduler sends it."""

    def __init__(self, name: str, log: list[tuple[str, Any]]) -> None:
        self.name, self.log, self.shutting_down = name, log, False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indexes: list[int]) -> None:
        if indexes:  # an empty send is no work (xdist re-sends finished units after a crash)
            self.log.append((self.name, tuple(indexes)))

    def shutdown(self) -> None:
        if not self.shutting_down:
            self.shutting_down = True
            self.log.append((self.name, "shutdown"))


def config(workers: int, reorder: bool) -> Any:
    option = SimpleNamespace(loadscopereorder=reorder)
    return SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=option)


def collection(groups: list[int | None]) -> list[str]:
    """Test ids: one per entry, in ``xdist_group`` k (as xdist renames them) or in none."""
    return [
        f"tests/test_m.py::test_{i}" + (f"@g{group}" if group is not None else "")
        for i, group in enumerate(groups)
    ]


def queued(sched: LoadGroupScheduling) -> list[str]:
    """The tests still to run in the scheduler's queue (finished units in it hold none)."""
    return [test for unit in sched.workqueue.values() for test, done in unit.items() if not done]


def replay_all(kind: type[LoadGroupScheduling], spec: Any) -> list[Any]:
    """Everything the scheduler sent and answered, step by step."""
    groups, workers, reorder, picks, crash_at = spec
    events: list[Any] = []
    sched = kind(config(workers, reorder))
    nodes = [Node(f"gw{k}", events) for k in range(workers)]
    ids = collection(groups)
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    queues: dict[str, list[int]] = {node.name: [] for node in nodes}
    seen = 0
    for step, pick in enumerate(picks):
        for name, what in events[seen:]:
            if isinstance(what, tuple):
                queues[name].extend(what)
        seen = len(events)
        running = [n for n in nodes if queues[n.name] and n in sched.assigned_work]
        if not running:
            break
        node = running[pick % len(running)]
        if step == crash_at:
            events.append(("crash", node.name, sched.remove_node(node)))
            queues[node.name] = []
        else:
            events.append(("done", node.name, queues[node.name].pop(0)))
            sched.mark_test_complete(node, events[-1][2])
        events.append(("state", sched.has_pending, sched.tests_finished, queued(sched)))
        seen = len(events)
    return events


specs = st.tuples(
    st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=1, max_size=40),
    st.integers(1, 4),
    st.booleans(),
    st.lists(st.integers(0, 10), min_size=1, max_size=60),
    st.one_of(st.none(), st.integers(0, 30)),
)


@settings(max_examples=150, deadline=None)
@given(specs)
def test_the_lean_scheduler_sends_what_xdists_loadgroup_sends(spec: Any) -> None:
    assert replay_all(LeanLoadGroup, spec) == replay_all(LoadGroupScheduling, spec)


def test_a_finished_unit_leaves_the_workload() -> None:
    """The point of it: a worker's workload holds only units with a test still to run."""
    sched = LeanLoadGroup(config(1, False))
    node = Node("gw0", [])
    sched.add_node(node)
    sched.add_node_collection(node, collection([None, None, 1, 1, None]))
    sched.schedule()
    sched.mark_test_complete(node, 0)
    sched.mark_test_complete(node, 1)
    sched.mark_test_complete(node, 2)
    assert sorted(sched.assigned_work[node]) == ["g1", "tests/test_m.py::test_4"]
    for index in (3, 4):
        sched.mark_test_complete(node, index)
    assert sched.assigned_work[node] == {} and sched.tests_finished and not sched.has_pending

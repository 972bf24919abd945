"""The suite's own machinery: `make test`'s loadgroup scheduler (tests/xdist_scheduling.py) and
the collection hooks of tests/conftest.py, made cheaper without changing what they decide."""

from __future__ import annotations

import gc
import random
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdist.scheduler import LoadGroupScheduling
from xdist_scheduling import FinishedUnitsForgotten

NODES = 3
# A collection as `make test` sees it: a few groups (renamed ``nodeid@group`` by the workers),
# handed out first, then tests that are each their own unit of work.
COLLECTION = [
    *(f"tests/test_g.py::test_{i}@{('ray', 'sdk', 'asgi')[i % 3]}" for i in range(30)),
    *(f"tests/test_m.py::test_{i}" for i in range(150)),
    *(f"tests/test_p.py::test_x[{i}@]" for i in range(20)),  # an "@" in a parameter id
]


class _Config:
    option = SimpleNamespace(loadscopereorder=False)

    def getvalue(self, name: str) -> list[str]:
        assert name == "tx"
        return [f"{NODES}*popen"]


class _Worker:
    """What a scheduler asks of xdist's worker controller: take work, shut down."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.queue: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _run(scheduler_type: type[LoadGroupScheduling], rng: random.Random) -> list[Any]:
    """Finish tests in the order ``rng`` picks; record every decision the scheduler makes."""
    scheduler = scheduler_type(_Config())
    nodes = [_Worker(f"gw{i}") for i in range(NODES)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, COLLECTION)
    scheduler.schedule()
    trace: list[Any] = []
    while busy := [node for node in nodes if node.queue]:
        node = rng.choice(busy)
        scheduler.mark_test_complete(node, node.queue.pop(0))
        trace.append(
            (
                node.gateway.id,
                [list(n.queue) for n in nodes],
                [n.shutting_down for n in nodes],
                scheduler.tests_finished,
                scheduler.has_pending,
            )
        )
        if scheduler_type is FinishedUnitsForgotten:
            for units in scheduler.assigned_work.values():
                assert all(not all(unit.values()) for unit in units.values())
    return trace


@settings(max_examples=15)
@given(st.randoms(use_true_random=False))
def test_the_scheduler_hands_out_work_as_xdists_with_only_open_units_kept(
    rng: random.Random,
) -> None:
    """Same hand-outs, shut-downs and answers as xdist's loadgroup scheduler for any order in
    which the workers finish their tests, while its bookkeeping never holds a finished unit
    (xdist's keeps all of them and recounts them after every test)."""
    seed = rng.getrandbits(32)
    ours = _run(FinishedUnitsForgotten, random.Random(seed))
    assert ours == _run(LoadGroupScheduling, random.Random(seed))
    assert len(ours) == len(COLLECTION)


def _suite_conftest(config: pytest.Config) -> ModuleType:
    plugins = config.pluginmanager.get_plugins()
    (module,) = (
        p for p in plugins if str(getattr(p, "__file__", "")).endswith("tests/conftest.py")
    )
    return module  # type: ignore[no-any-return]


def test_closest_marks_agree_with_get_closest_marker(request: pytest.FixtureRequest) -> None:
    """The one-walk marker lookup the collection hooks use answers as get_closest_marker does
    for every collected test (names they carry and names they do not)."""
    closest_marks = _suite_conftest(request.config)._closest_marks
    for item in request.session.items:
        marks = closest_marks(item)
        for name in {*marks, "slow", "timing", "xdist_group", "not_a_marker"}:
            assert marks.get(name) is item.get_closest_marker(name), (item.nodeid, name)


def test_tests_run_in_band_order_with_the_collection_time_gc_threshold_undone(
    request: pytest.FixtureRequest,
) -> None:
    """The session's tests come in `_GROUPS_FIRST` order (as get_closest_marker reads their
    markers), and the garbage collector's threshold is the interpreter's again once
    collection is over."""
    conftest = _suite_conftest(request.config)
    groups = conftest._GROUPS_FIRST

    def band(item: pytest.Item) -> int:
        group = item.get_closest_marker("xdist_group")
        if group is not None:
            name = group.args[0] if group.args else group.kwargs.get("name")
            return groups.index(name) if name in groups else len(groups)
        return len(groups) + (1 if item.get_closest_marker("slow") else 2)

    bands = [band(item) for item in request.session.items]
    assert bands == sorted(bands)
    assert gc.get_threshold() == conftest._GC_THRESHOLD

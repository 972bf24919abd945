"""The scheduler `make test` hands out work with: xdist's ``loadgroup``, minus its quadratic cost.

With ``--dist loadgroup`` every test without an ``xdist_group`` is a work unit of its own, and
xdist's scheduler keeps each unit a worker finished in that worker's workload for the rest of
the session. After every test it counts the worker's pending tests over that whole workload
(and finds each test's index in the worker's collection by a linear search): ~1,000 units per
worker by the end of a `make test`, so ~1.5 million steps in the controller process, several
seconds of CPU on a two-core machine whose workers wait for it. This scheduler drops a unit from
the workload once all its tests are done and looks indexes up in a table; which test goes to
which worker, and when, is unchanged (`tests/test_xdist_schedule.py` drives both schedulers
through the same events and compares what they send).

Nothing else reads a finished unit: xdist counts only pending tests, and when a worker crashes
it re-queues the worker's units, where a finished one was only ever sent on with no test in it
(this scheduler re-queues the unfinished ones alone).
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadGroupScheduling


class LeanLoadGroup(LoadGroupScheduling):
    """xdist's ``loadgroup`` scheduling with finished units dropped and indexes in a table."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._indexes: dict[Any, dict[str, int]] = {}

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """Mark the test done; forget its unit once every test of the unit is done."""
        nodeid = self.registered_collections[node][item_index]
        scope = self._split_scope(nodeid)
        workload = self.assigned_work[node]
        unit = workload[scope]
        unit[nodeid] = True
        if all(unit.values()):
            del workload[scope]
        self._reschedule(node)

    def _assign_work_unit(self, node: Any) -> None:
        """Send the next unit of the queue to ``node`` (xdist's steps, indexes from a table)."""
        scope, unit = self.workqueue.popitem(last=False)
        self.assigned_work.setdefault(node, {})[scope] = unit
        indexes = self._indexes.get(node)
        if indexes is None:
            collection = self.registered_collections[node]
            # the first index of a node id, as list.index finds it
            indexes = self._indexes[node] = {}
            for i, nodeid in enumerate(collection):
                indexes.setdefault(nodeid, i)
        node.send_runtest_some([indexes[nodeid] for nodeid, done in unit.items() if not done])

"""The scheduler `make test`'s ``--dist loadgroup`` runs with (tests/conftest.py returns it).

pytest-xdist's loadgroup scheduler keeps every unit of work it ever gave a worker (each
``xdist_group``, and each other test on its own) and, after every finished test, counts that
worker's pending tests over all of them: ~1,000 units per worker by the end of the suite, so
the controller did ~1.4 million unit visits (~0.4 s of CPU, growing with the square of the
suite). This one forgets a unit once all its tests have finished, so the count visits the two
or three units still open; everything else, the order work is handed out in included, is
xdist's own.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadGroupScheduling

__all__ = ["FinishedUnitsForgotten"]


class FinishedUnitsForgotten(LoadGroupScheduling):
    """``--dist loadgroup`` whose per-worker bookkeeping holds only the unfinished units."""

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """Mark the test finished, drop its unit if that was the unit's last, hand out more.

        A dropped unit counted 0 in every pending count (all its tests done), and a crashed
        worker's finished units would only be handed out again with no test to run.
        """
        nodeid = self.registered_collections[node][item_index]
        scope = self._split_scope(nodeid)
        work = self.assigned_work[node]
        unit = work[scope]
        unit[nodeid] = True
        if all(unit.values()):
            del work[scope]
        self._reschedule(node)

"""The ``agentjudge_evaluator`` fixture's factory."""

from __future__ import annotations

import random
from typing import Any

from agentjudge.engine import Evaluator

__all__ = ["EvaluatorFactory"]


class EvaluatorFactory:
    """Builds Evaluators for one test: ``agentjudge_evaluator(judges, **options)``.

    Every call returns a new `Evaluator` (options as for `Evaluator`). A fresh evaluator per
    test keeps its limiters in the test's own event loop, under pytest-asyncio or anyio
    alike: an evaluator kept across tests would carry state from a loop that has ended.
    Unless ``rng`` is given, sampling draws come from a `random.Random` seeded with the
    test's id, so a test with sampled judges draws the same way on every run and on any
    xdist worker.

    The factory owns no connections: the judges, and any model clients they hold, belong to
    the test (close a client with ``async with client:``), as with ``run_suite(judges=...)``.
    At teardown the factory forgets its evaluators, so none is reused by a later test.

    Args:
        test_id: The test's node id (the sampling seed).
    """

    def __init__(self, test_id: str) -> None:
        self.test_id = test_id
        self.built: list[Evaluator] = []
        """The evaluators built for this test, in order."""

    def __call__(self, judges: object = None, /, **options: Any) -> Evaluator:
        """A new `Evaluator` over ``judges``.

        Raises:
            ValueError: an invalid option (as `Evaluator` raises it).
        """
        options.setdefault("rng", random.Random(self.test_id))
        evaluator = Evaluator(judges, **options)
        self.built.append(evaluator)
        return evaluator

    def close(self) -> None:
        """Forget the evaluators (the fixture's teardown)."""
        self.built.clear()

"""Shared test configuration.

Property tests are derandomized by default so that CI is reproducible; run with
``HYPOTHESIS_PROFILE=explore`` to search new random examples locally.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# Modules whose tests start Python interpreters (the CLI as a program, worker processes, the
# docs build, README commands): most of the suite's CPU time. `make quick` skips them
# (`-m "not slow"`); `make test` runs everything.
SLOW_MODULES = frozenset(
    {
        "test_agreement_summary.py",
        "test_harness_batch.py",
        "test_harness_cli.py",
        "test_harness_cost.py",
        "test_harness_examples.py",
        "test_harness_faults.py",
        "test_harness_faults_cli.py",
        "test_harness_kill.py",
        "test_harness_model_clients.py",
        "test_harness_trust_stats.py",
        "test_harness_workers.py",
        "test_human_labels.py",
        "test_judges_commands_hostile.py",
        "test_calibration_docs.py",
        "test_docs_build.py",
        "test_docs_examples.py",
        "test_exports.py",
        "test_readme.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of `SLOW_MODULES` as ``slow``."""
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)

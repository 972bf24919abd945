"""Shared test configuration.

Property tests are derandomized by default so that CI is reproducible; run with
``HYPOTHESIS_PROFILE=explore`` to search new random examples locally.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis_tables import build_once
from rewrite_share import write_imported, write_share
from serial_files import SERIAL_MARKERS, holds_serial_tests
from xdist_schedule import LeanLoadGroup

# Collecting the suite builds ~300k objects that live for the session (modules, test items) or
# die by reference counting, plus some cyclic garbage (items pytest-asyncio replaces, fixture
# requests). With the default first-generation threshold (700 allocations) the garbage collector
# ran ~400 times from here to the end of a whole-suite collection, three of them full
# collections over the growing heap: ~0.35 s of CPU in every process that collects (each xdist
# worker, the timing part). Until collection ends the first generation holds 20,000 objects:
# ~40 collections, which still free that garbage (what is left cyclic in the older generations
# for the freeze below is ~100 objects, ~200 with the default), ~0.2 s. Set before hypothesis is
# imported (a good part of the start-up); `pytest_collection` puts the threshold back.
_GC_THRESHOLD = gc.get_threshold()
gc.set_threshold(20_000, *_GC_THRESHOLD[1:])

from hypothesis import HealthCheck, settings  # noqa: E402

# `make test` runs pytest under `uv run`, and Ray (2.45+) then starts every worker of a job with
# `uv run` in a copy of the job's working directory: each Ray test run built the project and
# installed its 171 packages first (setups of 20-48 s on a fresh clone), its workers imported
# the tests' modules from that copy (tracebacks in rows then named other paths than an
# in-process run's), and the CLI drivers the tests start in temporary folders, outside the
# project, had workers that died importing ray (docs/how-to/scale-out.md says so for users).
# Ray reads this switch when it is first imported, so it is set here, before any test module
# can import ray.
os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"

# The pytest runs that tests start (the plugin's and xdist's tests) skip langsmith's unused
# plugin as this one does (pyproject.toml's addopts say why).
if "no:langsmith_plugin" not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = (
        os.environ.get("PYTEST_ADDOPTS", "") + " -p no:langsmith_plugin"
    ).strip()


def pytest_configure(config: pytest.Config) -> None:
    """Leave langsmith's asserts as they are when its plugin is blocked (pyproject.toml); cache
    what pytest rewrote as it started (tests/rewrite_share.py, `write_imported`).

    pytest rewrites the asserts of every module of a package that registers a plugin, loaded
    or not: langsmith's 224 modules, which LangChain imports, were rewritten (read, parsed,
    compiled again) in the worker running the sdk tests, ~0.6 s of CPU, since the rewritten
    form is cached only where bytecode may be written. A blocked plugin never runs: its
    package's asserts are nobody's test assertions.
    """
    if config.pluginmanager.is_blocked("langsmith_plugin"):
        marked: set[str] = getattr(config.pluginmanager.rewrite_hook, "_must_rewrite", set())
        marked.discard("langsmith")  # pytest's set of packages whose modules it rewrites
    write_imported(config)  # the plugins' modules pytest rewrote as it started (rewrite_share)


# No per-example deadline and no "input generation is slow" check: both read the wall clock,
# and on a loaded machine (CI neighbours, `make test`'s own workers) they failed tests whose
# property held (FlakyStrategyDefinition / FailedHealthCheck at load average 18).
# (Loading this only before the first module that names hypothesis saved ~0.35 s in the timing
# part but made a module that gets hypothesis through a helper a usage error: not worth it.)
settings.register_profile(
    "ci",
    derandomize=True,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# A module whose source starts Python interpreters (the CLI as a program, worker processes, the
# docs build, README commands) is marked ``slow``: such tests take most of the suite's CPU time.
# `make quick` skips them (`-m "not slow"`); `make test` runs everything. The rule reads the
# module's text, so a new module of that kind is marked without being listed anywhere.
_STARTS_INTERPRETERS = (
    "sys.executable",
    "cli_support",
    '"--workers"',
    "workers=",
    "runpytest_subprocess",
)
_slow_modules: dict[Path, bool] = {}


def _starts_interpreters(path: Path) -> bool:
    if path not in _slow_modules:
        text = path.read_text(encoding="utf-8")
        _slow_modules[path] = any(marker in text for marker in _STARTS_INTERPRETERS)
    return _slow_modules[path]


# The order `make test`'s xdist workers get the tests in. With ``--dist loadgroup`` and
# ``--no-loadscope-reorder`` (the Makefile) work is handed out in collection order: each
# ``xdist_group`` as one unit (its tests run one after the other on one worker), every other
# test on its own. So the longest units go first and the many short tests last, where they
# fill both workers evenly (handed out last, a long group would run on alone while the other
# worker idles): the groups in `_GROUPS_FIRST` order (longest first, by the per-test CPU
# measured 2026-11-26), then the modules that start interpreters (``slow``), then the rest.
# The sort is stable: within each band the tests keep their collection order.
_GROUPS_FIRST = ("ray", "docs-examples", "sdk", "browser", "asgi")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadgroup`` (`make test`) without xdist's quadratic bookkeeping
    (tests/xdist_schedule.py); every other mode as xdist makes it."""
    if config.getvalue("dist") == "loadgroup":
        return LeanLoadGroup(config, log)
    return None


def _closest_marks(item: pytest.Item) -> dict[str, pytest.Mark]:
    """Each marker name of ``item`` with its closest mark (`get_closest_marker`'s answer).

    One walk over the item's nodes instead of one per name asked: a name the item does not
    carry cost a walk up to the session each time, three times per test.
    """
    marks: dict[str, pytest.Mark] = {}
    for mark in item.iter_markers():
        marks.setdefault(mark.name, mark)
    return marks


def _band(group: pytest.Mark | None, slow: bool) -> int:
    if group is not None:
        name = group.args[0] if group.args else group.kwargs.get("name")
        if name in _GROUPS_FIRST:
            return _GROUPS_FIRST.index(name)
        return len(_GROUPS_FIRST)
    return len(_GROUPS_FIRST) + (1 if slow else 2)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of modules that start interpreters as ``slow``; check that every
    ``timing`` test is in a file `make test`'s timing part collects; put the longest
    units of work first (see `_GROUPS_FIRST`)."""
    unlisted = set()
    bands = []
    for item in items:
        marks = _closest_marks(item)
        slow = "slow" in marks
        if _starts_interpreters(item.path):
            item.add_marker(pytest.mark.slow)
            slow = True
        if any(m in marks for m in SERIAL_MARKERS) and not holds_serial_tests(item.path):
            unlisted.add(str(item.path))
        bands.append(_band(marks.get("xdist_group"), slow))
    if unlisted:
        raise pytest.UsageError(
            "these files mark tests timing in a way tests/serial_files.py does not see, so "
            f"`make test` would run them in neither part: {sorted(unlisted)}"
        )
    order = sorted(range(len(items)), key=bands.__getitem__)
    items[:] = [items[i] for i in order]


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    """Restore the garbage collector's threshold (see `_GC_THRESHOLD`) once collection is over,
    also where there is none (the xdist controller) or it failed.

    An xdist worker first writes its share of the rewritten test modules (tests/rewrite_share.py).
    """
    write_share(session.config)
    try:
        return (yield)
    finally:
        gc.set_threshold(*_GC_THRESHOLD)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build hypothesis's text tables once (tests/hypothesis_tables.py); freeze what collection
    built; refuse a loadgroup run whose groups were lost.

    Collecting the suite imports ~1,250 modules (agentjudge, hypothesis, pytest's test
    modules): their ~200k objects stay alive for the session, and every full collection of
    the garbage collector walked them again. They move to its permanent generation
    (`gc.freeze`, as the zygote does), so a worker's full collections walk only what tests
    built: in a run of tests/judges and tests/engine after the whole suite's collection,
    2.0 s of CPU in full collections fell to 0.6 s. `sdk_support.import_sdk` does the same
    for the SDKs a worker imports later.

    Under ``--dist loadgroup``, refuse to run if xdist did not group the grouped tests.

    xdist groups a test by adding ``@group`` to its node id while the worker collects; with
    pytest 9.2 that rename silently stopped taking effect (pytest-xdist issue #1386) and every
    group's tests were spread over both workers, each starting the group's servers, Ray
    instance and shared runs again. pyproject.toml keeps pytest below 9.2; this check makes
    the next such break a clear error instead of a slower suite.
    """
    build_once()
    gc.freeze()
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("xdist_group") and "@" not in item.nodeid.rpartition("]")[2]
    ]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup did not group {len(lost)} tests marked xdist_group (e.g. "
            f"{lost[0]}): this pytest-xdist does not work with this pytest (see pyproject.toml)"
        )

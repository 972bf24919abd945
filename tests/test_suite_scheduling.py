"""The suite's own machinery: the collection hooks of tests/conftest.py, made cheaper without
changing what they decide."""

from __future__ import annotations

import gc
from types import ModuleType

import pytest


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


def test_a_blocked_plugins_package_keeps_its_asserts(request: pytest.FixtureRequest) -> None:
    """langsmith's plugin is blocked (pyproject.toml's addopts), so its modules are not
    rewritten; an active plugin's package (hypothesis) still is."""
    manager = request.config.pluginmanager
    marked = getattr(manager.rewrite_hook, "_must_rewrite", None)
    if not isinstance(marked, set):
        pytest.skip("pytest's asserts are not rewritten in this run (--assert=plain)")
    assert manager.is_blocked("langsmith_plugin")
    assert "langsmith" not in marked
    assert "hypothesis" in marked

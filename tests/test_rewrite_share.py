"""tests/rewrite_share.py: each xdist worker writes its share of pytest's rewritten modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc
from rewrite_share import write_imported, write_share


def _suite(folder: Path) -> list[Path]:
    """Four test modules and a conftest, each with an assert pytest rewrites."""
    sources = [folder / f"test_m{k}.py" for k in range(4)] + [folder / "conftest.py"]
    for k, source in enumerate(sources):
        source.write_text(f"def check():\n    value = {k}\n    assert value == -1\n")
    (folder / "helper.py").write_text("X = 1\n")  # not a test module: never rewritten
    return sorted(sources)


def _as_worker(monkeypatch: pytest.MonkeyPatch, worker: str, count: int) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(count))


def test_a_worker_starts_at_its_share_and_writes_what_pytest_would_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    sources = _suite(tmp_path)
    _as_worker(monkeypatch, "gw1", 2)
    written = write_share(pytestconfig, [str(tmp_path)])
    assert written == sources[2:] + sources[:2]  # worker 1 of 2 starts half way
    for source in sources:
        code = _read_pyc(source, tmp_path / "__pycache__" / (source.name[:-3] + PYC_TAIL))
        assert code is not None  # pytest's own reader takes it as fresh
        space: dict[str, object] = {}
        exec(code, space)
        with pytest.raises(AssertionError, match=r"assert \d+ == -1"):  # rewritten: explained
            space["check"]()  # type: ignore[operator]
    assert not (tmp_path / "__pycache__" / ("helper" + PYC_TAIL)).exists()


def test_a_module_written_already_is_left_alone_until_its_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    sources = _suite(tmp_path)
    _as_worker(monkeypatch, "gw0", 3)
    assert write_share(pytestconfig, [str(tmp_path)]) == sources
    _as_worker(monkeypatch, "gw2", 3)
    assert write_share(pytestconfig, [str(tmp_path)]) == []  # another worker wrote them
    sources[1].write_text(sources[1].read_text() + "# changed\n")
    assert write_share(pytestconfig, [str(tmp_path)]) == [sources[1]]


def test_a_process_outside_xdist_writes_every_module_from_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    """A serial run (the timing part, a developer's ``pytest tests/core``) caches what it will
    import: with bytecode writing off, pytest's own import never did, and every run rewrote."""
    sources = _suite(tmp_path)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert write_share(pytestconfig, [str(tmp_path)]) == sources
    for source in sources:
        assert _read_pyc(source, tmp_path / "__pycache__" / (source.name[:-3] + PYC_TAIL))
    assert write_share(pytestconfig, [str(tmp_path)]) == []  # the next run finds them cached


def test_a_single_worker_writes_every_module_from_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    sources = _suite(tmp_path)
    _as_worker(monkeypatch, "gw0", 1)
    assert write_share(pytestconfig, [str(tmp_path)]) == sources


def test_the_xdist_controller_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    """The controller collects nothing: its workers write the modules they import."""
    _suite(tmp_path)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(pytestconfig.pluginmanager, "hasplugin", lambda name: name == "dsession")
    assert write_share(pytestconfig, [str(tmp_path)]) == []
    assert not (tmp_path / "__pycache__").exists()


def test_a_module_that_does_not_parse_is_left_to_its_import_to_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    sources = _suite(tmp_path)
    sources[0].write_text("def broken(:\n")
    _as_worker(monkeypatch, "gw0", 2)
    assert write_share(pytestconfig, [str(tmp_path)]) == sources[1:]


def test_the_modules_pytest_rewrote_as_it_started_are_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    """`write_imported` writes what the import hook loaded (a plugin's module, say) and is not
    cached yet, in pytest's own form; once written it is left alone."""
    (plugin,) = _suite(tmp_path)[:1]
    loaded = getattr(pytestconfig.pluginmanager.rewrite_hook, "_rewritten_names", None)
    if not isinstance(loaded, dict):
        pytest.skip("pytest's asserts are not rewritten in this run (--assert=plain)")
    monkeypatch.setitem(loaded, "some_plugin.module", plugin)
    assert plugin in write_imported(pytestconfig)
    code = _read_pyc(plugin, tmp_path / "__pycache__" / (plugin.name[:-3] + PYC_TAIL))
    assert code is not None
    space: dict[str, object] = {}
    exec(code, space)
    with pytest.raises(AssertionError, match=r"assert \d+ == -1"):  # rewritten: explained
        space["check"]()  # type: ignore[operator]
    assert plugin not in write_imported(pytestconfig)

"""Reading the installed ``agentjudge.providers`` entry points: per ``sys.path`` entry, cached.

A run puts its project folder first on ``sys.path``; the entry points are then read from that
folder only, not from every installed distribution again (~17 ms of each run's CPU, forked
runs included). What is found stays what ``importlib.metadata.entry_points`` finds. Real
distributions (``.dist-info`` folders), no mocks.
"""

from __future__ import annotations

import importlib.metadata
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from agentjudge.models import _registry
from agentjudge.models._registry import ENTRY_POINT_GROUP, is_provider


def _install(folder: Path, name: str, entries: str) -> None:
    """A distribution ``name`` in ``folder`` with these provider entry points."""
    info = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entries}", encoding="utf-8")


def _expected() -> dict[str, importlib.metadata.EntryPoint]:
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return {ep.name.strip().lower(): ep for ep in found}


def test_the_entry_points_found_are_importlib_metadatas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Earlier distributions of a name hide later ones; a later entry point of a name wins."""
    first, second = tmp_path / "first", tmp_path / "second"
    _install(first, "demo-gw", "gw = demo_gw:A\nAlso = demo_gw:B\n")
    _install(second, "demo-gw", "gw = demo_gw_old:A\nhidden = demo_gw_old:C\n")
    _install(second, "demo-other", "other = demo_other:X\nalso = demo_other:Y\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    found = _registry._plugins()
    assert found == _expected()
    assert found["gw"].value == "demo_gw:A" and "hidden" not in found
    assert is_provider("GW") and is_provider("other")


def test_a_new_sys_path_entry_is_the_only_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Putting a folder first on ``sys.path`` reads that folder's distributions, no others."""
    _registry._plugins()  # every installed entry read once
    _install(tmp_path, "demo-late", "late = demo_late:P\n")
    read: list[Any] = []
    real = importlib.metadata.distributions

    def counting(**kwargs: Any) -> Any:
        read.append(kwargs["path"])
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "distributions", counting)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert is_provider("late")
    assert read.count([str(tmp_path)]) == 1
    # The installed distributions' folder is not read again (folders changed in the last
    # second are, as tmp_path: their modification time could miss a change in the same tick).
    assert [sysconfig.get_paths()["purelib"]] not in read


def test_a_distribution_installed_into_a_read_entry_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder read before is read again once something was installed into it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    assert not is_provider("fresh")
    _install(tmp_path, "demo-fresh", "fresh = demo_fresh:P\n")
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))  # sys.path changes: read again
    assert is_provider("fresh")
    assert _registry._plugins() == _expected()

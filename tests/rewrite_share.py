"""Each xdist worker writes its share of pytest's rewritten test modules before it collects.

pytest rewrites the asserts of every test module it imports and caches the result in
``__pycache__`` (``*.cpython-311-pytest-<version>.pyc``). On a fresh clone the cache is empty,
and the workers of ``make test`` all start collecting at once, in the same order: each
rewrote every module itself (~6 s of CPU per worker here, 10 s cold against 4 s warm), and a
separate warm-up before the suite (two collecting processes, ~8 s of wall) was the cure.

Instead, before it collects, worker *k* of *n* walks the test modules starting at the *k*-th
*n*-th of the sorted list and writes the cached module of each one no other worker has written
yet, with pytest's own functions (`_rewrite_test`, `_write_pyc`: the same code object the
import would build and write, written atomically, so a worker reading it sees a whole one).
Started at the same moment, each worker rewrites about its own *n*-th, and their collections
then load every module from the cache. An existing cached module is used only when its
header names the source's current mtime and size (pytest's own check, `_read_pyc`'s header).

A pytest process without xdist writes them too, all of them, before its import would rewrite
them: where bytecode may not be written (``PYTHONDONTWRITEBYTECODE``, as on this machine)
pytest's import never caches them, so every serial run rewrote every module it imported (the
whole suite: 9.1-9.4 s of CPU to collect against 3.4-3.7 s with the cache), and `make test`'s
timing part, which starts beside the workers, rewrote its modules without caching them for the
workers that rewrite them again (~0.3 s of CPU on a fresh clone).

The modules pytest rewrote as a process started (those of the packages that register a
plugin: hypothesis, anyio, xdist, ...) are cached the same way, by `write_imported`: where
bytecode may not be written (``PYTHONDONTWRITEBYTECODE``) pytest rewrote them in every process
of every run, ~1.5 s of CPU each (hypothesis's 73 modules ~1.0 s, anyio's ~0.25 s).

pytest's assertion functions are private: if this pytest lacks them, nothing is written and
each worker rewrites what it imports, as pytest always does (slower, same result).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import struct
from pathlib import Path

import pytest

__all__ = ["write_imported", "write_share"]


def _fresh(source: Path, pyc: Path) -> bool:
    """Whether ``pyc`` holds the rewritten code of ``source`` as it is now (pytest's header)."""
    try:
        with pyc.open("rb") as fp:
            header = fp.read(16)
        stat = source.stat()
    except OSError:
        return False
    mtime_size = struct.pack("<LL", int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF)
    return header == importlib.util.MAGIC_NUMBER + b"\x00\x00\x00\x00" + mtime_size


def _modules(config: pytest.Config, args: list[str]) -> list[Path]:
    """The files pytest rewrites on import under ``args``: test modules and conftests.

    The same list, in the same order, in every worker.
    """
    patterns = [*config.getini("python_files"), "conftest.py"]
    found: set[Path] = set()
    for arg in args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0])
        if path.is_file():
            found.add(path)
            continue
        found.update(
            Path(folder, name)
            for folder, _, names in os.walk(path)
            for name in names
            if any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
        )
    return sorted(found)


def _write(config: pytest.Config, sources: list[Path]) -> list[Path]:
    """Write the rewritten code of each of ``sources`` whose cached form is not current, as
    pytest's import would; the sources written (none where pytest's functions are missing or
    asserts are not rewritten)."""
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
    except ImportError:  # pragma: no cover - another pytest: each worker rewrites its own
        return []
    state = config.stash.get(assertstate_key, None)
    if state is None:  # --assert=plain: nothing is rewritten
        return []
    written = []
    for source in sources:
        folder = get_cache_dir(source)
        pyc = folder / (source.name[:-3] + PYC_TAIL)
        if _fresh(source, pyc):
            continue
        try:
            folder.mkdir(exist_ok=True)
            stat, code = _rewrite_test(source, config)
        except (OSError, SyntaxError, ValueError):
            continue  # the module's own import reports it, as a collection error
        if _write_pyc(state, code, stat, pyc):
            written.append(source)
    return written


def write_share(config: pytest.Config, args: list[str] | None = None) -> list[Path]:
    """Write this process's share of the rewritten modules; the sources it rewrote.

    ``args``: the paths to look under (default: the run's own arguments, else ``testpaths``).
    Worker *k* of an xdist run (``PYTEST_XDIST_WORKER`` ``gw<k>`` of
    ``PYTEST_XDIST_WORKER_COUNT``) starts at its *k*-th *n*-th of the list; any other process
    that collects (a pytest run without xdist: `make test`'s timing part, a developer's
    ``pytest tests/core``) writes them all from the first, before its import would rewrite
    them anyway, so that the cached form is there for the next run and for the workers that
    start beside it. The xdist controller, which collects nothing, writes nothing; nor does a
    process where pytest's functions are missing.
    """
    if config.pluginmanager.hasplugin("dsession"):  # the xdist controller: it collects nothing
        return []
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    modules = _modules(config, list(config.args) if args is None else args)
    start = len(modules) * int(worker[2:]) // count if worker.startswith("gw") and count else 0
    return _write(config, modules[start:] + modules[:start])


def write_imported(config: pytest.Config) -> list[Path]:
    """Cache each module pytest's import hook has loaded in this process; the sources written.

    Called in every pytest process's `pytest_configure` (tests/conftest.py): the xdist
    controller's call, before it starts the workers, writes the plugins' modules once, so the
    workers, and every later run, load them instead of rewriting them. A module whose cached
    form is current is left alone (a header read per module where all are).
    """
    loaded = getattr(config.pluginmanager.rewrite_hook, "_rewritten_names", None)
    if not isinstance(loaded, dict):  # --assert=plain, or another pytest
        return []
    return _write(config, [Path(source) for source in loaded.values()])

"""A mkdocs hook: fewer cyclic garbage collections during the build (same site, less CPU).

The build creates hundreds of thousands of short-lived objects (griffe's tree of the package,
Markdown and HTML trees, template output) while the interpreter holds every module mkdocs,
Material, mkdocstrings and Pygments imported. With CPython's default thresholds the collector
ran ~1,000 times and walked the whole heap again and again: ~1 s of a ~10 s build. The modules
loaded before the build move to the permanent generation (`gc.freeze`) and the youngest
generation is collected every 50,000 allocations instead of every 700: ~7 collections, ~8 MB
more peak memory (~90 MB). Nothing the build writes changes: collection only frees garbage.

When the command is over (every file written and closed), everything left moves to the
permanent generation too: the interpreter's exit then frees the heap without its final
collections walking it (~0.55 s of CPU after every build, 0.05 s now; measured 2026-11-26).
"""

from __future__ import annotations

import gc

_YOUNGEST = 50_000
"""Allocations (minus deallocations) between two collections of the youngest generation."""


def on_startup(command: str, dirty: bool) -> None:
    """Before the build: freeze what is loaded, collect the youngest generation less often."""
    del command, dirty
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(_YOUNGEST, middle, oldest)


def on_shutdown() -> None:
    """After the command (the site written): freeze the rest, so the exit skips walking it."""
    gc.freeze()

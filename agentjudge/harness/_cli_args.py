"""What every module of the command line shares: argument types, exit codes, usage errors.

Argument types: whole numbers, seconds, fractions, case counts.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable

__all__ = [
    "DEFAULT_CASES",
    "EXIT_ABORTED",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "add_cases_flag",
    "as_program",
    "case_count",
    "fraction",
    "freeze_loaded",
    "int_at_least",
    "non_negative_int",
    "positive_int",
    "seconds",
    "usage_error",
]

EXIT_OK = 0
"""Every gate passed (or none was set); a read-only command did its job."""
EXIT_FAILED = 1
"""A gate, the baseline check or an enforced trust check failed."""
EXIT_USAGE = 2
"""A usage, configuration or dataset error."""
EXIT_ABORTED = 3
"""The run was aborted (the results file stays valid; ``--resume`` goes on)."""

_program = False
"""True in the ``agentjudge`` program (`as_program`), False where `main` is called in-process."""

DEFAULT_CASES = 10
"""Cases a report lists unless told otherwise (``--cases N``); defined here, with the flag, so
the command line's parser loads without the report's models (`agentjudge --help` stays light)."""


def int_at_least(minimum: int) -> Callable[[str], int]:
    """A whole number >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def fraction(text: str) -> float:
    """A finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def case_count(text: str) -> int | None:
    """``--cases``: a whole number >= 0, or ``all`` (None)."""
    if text.strip().lower() == "all":
        return None
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 or 'all', got {text!r}")
    return int(text)


def add_cases_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--cases N`` (default `DEFAULT_CASES`; ``all``: None) to a command."""
    parser.add_argument(
        "--cases",
        type=case_count,
        default=DEFAULT_CASES,
        metavar="N",
        help=f"{what} (default {DEFAULT_CASES}; 0: none, 'all': every one)",
    )


def usage_error(message: str) -> int:
    """Print ``message`` as ``agentjudge: error:`` lines on stderr; returns `EXIT_USAGE`."""
    for line in message.splitlines() or [""]:
        print(f"agentjudge: error: {line}", file=sys.stderr)
    return EXIT_USAGE


def as_program() -> None:
    """Mark this process as the ``agentjudge`` program (its entry point calls this first)."""
    global _program
    _program = True


def freeze_loaded() -> None:
    """In the program only: move every object alive now to the collector's permanent generation.

    A command imports hundreds of modules (pydantic's models and schemas, the engine, the
    report's tables) that live until the process ends, and at the end the interpreter's final
    collections walked all of them to free them: ~0.04 s of CPU after a ``report``, ~0.1 s
    after a ``run`` (measured 2026-11-26). Frozen objects are never walked nor freed by the
    collector (the exit frees what reference counting frees); so this is called only where no
    object of the user's is alive that could need its finalizer at exit: after ``run`` imported
    its own modules and before it loads the suite's, and after a command that runs no user code
    (``report``, ``compare``, ``calibrate``, ``schema``, ``view``) is done. A process that calls
    `agentjudge.harness._cli.main` itself (a test, an embedding program) is left alone.
    """
    if _program:
        gc.freeze()

"""What every module of the command line shares: argument types, exit codes, usage errors.

Argument types: whole numbers, seconds, fractions, case counts.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

__all__ = [
    "DEFAULT_CASES",
    "EXIT_ABORTED",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "add_cases_flag",
    "case_count",
    "fraction",
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

"""Validating the engine's knobs: one checker per kind of value, each naming what it checks."""

from __future__ import annotations

import math

__all__ = ["check_rate", "check_seconds", "positive_int"]


def positive_int(name: str, value: object) -> int:
    """``value`` as an integer >= 1.

    Raises:
        ValueError: anything else (naming ``name``).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def check_seconds(name: str, value: object) -> float:
    """``value`` as a finite number of seconds > 0.

    Raises:
        ValueError: anything else (naming ``name``).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


def check_rate(value: object, where: str) -> float:
    """``value`` as a sampling rate in [0, 1].

    Raises:
        ValueError: not a finite number within [0, 1] (naming ``where``).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: sampling rate must be a number in [0, 1], got {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{where}: sampling rate must be within [0, 1], got {value!r}")
    return float(value)

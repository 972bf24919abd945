"""The voting settings, the `VotingStrategy` protocol and the input checks every strategy shares."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Protocol, TypeVar, runtime_checkable

from agentjudge.core import Judgment

_E = TypeVar("_E", bound=StrEnum)


class TiePolicy(StrEnum):
    """How `Majority` resolves a tie (as many PASS votes as FAIL votes)."""

    PASS = "pass"
    """A tie passes."""
    FAIL = "fail"
    """A tie fails (the default)."""
    ABSTAIN = "abstain"
    """A tie is no finding."""


class ErrorPolicy(StrEnum):
    """What a strategy does with ERROR judgments."""

    PROPAGATE = "propagate"
    """Any ERROR makes the aggregate ERROR (the default)."""
    TREAT_AS_FAIL = "treat_as_fail"
    """An ERROR counts as a FAIL vote (effective score 0.0)."""
    TREAT_AS_ABSTAIN = "treat_as_abstain"
    """An ERROR leaves the population, counted as ``errorsTreatedAsAbstainCount``."""
    IGNORE = "ignore"
    """An ERROR leaves the population, counted as ``ignoredErrorCount``."""


@runtime_checkable
class VotingStrategy(Protocol):
    """What the engine needs from a voting strategy; implement it to write your own.

    Both methods must be pure functions of their arguments. ``decided`` must be sound: it may
    only return a judgment when no outcome of the running judges (each may still PASS, FAIL,
    ABSTAIN or ERROR, with any score) could change the aggregate's status. Returning ``None``
    while anything is running is always sound; when nothing is running it should return what
    ``aggregate`` returns.
    """

    @property
    def name(self) -> str:
        """Short name, recorded as ``strategy`` in the evidence."""
        ...

    def aggregate(
        self, judgments: Sequence[Judgment], weights: Sequence[float] | None = None
    ) -> Judgment:
        """Fold finished judgments (and optional per-judgment weights) into one judgment."""
        ...

    def decided(
        self, done: Sequence[Judgment | None], weights: Sequence[float] | None = None
    ) -> Judgment | None:
        """The final aggregate if the running judges (``None``) can no longer change it."""
        ...


# --------------------------------------------------------------------------- input checks


def check_weights(weights: Sequence[float] | None, count: int) -> tuple[float, ...]:
    """Validate per-judgment weights and return them as floats (``None`` -> all 1.0).

    Args:
        weights: One weight per judgment, or ``None``.
        count: The number of judgments the weights belong to.

    Returns:
        ``count`` finite, non-negative floats, not all zero.

    Raises:
        ValueError: ``weights`` is not a sequence, has the wrong length, holds a non-number, a
            non-finite or negative value, is all zero, or sums beyond the float range.
    """
    if weights is None:
        return (1.0,) * count
    kind = type(weights)
    if (kind is not list and kind is not tuple) and (
        isinstance(weights, str | bytes | Mapping) or not isinstance(weights, Iterable)
    ):
        raise ValueError(
            f"weights must be a sequence of numbers, one per judgment, got {type(weights).__name__}"
        )
    values = tuple(weights)
    if len(values) != count:
        raise ValueError(
            f"weights has {len(values)} entries but there are {count} judgments; "
            "give exactly one weight per judgment"
        )
    checked: list[float] = []
    for i, w in enumerate(values):
        if type(w) is float:
            value = w  # the common case: no need for the slower numbers.Real check
        elif isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise ValueError(f"weights[{i}] must be a real number, got {type(w).__name__}")
        else:
            value = float(w)
        if not math.isfinite(value):
            raise ValueError(f"weights[{i}] must be finite, got {value}")
        if value < 0:
            raise ValueError(f"weights[{i}] must be >= 0, got {value}")
        checked.append(value)
    if count and not any(checked):
        raise ValueError(
            "weights are all zero, so no judgment could influence the result; "
            "give at least one judgment a positive weight"
        )
    try:
        total = math.fsum(checked)
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("weights sum beyond the float range; scale them down")
    return tuple(checked)


def _check_judgments(judgments: Sequence[Judgment]) -> tuple[Judgment, ...]:
    items = tuple(judgments)
    if not items:
        raise ValueError("Cannot aggregate an empty list of judgments")
    for j in items:
        if not isinstance(j, Judgment):
            i = _index_of(items, j)
            raise ValueError(f"judgments[{i}] must be a Judgment, got {type(j).__name__}")
    return items


def _check_done(done: Sequence[Judgment | None]) -> tuple[Judgment | None, ...]:
    items = tuple(done)
    if not items:
        raise ValueError("Cannot aggregate an empty list of judgments")
    for j in items:
        if j is not None and not isinstance(j, Judgment):
            i = _index_of(items, j)
            raise ValueError(
                f"done[{i}] must be a Judgment or None (still running), got {type(j).__name__}"
            )
    return items


def _index_of(items: tuple[object, ...], item: object) -> int:
    """The position of ``item`` itself (by identity; ``==`` could be anything on bad input)."""
    return next(i for i, x in enumerate(items) if x is item)


def _check_threshold(threshold: object) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise ValueError(f"threshold must be a real number, got {type(threshold).__name__}")
    value = float(threshold)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"threshold must be a finite number within [0, 1], got {threshold!r}")
    return value


def _check_enum(kind: type[_E], knob: str, value: object) -> _E:
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value in kind._value2member_map_:
        return kind(value)
    allowed = ", ".join(repr(m.value) for m in kind)
    raise ValueError(f"{knob} must be a {kind.__name__} ({allowed}), got {value!r}")

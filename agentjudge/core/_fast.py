"""Typed fast constructors: one ``fast`` classmethod per hot value, checked at import.

A value the engine builds on its hot path (`JudgeResult`, `Verdict`, `TierAttempt`,
`CaseResult`, `Context`, `Judgment`) has a ``fast`` classmethod that takes every field as a
required keyword and builds the instance without validation (`agentjudge._compat.build_model`).
mypy rejects a call that misses a field, and `check_fast` (run right after each class is
defined) rejects a ``fast`` that does not take, or does not store, exactly the model's fields:
adding a field is an edit to the class, and every caller that must now pass it is a type error.
"""

from __future__ import annotations

import inspect

from pydantic import BaseModel

from agentjudge._compat import check_buildable

__all__ = ["check_fast"]


def check_fast(cls: type[BaseModel]) -> None:
    """Check that ``cls.fast`` takes and stores exactly the model's fields.

    Raises:
        TypeError: naming the class and the fields ``fast`` gets wrong (missing, extra, out of
            order, optional, or not stored under their own name).
    """
    check_buildable(cls)
    fields = list(cls.model_fields)
    params = inspect.signature(cls.fast).parameters.values()  # type: ignore[attr-defined]
    names = [p.name for p in params]
    if names != fields:
        raise TypeError(f"{cls.__name__}.fast must take the fields {fields} in order, not {names}")
    loose = [p.name for p in params if p.kind is not p.KEYWORD_ONLY or p.default is not p.empty]
    if loose:
        raise TypeError(f"{cls.__name__}.fast: {loose} must be required keyword-only arguments")
    probes = {name: object() for name in fields}
    made = cls.fast(**probes)  # type: ignore[attr-defined]
    built = made.__dict__
    wrong = [n for n in fields if n not in built or built[n] is not probes[n]]
    if wrong or len(built) != len(fields) or made.model_fields_set != set(fields):
        raise TypeError(f"{cls.__name__}.fast does not store {wrong or sorted(built)} as given")

"""Small wording helpers for messages and reports: counts with their noun, "did you mean"."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean", "plural"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``"1 error"``, ``"2 errors"``, ``"0 errors"`` (``many``: an irregular plural)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {many if many is not None else noun + 's'}"


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option most like ``word`` (difflib, ignoring case), or None when none is close."""
    choices = {option.lower(): option for option in options}
    found = difflib.get_close_matches(word.lower(), list(choices), n=1, cutoff=0.6)
    return choices[found[0]] if found else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest option, or ``""`` when none is close."""
    found = closest(word, options)
    return "" if found is None or found == word else f" (did you mean {found!r}?)"

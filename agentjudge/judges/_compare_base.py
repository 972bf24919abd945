"""Shared parts of the file comparators: failures, facts and short renderings.

A comparator raises `ParseFailure` (a side cannot be parsed) or `Unsafe` (refused input);
`agentjudge.judges._compare` turns them into a failing check or an ERROR.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

TOO_DEEP = "nested too deeply"
"""Why a file beyond Python's recursion limit is not compared (a failing check, not ERROR)."""

Facts = dict[str, str]


class ParseFailure(Exception):
    def __init__(self, side: str, message: str) -> None:
        super().__init__(message)
        self.side = side
        self.message = message


class Unsafe(Exception):
    def __init__(self, side: str, message: str) -> None:
        super().__init__(message)
        self.side = side
        self.message = message


def short(value: object, limit: int = 120) -> str:
    try:
        text = (
            value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
        )
    except RecursionError:
        return f"<{type(value).__name__} {TOO_DEEP} to show>"
    text = re.sub(r"\s+", " ", text)
    return repr(text) if len(text) <= limit else repr(text[:limit] + "...")


def decode(data: bytes, side: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseFailure(side, f"not valid UTF-8 (byte {exc.start}: {exc.reason})") from None


def diff_facts(expected: Facts, actual: Facts) -> list[str]:
    """Differences between two flat fact maps: missing, unexpected and differing keys."""
    diffs: list[str] = []
    for key, value in expected.items():
        if key not in actual:
            diffs.append(f"missing {key}")
        elif actual[key] != value:
            diffs.append(f"{key} differs: expected {short(value)}, got {short(actual[key])}")
    diffs.extend(f"unexpected {key}" for key in actual if key not in expected)
    return diffs


def add_fact(facts: Facts, key: str, value: str) -> None:
    if key not in facts:
        facts[key] = value
        return
    n = 2
    while f"{key} #{n}" in facts:
        n += 1
    facts[f"{key} #{n}"] = value


def norm_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def diff_sets(expected: set[str], actual: set[str], where: str) -> list[str]:
    diffs = [f"{where}: missing {item!r}" for item in sorted(expected - actual)]
    diffs.extend(f"{where}: unexpected {item!r}" for item in sorted(actual - expected))
    return diffs


def sided(facts: Callable[[Any], Facts], tree: Any, side: str) -> Facts:
    """``facts(tree)``, with a tree too deep to flatten reported against its side."""
    try:
        return facts(tree)
    except RecursionError:
        raise ParseFailure(side, f"source {TOO_DEEP} to compare") from None

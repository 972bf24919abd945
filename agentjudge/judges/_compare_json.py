"""JSON comparison and the structural value diff JSON and TOML share."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from agentjudge.judges._compare_base import (
    TOO_DEEP,
    ParseFailure,
    short,
)


def _key_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def diff_values(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Structural differences between two JSON/TOML values, each with its path."""
    out: list[str] = []
    _diff_values(expected, actual, path, out)
    return out


def _diff_values(expected: Any, actual: Any, path: str, out: list[str]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            sub = _key_path(path, str(key))
            if key not in actual:
                out.append(f"{sub}: missing (expected {short(expected[key])})")
            else:
                _diff_values(expected[key], actual[key], sub, out)
        out.extend(
            f"{_key_path(path, str(key))}: unexpected {short(actual[key])}"
            for key in actual
            if key not in expected
        )
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{path}: expected {len(expected)} items, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _diff_values(e, a, f"{path}[{i}]", out)
        return
    if _is_number(expected) and _is_number(actual):
        if expected != actual and not (
            isinstance(expected, float)
            and isinstance(actual, float)
            and math.isnan(expected)
            and math.isnan(actual)
        ):
            out.append(f"{path}: expected {expected!r}, got {actual!r}")
        return
    if type(expected) is not type(actual):
        out.append(
            f"{path}: expected {type(expected).__name__} {short(expected)}, "
            f"got {type(actual).__name__} {short(actual)}"
        )
        return
    if expected != actual:
        out.append(f"{path}: expected {short(expected)}, got {short(actual)}")


def compare_json(expected: bytes, actual: bytes) -> list[str]:
    """Structural JSON equality (key order and formatting ignored; numbers by value)."""
    docs = []
    for side, data in (("expected", expected), ("actual", actual)):
        try:
            docs.append(json.loads(data))
        except UnicodeDecodeError as exc:
            raise ParseFailure(side, f"not valid UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise ParseFailure(
                side, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        except RecursionError:
            raise ParseFailure(side, f"JSON {TOO_DEEP} to parse") from None
    return diff_values(docs[0], docs[1])

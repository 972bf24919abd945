"""JSON-portable, read-only metadata values."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

MAX_SAFE_INT = 2**53 - 1

JSONValue = str | bool | int | float | tuple["JSONValue", ...] | Mapping[str, "JSONValue"]


def freeze_portable(value: object, path: str, *, nulls: bool = False) -> Any:
    """Validate that ``value`` is JSON-portable and return a deep read-only copy.

    Allowed: str (well-formed), bool, int within +-(2**53-1), finite float, list/tuple, and dict
    with str keys (and None when ``nulls``: tool-call arguments may hold JSON null; metadata
    may not). Lists become tuples and dicts become read-only mappings.

    Raises:
        ValueError: naming the offending path, e.g. ``metadata.a.b[1]``.
    """
    try:
        return _freeze_plain(value, nulls)
    except (_Unusual, ValueError):
        # a subclass, another mapping type or a refused value: the checked walk decides,
        # naming the path of what is wrong
        return _freeze_checked(value, path, nulls)


class _Unusual(Exception):
    """Raised by `_freeze_plain` for a value it leaves to `_freeze_checked`."""


def _freeze_plain(value: object, nulls: bool) -> Any:
    """`freeze_portable` of plain JSON types, without building a path per value.

    Metadata is frozen on every judgment, so this is the hot path: the same result as
    `_freeze_checked` for exact str/bool/int/float/None/list/tuple/dict/read-only-mapping
    values, and `_Unusual` (or ValueError) for anything else.
    """
    kind = type(value)
    if kind is str:
        if not value.isascii():  # type: ignore[attr-defined]  # ASCII: no surrogate, no copy
            value.encode("utf-8")  # type: ignore[attr-defined]  # a lone surrogate: ValueError
        return value
    if kind is bool or (kind is int and -MAX_SAFE_INT <= value <= MAX_SAFE_INT):  # type: ignore[operator]
        return value
    if kind is float and math.isfinite(value):  # type: ignore[arg-type]
        return value
    if kind is dict or kind is MappingProxyType:
        frozen: dict[str, Any] = {}
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise _Unusual
            # an ASCII str, a bool or a safe int (most metadata values, token counts) is kept
            # as it is, without a call
            held = type(item)
            if (
                (held is str and item.isascii())
                or held is bool
                or (held is int and -MAX_SAFE_INT <= item <= MAX_SAFE_INT)
            ):
                frozen[key] = item
            else:
                frozen[key] = _freeze_plain(item, nulls)
        return MappingProxyType(frozen)
    if kind is tuple or kind is list:
        return tuple([_freeze_plain(item, nulls) for item in value])  # type: ignore[attr-defined]
    if value is None and nulls:
        return None
    raise _Unusual


def _freeze_checked(value: object, path: str, nulls: bool) -> Any:
    """`freeze_portable` walking with the path, for the values `_freeze_plain` leaves."""
    kind = type(value)
    if kind is bool or (kind is int and -MAX_SAFE_INT <= value <= MAX_SAFE_INT):  # type: ignore[operator]
        return value
    if kind is float and math.isfinite(value):  # type: ignore[arg-type]
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{path}: string is not well-formed UTF-8 (lone surrogate)") from None
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
            raise ValueError(f"{path}: integer {value} is outside +-(2**53-1) and not portable")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: float {value} is not finite")
        return value
    if value is None:
        if nulls:
            return None
        raise ValueError(f"{path}: null is not a portable metadata value")
    return _freeze_container(value, path, nulls)


def _freeze_container(value: object, path: str, nulls: bool) -> Any:
    """`freeze_portable` of a list, tuple or mapping (anything else is refused)."""
    if isinstance(value, list | tuple):
        return tuple(_freeze_checked(item, f"{path}[{i}]", nulls) for i, item in enumerate(value))
    if isinstance(value, Mapping):
        frozen: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{path}: key {key!r} is not a string")
            frozen[key] = _freeze_checked(item, f"{path}.{key}", nulls)
        return MappingProxyType(frozen)
    raise ValueError(
        f"{path}: {type(value).__name__} is not a portable value "
        "(use str, bool, int, finite float, list or dict with str keys)"
    )


def thaw(value: Any) -> Any:
    """Return a plain (mutable, JSON-serialisable) copy of a frozen value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def freeze_metadata(value: object, path: str = "metadata") -> Mapping[str, Any]:
    """Validate a metadata mapping (see `freeze_portable`).

    A plain ``dict`` (what every judge builds, frozen on every judgment) goes straight to the
    walk, without the three abstract-class checks a mapping of another type needs.
    """
    if type(value) is dict:
        return freeze_portable(value, path) if value else _EMPTY
    if not value and isinstance(value, Mapping):
        return _EMPTY
    if not isinstance(value, Mapping):
        raise ValueError(f"{path}: expected a mapping with str keys, got {type(value).__name__}")
    frozen = freeze_portable(value, path)
    assert isinstance(frozen, Mapping)
    return frozen

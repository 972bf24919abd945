"""`loads` and `dumps`: bodies decoded and encoded exactly as the standard library does.

`dumps` is ``json.dumps(value).encode()`` (one request body per model call) by the same C
encoder ``json.dumps`` builds for every call, built once here instead (~40% of its cost for a
chat request); anything it does not encode (a value ``json.dumps`` refuses, a cycle) goes to
``json.dumps`` itself, for the same error (``tests/models/test_models_json_fast.py``).

`dumps_structured` writes a structured request's body part by part, each object at its top
(the ``response_format`` holding the schema, the same on every call of a judge) kept in a
`TextMemo` by the object's exact data: ``json.dumps`` text of the same value, written once
(``tests/models/test_models_json_memo.py``).

`loads` is ``json.loads(body)`` for a response body.

One answer is decoded per model call. orjson (a dependency; should an environment lack it,
``json.loads`` decodes everything, as before) decodes the body straight from its bytes, ~3x
faster than ``json.loads``; it is used only where its result is the standard library's, and
``json.loads`` decodes everything else (pinned by a property test,
``tests/models/test_models_json_fast.py``):

- orjson refuses what ``json.loads`` reads beyond strict UTF-8 JSON (``NaN``, ``Infinity``,
  numbers that overflow to inf, lone surrogates, UTF-16/32 or BOM-prefixed bodies, nesting
  deeper than 1024): such a body falls back to ``json.loads`` (and, where it refuses it too,
  raises the same error);
- orjson reads an integer beyond 64 bits as a float, where ``json.loads`` keeps the int: a body
  with a run of 19 or more digits anywhere (also inside strings) is left to ``json.loads``.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency, but the fallback stays exact
    orjson = None  # type: ignore[assignment]

__all__ = [
    "FAST_JSON",
    "TextMemo",
    "dumps",
    "dumps_structured",
    "dumps_text",
    "loads",
    "sorted_text",
]

FAST_JSON: bool = orjson is not None
"""True when orjson is installed and decodes the bodies it reads exactly as ``json.loads``."""

_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19
"""19 digits in a row (once every digit reads ``0``): an integer that may not fit 64 bits
(orjson would read it as a float). Translating and searching is ~8x cheaper than a regex."""


def loads(content: bytes) -> Any:
    """``json.loads(content)``: the same value, or the same error.

    Raises:
        ValueError: ``content`` is not JSON (`json.JSONDecodeError`) or not UTF-8/16/32.
        RecursionError: Nested too deep for ``json.loads``.
    """
    if orjson is not None and _LONG_DIGITS not in content.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            pass  # json.loads reads it, or raises its own error
    return json.loads(content)


_make_encoder: Any = getattr(_encoder, "c_make_encoder", None)  # CPython's C accelerator


def c_encoder(*, sort_keys: bool, allow_nan: bool) -> Any:
    """The C encoder ``json.JSONEncoder(sort_keys=..., allow_nan=...).encode`` builds per call.

    Built once by the caller (ASCII, ``", "`` and ``": "``, no circular check: a cycle
    recurses until RecursionError, so a caller falls back to the standard encoder for its
    error); ``"".join(encoder(value, 0))`` is the text. None without CPython's accelerator.
    """
    if _make_encoder is None:  # pragma: no cover - CPython always has it
        return None
    default = json.JSONEncoder().default
    ascii_text = _encoder.encode_basestring_ascii
    return _make_encoder(None, default, ascii_text, None, ": ", ", ", sort_keys, False, allow_nan)


_ENCODE: Any = c_encoder(sort_keys=False, allow_nan=True)
"""What ``json.dumps`` builds per call (default options: ASCII, ``", "`` and ``": "``, NaN
allowed, keys unsorted), built once; it keeps no state between calls without its markers."""


class TextMemo:
    """Texts made from values, kept by each value's exact data (at most ``size`` of them).

    The key is ``marshal.dumps(value, 4)``: it takes only values of the exact built-in types
    (a subclass, a mapping that is not a dict or any other object is unmarshallable) and reads
    back as the same value, types (``1``, ``1.0``, ``True``; a tuple, a list), key order and
    float bits included; only bytes-like objects read back alike, and JSON holds none. So a
    value with the key of a kept one is equal to it type for type, and any text a pure
    function of the value makes of it is the one made of the kept value. A value it does not
    take is made every time; a failing ``make`` keeps nothing. ~3x cheaper than encoding a
    judge's schema as JSON again.
    """

    def __init__(self, size: int = 256) -> None:
        self._texts: dict[bytes, str] = {}
        self._size = size

    def text(self, value: Any, make: Callable[..., str], *args: Any) -> str:
        """``make(value, *args)``: made once per value (``make`` must be a pure function)."""
        try:
            key = marshal.dumps(value, 4)
        except Exception:  # not of the exact built-in types (or nested too deep): made now
            return make(value, *args)
        text = self._texts.get(key)
        if text is None:
            text = make(value, *args)
            if len(self._texts) >= self._size:
                self._texts.clear()
            self._texts[key] = text
        return text


_OBJECTS = TextMemo()
"""The JSON texts of objects at the top of request bodies (`dumps`)."""


_TEXTS = TextMemo()
"""`dumps_text`'s texts."""
_SORTED_TEXTS = TextMemo()
"""`sorted_text`'s texts."""


def dumps_text(value: Any) -> str:
    """``json.dumps(value)``, written once per value (`TextMemo`): the same text, or its error.

    For a value sent again and again whose text is only measured (a judge's schema, in every
    token estimate of a client with a token budget).
    """
    return _TEXTS.text(value, json.dumps)


def sorted_text(value: Any) -> str:
    """``json.dumps(value, sort_keys=True)``, written once per value (`TextMemo`), or its error.

    For a judge's schema in a budget's estimate of every request (`estimate_input_tokens`).
    """
    return _SORTED_TEXTS.text(value, _sorted_dumps)


def _sorted_dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def dumps(value: dict[str, Any]) -> bytes:
    """``json.dumps(value).encode()``: the same bytes, or the same error.

    Raises:
        TypeError: A value JSON cannot hold (as `json.dumps` raises it).
        ValueError: A circular reference (as `json.dumps` raises it).
    """
    if _ENCODE is not None and type(value) is dict:
        try:
            return "".join(_ENCODE(value, 0)).encode()  # `_encoded`, without a call per request
        except Exception:
            pass  # json.dumps raises its own error for it (or encodes it)
    return json.dumps(value).encode()


def dumps_structured(value: dict[str, Any]) -> bytes:
    """`dumps` of a structured request's body: the objects at its top written once each.

    The schema the request asks for sits in such an object (``response_format``,
    ``generationConfig``...), the same on every call of a judge: its text is kept in a
    `TextMemo` (``tests/models/test_models_json_memo.py``).

    Raises:
        TypeError: A value JSON cannot hold (as `json.dumps` raises it).
        ValueError: A circular reference (as `json.dumps` raises it).
    """
    if _ENCODE is not None and type(value) is dict:
        try:
            return _parts(value).encode()
        except Exception:
            pass  # json.dumps raises its own error for it (or encodes it)
    return json.dumps(value).encode()


def _parts(body: dict[Any, Any]) -> str:
    """``json.dumps(body)`` of a dict with objects at its top, each written once (`_OBJECTS`).

    With ``str`` keys ``json.dumps`` writes ``{``, the ``key: value`` pairs joined by ``", "``
    and ``}``, each pair as it writes it alone: a run of pairs without an object is written
    as a dict of them (its braces dropped), an object's text is kept.
    """
    parts = []
    run: dict[str, Any] = {}
    for key, item in body.items():
        if type(key) is not str:
            return _encoded(body)  # json.dumps writes other keys its own way
        if type(item) is dict:
            if run:
                parts.append(_encoded(run)[1:-1])
                run = {}
            parts.append(f"{_KEY(key)}: {_OBJECTS.text(item, _encoded)}")
        else:
            run[key] = item
    if run:
        parts.append(_encoded(run)[1:-1])
    return "{" + ", ".join(parts) + "}"


def _encoded(value: Any) -> str:
    """``json.dumps(value)`` by the C encoder built once (`_ENCODE`: its errors its own)."""
    return "".join(_ENCODE(value, 0))


_KEY: Any = _encoder.encode_basestring_ascii
"""How ``json.dumps`` writes a ``str`` key (ASCII, escaped): the C function."""

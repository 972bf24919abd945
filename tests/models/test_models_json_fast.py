"""Answers are decoded by orjson where it reads them as ``json.loads`` does (issue 19.11).

`agentjudge.models._json.loads` is the one place a response body is decoded; these property
tests pin it to ``json.loads`` of the same bytes: the same value (types, float bits, key order)
or the same error, for JSON texts of every shape and for arbitrary bytes.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.models import _json

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**64) - 2, max_value=2**64 + 2),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)
DIGITS = "0123456789"
# The strings of -?(0|[1-9][0-9]{0,24})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?, drawn a part at a
# time: st.from_regex of that pattern drew them a character at a time, at 5 times the CPU.
NUMBER_TEXT = st.builds(
    "{}{}{}{}".format,
    st.sampled_from(["", "-"]),
    st.integers(0, 10**25 - 1).map(str),  # "0", or a non-zero digit and up to 24 digits
    st.just("") | st.text(DIGITS, min_size=1, max_size=20).map(".".__add__),
    st.just("")
    | st.builds(
        "{}{}{}".format,
        st.sampled_from("eE"),
        st.sampled_from(["", "-", "+"]),
        st.text(DIGITS, min_size=1, max_size=3),
    ),
)


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1 is not 1.0, -0.0 is not 0.0, key order)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a.hex() == b.hex()
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _outcome(decode: Any, content: bytes) -> tuple[str, Any]:
    try:
        return "value", decode(content)
    except (ValueError, RecursionError) as exc:
        return "error", (type(exc), str(exc))


def _check(content: bytes) -> None:
    fast, plain = _outcome(_json.loads, content), _outcome(json.loads, content)
    assert fast[0] == plain[0], (content, fast, plain)
    if fast[0] == "value":
        assert _same(fast[1], plain[1]), (content, fast[1], plain[1])
    else:
        assert fast[1] == plain[1]


@settings(max_examples=300)
@given(value=VALUES, ascii_only=st.booleans(), indent=st.sampled_from([None, 0, 2]))
def test_loads_equals_json_loads_on_json_texts(value: Any, ascii_only: bool, indent: Any) -> None:
    """Any JSON text json.dumps writes (NaN, big ints and lone surrogates included)."""
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    _check(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=300)
@given(number=NUMBER_TEXT, wrap=st.sampled_from(["{}", "[{}]", '{{"n": {}}}']))
def test_loads_equals_json_loads_on_numbers(number: str, wrap: str) -> None:
    """Number literals of any length and exponent: same int or float bits, or same error."""
    _check(wrap.format(number).encode())


@settings(max_examples=300)
@given(content=st.binary(max_size=40) | st.text(max_size=20).map(lambda s: s.encode("utf-16")))
def test_loads_equals_json_loads_on_arbitrary_bytes(content: bytes) -> None:
    """Bytes that are mostly not JSON: the same error (or value) as json.loads."""
    _check(content)


@pytest.mark.parametrize(
    "content",
    [
        b"NaN",
        b'{"a": 1e400}',
        b'"\\ud800"',
        b"18446744073709551616",
        b"-9223372036854775809",
        b'{"id": "12345678901234567890", "n": 1}',
        b"\xef\xbb\xbf{}",
        b'{"a": 1, "b": 2, "a": 3}',
        b"[" * 2000 + b"]" * 2000,
        b'"\x01"',
        b"",
        b"-0.0",
    ],
)
def test_loads_equals_json_loads_where_orjson_differs(content: bytes) -> None:
    """The corners where orjson alone would read differently (or refuse) are json.loads's."""
    _check(content)


def test_an_answer_is_decoded_by_the_fast_reader_when_orjson_is_installed() -> None:
    """The fast path is in use here (orjson is installed in the test environment)."""
    pytest.importorskip("orjson")
    assert _json.FAST_JSON


def test_without_orjson_every_answer_is_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson is optional: without it the reader is json.loads itself."""
    monkeypatch.setattr(_json, "orjson", None)
    _check(b'{"a": [1, 2.5, "x"], "n": NaN}')
    assert _json.loads(b'{"big": 123456789012345678901234567890}') == {
        "big": 123456789012345678901234567890
    }

"""`plain_json`'s exact-type dispatch equals the isinstance walk it replaced (issue 19.11)."""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.models._schema import plain_json


class Kind(enum.IntEnum):
    A = 1


class Name(str):
    pass


def _walked(value: Any) -> Any:
    """The straightforward walk: leaves kept, any mapping a dict with str keys, sequences lists."""
    if isinstance(value, str | int | float | type(None)):
        return value
    if isinstance(value, dict | Mapping):
        return {str(k): _walked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walked(v) for v in value]
    return value


LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=4),
    st.just(Kind.A),
    st.builds(Name, st.text(max_size=3)),
    st.just(b"x"),
)
KEY = st.one_of(st.text(max_size=4), st.integers(), st.builds(Name, st.text(max_size=3)))
VALUE = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEY, inner, max_size=3),
        st.dictionaries(KEY, inner, max_size=3).map(MappingProxyType),
        st.dictionaries(KEY, inner, max_size=3).map(OrderedDict),
    ),
    max_leaves=12,
)


@settings(max_examples=200)
@given(VALUE)
def test_plain_json_equals_the_isinstance_walk(value: Any) -> None:
    """Same values, same types (dict/list/leaf), same key order, leaves kept as they were."""
    got, expected = plain_json(value), _walked(value)
    assert repr(got) == repr(expected)
    assert _shape(got) == _shape(expected)


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return ("dict", type(value), [(type(k), k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", type(value), [_shape(v) for v in value])
    return (type(value), id(value) if not isinstance(value, float) else repr(value))

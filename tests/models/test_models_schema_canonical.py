"""A schema's cache key is read by a C encoder built once, exactly as before (issue 19.11).

`agentjudge.models._schema._canonical` runs for every structured answer (it finds the schema's
compiled checks); it is pinned here to ``json.JSONEncoder(sort_keys=True,
allow_nan=False).encode``, the way it was read before: the same text, or the same error
(naming the schema), for schemas of every shape (non-ASCII and surrogate text, huge integers,
NaN and infinities, keys of mixed types, tuples, values JSON cannot hold, cycles).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentjudge.models import _schema

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2),
    st.sampled_from([object(), b"bytes", {1, 2}]),  # not JSON: a TypeError either way
)
KEYS = st.one_of(st.text(max_size=5), st.integers(), st.floats(allow_nan=True), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(KEYS, inner, max_size=4)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
BEFORE = json.JSONEncoder(sort_keys=True, allow_nan=False)


def _outcome(read: Any, schema: Any) -> tuple[str, Any]:
    try:
        return "text", read(schema)
    except (TypeError, ValueError) as exc:
        return "error", (type(exc), str(exc))


def _before(schema: Any) -> str:
    try:
        return BEFORE.encode(schema)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"response_schema is not a JSON schema: {exc}") from None


@settings(max_examples=100)
@example(schema={"maximum": float("nan")})
@example(schema={"minimum": float("-inf"), "type": "number"})
@example(schema={"b": 1, "a": {"d": [1.5, True], "c": "\u00e9"}})
@example(schema={1: "a", "b": 2})
@given(schema=st.dictionaries(st.text(max_size=5) | KEYS, VALUES, max_size=5))
def test_the_cache_key_is_the_sorted_standard_encoding(schema: dict[Any, Any]) -> None:
    """Same text as the standard encoder with sorted keys, or the same error."""
    got = _outcome(lambda s: _schema._canonical(s, "response_schema"), schema)
    assert got == _outcome(_before, schema)


def test_a_cyclic_schema_is_refused_as_before_and_leaves_nothing_behind() -> None:
    """A schema that contains itself: the standard encoder's circular-reference error."""
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    with pytest.raises(ValueError, match="Circular reference detected"):
        _schema._canonical(schema, "response_schema")
    del schema["properties"]["self"]
    assert _schema._canonical(schema, "response_schema") == BEFORE.encode(schema)


def test_a_generated_schema_keys_as_before() -> None:
    """A pydantic-generated schema, key order and spacing included."""
    schema = {
        "title": "Grade",
        "type": "object",
        "properties": {"passed": {"type": "boolean"}, "reasoning": {"type": "string"}},
        "required": ["passed", "reasoning"],
    }
    assert _schema._canonical(schema, "x") == BEFORE.encode(schema)

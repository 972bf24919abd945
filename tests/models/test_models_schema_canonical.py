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
from json_values import KEYS, VALUES

from agentjudge.models import _schema

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

"""Structured output is checked by jsonschema: the whole specification, not a hand-made subset."""

from __future__ import annotations

from typing import Any

import pytest

from agentjudge.core import Message
from agentjudge.models import ModelRequest, OpenAIChat
from agentjudge.models._schema import schema_errors
from agentjudge.testing import FakeModelServer, FakeResponse


def _errors(value: Any, schema: dict[str, Any]) -> str:
    return " | ".join(schema_errors(value, schema))


def test_pattern_is_enforced() -> None:
    """A string that does not match ``pattern`` is a schema error."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]+$"}}}
    assert schema_errors({"id": "ABC"}, schema) == []
    assert "$.id: 'abc' does not match" in _errors({"id": "abc"}, schema)


def test_multiple_of_is_enforced() -> None:
    """A number that is not a ``multipleOf`` is a schema error."""
    schema = {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0.5}}}
    assert schema_errors({"n": 1.5}, schema) == []
    assert "$.n: 1.3 is not a multiple of 0.5" in _errors({"n": 1.3}, schema)


def test_unique_items_is_enforced() -> None:
    """An array with repeated items breaks ``uniqueItems``."""
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    assert schema_errors({"tags": ["a", "b"]}, schema) == []
    assert "$.tags: ['a', 'a'] has non-unique elements" in _errors({"tags": ["a", "a"]}, schema)


def test_tuple_items_are_enforced() -> None:
    """Each position of a ``prefixItems`` tuple is checked against its own schema."""
    schema = {
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            }
        },
    }
    assert schema_errors({"pair": ["a", 1]}, schema) == []
    assert "$.pair[1]: 'x' is not of type 'integer'" in _errors({"pair": ["a", "x"]}, schema)
    assert "$.pair" in _errors({"pair": ["a", 1, 2]}, schema)


def test_draft7_tuple_items_follow_the_declared_dialect() -> None:
    """A schema declaring draft-07 gets draft-07 rules (``items`` as a list is a tuple)."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": [{"type": "string"}, {"type": "integer"}],
    }
    assert schema_errors(["a", 1], schema) == []
    assert "$[1]: 'x' is not of type 'integer'" in _errors(["a", "x"], schema)


def test_non_finite_numbers_and_booleans_are_never_numbers() -> None:
    """NaN, infinities and booleans fail ``number``/``integer``."""
    schema = {"type": "object", "properties": {"n": {"type": "number"}, "i": {"type": "integer"}}}
    assert schema_errors({"n": 1.5, "i": 2}, schema) == []
    assert "is not of type 'number'" in _errors({"n": float("nan")}, schema)
    assert "is not of type 'number'" in _errors({"n": float("inf")}, schema)
    assert "is not of type 'integer'" in _errors({"i": True}, schema)


def test_unresolvable_ref_is_reported() -> None:
    """A ``$ref`` to nowhere is reported as an error, not raised from deep inside the checker."""
    schema = {"type": "object", "properties": {"c": {"$ref": "#/$defs/Missing"}}}
    assert "unresolvable $ref" in _errors({"c": 1}, schema)


def test_invalid_schema_is_a_clear_caller_error() -> None:
    """A schema that is not valid JSON schema raises ValueError naming where it is wrong."""
    with pytest.raises(ValueError, match=r"not a valid .* JSON schema at properties/n/type"):
        schema_errors({}, {"type": "object", "properties": {"n": {"type": "decimal"}}})


def test_errors_are_capped() -> None:
    """At most five problems are listed, so a correction prompt stays short."""
    schema = {"type": "object", "properties": {f"k{i}": {"type": "string"} for i in range(9)}}
    assert len(schema_errors({f"k{i}": i for i in range(9)}, schema)) == 5


async def test_pattern_violation_makes_the_client_ask_again() -> None:
    """A structured answer that breaks ``pattern`` is re-asked, then the good answer is parsed."""
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "pattern": "^(PASS|FAIL)$"}},
        "required": ["label"],
        "additionalProperties": False,
    }
    async with (
        FakeModelServer(FakeResponse(json={"label": "PASS"})) as server,
        OpenAIChat("gpt-x", base_url=server.base_url, schema_retries=1) as model,
    ):
        server.enqueue(FakeResponse(json={"label": "probably pass"}))
        request = ModelRequest(
            messages=(Message(role="user", content="Grade."),), response_schema=schema
        )
        response = await model.complete(request)
    assert response.parsed == {"label": "PASS"}
    assert len(server.requests) == 2
    assert "does not match" in server.requests[1]["messages"][-1]["content"]

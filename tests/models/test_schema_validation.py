"""Structured output is checked by jsonschema: the whole specification, not a hand-made subset."""

from __future__ import annotations

from typing import Any

import pytest

from agentjudge.core import Message
from agentjudge.models import ModelRequest, OpenAIChat, _schema
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


async def test_each_schema_is_checked_and_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many structured answers to one schema check it against the metaschema once (issue 19.11).

    Each check and validator build cost ~4 ms of CPU, paid on every response before the cache.
    """
    from jsonschema import Draft202012Validator

    checked: list[object] = []
    meta, strict = _schema._dialect(Draft202012Validator)

    class Counting:
        """The dialect's metaschema validator, counting the schemas it checks."""

        def iter_errors(self, schema: Any) -> Any:
            checked.append(schema)
            return meta.iter_errors(schema)

    monkeypatch.setattr(_schema, "_dialect", lambda base: (Counting(), strict))
    # a schema no other test uses, so the per-process cache starts without it
    schema = {"type": "object", "properties": {"cache_probe_19_11": {"type": "integer"}}}
    async with (
        FakeModelServer(FakeResponse(json={"cache_probe_19_11": 1})) as server,
        OpenAIChat("gpt-x", base_url=server.base_url) as model,
    ):
        for i in range(5):
            same = {"properties": dict(schema["properties"]), "type": "object"}  # new, equal
            request = ModelRequest(
                messages=(Message(role="user", content="Grade."),),
                response_schema=same,
                sample_index=i,
            )
            assert (await model.complete(request)).parsed == {"cache_probe_19_11": 1}
    assert len(checked) == 1


def test_a_changed_schema_is_compiled_afresh() -> None:
    """The cache is keyed by the schema's content: an edited schema enforces its new rules."""
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert schema_errors({"n": "x"}, schema) != []
    schema["properties"]["n"]["type"] = "string"
    assert schema_errors({"n": "x"}, schema) == []
    assert schema_errors({"n": 1}, schema) != []


def test_an_invalid_schema_stays_an_error_on_every_call() -> None:
    """A schema refused by the metaschema is refused each time, never cached as valid."""
    schema = {"type": "object", "properties": {"n": {"type": "decimal"}}}
    for _ in range(2):
        with pytest.raises(ValueError, match="not a valid"):
            schema_errors({}, schema)

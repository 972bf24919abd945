"""The quick schema check equals jsonschema on the schemas it understands (issue 19.11).

`quick_check` answers only "valid": a structured answer it accepts skips jsonschema's walk; any
other answer (and any schema it does not fully understand) goes to jsonschema, which words the
errors. Pinned here: for generated Draft 2020-12 schemas and JSON values, the quick check is True
exactly when jsonschema (with the house rules) finds no error, and `schema_errors` returns what
jsonschema's `validator_errors` returns.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator
from typing import Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from agentjudge.models import _schema
from agentjudge.models._schema import (
    compiled_schema,
    quick_check,
    schema_errors,
    validator_errors,
)

NAMES = st.sampled_from(["a", "b", "c"])
STRINGS = st.sampled_from(["", "a", "b", "xy", "1", "b1"])
NUMBERS = st.one_of(st.integers(-3, 3), st.sampled_from([0.0, 1.0, 1.5, -2.5, 2.0]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, STRINGS)
TYPE_NAMES = st.sampled_from(["object", "array", "string", "number", "integer", "boolean", "null"])


def _merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        merged.update(part)
    return merged


LEAF_PARTS = st.one_of(
    st.one_of(TYPE_NAMES, st.lists(TYPE_NAMES, min_size=1, max_size=3, unique=True)).map(
        lambda types: {"type": types}
    ),
    st.lists(SCALARS, min_size=1, max_size=4).map(lambda values: {"enum": values}),
    SCALARS.map(lambda value: {"const": value}),
    st.fixed_dictionaries(
        {},
        optional={
            "minimum": NUMBERS,
            "maximum": NUMBERS,
            "exclusiveMinimum": NUMBERS,
            "exclusiveMaximum": NUMBERS,
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^a", "1$", "[0-9]", "^$"]),
        },
    ),
    st.fixed_dictionaries(
        {}, optional={"minItems": st.integers(0, 2), "maxItems": st.integers(0, 2)}
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "title": STRINGS,
            "description": STRINGS,
            "default": SCALARS,
            "format": st.sampled_from(["email", "date-time", "uuid"]),
            "examples": st.lists(SCALARS, max_size=2),
        },
    ),
    st.sampled_from([{"$ref": "#/$defs/D0"}, {"$ref": "#/$defs/D1"}, {"$ref": "#"}]),
)
UNSUPPORTED = st.sampled_from(
    [{"multipleOf": 2}, {"uniqueItems": True}, {"not": {"type": "null"}}, {"minProperties": 1}]
)


def _composite(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    obj = st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("object"),
            "properties": st.dictionaries(NAMES, inner, max_size=3),
            "required": st.lists(NAMES, max_size=3, unique=True),
            "additionalProperties": inner,
        },
    )
    arr = st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("array"),
            "items": inner,
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 3),
        },
    )
    combined = st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda subs: {"anyOf": subs}),
        st.lists(inner, min_size=1, max_size=2).map(lambda subs: {"allOf": subs}),
    )
    return st.lists(st.one_of(obj, arr, combined, LEAF_PARTS), min_size=1, max_size=3).map(_merged)


SUBSCHEMA = st.recursive(
    st.one_of(st.booleans(), st.lists(LEAF_PARTS, max_size=3).map(_merged)),
    _composite,
    max_leaves=6,
)
SCHEMA = st.builds(
    lambda body, d0, d1, dialect: {
        **(body if isinstance(body, dict) else {"allOf": [body]}),
        "$defs": {"D0": d0, "D1": d1},
        **({"$schema": "https://json-schema.org/draft/2020-12/schema"} if dialect else {}),
    },
    SUBSCHEMA,
    SUBSCHEMA,
    SUBSCHEMA,
    st.booleans(),
)
JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        NUMBERS,
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        STRINGS,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(NAMES, st.just("d")), inner, max_size=3),
    ),
    max_leaves=8,
)


class Kind(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


class Table(dict[str, Any]):
    pass


ODD = st.recursive(
    st.one_of(
        JSON,
        st.sampled_from([math.nan, math.inf, -math.inf, Kind.ONE, Text("a"), 10**400]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=2).map(tuple),
        st.dictionaries(NAMES, inner, max_size=3),
        st.dictionaries(NAMES, inner, max_size=2).map(Table),
    ),
    max_leaves=6,
)


def _outcome(check: Any, *args: Any) -> Any:
    """What a check returns, or RecursionError (a reference cycle that never goes inside)."""
    try:
        return check(*args)
    except RecursionError:
        return RecursionError


def _judged(schema: dict[str, Any], values: list[Any]) -> Iterator[tuple[Any, Any, Any]]:
    """Each value with jsonschema's errors (the compiled validator's, checked equal to
    `schema_errors`') and the schema's quick check (None: it has none)."""
    validator = compiled_schema(schema)  # the metaschema accepts every generated schema
    quick = quick_check(validator.schema)
    for value in values:
        errors = _outcome(validator_errors, validator, value)
        assert _outcome(schema_errors, value, schema) == errors
        yield value, errors, quick


@settings(max_examples=80, deadline=None)
@given(SCHEMA, st.lists(JSON, min_size=2, max_size=8))
def test_the_quick_check_is_jsonschema_on_json_values(
    schema: dict[str, Any], values: list[Any]
) -> None:
    for value, errors, quick in _judged(schema, values):
        if quick is not None:
            assert quick(value) is (errors == []), (schema, value, errors)


@settings(max_examples=60, deadline=None)
@given(SCHEMA, st.lists(ODD, min_size=1, max_size=4))
def test_the_quick_check_never_accepts_what_jsonschema_refuses(
    schema: dict[str, Any], values: list[Any]
) -> None:
    """Non-finite numbers, subclasses of JSON types, tuples: the quick check defers or agrees."""
    for value, errors, quick in _judged(schema, values):
        if quick is not None and quick(value):
            assert errors == [], (schema, value)


POOL: list[Any] = [
    *[None, True, False, *range(-3, 4), 0.0, -0.0, 1.0, 1.5, -2.5, 2.0, 10**400],
    *["", "a", "b", "xy", "1", "b1", [], ["a"], [1, True], {}, {"a": 1}, {"d": None}],
]
ODD_POOL: list[Any] = [math.nan, math.inf, -math.inf, Kind.ONE, Text("a"), (1,), Table(a=1)]


@settings(max_examples=60, deadline=None)
@given(st.lists(LEAF_PARTS, min_size=1, max_size=3))
def test_each_keyword_is_jsonschema_on_every_kind_of_value(parts: list[dict[str, Any]]) -> None:
    """Keyword groups alone and together, against every value of a pool (bools, ints, ...)."""
    # Each distinct schema once: a single part is its own merge, and parts can repeat.
    leaves = {_schema._canonical(leaf, "x"): leaf for leaf in [*parts, _merged(parts)]}
    for leaf in leaves.values():
        _check_pool({"properties": {"a": leaf}, "$defs": {"D0": {"type": "integer"}, "D1": True}})


def _check_pool(schema: dict[str, Any]) -> None:
    for odd, pool in ((False, POOL), (True, ODD_POOL)):
        for value, errors, quick in _judged(schema, [{"a": item} for item in pool]):
            if quick is None:
                continue
            if odd:  # the quick check may defer (False) but never accept what jsonschema refuses
                assert not quick(value) or errors == [], (schema, value)
            else:
                assert quick(value) is (errors == []), (schema, value, errors)


@given(SUBSCHEMA)
@settings(max_examples=30, deadline=None)
def test_schemas_with_keywords_it_does_not_know_are_left_to_jsonschema(body: Any) -> None:
    schema = {"allOf": [body], "$defs": {"D0": True, "D1": True}, "uniqueItems": True}
    assert quick_check(compiled_schema(schema).schema) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
        {"anyOf": [{"type": "null"}, {"$ref": "#"}]},
        {"$ref": "#/definitions/A", "definitions": {"A": {}}},
        {"$ref": "#/$defs/missing"},
        {"$id": "https://example.com/s", "type": "object"},
        {"pattern": "("},
        {"type": "object", "patternProperties": {"^a": {}}},
        {"oneOf": [{"type": "string"}, {"type": "null"}]},
    ],
)
def test_cycles_foreign_references_and_unknown_keywords_are_not_understood(
    schema: dict[str, Any],
) -> None:
    assert quick_check(schema) is None


def test_other_dialects_keep_jsonschema_alone() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    assert _schema._compiled(_schema._canonical(schema, "x"), "x").quick is None
    assert schema_errors([], schema) == ["$: [] is not of type 'object'"]


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Part(BaseModel):
    name: str = Field(min_length=1, max_length=8, pattern="^[a-z]+$")
    count: int = Field(ge=0, le=10)


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    reasoning: str = ""
    color: Color = Color.RED
    kind: Literal["a", "b"] = "a"
    parts: list[Part] = []
    note: Optional[str] = None  # noqa: UP045 - pydantic's anyOf with null
    counts: dict[str, int] = {}
    tree: Tree | None = None


REPORTS = [
    {"passed": True, "score": 0.5},
    {"passed": False, "score": 1, "reasoning": "ok", "color": "blue", "kind": "b"},
    {"passed": True, "score": 0.0, "parts": [{"name": "ab", "count": 3}], "note": None},
    {"passed": True, "score": 0.2, "counts": {"x": 1}, "tree": {"label": "r", "children": []}},
    {"passed": True, "score": 0.2, "tree": {"label": "r", "children": [{"label": "c"}]}},
    {"passed": 1, "score": 0.5},
    {"passed": True, "score": 1.5},
    {"passed": True, "score": True},
    {"passed": True},
    {"passed": True, "score": 0.5, "extra": 1},
    {"passed": True, "score": 0.5, "color": "green"},
    {"passed": True, "score": 0.5, "parts": [{"name": "AB", "count": 3}]},
    {"passed": True, "score": 0.5, "parts": [{"name": "ab", "count": 11}]},
    {"passed": True, "score": 0.5, "counts": {"x": 1.5}},
    {"passed": True, "score": 0.5, "tree": {"label": "r", "children": [{"label": 2}]}},
    {"passed": True, "score": 0.5, "note": 3},
]


@pytest.mark.parametrize("answer", REPORTS)
def test_pydantic_schemas_are_understood_and_checked_like_jsonschema(
    answer: dict[str, Any],
) -> None:
    schema = Report.model_json_schema()
    validator = compiled_schema(schema)
    quick = quick_check(validator.schema)
    assert quick is not None
    errors = validator_errors(validator, answer)
    assert quick(answer) is (errors == [])
    assert schema_errors(answer, schema) == errors


def test_a_valid_answer_is_accepted_without_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> list[str]:
        raise AssertionError("jsonschema walked a valid answer")

    schema = Report.model_json_schema()
    schema_errors(REPORTS[0], schema)  # compiled once
    monkeypatch.setattr(_schema, "validator_errors", refuse)
    assert schema_errors(REPORTS[2], schema) == []
    with pytest.raises(AssertionError, match="walked"):
        schema_errors(REPORTS[5], schema)


def test_a_huge_integer_is_a_finite_number_not_an_overflow() -> None:
    """Before, ``math.isfinite`` on a 400-digit int raised OverflowError out of the check."""
    huge = 10**400
    for kind in ("integer", "number"):
        assert schema_errors({"n": huge}, {"properties": {"n": {"type": kind}}}) == []
    assert schema_errors({"n": huge}, {"properties": {"n": {"maximum": 5}}}) == [
        f"$.n: {huge!r} is greater than the maximum of 5"
    ]


def test_a_deeply_nested_answer_falls_back_to_jsonschema() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    schema = {
        "$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L"}}},
        "$ref": "#/$defs/L",
    }
    expected = _outcome(validator_errors, compiled_schema(schema), deep)
    assert _outcome(schema_errors, deep, schema) == expected

"""A structured request's schema is encoded once per schema value, exactly as before (issue 19.11).

Every structured call sent its schema encoded in the request body and encoded it again, sorted,
to find the schema's compiled checks (`agentjudge.models._schema._canonical`), each time from a
new copy. Both texts are now kept in a `TextMemo` by the value's exact data (its ``marshal``
bytes). These properties call the memoised functions on sequences of values that share parts,
so that later values meet the kept texts of earlier ones, and pin every answer to the way it
was written before: ``json.dumps(body).encode()`` for `dumps_structured` (the same bytes or the
same error) and the sorted standard encoding for `_canonical`. Look-alikes JSON writes
differently (``1``, ``1.0``, ``True``, ``-0.0``, NaN and None, a tuple and a list, key order)
never share a text, in any order.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_values import KEYS, VALUES, Level

from agentjudge.models import _json, _schema
from agentjudge.models._json import TextMemo, dumps_structured

SORTED = json.JSONEncoder(sort_keys=True, allow_nan=False)

LOOK_ALIKES: list[Any] = [
    1,
    1.0,
    True,
    "1",
    None,
    math.nan,
    math.inf,
    0.0,
    -0.0,
    Level.LOW,
    [1],
    (1,),
    {"1": 1},
    b"1",
    bytearray(b"1"),
]
"""Values equal, hashed alike or read alike by looser keys than marshal's, inside one object."""


def _outcome(write: Any, value: Any) -> tuple[str, Any]:
    try:
        return "text", write(value)
    except (TypeError, ValueError) as exc:
        return "error", (type(exc), str(exc))


def _json_bytes(body: Any) -> bytes:
    return json.dumps(body).encode()


def _canonical_before(schema: Any) -> str:
    try:
        return SORTED.encode(schema)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"response_schema is not a JSON schema: {exc}") from None


def _canonical(schema: Any) -> str:
    return _schema._canonical(schema, "response_schema")


OBJECTS = st.dictionaries(st.text(max_size=4), VALUES, max_size=4)
BODIES = st.lists(
    st.tuples(KEYS | st.sampled_from(["model", "response_format"]), st.integers(0, 5)),
    max_size=5,
)


@settings(max_examples=60)
@given(
    pool=st.lists(OBJECTS | VALUES, min_size=1, max_size=6), layouts=st.lists(BODIES, max_size=6)
)
def test_structured_bodies_are_json_dumps_encoded_in_any_sequence(
    pool: list[Any], layouts: list[list[tuple[Any, int]]]
) -> None:
    """Bodies sharing objects: each one's bytes are json.dumps's, or its error."""
    for layout in layouts:
        body = {key: pool[index % len(pool)] for key, index in layout}
        assert _outcome(dumps_structured, body) == _outcome(_json_bytes, body)


@settings(max_examples=60)
@given(
    schemas=st.lists(st.dictionaries(st.text(max_size=3) | KEYS, VALUES, max_size=4), max_size=8)
)
def test_schema_keys_are_the_sorted_encoding_in_any_sequence(schemas: list[Any]) -> None:
    """Schemas met one after another (some again): each key is the sorted text, or its error."""
    for schema in [*schemas, *schemas]:
        assert _outcome(_canonical, schema) == _outcome(_canonical_before, schema)


@settings(max_examples=40)
@given(order=st.permutations(range(len(LOOK_ALIKES))))
def test_look_alikes_never_share_a_text(order: list[int]) -> None:
    """Whichever look-alike comes first, each later one gets its own text (or error)."""
    memo = TextMemo()  # a fresh memo: this order is the first it sees
    for index in order:
        value = {"maximum": LOOK_ALIKES[index], "type": "number"}
        body = {"model": "m", "response_format": value}
        assert _outcome(lambda v: memo.text(v, json.dumps), value) == _outcome(json.dumps, value)
        assert _outcome(dumps_structured, body) == _outcome(_json_bytes, body)
        assert _outcome(_canonical, value) == _outcome(_canonical_before, value)


def test_key_order_is_kept_in_the_body() -> None:
    """The same object with its keys in another order is written in that order."""
    first = {"model": "m", "response_format": {"a": 1, "b": [2.5, None]}}
    second = {"model": "m", "response_format": {"b": [2.5, None], "a": 1}}
    assert dumps_structured(first) == json.dumps(first).encode()
    assert dumps_structured(second) == json.dumps(second).encode()
    assert dumps_structured(first) != dumps_structured(second)


def test_a_changed_schema_is_read_anew() -> None:
    """The judge's schema changed in place between calls: the new text, never the kept one."""
    schema: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}
    body = {"model": "m", "response_format": {"json_schema": {"schema": schema}}}
    assert dumps_structured(body) == json.dumps(body).encode()
    assert _canonical(schema) == SORTED.encode(schema)
    schema["properties"]["x"]["type"] = "number"
    assert dumps_structured(body) == json.dumps(body).encode()
    assert _canonical(schema) == SORTED.encode(schema)
    assert b'"number"' in dumps_structured(body)


def test_a_refused_value_keeps_nothing_and_is_refused_again() -> None:
    """NaN in a schema: the same error each time, and the None look-alike keys as itself."""
    for _ in range(2):
        with pytest.raises(ValueError, match="not a JSON schema: Out of range float"):
            _canonical({"maximum": math.nan})
    assert _canonical({"maximum": None}) == '{"maximum": null}'


def test_a_cycle_is_refused_as_json_dumps_refuses_it() -> None:
    """An object at the top that contains itself: json.dumps's error, before and after."""
    inner: dict[str, Any] = {"type": "object"}
    inner["self"] = inner
    body = {"model": "m", "response_format": inner}
    assert _outcome(dumps_structured, body) == _outcome(_json_bytes, body)
    del inner["self"]
    assert dumps_structured(body) == json.dumps(body).encode()


def test_the_memo_is_bounded() -> None:
    """More values than its size: it never holds more, and answers stay right."""
    memo = TextMemo(size=4)
    for number in range(10):
        assert memo.text({"n": number}, json.dumps) == json.dumps({"n": number})
        assert len(memo._texts) <= 4
    assert memo.text({"n": 3}, json.dumps) == '{"n": 3}'


def test_values_marshal_does_not_take_are_written_each_time() -> None:
    """A subclass (here an int subclass) is not kept: written by ``make`` on every call."""
    memo = TextMemo()
    calls: list[Any] = []

    def make(value: Any) -> str:
        calls.append(value)
        return json.dumps(value)

    assert memo.text({"level": Level.LOW}, make) == '{"level": 1}'
    assert memo.text({"level": Level.LOW}, make) == '{"level": 1}'
    assert len(calls) == 2
    assert memo.text({"level": 1}, make) == memo.text({"level": 1}, make)
    assert len(calls) == 3  # an exact value: written once


def test_a_structured_chat_body_is_encoded_as_before() -> None:
    """The body a structured OpenAI request sends, byte for byte, twice."""
    schema = {"properties": {"passed": {"type": "boolean"}}, "title": "Grade", "type": "object"}
    rf = {"type": "json_schema", "json_schema": {"name": "Grade", "schema": schema, "strict": True}}
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "h\u00e9"}],
        "response_format": rf,
    }
    body["temperature"] = 0.0
    for _ in range(2):
        assert dumps_structured(body) == json.dumps(body).encode()
    assert _json.dumps(body) == dumps_structured(body)


@settings(max_examples=60)
@given(values=st.lists(OBJECTS | VALUES, max_size=8))
def test_kept_texts_are_json_dumps_in_any_sequence(values: list[Any]) -> None:
    """`dumps_text` and `sorted_text` of values met again: json.dumps's text, or its error."""
    for value in [*values, *values]:
        assert _outcome(_json.dumps_text, value) == _outcome(json.dumps, value)
        sort = _outcome(lambda v: json.dumps(v, sort_keys=True), value)
        assert _outcome(_json.sorted_text, value) == sort


def test_kept_texts_follow_a_schema_changed_in_place() -> None:
    """The schema edited between calls: the new text, never the kept one."""
    schema: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert _json.dumps_text(schema) == json.dumps(schema)
    schema["properties"]["x"]["type"] = "number"
    assert _json.dumps_text(schema) == json.dumps(schema)
    assert _json.sorted_text(schema) == json.dumps(schema, sort_keys=True)
    assert "number" in _json.sorted_text(schema)

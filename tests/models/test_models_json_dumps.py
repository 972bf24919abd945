"""Request bodies are encoded by a C encoder built once, exactly as ``json.dumps`` (issue 19.11).

`agentjudge.models._json.dumps` is the one place a model client encodes its request body;
these property tests pin it to ``json.dumps(value).encode()``: the same bytes, or the same
error, for bodies of every shape (non-ASCII text, lone surrogates, huge integers, NaN and
infinities, tuples, keys that are not strings, values JSON cannot hold, cycles).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from json_values import KEYS, VALUES

from agentjudge.models import _json


def _outcome(encode: Any, value: Any) -> tuple[str, Any]:
    try:
        return "bytes", encode(value)
    except (TypeError, ValueError) as exc:
        return "error", (type(exc), str(exc))


@settings(max_examples=100)
@given(body=st.dictionaries(KEYS, VALUES, max_size=5))
def test_dumps_is_json_dumps_encoded(body: dict[Any, Any]) -> None:
    """Same bytes as ``json.dumps(body).encode()``, or the same error type and text."""
    assert _outcome(_json.dumps, body) == _outcome(lambda v: json.dumps(v).encode(), body)


def test_a_cycle_is_refused_as_json_dumps_refuses_it() -> None:
    """A body that contains itself: json.dumps's ValueError, not a RecursionError."""
    body: dict[str, Any] = {"messages": []}
    body["messages"].append(body)
    expected = _outcome(lambda v: json.dumps(v).encode(), body)
    assert expected[0] == "error"
    assert _outcome(_json.dumps, body) == expected
    body["messages"].clear()  # the encoder keeps nothing of the failed call
    assert _json.dumps(body) == b'{"messages": []}'


def test_a_chat_body_is_encoded_as_before() -> None:
    """The body a chat request sends, byte for byte."""
    body = {"model": "m", "messages": [{"role": "user", "content": "h\u00e9 \U0001f600"}]}
    assert _json.dumps(body) == json.dumps(body).encode()
    assert _json.dumps(body) == (
        b'{"model": "m", "messages": [{"role": "user", "content": "h\\u00e9 \\ud83d\\ude00"}]}'
    )

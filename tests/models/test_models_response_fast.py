"""An online call's `ModelResponse` skips validation only where that changes nothing (issue 19.11).

`answer_response` builds the response of every model call; values of exactly the types
validation keeps are taken as they are. These property tests pin it to ``ModelResponse(...)``
of the same values, including the values validation converts or refuses.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentjudge.models import ModelResponse, Usage
from agentjudge.models._types import answer_response


class Text(str):
    pass


TEXT = st.one_of(st.text(max_size=5), st.builds(Text, st.text(max_size=3)), st.none(), st.just(3))
OPT_TEXT = st.one_of(st.none(), TEXT)
KEY = st.one_of(st.text(max_size=3), st.builds(Text, st.text(max_size=2)), st.integers(0, 3))
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.text(max_size=2), inner)
    ),
    max_leaves=6,
)
OBJECT = st.one_of(st.none(), st.dictionaries(KEY, JSONISH, max_size=4), st.just([1]))
USAGE = st.one_of(
    st.builds(Usage, input_tokens=st.one_of(st.none(), st.integers(0, 10))),
    st.just({"input_tokens": 3}),
)
QUEUED = st.one_of(
    st.floats(allow_nan=True), st.integers(-2, 3), st.just(0.0), st.just(True), st.just("1")
)
ATTEMPTS = st.one_of(st.integers(-1, 4), st.booleans(), st.just(2.0), st.just("2"))
WARNINGS = st.one_of(
    st.lists(TEXT, max_size=3).map(tuple), st.lists(st.text(max_size=3), max_size=2), st.just(())
)


# Values of exactly the types `answer_response` takes without validation: with every field
# drawn from the mixes above, all ten were plain together in none of the 300 examples, so the
# fast path was never compared with validation (a dropped type check or copy went unnoticed).
PLAIN_OBJECT = st.dictionaries(st.text(max_size=3), JSONISH, max_size=4)
PLAIN_TEXT = st.one_of(st.none(), st.text(max_size=5))
PLAIN = st.fixed_dictionaries(
    {
        "text": st.text(max_size=5),
        "parsed": st.one_of(st.none(), PLAIN_OBJECT),
        "model": PLAIN_TEXT,
        "finish_reason": PLAIN_TEXT,
        "usage": st.builds(Usage, input_tokens=st.one_of(st.none(), st.integers(0, 10))),
        "raw": st.one_of(st.none(), PLAIN_OBJECT),
        "queued_s": st.floats(min_value=0.0),
        "attempts": st.integers(1, 4),
        "schema_error": PLAIN_TEXT,
        "warnings": st.lists(st.text(max_size=3), max_size=3).map(tuple),
    }
)
MIXES = {
    "text": TEXT,
    "parsed": OBJECT,
    "model": OPT_TEXT,
    "finish_reason": OPT_TEXT,
    "usage": USAGE,
    "raw": OBJECT,
    "queued_s": QUEUED,
    "attempts": ATTEMPTS,
    "schema_error": OPT_TEXT,
    "warnings": WARNINGS,
}


@st.composite
def one_mixed(draw: st.DrawFn) -> dict[str, Any]:
    """Plain values but one, drawn from its mix: each of the fast path's checks in turn."""
    values = draw(PLAIN)
    name = draw(st.sampled_from(sorted(MIXES)))
    values[name] = draw(MIXES[name])
    return values


# One argument drawn as a whole rather than ten: hypothesis saves and compares the global
# random state around each argument's draw (~20 us a time), a sixth of this test's CPU.
VALUES = st.one_of(st.fixed_dictionaries(MIXES), PLAIN, one_mixed())


@settings(max_examples=300)
@given(values=VALUES)
def test_answer_response_equals_validation(values: dict[str, Any]) -> None:
    """Same response (fields, set fields, dump, repr, pickle) or the same refusal."""
    try:
        expected = ModelResponse(**values)
    except ValidationError:
        with pytest.raises(ValidationError):
            answer_response(**values)
        return
    got = answer_response(**values)
    assert got == expected
    assert got.model_fields_set == expected.model_fields_set
    assert got.model_dump() == expected.model_dump()
    assert got.model_dump_json() == expected.model_dump_json()
    assert repr(got) == repr(expected)
    assert pickle.loads(pickle.dumps(got)) == expected
    for name in ("parsed", "raw"):  # a copy, as validation makes: the caller's dict is not kept
        given_value = values[name]
        assert given_value is None or getattr(got, name) is not given_value

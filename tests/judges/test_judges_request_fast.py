"""A model judge's request is built without validating values already valid: equal to validation.

`ModelJudgeBase.build_request` assembles the `ModelRequest` of each call from values of exactly
the types validation keeps (`request_at_once`), with the system message validated once per
text. The property: for any prompt, system text, temperature, token cap and schema (valid or
not, set on the judge after construction too), the request equals the validated build that
``build_request`` made before (kept here as `_validated`), field for field, fields set and
dumps included, and what validation refuses is still refused with the same error.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from llm_judge_fakes import FakeModel
from pydantic import ValidationError

from agentjudge import LLMJudge
from agentjudge._compat import check_buildable
from agentjudge.core import Message
from agentjudge.judges._llm import request_at_once
from agentjudge.models._types import ModelRequest

texts = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(blacklist_categories=()), max_size=6),  # lone surrogates too
)
temperatures = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-2, 3),
    st.booleans(),
    st.just(-0.0),
)
caps = st.one_of(st.none(), st.integers(-2, 10**6), st.booleans(), st.just(2.0))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
schemas = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    st.dictionaries(st.integers(0, 3), st.booleans(), min_size=1, max_size=2),
    st.just({"type": "object", "properties": {"passed": {"type": "boolean"}}}),
)


def _validated(
    system: str | None, prompt: Any, temperature: Any, max_tokens: Any, schema: Any
) -> ModelRequest:
    """``build_request`` before the change: every value validated."""
    messages: list[Message] = []
    if system:
        messages.append(Message(role="system", content=system))
    messages.append(Message(role="user", content=prompt))
    return ModelRequest(
        messages=tuple(messages),
        temperature=temperature,
        max_tokens=max_tokens,
        response_schema=schema,
    )


def _outcome(build: Any) -> ModelRequest | str:
    try:
        return build()
    except ValidationError as exc:
        return f"refused: {exc.errors(include_url=False)}"


@hsettings(max_examples=100, deadline=None)
@given(
    st.one_of(st.none(), texts),
    st.one_of(texts, st.integers(0, 5)),
    temperatures,
    caps,
    schemas,
)
def test_build_request_equals_the_validated_build(
    system: str | None, prompt: Any, temperature: Any, max_tokens: Any, schema: Any
) -> None:
    judge = LLMJudge("j", FakeModel(), "{{output}}")
    judge.system, judge.temperature, judge.max_tokens = system, temperature, max_tokens
    fast = _outcome(lambda: judge.build_request(prompt, schema))
    general = _outcome(lambda: _validated(system, prompt, temperature, max_tokens, schema))
    if isinstance(general, str):
        assert fast == general
        return
    assert isinstance(fast, ModelRequest)
    assert fast == general
    assert fast.model_fields_set == general.model_fields_set
    assert fast.model_dump() == general.model_dump()
    assert fast.model_dump_json() == general.model_dump_json()
    assert repr(fast) == repr(general)
    for mine, theirs in zip(fast.messages, general.messages, strict=True):
        assert mine.model_fields_set == theirs.model_fields_set
        assert type(mine.content) is type(theirs.content)
    if schema is not None:
        assert fast.response_schema is not schema  # a copy, as validation makes
        assert type(fast.response_schema) is type(general.response_schema)
    # the same judge asked again (the system message comes from its cache) is still equal
    assert judge.build_request(prompt, schema) == general


def test_the_system_message_follows_the_attribute() -> None:
    judge = LLMJudge("j", FakeModel(), "{{output}}", system="Be strict.")
    assert judge.build_request("p").messages[0].content == "Be strict."
    judge.system = "Be lenient."
    assert judge.build_request("p").messages[0].content == "Be lenient."
    judge.system = None
    assert [m.role for m in judge.build_request("p").messages] == ["user"]


def test_only_values_validation_keeps_take_the_fast_way() -> None:
    assert request_at_once(None, "p", 0.5, 10, {"type": "object"}) is not None
    assert request_at_once(None, "p", math.nan, None, None) is None
    assert request_at_once(None, "p", 1, None, None) is None  # an int becomes a float
    assert request_at_once(None, "p", None, True, None) is None
    assert request_at_once(None, "p", None, None, {1: "x"}) is None
    check_buildable(Message)
    check_buildable(ModelRequest)


def test_a_judge_constructor_still_refuses_bad_values() -> None:
    with pytest.raises(ValueError, match="temperature"):
        LLMJudge("j", FakeModel(), "{{output}}", temperature=math.inf)

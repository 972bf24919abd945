"""A structured answer that validation would keep as it is builds no output-model instance.

`LLMJudge(output_model=...)` validated every answer into an instance of the output model and
read the verdict fields from it. For a flat model (`_OutputShape.flat`) and an answer holding
exactly its fields, each of exactly the annotated type (``bool``, ``str``, ``int``, ``float``,
or None where optional), the instance's values are the answer's own: `_OutputShape.values`
returns the answer and the judge reads it without building an instance (issue 19.11: three
objects per call fewer for the collector). The properties: wherever ``values`` answers, its
values are those of the JSON-mode reading (same type, same value), and the judgment is the one
the JSON-mode reading gives, for any answer and several output models.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_judge_fakes import FakeModel
from pydantic import BaseModel, ConfigDict

from agentjudge import LLMJudge
from agentjudge.judges import _llm
from agentjudge.models._types import ModelResponse


class Grade(BaseModel):
    passed: bool
    reasoning: str


class Scored(BaseModel):
    score: float
    reasoning: str | None = None
    count: int | None = None


class Counted(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: int
    passed: bool | None


class Geprüft(BaseModel):
    """A field name that is not ASCII: never read without an instance (as before)."""

    passed: bool
    größe: str | None = None


MODELS = (Grade, Scored, Counted, Geprüft)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2),
    st.sampled_from(["true", "1", "0.5", " 3 ", "\u00e9", "x"]),
)
KEYS = st.sampled_from(["passed", "score", "reasoning", "count", "extra", "größe"])


@st.composite
def answers(draw: st.DrawFn, model: type[BaseModel]) -> dict[str, Any]:
    """Mostly the model's own fields (often exactly typed), sometimes more or fewer keys."""
    data = {name: draw(SCALARS) for name in model.model_fields}
    for name in list(data):
        if draw(st.booleans()):  # an exactly typed value half the time
            kind = model.model_fields[name].annotation
            data[name] = draw(_exact(kind))
    data.update(draw(st.dictionaries(KEYS, SCALARS, max_size=2)))
    for name in draw(st.lists(st.sampled_from(sorted(data)), max_size=1)):
        del data[name]
    return data


def _exact(kind: Any) -> st.SearchStrategy[Any]:
    found = {
        bool: st.booleans(),
        str: st.text(max_size=6),
        int: st.integers(min_value=-(2**65), max_value=2**65),
        float: st.floats(allow_nan=True, allow_infinity=True),
    }
    for base, strategy in found.items():
        if kind is base:
            return strategy
        if kind == base | None:
            return st.one_of(st.none(), strategy)
    raise AssertionError(kind)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _check_values(model: type[BaseModel], answer: dict[str, Any]) -> None:
    found = _llm._OutputShape(model).values(answer)
    if found is None:
        return
    assert found is answer
    instance = model.model_validate_json(json.dumps(answer))
    for name in model.model_fields:
        assert _same(found[name], getattr(instance, name)), name


@settings(max_examples=200, deadline=None)
@given(data=st.data(), model=st.sampled_from(MODELS))
def test_values_are_the_json_mode_readings(model: type[BaseModel], data: st.DataObject) -> None:
    """Where ``values`` answers, each field holds what the JSON-mode instance holds."""
    _check_values(model, data.draw(answers(model)))


@pytest.mark.parametrize(
    ("model", "answer"),
    [
        (Grade, {"passed": True, "reasoning": "ok"}),
        (Grade, {"passed": True, "reasoning": "\ud800"}),
        (Scored, {"score": 1, "reasoning": None, "count": None}),
        (Scored, {"score": 0.5, "reasoning": None, "count": 2**64}),
        (Scored, {"score": float("nan"), "reasoning": "x", "count": -3}),
        (Counted, {"score": True, "passed": None}),
    ],
)
def test_values_of_edge_answers(model: type[BaseModel], answer: dict[str, Any]) -> None:
    """Lone surrogates, huge integers, NaN, an int for a float and a bool for an int."""
    _check_values(model, answer)


@settings(max_examples=120, deadline=None)
@given(data=st.data(), model=st.sampled_from(MODELS))
def test_the_judgment_is_the_one_an_instance_gives(
    model: type[BaseModel], data: st.DataObject
) -> None:
    """The judge's judgment equals the one read from a JSON-mode instance (no fast read)."""
    answer = data.draw(answers(model))
    judge = LLMJudge(
        "graded",
        FakeModel(name="fake:judge"),
        "{{output}}",
        output_model=model,
        score_range=(-10.0, 10.0),
    )
    response = ModelResponse(text="{}", parsed=answer)
    got = judge.read_answer(response)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_llm._OutputShape, "values", lambda shape, data: None)
        patch.setattr(_llm._OutputShape, "validate", _json_mode)
        expected = judge.read_answer(response)
    assert got == expected


def _json_mode(shape: Any, data: dict[str, Any]) -> BaseModel:
    return shape.model.model_validate_json(json.dumps(data))  # type: ignore[no-any-return]


def test_a_typical_answer_is_read_without_an_instance() -> None:
    """W4's answer takes the fast read (the properties above would pass if it never did)."""
    shape = _llm._OutputShape(Grade)
    answer = {"passed": True, "reasoning": "matches"}
    assert shape.values(answer) is answer
    assert shape.values({"passed": 1, "reasoning": "matches"}) is None  # converted: validated
    assert shape.values({"passed": True}) is None  # a default or an error: validated
    assert _llm._OutputShape(Scored).values({"score": 1, "reasoning": None, "count": 3}) is None
    assert _llm._OutputShape(Geprüft).values({"passed": True, "größe": "x"}) is None

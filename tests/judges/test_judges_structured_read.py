"""A structured answer is read once: equal to serialising it and reading it in JSON mode.

`LLMJudge(output_model=...)` validated its decoded answer as
``model.model_validate_json(json.dumps(data))``. For a model of flat scalar fields and an
answer of scalars both modes read alike, it now validates the values directly
(`_OutputShape.validate`). The properties: for any answer (JSON scalars, lone surrogates, huge
integers, NaN and infinities, nested values, keys that are not field names or not strings,
values JSON cannot hold) and several output models, ``validate`` gives the instance or the
errors (type, location, message) the JSON-mode reading gives, and the judge's judgment is the
one the JSON-mode reading gives.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from llm_judge_fakes import FakeModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentjudge import LLMJudge
from agentjudge.judges import _llm
from agentjudge.models._types import ModelResponse


class Grade(BaseModel):
    passed: bool
    reasoning: str = ""


class Scored(BaseModel):
    score: float
    reasoning: str | None = None
    count: int | None = None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool | None
    reasoning: str


MODELS = (Grade, Scored, Strict)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=10**300, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2),
    st.sampled_from(["true", "false", "1", "0.5", "yes", "1e400", "nan", " 3 ", "\u00e9"]),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=2),
    st.dictionaries(st.text(max_size=3), SCALARS, max_size=2),
    st.sampled_from([object(), b"bytes", (1, 2)]),
)
KEYS = st.one_of(
    st.sampled_from(["passed", "score", "reasoning", "count", "extra", "pass", "\u00e9"]),
    st.text(max_size=3),
    st.integers(0, 3),
)
ANSWERS = st.dictionaries(KEYS, VALUES, max_size=4)


def _outcome(read: Any, data: dict[Any, Any]) -> tuple[str, Any]:
    try:
        instance = read(data)
    except ValidationError as exc:
        return "invalid", [(e["type"], e["loc"], e["msg"]) for e in exc.errors()]
    except (ValueError, TypeError) as exc:
        return "error", (type(exc), str(exc))
    return "instance", (type(instance), instance.model_dump(), instance.model_fields_set)


@settings(max_examples=150, deadline=None)
@example(model=Grade, data={"passed": True, "reasoning": "\ud800"})
@example(model=Scored, data={"score": 10**400})
@example(model=Scored, data={"score": float("inf"), "count": 1.0})
@example(model=Strict, data={"passed": None, "reasoning": "x", 1: 2})
@given(model=st.sampled_from(MODELS), data=ANSWERS)
def test_validate_reads_as_the_json_mode(model: type[BaseModel], data: dict[Any, Any]) -> None:
    """The same instance, or the same errors, as ``model_validate_json(json.dumps(data))``."""
    shape = _llm._OutputShape(model)
    assert shape.flat
    expected = _outcome(lambda d: model.model_validate_json(json.dumps(d)), data)
    assert _outcome(shape.validate, data) == expected


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MODELS), data=st.dictionaries(KEYS.map(str), VALUES, max_size=4))
def test_the_judgment_is_the_json_mode_reading(
    model: type[BaseModel], data: dict[Any, Any]
) -> None:
    """The judge's judgment (verdict, score, reasons) is the one the JSON-mode reading gives."""
    judge = LLMJudge("graded", FakeModel(name="fake:judge"), "{{output}}", output_model=model)
    response = ModelResponse(text="{}", parsed=data)
    got = judge.read_answer(response)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_llm._OutputShape, "validate", _json_mode)
        expected = judge.read_answer(response)
    assert got == expected


def _json_mode(shape: Any, data: dict[str, Any]) -> BaseModel:
    return shape.model.model_validate_json(json.dumps(data))  # type: ignore[no-any-return]


class Checked(BaseModel):
    passed: bool

    @field_validator("passed", mode="before")
    @classmethod
    def _any(cls, value: Any) -> Any:
        return value


class Bounded(BaseModel):
    score: float = Field(ge=0)


class Aliased(BaseModel):
    passed: bool = Field(alias="pass")


class StrictConfig(BaseModel):
    model_config = ConfigDict(strict=True)

    passed: bool


class Listed(BaseModel):
    passed: bool
    tags: list[str] = []


class Overridden(BaseModel):
    passed: bool

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Overridden:
        return super().model_validate(obj, **kwargs)


@pytest.mark.parametrize(
    "model", [Checked, Bounded, Aliased, StrictConfig, Listed, Overridden], ids=lambda m: m.__name__
)
def test_other_models_are_read_in_json_mode(model: type[BaseModel]) -> None:
    """Validators, constraints, aliases, settings, containers, overrides: the JSON-mode way."""
    assert not _llm._OutputShape(model).flat

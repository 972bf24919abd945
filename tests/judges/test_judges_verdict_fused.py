"""An `LLMJudge` builds a PASS/FAIL judgment once: equal to the two builds it replaced.

`LLMJudge.read` used to build the verdict's judgment (`parse_verdict`, or the structured
``passed`` field; validated) and then a second one with the call metadata (`finish`). For a
found verdict it now builds one (`verdict_with_metadata`); anything else (no verdict, a score,
an unreadable answer) goes the general way. The property: for any answer text, structured
output, finish reason, usage, model and warnings, ``read`` equals ``finish(<the judgment the
answer gives>)`` (``parse_verdict``, and for structured judges the reading of main before the
change, kept in `_structured_before`) field for field, fields set and dumps included.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from llm_judge_fakes import FakeModel
from pydantic import BaseModel

from agentjudge import Judgment, LLMJudge
from agentjudge.judges._verdict import parse_verdict, verdict_with_metadata
from agentjudge.models._types import ModelResponse, Usage

words = st.sampled_from(["yes", "YES", " No ", "no", "nope", "maybe", "", "Yesterday"])
lines = st.one_of(
    st.builds(lambda w: f"Answer: {w}", words),
    st.builds(lambda w: f"Reasoning: {w}", words),
    st.text(max_size=20),
)
texts = st.one_of(
    st.lists(lines, max_size=4).map("\n".join),
    st.builds(
        lambda a, r: json.dumps({"answer": a, "reasoning": r}),
        words,
        st.one_of(st.none(), words),
    ),
)
parsed = st.one_of(
    st.none(),
    st.fixed_dictionaries({"answer": st.one_of(words, st.integers())}),
    st.fixed_dictionaries({"answer": words, "reasoning": st.one_of(words, st.integers())}),
    st.fixed_dictionaries({"other": words}),
)
counts = st.one_of(st.none(), st.integers(0, 10**6))
# Built once rather than at every draw (hypothesis does not cache a `sampled_from` of a list).
_MODELS = st.one_of(st.none(), st.just("fake-1"), st.just("gpt-4o-mini"))
_FINISH_REASONS = st.sampled_from([None, "stop", "length"])
_WARNINGS = st.lists(words, max_size=2)


@st.composite
def responses(draw: st.DrawFn) -> ModelResponse:
    fields: dict[str, Any] = {
        "text": draw(texts),
        "parsed": draw(parsed),
        "model": draw(_MODELS),
        "finish_reason": draw(_FINISH_REASONS),
        "usage": Usage(input_tokens=draw(counts), output_tokens=draw(counts)),
        "cached": draw(st.booleans()),
        "warnings": tuple(draw(_WARNINGS)),
        "batch": draw(st.booleans()),
    }
    return ModelResponse(**fields)


JUDGE = LLMJudge("plain", FakeModel(name="openai:gpt-4o-mini"), "Is {{output}} right?")


@hsettings(max_examples=80, deadline=None)
@given(responses())
def test_read_equals_parse_verdict_then_finish(response: ModelResponse) -> None:
    fused = JUDGE.read(response)
    general = JUDGE.finish(parse_verdict(response.text, response.parsed), response)
    assert fused == general
    assert fused.model_fields_set == general.model_fields_set
    assert fused.model_dump() == general.model_dump()
    assert fused.model_dump_json() == general.model_dump_json()
    assert type(fused.metadata) is type(general.metadata)


class Grade(BaseModel):
    passed: bool
    reasoning: str = ""


STRUCTURED = LLMJudge("graded", FakeModel(name="fake:judge"), "{{output}}", output_model=Grade)
grades = st.fixed_dictionaries(
    {"passed": st.one_of(st.booleans(), st.sampled_from(["true", 1, None]))},
    optional={"reasoning": st.one_of(words, st.integers())},
)


def _structured_before(judge: LLMJudge, response: ModelResponse) -> Judgment:
    """What ``read_answer`` gave before (a validated PASS/FAIL for a bool ``passed``)."""
    found = judge._read(response)
    if isinstance(found, Judgment):
        return found
    status, reasoning, _ = found
    return Judgment.passed(reasoning) if status == "pass" else Judgment.failed(reasoning)


@hsettings(max_examples=80, deadline=None)
@given(responses(), st.one_of(st.none(), grades), st.booleans())
def test_structured_read_equals_the_two_builds(
    response: ModelResponse, grade: dict[str, Any] | None, as_text: bool
) -> None:
    if grade is not None:
        fields = response.model_dump()
        fields.update(text=json.dumps(grade), parsed=None if as_text else grade)
        response = ModelResponse(**fields)
    fused = STRUCTURED.read(response)
    general = STRUCTURED.finish(_structured_before(STRUCTURED, response), response)
    assert fused == general
    assert fused.model_fields_set == general.model_fields_set
    assert fused.model_dump_json() == general.model_dump_json()
    assert STRUCTURED.read_answer(response) == _structured_before(STRUCTURED, response)


def test_metadata_that_cannot_be_frozen_fails_as_before() -> None:
    from agentjudge.core import Status

    try:
        verdict_with_metadata((Status.PASS, "ok", "yes"), {"bad": object()})
    except ValueError as exc:
        assert "bad" in str(exc)
    else:  # pragma: no cover - the assertion explains the failure
        raise AssertionError("a non-portable metadata value was accepted")

"""A plain `LLMJudge` builds its judgment once: equal to the two builds it replaced.

`LLMJudge.read` used to build the verdict's judgment (`parse_verdict`, validated) and then a
second one with the call metadata (`finish`). For a found verdict it now builds one
(`verdict_with_metadata`); anything else (no verdict, a cut-off answer) goes the general way.
The property: for any answer text, structured output, finish reason, usage, model and warnings,
``read`` equals ``finish(parse_verdict(...))`` field for field, fields set and dumps included.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from llm_judge_fakes import FakeModel

from agentjudge import LLMJudge
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


@st.composite
def responses(draw: st.DrawFn) -> ModelResponse:
    fields: dict[str, Any] = {
        "text": draw(texts),
        "parsed": draw(parsed),
        "model": draw(st.one_of(st.none(), st.just("fake-1"), st.just("gpt-4o-mini"))),
        "finish_reason": draw(st.sampled_from([None, "stop", "length"])),
        "usage": Usage(input_tokens=draw(counts), output_tokens=draw(counts)),
        "cached": draw(st.booleans()),
        "warnings": tuple(draw(st.lists(words, max_size=2))),
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


def test_metadata_that_cannot_be_frozen_fails_as_before() -> None:
    from agentjudge.core import Status

    try:
        verdict_with_metadata((Status.PASS, "ok", "yes"), {"bad": object()})
    except ValueError as exc:
        assert "bad" in str(exc)
    else:  # pragma: no cover - the assertion explains the failure
        raise AssertionError("a non-portable metadata value was accepted")

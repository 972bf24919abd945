from __future__ import annotations

import pytest
from llm_judge_fakes import FakeModel
from pydantic import BaseModel, Field

from agentjudge.core import Context, Status
from agentjudge.judges._classifier import LabelClassifier
from agentjudge.judges._llm import LLMJudge
from agentjudge.judges._template import MissingPolicy, PromptTemplate
from agentjudge.judging import JudgeKind, judge_name
from agentjudge.models._types import ModelResponse


class Grade(BaseModel):
    score: float
    reasoning: str = ""


class Verdict(BaseModel):
    passed: bool
    reasoning: str


class PassAlias(BaseModel):
    pass_: bool = Field(alias="pass")


async def test_one_call_with_rendered_prompt_and_attributes() -> None:
    """One model call whose user message is the rendered template; judge attributes set."""
    model = FakeModel("Answer: YES\nReasoning: fine")
    j = LLMJudge("polite", model, "Is this polite? {{output}}", description="politeness")
    result = await j(Context(output="thanks!"))
    assert model.calls == 1
    request = model.requests[0]
    assert [m.role for m in request.messages] == ["user"]
    assert request.messages[0].content == "Is this polite? thanks!"
    assert request.response_schema is None
    assert result.status is Status.PASS
    assert result.reasoning == "fine"
    assert j.kind is JudgeKind.LLM
    assert j.resource == "fake:judge"
    assert j.metric_key is None
    assert j.description == "politeness"
    assert judge_name(j) == "polite"


async def test_system_temperature_and_max_tokens_are_sent() -> None:
    """system, temperature and max_tokens go into the request."""
    model = FakeModel("Answer: NO")
    j = LLMJudge("x", model, "{{input}}", system="You grade.", temperature=0.0, max_tokens=50)
    assert (await j(Context(input="q"))).status is Status.FAIL
    request = model.requests[0]
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "You grade."),
        ("user", "q"),
    ]
    assert request.temperature == 0.0
    assert request.max_tokens == 50


async def test_metadata_carries_model_usage_cached() -> None:
    """Judgment metadata has model, client, usage, cached and raw_output."""
    model = FakeModel("Answer: YES")
    result = await LLMJudge("x", model, "{{input}}")(Context(input="q"))
    assert result.metadata["model"] == "fake-1"
    assert result.metadata["client"] == "fake:judge"
    assert result.metadata["usage"] == {"input_tokens": 12, "output_tokens": 5}
    assert result.metadata["cached"] is False
    assert result.metadata["raw_output"] == "Answer: YES"


async def test_default_parser_is_exact() -> None:
    """Without classifier or output_model, only an 'Answer: YES|NO' line counts."""
    model = FakeModel("Answer: Nope, yes I mean", "The answer is yes.")
    j = LLMJudge("x", model, "{{input}}")
    first = await j(Context(input="q"))
    second = await j(Context(input="q"))
    assert first.status is Status.ABSTAIN
    assert first.reasoning.startswith("Could not parse")
    assert second.status is Status.ABSTAIN


async def test_template_error_is_an_error_judgment_without_model_call() -> None:
    """A STRICT template missing a metadata key gives ERROR naming the variable; no call."""
    model = FakeModel()
    j = LLMJudge("x", model, "Rubric: {{metadata.rubric}}")
    result = await j(Context())
    assert result.status is Status.ERROR
    assert "metadata.rubric" in result.reasoning
    assert model.calls == 0


async def test_template_object_with_policy() -> None:
    """A PromptTemplate with EMPTY policy renders missing keys as ''."""
    model = FakeModel("Answer: YES")
    template = PromptTemplate("[{{metadata.k}}]", missing=MissingPolicy.EMPTY)
    await LLMJudge("x", model, template)(Context())
    assert model.prompt == "[]"


async def test_model_exceptions_propagate() -> None:
    """Model client exceptions propagate (the engine boundary turns them into ERROR)."""
    model = FakeModel(ConnectionError("boom"))
    with pytest.raises(ConnectionError, match="boom"):
        await LLMJudge("x", model, "{{input}}")(Context(input="q"))


async def test_classifier_mode() -> None:
    """With a classifier, the whole answer is matched against its labels."""
    model = FakeModel("Relevant", "relevant, mostly")
    j = LLMJudge(
        "rel", model, "{{input}}", classifier=LabelClassifier.pass_fail("relevant", "irrelevant")
    )
    ok = await j(Context(input="q"))
    assert ok.status is Status.PASS and ok.label == "relevant"
    assert ok.metadata["usage"] == {"input_tokens": 12, "output_tokens": 5}
    bad = await j(Context(input="q"))
    assert bad.status is Status.ABSTAIN
    assert bad.metadata["raw_output"] == "relevant, mostly"


async def test_output_model_score() -> None:
    """A numeric score field becomes from_score with the threshold; schema is requested."""
    model = FakeModel({"score": 0.7, "reasoning": "good"}, {"score": 0.7, "reasoning": "good"})
    strict = LLMJudge("g", model, "{{output}}", output_model=Grade, threshold=0.8)
    lenient = LLMJudge("g", model, "{{output}}", output_model=Grade)
    a = await strict(Context(output="o"))
    b = await lenient(Context(output="o"))
    assert (a.status, a.score, a.reasoning) == (Status.FAIL, 0.7, "good")
    assert (b.status, b.score) == (Status.PASS, 0.7)
    assert model.requests[0].response_schema == Grade.model_json_schema()


async def test_output_model_score_range_rescales() -> None:
    """score_range maps a 1-5 rubric into [0, 1]."""
    model = FakeModel({"score": 4, "reasoning": "r"})
    j = LLMJudge("g", model, "{{output}}", output_model=Grade, score_range=(1, 5))
    result = await j(Context())
    assert result.score == 0.75 and result.status is Status.PASS


async def test_output_model_parses_text_when_parsed_missing() -> None:
    """Without response.parsed the text is parsed as JSON (code fences stripped)."""
    text = '```json\n{"score": 0.2, "reasoning": "weak"}\n```'
    model = FakeModel(ModelResponse(text=text))
    result = await LLMJudge("g", model, "{{output}}", output_model=Grade)(Context())
    assert (result.status, result.score, result.reasoning) == (Status.FAIL, 0.2, "weak")


@pytest.mark.parametrize(
    "payload",
    [
        ModelResponse(text="not json"),
        ModelResponse(text='["score", 1]'),
        ModelResponse(text='{"score": "high"}'),
        ModelResponse(text='{"score": NaN, "reasoning": ""}'),
        ModelResponse(text='{"score": 1.5, "reasoning": ""}'),
        ModelResponse(text='{"score": true, "reasoning": ""}'),
        ModelResponse(text=""),
    ],
)
async def test_output_model_invalid_abstains(payload: ModelResponse) -> None:
    """Invalid structured output is ABSTAIN with the raw text, never a 0 or NaN score."""
    result = await LLMJudge("g", FakeModel(payload), "{{output}}", output_model=Grade)(Context())
    assert result.status is Status.ABSTAIN
    assert result.score is None
    assert result.metadata["raw_output"] == payload.text


async def test_output_model_passed_field() -> None:
    """A bool `passed` field gives PASS/FAIL; a non-bool abstains."""
    model = FakeModel(
        {"passed": True, "reasoning": "yes"},
        {"passed": False, "reasoning": "no"},
        {"passed": "yes", "reasoning": "?"},
    )
    j = LLMJudge("v", model, "{{output}}", output_model=Verdict)
    assert (await j(Context())).status is Status.PASS
    assert (await j(Context())).status is Status.FAIL
    assert (await j(Context())).status is Status.ABSTAIN


async def test_output_model_pass_alias() -> None:
    """A field aliased `pass` works like `passed`."""
    model = FakeModel({"pass": False})
    result = await LLMJudge("v", model, "{{output}}", output_model=PassAlias)(Context())
    assert result.status is Status.FAIL


async def test_truncated_response_hint() -> None:
    """An unparseable answer cut off at max_tokens says so."""
    model = FakeModel(ModelResponse(text="Let me think", finish_reason="length"))
    result = await LLMJudge("x", model, "{{input}}")(Context(input="q"))
    assert result.status is Status.ABSTAIN
    assert "finish_reason=length" in result.reasoning


def test_construction_validation() -> None:
    """Bad knobs are rejected at construction."""
    model = FakeModel()

    class NoVerdict(BaseModel):
        reasoning: str

    with pytest.raises(ValueError, match="either classifier or output_model"):
        LLMJudge(
            "x", model, "t", classifier=LabelClassifier.pass_fail("a", "b"), output_model=Grade
        )
    with pytest.raises(ValueError, match="score"):
        LLMJudge("x", model, "t", output_model=NoVerdict)
    with pytest.raises(TypeError):
        LLMJudge("x", model, "t", output_model=dict)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        LLMJudge("x", model, "t", threshold=1.5)
    with pytest.raises(ValueError, match="name"):
        LLMJudge(" ", model, "t")
    with pytest.raises(ValueError, match="unknown variable"):
        LLMJudge("x", model, "{{goal}}")
    with pytest.raises(ValueError, match="temperature"):
        LLMJudge("x", model, "t", temperature=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        LLMJudge("x", model, "t", max_tokens=0)
    with pytest.raises(ValueError, match="score_range"):
        LLMJudge("x", model, "t", output_model=Grade, score_range=(5, 1))
    with pytest.raises(TypeError, match="ModelClient"):
        LLMJudge("x", object(), "t")  # type: ignore[arg-type]


async def test_output_model_schema_error_abstains() -> None:
    """A response whose client reports a schema failure abstains, quoting the reason."""
    response = ModelResponse(text='{"score": 0.9}', schema_error="$.reasoning: required")
    result = await LLMJudge("g", FakeModel(response), "{{output}}", output_model=Grade)(Context())
    assert result.status is Status.ABSTAIN
    assert "$.reasoning: required" in result.reasoning
    assert result.metadata["raw_output"] == response.text

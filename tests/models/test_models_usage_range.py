"""Out-of-range token usage never loses an answer (issue 12, item 7)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from agentjudge import Evaluator, Status
from agentjudge.core import Context, Message
from agentjudge.judges import LLMJudge, RunnerResult, ScoreJudge
from agentjudge.models import AnthropicMessages, ModelRequest, OpenAIChat, Usage
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

HUGE = 2**53
SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reasoning": {"type": "string"}},
    "required": ["score", "reasoning"],
}


def test_usage_refuses_counts_outside_the_json_safe_range() -> None:
    """Usage(input_tokens=2**53) is refused at construction with a message naming the range."""
    with pytest.raises(ValidationError, match=r"input_tokens[\s\S]*within 0\.\.2\*\*53-1"):
        Usage(input_tokens=HUGE)
    assert Usage(input_tokens=HUGE - 1).input_tokens == HUGE - 1


async def test_llm_judge_keeps_the_answer_when_openai_usage_is_out_of_range() -> None:
    """An OpenAI answer with usage 2**53 still becomes a PASS; the bad count is a warning."""
    usage = {"prompt_tokens": HUGE, "completion_tokens": 3, "total_tokens": HUGE + 3}
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES", usage=usage)) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k", retry=None) as model,
    ):
        [result] = await Evaluator(LLMJudge("j", model, "{{output}}")).evaluate(Context(output="4"))
    judgment = result.judgment
    assert judgment is not None and judgment.status is Status.PASS, judgment
    assert judgment.metadata["usage"] == {"output_tokens": 3}
    warnings = judgment.metadata["warnings"]
    assert any("usage.prompt_tokens=9007199254740992" in w for w in warnings)
    assert any("usage.total_tokens" in w for w in warnings)


async def test_score_judge_evaluate_keeps_the_answer_when_anthropic_usage_is_out_of_range() -> None:
    """ScoreJudge.evaluate over Anthropic with usage 2**53 returns the score, never raises."""
    answer = FakeResponse(
        json={"score": 0.9, "reasoning": "good"},
        usage={"input_tokens": 10, "output_tokens": HUGE},
    )
    async with (
        FakeModelServer(answer) as server,
        AnthropicMessages("m", base_url=server.base_url, api_key="k", retry=None) as model,
    ):
        judge = ScoreJudge("s", model, instructions="Score it.", metric_key="quality")
        result = await judge.evaluate("q", "a")
    judgment = result.judgment
    assert judgment is not None and judgment.status is Status.PASS, judgment
    assert judgment.score == 0.9
    assert judgment.metadata["usage"] == {"input_tokens": 10}
    assert "usage.output_tokens=9007199254740992" in judgment.metadata["warnings"][0]


async def test_score_judge_evaluate_never_raises_on_an_unreadable_runner_result() -> None:
    """A runner result whose usage bypassed validation is an ERROR result, not an exception."""

    class Runner:
        async def run(self, input: str, output_schema: dict[str, Any] | None) -> RunnerResult:
            bad = Usage.model_construct(input_tokens=HUGE)  # skips validation on purpose
            return RunnerResult('{"score": 1, "reasoning": "ok"}', usage=bad)

    judge = ScoreJudge("s", Runner(), instructions="", metric_key="quality")
    result = await judge.evaluate("q", "a")
    assert result.judgment is not None and result.judgment.status is Status.ERROR
    assert "could not read the runner result" in result.judgment.reasoning


async def test_schema_reasks_drop_a_usage_sum_above_the_range() -> None:
    """Usage summed over schema re-asks that overflows 2**53-1 is dropped with a warning."""
    near = {"prompt_tokens": HUGE - 1, "completion_tokens": 1}
    async with (
        FakeModelServer() as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k", retry=None) as model,
    ):
        server.enqueue(
            FakeResponse(text="not json", usage=near),
            FakeResponse(text=json.dumps({"score": 1, "reasoning": "r"}), usage=near),
        )
        response = await model.complete(
            ModelRequest(
                messages=(Message(role="user", content="q"),), response_schema=SCORE_SCHEMA
            )
        )
    assert response.parsed == {"score": 1, "reasoning": "r"}
    assert response.usage.input_tokens is None
    assert response.usage.output_tokens == 2
    assert any("input_tokens" in w and "above 2**53-1" in w for w in response.warnings)

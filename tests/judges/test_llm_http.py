"""LLM judges over real loopback HTTP: OpenAIChat -> FakeModelServer."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from agentjudge.core import Context, Status
from agentjudge.engine import Evaluator, RetryPolicy
from agentjudge.judges._llm import LLMJudge
from agentjudge.judges._rag import VERDICT_SCHEMA, CorrectnessJudge, FaithfulnessJudge
from agentjudge.judges._score import SCORE_SCHEMA, ScoreJudge
from agentjudge.models import OpenAIChat
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse


class Grade(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reasoning: str
    score: float


def client(server: Any, model: str = "judge-model", **kwargs: Any) -> Any:
    kwargs.setdefault("retry", None)
    return OpenAIChat(model, base_url=server.base_url, api_key="test-key", **kwargs)


async def test_llm_judge_over_http() -> None:
    """LLMJudge sends the rendered prompt over HTTP and records model, usage and resource."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(text="Answer: YES\nReasoning: polite enough"))
        async with client(server) as model:
            judge = LLMJudge("polite", model, "Is this polite? {{output}}", system="Be strict.")
            judgment = await judge(Context(output="thank you"))
        assert judgment.status is Status.PASS
        assert judgment.reasoning == "polite enough"
        assert judge.resource == "openai:judge-model"
        assert judgment.metadata["client"] == "openai:judge-model"
        assert judgment.metadata["usage"]["input_tokens"] > 0
        body = server.requests[0]
        assert body["model"] == "judge-model"
        assert body["messages"] == [
            {"role": "system", "content": "Be strict."},
            {"role": "user", "content": "Is this polite? thank you"},
        ]
        assert "response_format" not in body


async def test_llm_judge_structured_over_http() -> None:
    """An output_model requests json_schema output and reads the JSON answer."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(json={"reasoning": "solid", "score": 0.9}))
        async with client(server) as model:
            judgment = await LLMJudge("g", model, "{{output}}", output_model=Grade)(
                Context(output="x")
            )
        assert (judgment.status, judgment.score, judgment.reasoning) == (Status.PASS, 0.9, "solid")
        spec = server.requests[0]["response_format"]
        assert spec["type"] == "json_schema"
        assert spec["json_schema"]["schema"] == Grade.model_json_schema()


async def test_rag_verdicts_over_http() -> None:
    """'Answer: Nope' abstains; structured mode sends VERDICT_SCHEMA; no context -> no request."""
    async with FakeModelServer() as server:
        server.enqueue(
            FakeResponse(text="Answer: Nope\nReasoning: yes it is fine"),
            FakeResponse(json={"answer": "NO", "reasoning": "unsupported"}),
        )
        ctx = Context(input="q", output="a", metadata={"rag.context": ["c1", "c2"]})
        async with client(server) as model:
            correctness = await CorrectnessJudge(model)(ctx)
            faithful = await FaithfulnessJudge(model, structured=True)(ctx)
            skipped = await FaithfulnessJudge(model)(Context(output="a"))
        assert correctness.status is Status.ABSTAIN
        assert correctness.reasoning.startswith("Could not parse")
        assert faithful.status is Status.FAIL and faithful.reasoning == "unsupported"
        assert skipped.status is Status.ABSTAIN
        assert len(server.requests) == 2
        assert server.requests[1]["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA


async def test_score_judge_over_http() -> None:
    """ScoreJudge over a model client: instructions as system, exact input and schema."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(json={"score": 0.75, "reasoning": "helpful"}))
        async with client(server) as model:
            judge = ScoreJudge("helpful", model, instructions="Rate helpfulness.", metric_key="h")
            result = await judge.evaluate("How do I X?", "Do Y.")
        assert result.status is Status.PASS and result.score == 0.75
        assert result.metric_key == "h"
        body = server.requests[0]
        assert body["messages"] == [
            {"role": "system", "content": "Rate helpfulness."},
            {
                "role": "user",
                "content": "MESSAGE HISTORY:\nHow do I X?\n\nRESPONSE TO EVALUATE:\nDo Y.",
            },
        ]
        assert body["response_format"]["json_schema"]["schema"] == SCORE_SCHEMA


async def test_score_judge_http_error_is_error_result() -> None:
    """A 401 from the server is an ERROR result with the client's exception type."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(text="invalid api key", status=401))
        async with client(server) as model:
            judge = ScoreJudge("helpful", model, instructions="Rate.", metric_key="h")
            result = await judge.evaluate("q", "a")
        assert result.status is Status.ERROR
        assert result.error_type == "ModelHTTPError"
        assert "401" in (result.reasoning or "")


async def test_evaluator_limits_by_client_name() -> None:
    """Evaluator(limits={client.name: 2}) caps concurrent HTTP calls of an LLMJudge."""
    async with FakeModelServer() as server:
        in_flight = 0
        peak = 0

        async def answer(body: Any) -> Any:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await anyio.sleep(0.02)
            in_flight -= 1
            return FakeResponse(text="Answer: YES")

        server.default = answer
        async with client(server) as model:
            judge = LLMJudge("j", model, "{{input}}")
            async with Evaluator(
                judge, limits={model.name: 2}, retry=RetryPolicy(attempts=1)
            ) as ev:
                handles = [ev.submit(Context(input=f"case {i}")) for i in range(8)]
                results = [await h for h in handles]
        assert all(r[0].status is Status.PASS for r in results)
        assert len(server.requests) == 8
        assert 1 <= peak <= 2

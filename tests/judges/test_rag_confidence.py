"""The RAG judges (YES/NO verdicts) take `confidence=` like `LLMJudge`, over loopback HTTP."""

from __future__ import annotations

import math

import pytest

from agentjudge.core import Context, Status
from agentjudge.judges import (
    CorrectnessJudge,
    FaithfulnessJudge,
    HallucinationJudge,
    LogprobConfidence,
    SelfConsistency,
)
from agentjudge.models import AnthropicMessages, OpenAIChat, TokenLogprob
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

CTX = Context(input="q?", output="a.", metadata={"rag.context": "a."})


def openai(server: FakeModelServer) -> OpenAIChat:
    return OpenAIChat("judge-model", base_url=server.base_url, api_key="k", retry=None)


def word(text: str, yes: float, no: float) -> TokenLogprob:
    """The verdict word, with YES/NO alternatives given as probabilities."""
    top = ((" YES", math.log(yes)), (" NO", math.log(no)), (" maybe", math.log(0.01)))
    return TokenLogprob(token=text, logprob=dict(top)[text], top=top)


async def test_logprob_confidence_of_a_text_verdict() -> None:
    """The 'Answer: YES' word's probability, normalised over YES and NO."""
    answer = FakeResponse(
        text="Answer: YES\nReasoning: supported.",
        logprobs=[
            TokenLogprob(token="Answer", logprob=-0.01),
            TokenLogprob(token=":", logprob=-0.01),
            word(" YES", 0.7, 0.2),
            TokenLogprob(token="\nReasoning: supported.", logprob=-0.01),
        ],
    )
    async with FakeModelServer(answer) as server, openai(server) as model:
        judgment = await FaithfulnessJudge(model, confidence=LogprobConfidence(top=3))(CTX)
    assert server.requests[0]["logprobs"] is True
    assert judgment.status is Status.PASS
    assert judgment.confidence == pytest.approx(0.7 / 0.9)


async def test_self_consistency_share_for_a_rag_judge() -> None:
    """Three samples, two say NO: FAIL with confidence 2/3 (and all calls' usage summed)."""
    answers = [
        FakeResponse(text="Answer: NO\nReasoning: unsupported."),
        FakeResponse(text="Answer: YES\nReasoning: fine."),
        FakeResponse(text="Answer: NO\nReasoning: made up."),
    ]
    async with FakeModelServer() as server, openai(server) as model:
        for a in answers:
            server.enqueue(a)
        judgment = await HallucinationJudge(model, confidence=SelfConsistency(3))(CTX)
    assert len(server.requests) == 3
    assert judgment.status is Status.FAIL
    assert judgment.confidence == pytest.approx(2 / 3)


async def test_without_confidence_the_request_is_unchanged() -> None:
    """No confidence method: one call, no logprobs asked, confidence None."""
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES")) as server,
        openai(server) as model,
    ):
        judgment = await CorrectnessJudge(model)(CTX)
    assert judgment.confidence is None
    assert "logprobs" not in server.requests[0]


def test_logprobs_refused_for_anthropic() -> None:
    """A client that returns no logprobs is refused at construction, naming the way out."""
    model = AnthropicMessages("claude", base_url="http://127.0.0.1:9", api_key="k")
    with pytest.raises(ValueError, match="SelfConsistency"):
        FaithfulnessJudge(model, confidence=LogprobConfidence())

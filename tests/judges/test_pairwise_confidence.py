"""PairwiseJudge confidence through the shared confidence methods, over loopback HTTP."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agentjudge.core import Context, Status
from agentjudge.judges import (
    LLMJudge,
    LogprobConfidence,
    PairwiseJudge,
    SelfConsistency,
    SimulatedAnnotators,
)
from agentjudge.models import AnthropicMessages, OpenAIChat, TokenLogprob
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

GOOD = "Paris is the capital of France."
BAD = "The capital of France is Lyon."
PAIR = Context(input="Capital?", output={"x": BAD, "y": GOOD})
WITHOUT_LOGPROBS = {  # an OpenAI-compatible server that ignores "logprobs": true
    "id": "x",
    "object": "chat.completion",
    "model": "judge-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Answer: A"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
}


def openai(server: FakeModelServer) -> OpenAIChat:
    return OpenAIChat("judge-model", base_url=server.base_url, api_key="k", retry=None)


def answer(label: str, probs: dict[str, float], *, prefix: str = "") -> FakeResponse:
    """``<prefix>Answer: <label>`` whose label token had the alternatives ``probs``."""
    top = tuple((t, math.log(p)) for t, p in probs.items())
    tokens = [TokenLogprob(token=prefix, logprob=-0.1)] if prefix else []
    tokens += [
        TokenLogprob(token="Answer", logprob=-0.01),
        TokenLogprob(token=":", logprob=0.0),
        TokenLogprob(token=f" {label}", logprob=math.log(probs[f" {label}"]), top=top),
    ]
    return FakeResponse(text=f"{prefix}Answer: {label}", logprobs=tokens)


def shown_first(body: dict[str, Any]) -> str:
    prompt = str(body["messages"][-1]["content"])
    return "bad" if prompt.index(BAD) < prompt.index(GOOD) else "good"


async def test_logprob_confidence_asks_for_logprobs_in_both_calls() -> None:
    """With LogprobConfidence both requests carry logprobs=true and top_logprobs=top."""
    async with FakeModelServer(FakeResponse(text="Answer: tie")) as server, openai(server) as model:
        judge = PairwiseJudge("pref", model, confidence=LogprobConfidence(top=4))
        judgment = await judge(PAIR)
        plain = await PairwiseJudge("pref", model)(PAIR)
    asked, unasked = server.requests[:2], server.requests[2:]
    assert [(b["logprobs"], b["top_logprobs"]) for b in asked] == [(True, 4), (True, 4)]
    assert all("logprobs" not in b and "top_logprobs" not in b for b in unasked)
    assert judgment.metadata["confidence_method"] == "logprobs"
    assert plain.confidence == 1.0 and "confidence_method" not in plain.metadata


async def test_confidence_is_the_mean_of_the_agreed_labels_normalised_probabilities() -> None:
    """Per call: the answer's mass over A/B/tie (case and prefixes folded); judgment: the mean."""
    first = answer(
        "B",
        {" B": 0.5, " b": 0.1, " A": 0.2, " t": 0.1, " The": 0.1},
        prefix="Reasoning: B is right.\n",
    )  # B: (0.5 + 0.1) / (0.6 + 0.2 + 0.1) = 2/3 ("t" only starts "tie"; "The" no label)
    second = answer("A", {" A": 0.7, " B": 0.2, "**": 0.1})  # swapped, A: 0.7 / 0.9 = 7/9
    async with FakeModelServer() as server, openai(server) as model:
        server.enqueue(first, second)
        judge = PairwiseJudge("pref", model, confidence=LogprobConfidence(top=5))
        judgment = await judge(Context(output={"x": "1", "y": "2"}))
    assert (judgment.status, judgment.label) == (Status.PASS, "B")
    assert judgment.metadata["pairwise"]["winner"] == "y"
    calls = judgment.metadata["pairwise"]["answers"]
    assert [c["confidence"] for c in calls] == pytest.approx([2 / 3, 7 / 9])
    assert judgment.confidence == pytest.approx((2 / 3 + 7 / 9) / 2)  # = 13/18


async def test_a_call_without_logprobs_leaves_confidence_none_and_says_why() -> None:
    """A server that ignores the logprobs request: the verdict stands, confidence None, reason."""
    ignored = FakeResponse(raw_body=json.dumps(WITHOUT_LOGPROBS))  # swapped order: A (= y)
    async with FakeModelServer() as server, openai(server) as model:
        server.enqueue(answer("B", {" B": 0.9, " A": 0.1}), ignored)
        judge = PairwiseJudge("pref", model, confidence=LogprobConfidence(top=2))
        judgment = await judge(Context(output={"x": "1", "y": "2"}))
    assert (judgment.label, judgment.confidence) == ("B", None)
    assert judgment.metadata["confidence_error"].startswith("call 2: ")
    calls = judgment.metadata["pairwise"]["answers"]
    assert calls[0]["confidence"] == pytest.approx(0.9) and "confidence" not in calls[1]


async def test_an_inconsistent_pair_has_no_confidence_but_records_each_call() -> None:
    """Position bias with logprobs: tie, confidence None, each call's probability recorded."""
    async with FakeModelServer() as server, openai(server) as model:
        server.enqueue(answer("A", {" A": 0.8, " B": 0.2}), answer("A", {" A": 0.6, " B": 0.4}))
        judge = PairwiseJudge("pref", model, confidence=LogprobConfidence(top=2))
        judgment = await judge(PAIR)
    assert (judgment.label, judgment.confidence) == ("tie", None)
    assert judgment.metadata["position_bias"] is True
    calls = judgment.metadata["pairwise"]["answers"]
    assert [c["confidence"] for c in calls] == pytest.approx([0.8, 0.6])


async def test_self_consistency_samples_each_order_and_averages_the_shares() -> None:
    """SelfConsistency(3): 3 sampled calls per order; confidence = mean of the majority shares."""
    seen = {"bad": 0, "good": 0}

    def judge_model(body: dict[str, Any]) -> FakeResponse:
        first = shown_first(body)
        seen[first] += 1
        if first == "bad":  # GOOD shown second: B, B, then a dissenting A
            return FakeResponse(text="Answer: A" if seen[first] == 3 else "Answer: B")
        return FakeResponse(text="Answer: A")  # GOOD shown first: always A

    async with FakeModelServer(default=judge_model) as server, openai(server) as model:
        judge = PairwiseJudge("pref", model, confidence=SelfConsistency(3, temperature=0.7))
        judgment = await judge(PAIR)
    assert len(server.requests) == 6
    assert {b["temperature"] for b in server.requests} == {0.7}
    assert (judgment.label, judgment.metadata["pairwise"]["winner"]) == ("B", "y")
    assert judgment.confidence == pytest.approx((2 / 3 + 1.0) / 2)
    calls = judgment.metadata["pairwise"]["answers"]
    assert [c["votes"] for c in calls] == [{"B": 2, "A": 1}, {"A": 3}]
    assert judgment.metadata["calls"] == 6 and judgment.metadata["confidence_method"] == (
        "self_consistency"
    )


async def test_simulated_annotators_insert_the_examples_in_every_order() -> None:
    """SimulatedAnnotators: each order asked in N few-shot variants; examples precede the prompt."""
    examples = [(f"compare {i}", "Answer: A" if i % 2 else "Answer: B") for i in range(4)]
    method = SimulatedAnnotators(examples, variants=2, shots=2, logprobs=False)
    tie = FakeResponse(text="Answer: tie")
    async with FakeModelServer(default=lambda body: tie) as server, openai(server) as model:
        judgment = await PairwiseJudge("pref", model, confidence=method)(PAIR)
    assert len(server.requests) == 4
    assert all(len(b["messages"]) == 5 for b in server.requests)  # 2 shots x 2 + the prompt
    assert (judgment.label, judgment.confidence) == ("tie", 1.0)
    assert judgment.metadata["confidence_method"] == "simulated_annotators"


async def test_logprob_confidence_on_anthropic_is_refused_like_llm_judge() -> None:
    """LogprobConfidence on an Anthropic client: the same ValueError LLMJudge raises."""
    async with FakeModelServer() as server:
        model = AnthropicMessages("claude", base_url=server.base_url, api_key="k", retry=None)
        async with model:
            with pytest.raises(ValueError, match="needs token log-probabilities") as pairwise:
                PairwiseJudge("pref", model, confidence=LogprobConfidence())
            with pytest.raises(ValueError) as llm:
                LLMJudge("j", model, "{{output}}", confidence=LogprobConfidence())
            PairwiseJudge("pref", model, confidence=SelfConsistency(2))  # sampling works
    assert str(pairwise.value) == str(llm.value)
    assert "SelfConsistency" in str(pairwise.value)
    assert len(server.requests) == 0


def test_a_non_method_confidence_is_a_type_error_naming_the_methods() -> None:
    """confidence must be one of the methods (or None); anything else is a TypeError."""

    class Model:
        name = "fake:model"

        async def complete(self, request: Any) -> Any:
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="LogprobConfidence, SelfConsistency"):
        PairwiseJudge("p", Model(), confidence=0.9)  # type: ignore[arg-type]

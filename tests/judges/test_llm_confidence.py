"""LLM judge confidence (logprobs, self-consistency, simulated annotators) over loopback HTTP."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from agentjudge.core import Context, Status
from agentjudge.exceptions import ModelHTTPError
from agentjudge.judges import (
    LabelClassifier,
    LLMJudge,
    LogprobConfidence,
    SelfConsistency,
    SimulatedAnnotators,
)
from agentjudge.models import AnthropicMessages, OpenAIChat, TokenLogprob
from agentjudge.models._types import ModelRequest, ModelResponse, Usage
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

RELEVANCE = LabelClassifier.pass_fail("relevant", "irrelevant")
EXAMPLES = [(f"example question {i}", "relevant" if i % 2 else "irrelevant") for i in range(6)]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    passed: bool
    reasoning: str


def openai(server: FakeModelServer) -> OpenAIChat:
    return OpenAIChat("judge-model", base_url=server.base_url, api_key="k", retry=None)


def anthropic(server: FakeModelServer) -> AnthropicMessages:
    return AnthropicMessages("claude", base_url=server.base_url, api_key="k", retry=None)


def token(text: str, *alternatives: tuple[str, float]) -> TokenLogprob:
    """A token chosen with the first alternative's probability; alternatives as probabilities."""
    top = tuple((t, math.log(p)) for t, p in alternatives)
    chosen = dict(top).get(text, math.log(0.5))
    return TokenLogprob(token=text, logprob=chosen, top=top)


def judge(model: Any, **kwargs: Any) -> LLMJudge:
    kwargs.setdefault("classifier", RELEVANCE)
    return LLMJudge("relevance", model, "Relevant? {{output}}", **kwargs)


async def test_without_confidence_nothing_changes() -> None:
    """No confidence method: one call, no logprobs fields, confidence None."""
    async with FakeModelServer(FakeResponse(text="relevant")) as server, openai(server) as model:
        judgment = await judge(model)(Context(output="x"))
    assert judgment.confidence is None
    assert len(server.requests) == 1
    assert "logprobs" not in server.requests[0] and "top_logprobs" not in server.requests[0]
    assert "confidence_method" not in judgment.metadata


async def test_logprob_confidence_normalises_over_the_labels() -> None:
    """A label answer's confidence is its token probability over the allowed labels' mass."""
    scripted = [
        token("relevant", ("relevant", 0.6), ("irrelevant", 0.3), ("banana", 0.1)),
    ]
    answer = FakeResponse(text="relevant", logprobs=scripted)
    async with FakeModelServer(answer) as server, openai(server) as model:
        judgment = await judge(model, confidence=LogprobConfidence(top=3))(Context(output="x"))
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 3
    assert judgment.status is Status.PASS
    assert judgment.confidence == pytest.approx(0.6 / 0.9)
    assert judgment.metadata["confidence_method"] == "logprobs"


async def test_logprob_confidence_sums_case_variants_and_label_prefixes() -> None:
    """Alternatives are case-folded and stripped; a unique label prefix counts for it."""
    scripted = [
        token(
            " Rel",
            (" Rel", 0.4),
            ("relevant", 0.2),
            ("ir", 0.3),  # only "irrelevant" starts with "ir"
            ("the", 0.1),
        ),
        TokenLogprob(token="evant", logprob=0.0),
    ]
    answer = FakeResponse(text=" Relevant", logprobs=scripted)
    async with FakeModelServer(answer) as server, openai(server) as model:
        judgment = await judge(model, confidence=LogprobConfidence())(Context(output="x"))
    assert judgment.label == "relevant"
    assert judgment.confidence == pytest.approx(0.6 / 0.9)


async def test_logprob_confidence_reads_the_answer_line_word() -> None:
    """For 'Answer: YES' the token after 'Answer:' decides, not the reasoning tokens."""
    scripted = [
        token("Looks", ("Looks", 0.9), ("no", 0.1)),  # a stray 'no' before the verdict
        TokenLogprob(token=" fine", logprob=0.0),
        TokenLogprob(token="\n", logprob=0.0),
        TokenLogprob(token="Answer", logprob=0.0),
        TokenLogprob(token=":", logprob=0.0),
        token(" YES", (" YES", 0.8), (" NO", 0.15), (" Yes", 0.05)),
    ]
    answer = FakeResponse(text="Looks fine\nAnswer: YES", logprobs=scripted)
    async with FakeModelServer(answer) as server, openai(server) as model:
        verdict = LLMJudge("v", model, "{{output}}", confidence=LogprobConfidence())
        judgment = await verdict(Context(output="x"))
    assert judgment.status is Status.PASS
    assert judgment.confidence == pytest.approx(0.85)


async def test_logprob_confidence_finds_the_structured_verdict_value() -> None:
    """For a JSON answer the token where the 'passed' value starts decides."""
    scripted = [
        TokenLogprob(token='{"', logprob=0.0),
        TokenLogprob(token="passed", logprob=0.0),
        TokenLogprob(token='":', logprob=0.0),
        token(" false", (" false", 0.7), (" true", 0.2), (" null", 0.1)),
        TokenLogprob(token=',"reasoning":"true enough"}', logprob=0.0),
    ]
    text = '{"passed": false,"reasoning":"true enough"}'
    answer = FakeResponse(text=text, logprobs=scripted)
    async with FakeModelServer(answer) as server, openai(server) as model:
        structured = LLMJudge(
            "s", model, "{{output}}", output_model=Verdict, confidence=LogprobConfidence()
        )
        judgment = await structured(Context(output="x"))
    assert judgment.status is Status.FAIL
    assert judgment.confidence == pytest.approx(0.7 / 0.9)


async def test_generated_default_logprobs_give_a_confidence() -> None:
    """With the fake server's made-up logprobs a structured answer gets confidence 1.0."""
    answer = FakeResponse(json={"passed": True, "reasoning": "fine"})
    async with FakeModelServer(answer) as server, openai(server) as model:
        structured = LLMJudge(
            "s", model, "{{output}}", output_model=Verdict, confidence=LogprobConfidence()
        )
        judgment = await structured(Context(output="x"))
    assert judgment.status is Status.PASS
    assert judgment.confidence == 1.0  # the fillers match no label


async def test_missing_logprobs_leave_confidence_none_with_a_reason() -> None:
    """A server ignoring the logprobs request: the verdict stays, the reason is recorded."""
    body = '{"choices": [{"message": {"role": "assistant", "content": "irrelevant"}}]}'
    async with FakeModelServer(FakeResponse(raw_body=body)) as server, openai(server) as model:
        judgment = await judge(model, confidence=LogprobConfidence())(Context(output="x"))
    assert judgment.status is Status.FAIL
    assert judgment.confidence is None
    assert "no token logprobs" in judgment.metadata["confidence_error"]


async def test_anthropic_with_logprob_confidence_is_refused_at_construction() -> None:
    """LogprobConfidence on an Anthropic client is a ValueError suggesting SelfConsistency."""
    async with FakeModelServer() as server, anthropic(server) as model:
        with pytest.raises(ValueError, match=r"anthropic.*SelfConsistency"):
            judge(model, confidence=LogprobConfidence())
        with pytest.raises(ValueError, match="log-probabilities"):
            judge(model, confidence=SimulatedAnnotators(EXAMPLES, logprobs=True))


def cycling(*texts: str) -> Any:
    """A responder answering the given texts in turn (arrival order)."""
    answers = iter(texts)
    return lambda _body: FakeResponse(text=next(answers))


async def test_self_consistency_share_of_valid_samples() -> None:
    """Confidence is the winner's share of VALID samples; unreadable ones are counted."""
    responder = cycling("relevant", "irrelevant", "relevant", "gibberish", "relevant")
    async with FakeModelServer(responder) as server, openai(server) as model:
        sampled = judge(model, confidence=SelfConsistency(5, temperature=0.7))
        judgment = await sampled(Context(output="x"))
    assert len(server.requests) == 5
    assert all(body["temperature"] == 0.7 for body in server.requests)
    assert all("logprobs" not in body for body in server.requests)
    assert judgment.label == "relevant"
    assert judgment.confidence == pytest.approx(3 / 4)
    meta = judgment.metadata
    assert meta["votes"] == {"relevant": 3, "irrelevant": 1}
    assert meta["invalid_samples"] == 1 and "gibberish" in meta["invalid_reasons"][0]
    assert meta["calls"] == 5
    assert meta["usage"]["input_tokens"] == 5 * (len("Relevant? x") // 4)  # all five summed


class BySample:
    """A ModelClient answering by ``request.sample_index`` (arrival order does not matter)."""

    name = "fake:by-sample"

    def __init__(self, *texts: str) -> None:
        self.texts = texts

    async def complete(self, request: ModelRequest) -> ModelResponse:
        usage = Usage(input_tokens=10, output_tokens=1)
        return ModelResponse(text=self.texts[request.sample_index], usage=usage)


async def test_self_consistency_tie_goes_to_the_lowest_sample() -> None:
    """A tie is won by the label of the lowest-numbered sample, at confidence 0.5."""
    model = BySample("irrelevant", "relevant", "relevant", "irrelevant")
    judgment = await judge(model, confidence=SelfConsistency(4))(Context(output="x"))
    assert judgment.label == "irrelevant"
    assert judgment.confidence == 0.5
    assert judgment.metadata["usage"] == {"input_tokens": 40, "output_tokens": 4}


async def test_self_consistency_with_no_valid_sample_abstains() -> None:
    """Every sample unreadable: ABSTAIN without confidence, the count in metadata."""
    model = BySample("huh", "what", "?")
    judgment = await judge(model, confidence=SelfConsistency(3))(Context(output="x"))
    assert judgment.status is Status.ABSTAIN
    assert judgment.confidence is None
    assert judgment.metadata["invalid_samples"] == 3


async def test_a_failing_sample_call_propagates_as_itself() -> None:
    """One HTTP failure among the samples raises that error (no exception group)."""
    calls = 0

    def responder(_body: Any) -> FakeResponse:
        nonlocal calls
        calls += 1
        return FakeResponse(status=400, text="bad") if calls == 2 else FakeResponse(text="relevant")

    async with FakeModelServer(responder) as server, openai(server) as model:
        with pytest.raises(ModelHTTPError):
            await judge(model, confidence=SelfConsistency(3))(Context(output="x"))


async def test_caller_timeout_fires_through_hanging_samples() -> None:
    """A caller's deadline cancels every hanging sample call (exits within 20 s at worst)."""
    arrived = 0
    all_hang = anyio.Event()

    def hang(_: Any) -> FakeResponse:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            all_hang.set()
        return FakeResponse(hang=True)

    async def deadline_once_all_hang(scope: anyio.CancelScope) -> None:
        await all_hang.wait()
        scope.deadline = anyio.current_time()  # the caller's deadline passes now

    async with FakeModelServer(hang) as server, openai(server) as model:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(deadline_once_all_hang, scope)
                await judge(model, confidence=SelfConsistency(3))(Context(output="x"))
    assert scope.cancelled_caught
    assert arrived == 3  # every sample was hanging when the deadline passed


async def test_simulated_annotators_average_logprob_probabilities() -> None:
    """Each variant carries distinct few-shot pairs; confidence averages logprob probabilities."""
    scripted = [token("relevant", ("relevant", 0.8), ("irrelevant", 0.2))]
    answer = FakeResponse(text="relevant", logprobs=scripted)
    method = SimulatedAnnotators(EXAMPLES, variants=3, shots=2, seed=7)
    async with FakeModelServer(answer) as server, openai(server) as model:
        judgment = await judge(model, confidence=method, system="Be strict.")(Context(output="x"))
    assert judgment.confidence == pytest.approx(0.8)
    assert judgment.metadata["probability_source"] == "logprobs"
    shots = []
    for body in server.requests:
        assert body["logprobs"] is True
        messages = body["messages"]
        assert messages[0] == {"role": "system", "content": "Be strict."}
        assert messages[-1]["content"] == "Relevant? x"
        assert [m["role"] for m in messages[1:-1]] == ["user", "assistant"] * 2
        shots.append(frozenset(m["content"] for m in messages[1:-1:2]))
    assert len(set(shots)) == 3  # three distinct example sets
    again = SimulatedAnnotators(EXAMPLES, variants=3, shots=2, seed=7)
    assert again.selection == method.selection  # the same seed, the same variants


async def test_simulated_annotators_without_logprobs_count_choices() -> None:
    """On a client without logprobs each variant gives 1.0 to its label; the average wins."""
    responder = cycling("relevant", "irrelevant", "relevant")
    method = SimulatedAnnotators(EXAMPLES, variants=3, shots=2)
    async with FakeModelServer(responder) as server, anthropic(server) as model:
        judgment = await judge(model, confidence=method)(Context(output="x"))
    assert all("logprobs" not in body for body in server.requests)
    assert judgment.label == "relevant"
    assert judgment.confidence == pytest.approx(2 / 3)
    assert judgment.metadata["probabilities"] == {
        "relevant": pytest.approx(2 / 3),
        "irrelevant": pytest.approx(1 / 3),
    }
    assert judgment.metadata["probability_source"] == "choices"


async def test_simulated_annotators_count_unreadable_variants_as_zero() -> None:
    """An unreadable variant adds 0 to every label and is reported."""

    class Garbled(BySample):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            text = "??" if request.messages[0].content == EXAMPLES[0][0] else "relevant"
            return ModelResponse(text=text)

    method = SimulatedAnnotators(EXAMPLES[:3], variants=3, shots=1)
    judgment = await judge(Garbled(), confidence=method)(Context(output="x"))
    assert judgment.metadata["invalid_variants"] == 1
    assert judgment.confidence == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: LogprobConfidence(top=1), "top must be an integer within 2..20"),
        (lambda: LogprobConfidence(top=21), "within 2..20"),
        (lambda: SelfConsistency(1), "samples must be an integer within 2..100"),
        (lambda: SelfConsistency(3, temperature=0.0), "temperature must be a finite number > 0"),
        (lambda: SelfConsistency(3, temperature=math.nan), "finite number > 0"),
        (lambda: SimulatedAnnotators(EXAMPLES[:1], shots=2), "at least shots=2 examples"),
        (lambda: SimulatedAnnotators([("q", " ")]), r"examples\[0\] must be a \(prompt, answer\)"),
        (lambda: SimulatedAnnotators("qa"), "sequence of"),
        (lambda: SimulatedAnnotators(EXAMPLES[:3], variants=4, shots=3), "distinct sets"),
        (lambda: SimulatedAnnotators(EXAMPLES, variants=1), "variants must be an integer"),
    ],
)
def test_bad_confidence_arguments_are_clear_errors(build: Any, message: str) -> None:
    """Each confidence method validates its arguments with a message naming the field."""
    with pytest.raises(ValueError, match=message):
        build()


def test_confidence_must_be_a_method() -> None:
    """Passing something else as confidence is a TypeError listing the methods."""
    with pytest.raises(TypeError, match="LogprobConfidence, SelfConsistency"):
        judge(BySample("x"), confidence="logprobs")

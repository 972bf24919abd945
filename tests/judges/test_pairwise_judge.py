"""PairwiseJudge over real loopback HTTP: OpenAIChat -> FakeModelServer."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from agentjudge.core import Context, Status
from agentjudge.engine import Evaluator
from agentjudge.exceptions import ModelHTTPError
from agentjudge.judges import LogprobConfidence, PairwiseJudge
from agentjudge.models import OpenAIChat, TokenLogprob
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

GOOD = "Paris is the capital of France."
BAD = "The capital of France is Lyon."


def client(server: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("retry", None)
    return OpenAIChat("judge-model", base_url=server.base_url, api_key="test-key", **kwargs)


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def fair(body: dict[str, Any]) -> FakeResponse:
    """A judge without position bias: picks whichever slot shows the GOOD answer."""
    prompt = _prompt(body)
    if GOOD not in prompt:
        return FakeResponse(text="Reasoning: equal.\nAnswer: tie")
    first = prompt.index(GOOD) < prompt.index(BAD)
    return FakeResponse(text=f"Reasoning: one is right.\nAnswer: {'A' if first else 'B'}")


def always_first(body: dict[str, Any]) -> FakeResponse:
    """A judge with pure position bias: always prefers whatever is shown first."""
    return FakeResponse(text="Answer: A")


async def test_consistent_pair_names_the_winner_and_sums_both_calls() -> None:
    """A consistent swapped pair gives that label, the winner's name and both calls' usage."""
    async with FakeModelServer(default=fair) as server, client(server) as model:
        judge = PairwiseJudge("pref", model)
        judgment = await judge(Context(input="Capital?", output={"model-x": BAD, "model-y": GOOD}))
    assert (judgment.status, judgment.label, judgment.confidence) == (Status.PASS, "B", 1.0)
    pair = judgment.metadata["pairwise"]
    assert pair["systems"] == ("model-x", "model-y")  # metadata lists are frozen to tuples
    assert pair["winner"] == "model-y"
    assert [a["order"] for a in pair["answers"]] == [("model-x", "model-y"), ("model-y", "model-x")]
    assert [a["answer"] for a in pair["answers"]] == ["B", "A"]
    assert judgment.metadata["position_bias"] is False
    assert judgment.metadata["calls"] == 2
    prompts = [_prompt(body) for body in server.requests]
    assert prompts[0].index(BAD) < prompts[0].index(GOOD)  # first call: model-x shown as A
    assert prompts[1].index(GOOD) < prompts[1].index(BAD)  # second call: swapped
    one_call = server.received  # usage of both calls is summed
    assert len(one_call) == 2 and judgment.metadata["usage"]["input_tokens"] > 0


async def test_tuple_output_names_the_systems_a_and_b() -> None:
    """output=(a, b) compares systems named "A" and "B"; a consistent tie is a PASS tie."""
    async with FakeModelServer(default=fair) as server, client(server) as model:
        win = await PairwiseJudge("pref", model)(Context(input="q", output=(GOOD, BAD)))
        tie = await PairwiseJudge("pref", model)(Context(input="q", output=["same", "same"]))
    assert (win.label, win.metadata["pairwise"]["winner"]) == ("A", "A")
    assert (tie.status, tie.label) == (Status.PASS, "tie")
    assert "winner" not in tie.metadata["pairwise"]  # metadata holds no null: a tie has none


async def test_position_bias_is_never_a_decision() -> None:
    """Answers that flip with the order are ABSTAIN (labelled tie by default), never a PASS."""
    async with FakeModelServer(default=always_first) as server, client(server) as model:
        ctx = Context(input="q", output={"x": GOOD, "y": BAD})
        tie = await PairwiseJudge("pref", model)(ctx)
        abstain = await PairwiseJudge("pref", model, on_inconsistent="abstain")(ctx)
    assert (tie.status, tie.label, tie.confidence) == (Status.ABSTAIN, "tie", None)
    assert tie.metadata["position_bias"] is True
    assert "winner" not in tie.metadata["pairwise"]
    assert "Position bias" in tie.reasoning and "counted as a tie" in tie.reasoning
    assert (abstain.status, abstain.label) == (Status.ABSTAIN, None)
    assert abstain.metadata["position_bias"] is True


async def test_swap_false_asks_once() -> None:
    """swap=False sends one request and leaves position_bias out (nothing to compare)."""
    async with FakeModelServer(default=always_first) as server, client(server) as model:
        judgment = await PairwiseJudge("pref", model, swap=False)(
            Context(input="q", output={"x": BAD, "y": GOOD})
        )
    assert len(server.requests) == 1
    assert (judgment.label, judgment.metadata["pairwise"]["winner"]) == ("A", "x")
    assert "position_bias" not in judgment.metadata
    assert judgment.confidence is None  # one call without logprobs: no evidence


@pytest.mark.parametrize(
    "output",
    [None, "just one", (1, 2, 3), {"only": 1}, {"a": 1, "b": 2, "c": 3}, {1: "x", 2: "y"}],
)
async def test_anything_but_two_candidates_is_an_error_naming_what_was_expected(
    output: Any,
) -> None:
    """A context without exactly two candidates is an ERROR saying what was expected; no call."""
    async with FakeModelServer(default=fair) as server, client(server) as model:
        judgment = await PairwiseJudge("pref", model)(Context(output=output))
    assert judgment.status is Status.ERROR
    assert "pref" in judgment.reasoning
    assert "two" in judgment.reasoning
    assert server.requests == []


async def test_an_unreadable_answer_abstains_with_the_raw_text() -> None:
    """An answer without 'Answer: A|B|tie' is ABSTAIN, both raw answers kept in metadata."""
    async with FakeModelServer() as server, client(server) as model:
        server.enqueue(FakeResponse(text="Answer: A"), FakeResponse(text="Both are lovely."))
        judgment = await PairwiseJudge("pref", model)(Context(output=("a", "b")))
    assert judgment.status is Status.ABSTAIN
    assert "Could not read a verdict from call 2" in judgment.reasoning
    answers = judgment.metadata["pairwise"]["answers"]
    assert [a["raw_output"] for a in answers] == ["Answer: A", "Both are lovely."]
    assert "answer" not in answers[1]


async def test_both_orders_are_asked_concurrently() -> None:
    """The two calls are in flight together: the server holds the first until the second arrives."""
    both = anyio.Event()
    seen: list[int] = []

    async def wait_for_both(body: dict[str, Any]) -> FakeResponse:
        seen.append(1)
        if len(seen) == 2:
            both.set()
        await both.wait()
        return fair(body)

    async with FakeModelServer(default=wait_for_both) as server, client(server) as model:
        with anyio.fail_after(20):  # generous: a sequential judge would hang here forever
            judgment = await PairwiseJudge("pref", model)(Context(output=(GOOD, BAD)))
    assert judgment.label == "A"


async def test_a_failing_call_raises_itself_and_becomes_an_error_result() -> None:
    """A model error propagates as itself (not an ExceptionGroup); the Evaluator records ERROR."""
    refuse = FakeResponse(text="bad key", status=400)
    async with FakeModelServer(default=refuse) as server, client(server) as model:
        judge = PairwiseJudge("pref", model)
        with pytest.raises(ModelHTTPError):
            await judge(Context(output=("a", "b")))
        results = await Evaluator(judge, retry=None).evaluate(Context(output=("a", "b")))
    result = results[0]
    assert result.judgment is not None and result.judgment.status is Status.ERROR
    assert result.error_type == "ModelHTTPError"


async def test_caller_cancellation_propagates_and_stops_both_calls() -> None:
    """Cancelling the caller cancels both in-flight calls; the judge returns nothing."""
    arrived: list[int] = []
    both = anyio.Event()

    async def hold(body: dict[str, Any]) -> FakeResponse:
        arrived.append(1)
        if len(arrived) == 2:
            both.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    finished: list[object] = []
    async with FakeModelServer(default=hold) as server, client(server) as model:
        judge = PairwiseJudge("pref", model)
        with anyio.fail_after(20):  # generous bound: a swallowed cancellation would hang
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    finished.append(await judge(Context(output=("a", "b"))))

                tg.start_soon(run)
                await both.wait()
                tg.cancel_scope.cancel()
    assert finished == []


async def test_custom_template_reads_the_candidates_from_metadata() -> None:
    """A user template uses {{metadata.candidate_a}} / {{metadata.candidate_b}} and the system."""
    async with FakeModelServer(default=FakeResponse(text="A")) as server, client(server) as model:
        judge = PairwiseJudge(
            "pref",
            model,
            "Q={{input}} | first={{metadata.candidate_a}} | second={{metadata.candidate_b}}",
            system="Be fair.",
        )
        judgment = await judge(Context(input="q", output={"x": "one", "y": "two"}))
    assert [_prompt(b) for b in server.requests] == [
        "Q=q | first=one | second=two",
        "Q=q | first=two | second=one",
    ]
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "Be fair."}
    assert judgment.label == "tie" and judgment.metadata["position_bias"] is True


def test_bad_options_are_refused() -> None:
    """A bad on_inconsistent or an unknown template variable is refused at construction."""

    class Model:
        name = "fake:model"

        async def complete(self, request: Any) -> Any:
            raise AssertionError("never called")

    with pytest.raises(ValueError, match="on_inconsistent"):
        PairwiseJudge("p", Model(), on_inconsistent="coin")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown variable"):
        PairwiseJudge("p", Model(), "{{candidate_a}}")


def _answer(answer: str, probs: dict[str, float]) -> FakeResponse:
    """``Answer: <answer>`` whose answer token had the alternatives ``probs`` (probabilities)."""
    top = tuple((t, math.log(p)) for t, p in probs.items())
    tokens = (
        TokenLogprob(token="Answer", logprob=-0.01),
        TokenLogprob(token=":", logprob=0.0),
        TokenLogprob(token=f" {answer}", logprob=math.log(probs[f" {answer}"]), top=top),
    )
    return FakeResponse(text=f"Answer: {answer}", logprobs=tokens)


async def test_confidence_is_the_mean_of_both_calls_logprob_confidences() -> None:
    """With logprobs, a call's confidence is its label's share of A/B/tie; the pair's the mean."""
    async with FakeModelServer() as server, client(server) as model:
        server.enqueue(
            # first order: A (= x) with 0.6 of the label mass (0.6 / (0.6 + 0.3 + 0.1))
            _answer("A", {" A": 0.6, " B": 0.3, " tie": 0.1}),
            # swapped: B (= x again) with 0.4 / (0.4 + 0.4) = 0.5 (a non-label token ignored)
            _answer("B", {" B": 0.4, " A": 0.4, " The": 0.2}),
        )
        judge = PairwiseJudge("pref", model, confidence=LogprobConfidence(top=3))
        judgment = await judge(Context(output={"x": "1", "y": "2"}))
    assert judgment.label == "A"
    confidences = [a["confidence"] for a in judgment.metadata["pairwise"]["answers"]]
    assert confidences == pytest.approx([0.6, 0.5])
    assert judgment.confidence == pytest.approx(0.55)

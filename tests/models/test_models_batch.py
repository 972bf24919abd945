"""BatchCollector: judges' model calls go through the provider batch API over real loopback HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from agentjudge.core import Context, Status
from agentjudge.engine import Budget, Evaluator
from agentjudge.judges import LLMJudge
from agentjudge.judging import spend_gate
from agentjudge.models import AnthropicMessages, BatchCollector, ModelRequest, OpenAIChat, prices
from agentjudge.models._batch import custom_id
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

TEMPLATE = "Question: {{input}}\nAnswer: {{output}}\nIs the answer correct?"
FAST: dict[str, Any] = {"linger": 30.0, "poll_interval": 0.01, "max_poll_interval": 0.05}
"""Flushes happen by max_batch_size (linger never expires in a test); polls are quick."""


def _verdict_by_output(data: Any) -> FakeResponse:
    prompt = data["messages"][-1]["content"]
    return FakeResponse(text="Answer: NO" if "wrong" in prompt else "Answer: YES")


def _contexts(n: int) -> list[Context]:
    return [Context(input=f"q{i}", output="wrong" if i % 5 == 0 else f"a{i}") for i in range(n)]


async def _evaluate(judge: LLMJudge, contexts: list[Context]) -> list[Any]:
    evaluator = Evaluator(judge, max_concurrency=100, timeout=20.0)  # bound for a hang
    cases = [case async for case in evaluator.run(contexts, concurrency=100)]
    return sorted((c for case in cases for c in case.results), key=lambda r: r.name)


async def test_many_contexts_go_out_as_one_openai_batch(tmp_path: Path) -> None:
    """20 concurrent LLM-judge calls become one OpenAI batch; verdicts match the answers."""
    async with (
        FakeModelServer(_verdict_by_output) as server,
        OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=20, **FAST) as bc,
    ):
        judge = LLMJudge("correct", bc, TEMPLATE)
        evaluator = Evaluator(judge, max_concurrency=100, timeout=20.0)  # bound for a hang
        contexts = _contexts(20)
        cases = {c.context.input: c async for c in evaluator.run(contexts, concurrency=100)}
    assert len(server.batches.created) == 1
    assert len(server.batches.created[0][1]) == 20
    online = [r for r in server.received if r.path == "/v1/chat/completions" and r.headers]
    assert online == []  # no online call: the items were answered inside the batch
    for ctx in contexts:
        [result] = cases[ctx.input].results
        expected = Status.FAIL if ctx.output == "wrong" else Status.PASS
        assert result.status is expected
        assert result.judgment is not None
        assert result.judgment.metadata["batch"] is True
        assert result.judgment.metadata["usage"]["input_tokens"] > 0
        assert result.queued_s > 0  # waiting for the batch is queueing, not judge work
    state = json.loads((tmp_path / "b.json").read_text())
    assert state["batches"][0]["id"] == server.batches.created[0][0]
    assert state["batches"][0]["status"] == "completed"


class _Grade(BaseModel):
    score: float
    reasoning: str


async def test_anthropic_batch_with_structured_output(tmp_path: Path) -> None:
    """Anthropic Message Batches carry the forced tool; the tool input becomes the score."""
    answer = FakeResponse(json={"score": 0.9, "reasoning": "good"})
    async with (
        FakeModelServer(answer) as server,
        AnthropicMessages("claude-x", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=6, **FAST) as bc,
    ):
        judge = LLMJudge("graded", bc, TEMPLATE, output_model=_Grade, threshold=0.5)
        results = await _evaluate(judge, _contexts(6))
    assert len(server.batches.created) == 1
    assert [r.status for r in results] == [Status.PASS] * 6
    assert all(r.score == pytest.approx(0.9) for r in results)
    assert all(r.judgment is not None and r.judgment.metadata["batch"] for r in results)


async def test_expired_and_errored_items_become_error_results(tmp_path: Path) -> None:
    """Expired and errored batch items are ERROR results with the provider's reason."""
    async with (
        FakeModelServer(_verdict_by_output) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=3, **FAST) as bc,
    ):
        judge = LLMJudge("correct", bc, TEMPLATE)
        requests = [judge.build_request(f"prompt {i}") for i in range(3)]
        ids = [bc.client.request_body(r, list(r.messages), None) for r in requests]
        server.batches.expire = {custom_id(ids[0])}
        server.batches.fail = {custom_id(ids[1])}
        outcomes: dict[int, Any] = {}

        async def ask(i: int) -> None:
            try:
                outcomes[i] = await bc.complete(requests[i])
            except Exception as exc:
                outcomes[i] = exc

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(ask, i)
    assert "batch_expired" in str(outcomes[0]) and "completion window" in str(outcomes[0])
    assert "HTTP 500" in str(outcomes[1]) and "server error" in str(outcomes[1])
    assert outcomes[2].text == "Answer: YES" and outcomes[2].batch is True


async def test_failed_batch_makes_every_judgment_an_error(tmp_path: Path) -> None:
    """A batch that fails validation gives ERROR results naming the provider's reason."""
    async with (
        FakeModelServer(_verdict_by_output) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=4, **FAST) as bc,
    ):
        server.batches.fail_batch = "model 'm' is not available for batch"
        results = await _evaluate(LLMJudge("correct", bc, TEMPLATE), _contexts(4))
    assert [r.status for r in results] == [Status.ERROR] * 4
    assert all("failed validation: model 'm'" in (r.reasoning or "") for r in results)
    assert all(r.error_type == "ModelError" for r in results)


async def test_retry_online_answers_an_expired_item(tmp_path: Path) -> None:
    """With retry_online=True an expired item is asked once more online and succeeds."""
    async with (
        FakeModelServer(_verdict_by_output) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k") as model,
        BatchCollector(
            model, state_path=tmp_path / "b.json", max_batch_size=1, retry_online=True, **FAST
        ) as bc,
    ):
        request = ModelRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
        server.batches.expire = {
            custom_id(model.request_body(request, list(request.messages), None))
        }
        response = await bc.complete(request)
    assert response.text == "Answer: YES"
    assert response.batch is False  # answered online: online prices
    assert [r.path for r in server.received if r.headers.get("authorization")][-1] == (
        "/v1/chat/completions"
    )


async def test_restart_resumes_polling_instead_of_resubmitting(tmp_path: Path) -> None:
    """A collector restarted on the same state file polls the saved batch: nothing resubmitted."""
    state = tmp_path / "run" / "batches.json"
    contexts = _contexts(5)
    async with FakeModelServer(_verdict_by_output) as server:
        server.batches.complete_after = 10**6  # the first run never sees the batch end
        async with OpenAIChat("m", base_url=server.base_url, api_key="k") as model:
            async with BatchCollector(model, state_path=state, max_batch_size=5, **FAST) as bc:
                judge = LLMJudge("correct", bc, TEMPLATE)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_evaluate, judge, contexts)
                    await server.batches.wait_created()
                    tg.cancel_scope.cancel()  # the run is killed while the batch is pending
            saved = json.loads(state.read_text())
            assert [b["id"] for b in saved["batches"]] == [server.batches.created[0][0]]
            server.batches.complete_after = 1  # the provider finishes the batch meanwhile
            async with BatchCollector(model, state_path=state, max_batch_size=5, **FAST) as bc:
                results = await _evaluate(LLMJudge("correct", bc, TEMPLATE), contexts)
    assert len(server.batches.created) == 1  # resumed, not resubmitted
    assert [r.status for r in results].count(Status.PASS) == 4
    assert [r.status for r in results].count(Status.FAIL) == 1


async def test_a_bad_state_file_is_a_clear_error(tmp_path: Path) -> None:
    """A state file with a wrong field is refused naming the file and the field."""
    state = tmp_path / "b.json"
    state.write_text(json.dumps({"version": 1, "client": "openai:m", "batches": [{"id": 3}]}))
    model = OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ValueError, match=r"b\.json: not a BatchCollector state file: batches\.0"):
        async with BatchCollector(model, state_path=state):
            pass
    state.write_text(json.dumps({"version": 1, "client": "openai:other"}))
    with pytest.raises(ValueError, match="field 'client' is 'openai:other'"):
        async with BatchCollector(model, state_path=state):
            pass


def test_bad_options_are_refused() -> None:
    """Non-positive sizes and intervals, and a non-HTTP client, are refused by name."""
    model = OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ValueError, match="max_batch_size must be an integer >= 1"):
        BatchCollector(model, state_path="x.json", max_batch_size=0)
    with pytest.raises(ValueError, match="poll_interval must be a finite number > 0"):
        BatchCollector(model, state_path="x.json", poll_interval=float("nan"))
    with pytest.raises(TypeError, match="wraps an HTTPModelClient"):
        BatchCollector(object(), state_path="x.json")  # type: ignore[arg-type]


async def test_the_api_key_never_shows_in_a_refused_submission(tmp_path: Path) -> None:
    """A submission the provider refuses is an error without the API key in it."""
    secret = "sk-very-secret-key-123456"

    async with (
        FakeModelServer() as server,
        OpenAIChat("m", base_url=server.url + "/nowhere", api_key=secret) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=1, **FAST) as bc,
    ):
        request = ModelRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
        with pytest.raises(Exception, match="submitting a batch failed") as caught:
            await bc.complete(request)
    assert secret not in str(caught.value)
    assert secret not in repr(bc)


async def test_a_saved_batch_the_provider_does_not_know_fails_at_once(tmp_path: Path) -> None:
    """Resuming a batch id the provider answers 404 for is an ERROR at once, not endless polls."""
    request = ModelRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
    async with (
        FakeModelServer() as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k") as model,
    ):
        cid = custom_id(model.request_body(request, list(request.messages), None))
        saved = {"client": "openai:m", "batches": [{"id": "batch_gone", "custom_ids": [cid]}]}
        (tmp_path / "b.json").write_text(json.dumps(saved))
        options = {**FAST, "poll_interval": 30.0, "max_poll_errors": 1000}
        async with BatchCollector(model, state_path=tmp_path / "b.json", **options) as bc:
            with anyio.fail_after(20):  # generous bound: a 404 must not be polled again
                with pytest.raises(Exception, match="HTTP 404") as caught:
                    await bc.complete(request)
    assert "batch_gone" in str(caught.value)
    assert server.batches.created == []


def test_batch_answers_cost_batch_prices() -> None:
    """A response that came through a batch is priced with the batch prices."""
    from agentjudge.models import ModelResponse, PriceTable, Usage, response_cost

    table = PriceTable()
    table.set("openai:m", input=2.0, output=4.0, batch_input=1.0, batch_output=2.0)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    online = ModelResponse(text="x", usage=usage, model="m")
    batched = ModelResponse(text="x", usage=usage, model="m", batch=True)
    assert response_cost("openai:m", online, table=table) == 6.0
    assert response_cost("openai:m", batched, table=table) == 3.0


async def test_batch_answers_carry_the_logprobs_a_confidence_judge_asked_for(
    tmp_path: Path,
) -> None:
    """LogprobConfidence through an OpenAI batch: logprobs asked, read back, confidence set."""
    from agentjudge.judges import LogprobConfidence

    async with (
        FakeModelServer(_verdict_by_output) as server,
        OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=5, **FAST) as bc,
    ):
        judge = LLMJudge("correct", bc, TEMPLATE, confidence=LogprobConfidence(top=3))
        results = await _evaluate(judge, _contexts(5))
    [(_, ids)] = server.batches.created
    assert len(ids) == 5
    sent = [r.json for r in server.received if r.path == "/v1/chat/completions"]  # batch items
    assert len(sent) == 5 and all(r["logprobs"] is True for r in sent)
    for result in results:
        assert result.judgment is not None and result.judgment.metadata["batch"] is True
        assert "confidence_error" not in result.judgment.metadata
        assert result.judgment.confidence is not None


async def test_a_budget_counts_batch_answers_at_batch_prices(tmp_path: Path) -> None:
    """Under a Budget each batched call holds its bound until the batch answers, then its cost."""
    budget = Budget(usd=10.0)
    async with (
        FakeModelServer(_verdict_by_output) as server,
        OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=20, **FAST) as bc,
    ):
        judge = LLMJudge("correct", bc, TEMPLATE, max_tokens=100)
        evaluator = Evaluator(judge, max_concurrency=100, timeout=20.0, budget=budget)
        results = [
            r async for c in evaluator.run(_contexts(20), concurrency=100) for r in c.results
        ]
    assert len(server.batches.created) == 1  # reserving did not hold any call back
    costs = [r.judgment.metadata["cost_usd"] for r in results if r.judgment is not None]
    assert len(costs) == 20 and all(r.judgment.metadata["batch"] for r in results if r.judgment)
    assert budget.spent_usd == pytest.approx(sum(costs)) and budget.spent_usd > 0


async def test_a_budget_counts_an_online_retry_once(tmp_path: Path) -> None:
    """An expired batch item gives its hold back; the online retry reserves and counts itself."""
    budget = Budget(usd=10.0)
    async with (
        FakeModelServer(_verdict_by_output) as server,
        OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k") as model,
        BatchCollector(
            model, state_path=tmp_path / "b.json", max_batch_size=1, retry_online=True, **FAST
        ) as bc,
    ):
        request = ModelRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
        server.batches.expire = {
            custom_id(model.request_body(request, list(request.messages), None))
        }
        token = spend_gate.set(budget.gate("j"))
        try:
            response = await bc.complete(request)
        finally:
            spend_gate.reset(token)
    assert response.batch is False
    online = prices.cost(model.name, response.usage, model=response.model)
    assert online is not None and budget.spent_usd == pytest.approx(online)

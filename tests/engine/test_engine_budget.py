"""Budgets: refused model calls are ERROR results, never missing, and spending stays in bounds."""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agentjudge.core import Context, Judgment, Status
from agentjudge.engine import Budget, Evaluator, Jury
from agentjudge.judges import LLMJudge
from agentjudge.judging import judge
from agentjudge.models import OpenAIChat, SqliteCache, prices
from agentjudge.models._spend import seen_by
from agentjudge.testing import FakeModelServer, FakeResponse

# gpt-4o-mini: $0.15 in + $0.60 out per million. The judge caps answers at 750k tokens and the
# server uses all of them with a 1-token prompt ("q0" estimates as 1 token): each call costs
# exactly what it reserves, $0.45 + $0.00000015.
MAX_TOKENS = 750_000
USAGE = {"prompt_tokens": 1, "completion_tokens": MAX_TOKENS, "total_tokens": MAX_TOKENS + 1}
CALL_USD = (1 * 0.15 + MAX_TOKENS * 0.60) / 1e6
CASES = [Context(input=f"q{i}") for i in range(10)]


@asynccontextmanager
async def priced_model(
    name: str = "gpt-4o-mini", cache: SqliteCache | None = None
) -> AsyncIterator[tuple[FakeModelServer, OpenAIChat]]:
    """A fake server answering YES with USAGE, and a client on it."""
    answer = FakeResponse(text="Answer: YES", usage=USAGE)
    async with (
        FakeModelServer(answer) as server,
        OpenAIChat(name, base_url=server.base_url, api_key="k", cache=cache) as model,
    ):
        yield server, model


def capped(model: OpenAIChat, name: str = "j") -> LLMJudge:
    """The judge of these tests: answers capped at MAX_TOKENS (its calls' upper bound)."""
    return LLMJudge(name, model, "{{input}}", max_tokens=MAX_TOKENS)


async def _run_cases(evaluator: Evaluator, inputs: list[str]) -> list[Status | None]:
    """Statuses of one case per input, run one after the other."""
    statuses = []
    async for case in evaluator.run([Context(input=i) for i in inputs], concurrency=1):
        statuses.extend(r.status for r in case.results)
    return statuses


async def _run(evaluator: Evaluator) -> list[Status | None]:
    statuses = []
    async for case in evaluator.run(CASES):
        statuses.extend(r.status for r in case.results)
    return statuses


async def test_usd_budget_stops_new_calls_and_records_errors() -> None:
    """Budget for 3.5 calls: 3 calls are made, the other 7 judgments are BudgetExhausted."""
    budget = Budget(usd=3.5 * CALL_USD)
    async with priced_model() as (server, model):
        evaluator = Evaluator(capped(model), budget=budget)
        results = [r async for case in evaluator.run(CASES) for r in case.results]
    assert len(results) == 10  # never missing
    errors = [r for r in results if r.status is Status.ERROR]
    assert len(errors) == 7 and len(server.requests) == 3
    # refused before the judge started (0 attempts) or at its model call (1), never sent
    assert all(r.error_type == "BudgetExhausted" and r.attempts <= 1 for r in errors)
    assert re.search(
        r"budget exhausted: \$[0-9.]+ spent.* of the \$1\.5750 limit; the next call of 'j'",
        errors[0].reasoning or "",
    )
    assert budget.spent_usd == pytest.approx(3 * CALL_USD) and budget.refused == 7


async def test_concurrent_calls_never_spend_past_the_budget() -> None:
    """At concurrency 10, each call reserves its bound before it is sent: spend stays <= limit."""
    budget = Budget(usd=4.5 * CALL_USD)
    async with priced_model() as (server, model):
        evaluator = Evaluator(capped(model), budget=budget)
        statuses = [s async for case in evaluator.run(CASES, concurrency=10) for s in
                    (r.status for r in case.results)]  # fmt: skip
    assert len(server.requests) == 4
    assert statuses.count(Status.ERROR) == 6
    assert budget.spent_usd <= 4.5 * CALL_USD


async def test_token_budget() -> None:
    """A token budget counts input + output tokens; a call reserves estimate + max_tokens."""
    budget = Budget(tokens=3_000_000)
    async with priced_model() as (server, model):
        statuses = await _run(Evaluator(capped(model), budget=budget))
    assert len(server.requests) == 3  # a 4th call's 750,001 tokens would pass 3,000,000
    assert statuses.count(Status.ERROR) == 7
    assert budget.spent_tokens == 3 * (MAX_TOKENS + 1)


async def test_unpriced_model_cannot_spend_a_usd_budget() -> None:
    """With a dollar budget, a call whose model has no price is refused before it is sent."""
    async with priced_model("house-model") as (server, model):
        evaluator = Evaluator(capped(model), budget=Budget(usd=100.0))
        results = [r async for case in evaluator.run(CASES) for r in case.results]
    assert server.requests == []
    assert [r.error_type for r in results] == ["BudgetExhausted"] * 10
    assert "'openai:house-model' of judge 'j' has no price" in (results[0].reasoning or "")


async def test_deterministic_judges_are_not_metered() -> None:
    """An exhausted budget refuses only model-backed judges; the others keep judging."""

    @judge
    def length(ctx: Context) -> Judgment:
        return Judgment.passed("ok")

    async with priced_model() as (server, model):
        jury = Jury({"llm": capped(model), "length": length})
        evaluator = Evaluator(jury, budget=Budget(usd=0.0))
        results = [r async for case in evaluator.run(CASES) for r in case.results]
    assert server.requests == []
    by_name = {name: [r for r in results if r.name == name] for name in ("llm", "length")}
    assert all(r.error_type == "BudgetExhausted" for r in by_name["llm"])
    assert all(r.status is Status.PASS for r in by_name["length"])


async def test_cache_hits_do_not_spend(tmp_path: Path) -> None:
    """Answers served from the cache cost nothing, so a warm cache runs within any budget."""
    async with SqliteCache(tmp_path / "c.db") as cache, priced_model(cache=cache) as (server, m):
        await _run(Evaluator(capped(m)))  # warm the cache
        budget = Budget(usd=CALL_USD / 2)
        statuses = await _run(Evaluator(capped(m), budget=budget))
    assert statuses == [Status.PASS] * 10
    assert len(server.requests) == 10 and budget.spent_usd == 0.0


def test_budget_validates_limits() -> None:
    """Negative, non-finite or wrongly typed limits are a ValueError naming the field."""
    with pytest.raises(ValueError, match="Budget usd must be finite and >= 0"):
        Budget(usd=-1)
    with pytest.raises(ValueError, match="Budget tokens must be an integer"):
        Budget(tokens=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="budget must be a Budget"):
        Evaluator(None, budget=5.0)  # type: ignore[arg-type]


WAVE_MODEL = "budget-wave"
"""Priced at $1000 per million tokens ($0.001 a token) for the wave tests."""
LONG = "x" * 1600


def wave_answer(log: list[float]) -> Callable[[Any], FakeResponse]:
    """Answers with usage within each request's bound; a short prompt is answered cheaply.

    Input tokens are what the estimator says (characters / 4 per message); a prompt without
    LONG gets 1 input and 1 output token ($0.002), one with it its 400+ input tokens and 50
    output tokens ($0.45). Each call's cost is appended to ``log`` (the provider's bill).
    """

    def answer(body: Any) -> FakeResponse:
        contents = [m["content"] for m in body["messages"]]
        if any(LONG in c for c in contents):
            tokens_in = sum(math.ceil(len(c) / 4) for c in contents)
            tokens_out = body["max_tokens"]
        else:
            tokens_in = tokens_out = 1
        log.append((tokens_in + tokens_out) / 1000)
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}
        return FakeResponse(text="Answer: YES", usage=usage)

    return answer


@pytest.fixture
def wave_price() -> Iterator[None]:
    prices.set(f"openai:{WAVE_MODEL}", input=1000.0, output=1000.0)
    try:
        yield
    finally:
        prices.set(f"openai:{WAVE_MODEL}")


@pytest.mark.usefixtures("wave_price")
async def test_a_cheap_first_call_opens_no_wave_past_the_budget() -> None:
    """Budget(usd=5) at concurrency 100, first call $0.002, the rest $0.45: spend <= $5.

    Each request reserves its own bound (estimated input + max_tokens at the model's price)
    before it is sent; a budget that extrapolated from the first call once let the whole
    wave through and spent about $44.
    """
    bill: list[float] = []
    cases = [Context(input="q")] + [Context(input=f"{LONG}{i}") for i in range(99)]
    budget = Budget(usd=5.0)
    async with (
        FakeModelServer(wave_answer(bill)) as server,
        OpenAIChat(WAVE_MODEL, base_url=server.base_url, api_key="k", max_concurrency=100) as m,
    ):
        judge = LLMJudge("j", m, "{{input}}", max_tokens=50)
        evaluator = Evaluator(judge, budget=budget, max_concurrency=100)
        results = [r async for case in evaluator.run(cases, concurrency=100) for r in case.results]
    assert len(results) == 100  # never missing
    assert {r.error_type for r in results if r.status is Status.ERROR} <= {"BudgetExhausted"}
    assert sum(bill) <= 5.0 + 1e-9  # what the provider billed
    assert budget.spent_usd == pytest.approx(sum(bill))
    assert sum(bill) > 5.0 - 0.46  # at most one call's bound was left unspent


@pytest.mark.usefixtures("wave_price")
async def test_inputs_above_the_estimate_scale_later_reservations() -> None:
    """Answers showing 3x the estimated input tokens make later reservations 3x as large."""
    prompt = f"{LONG}."  # 1601 characters: estimated at 401 tokens
    usage = {"prompt_tokens": 3 * 401, "completion_tokens": 50}
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES", usage=usage)) as server,
        OpenAIChat(WAVE_MODEL, base_url=server.base_url, api_key="k") as model,
    ):
        judge = LLMJudge("j", model, "{{input}}", max_tokens=50)
        budget = Budget(usd=3.0)  # the first call reserves $0.451 and costs $1.253
        statuses = await _run_cases(Evaluator(judge, budget=budget), [prompt] * 4)
        assert seen_by(model).input_ratio == pytest.approx(3.0)
    # afterwards each call reserves its real $1.253: the third would pass $3, so it is refused
    assert statuses == [Status.PASS, Status.PASS, Status.ERROR, Status.ERROR]
    assert budget.spent_usd == pytest.approx(2 * 1.253)


@pytest.mark.usefixtures("wave_price")
async def test_an_answer_without_usage_counts_its_whole_bound() -> None:
    """A provider that reports no usage is charged the reserved bound, never nothing."""
    body = {"choices": [{"message": {"role": "assistant", "content": "Answer: YES"}}]}
    async with (
        FakeModelServer(FakeResponse(raw_body=json.dumps(body))) as server,
        OpenAIChat(WAVE_MODEL, base_url=server.base_url, api_key="k") as model,
    ):
        budget = Budget(usd=5.0, tokens=10_000)
        judge = LLMJudge("j", model, "{{input}}", max_tokens=50)
        assert await _run_cases(Evaluator(judge, budget=budget), ["abcd"]) == [Status.PASS]
    assert budget.spent_tokens == 1 + 50  # "abcd" estimates as 1 token, plus max_tokens
    assert budget.spent_usd == pytest.approx(51 / 1000)


@pytest.mark.usefixtures("wave_price")
async def test_a_failed_call_gives_its_reservation_back() -> None:
    """A call that fails is not counted and leaves no reservation behind."""
    async with (
        FakeModelServer(FakeResponse(status=400, text="bad request")) as server,
        OpenAIChat(WAVE_MODEL, base_url=server.base_url, api_key="k") as model,
    ):
        budget = Budget(usd=0.06)  # room for exactly one call's bound ($0.051) at a time
        judge = LLMJudge("j", model, "{{input}}", max_tokens=50)
        statuses = await _run_cases(Evaluator(judge, budget=budget, retry=None), ["abcd"] * 3)
    assert statuses == [Status.ERROR] * 3 and len(server.requests) == 3
    assert budget.spent_usd == 0.0 and not budget.exhausted

"""Budgets: refused model calls are ERROR results, never missing, and spending stays in bounds."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agentjudge.core import Context, Judgment, Status
from agentjudge.engine import Budget, Evaluator, Jury
from agentjudge.judges import LLMJudge
from agentjudge.judging import judge
from agentjudge.models import OpenAIChat, SqliteCache
from agentjudge.testing import FakeModelServer, FakeResponse

# gpt-4o-mini: $0.15 in + $0.60 out per million: 1M in + 0.5M out = $0.45 per call.
USAGE = {"prompt_tokens": 1_000_000, "completion_tokens": 500_000, "total_tokens": 1_500_000}
CALL_USD = 0.45
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


async def _run(evaluator: Evaluator) -> list[Status | None]:
    statuses = []
    async for case in evaluator.run(CASES):
        statuses.extend(r.status for r in case.results)
    return statuses


async def test_usd_budget_stops_new_calls_and_records_errors() -> None:
    """Budget for 3.5 calls: 3 calls are made, the other 7 judgments are BudgetExhausted."""
    budget = Budget(usd=3.5 * CALL_USD)
    async with priced_model() as (server, model):
        evaluator = Evaluator(LLMJudge("j", model, "{{input}}"), budget=budget)
        results = [r async for case in evaluator.run(CASES) for r in case.results]
    assert len(results) == 10  # never missing
    errors = [r for r in results if r.status is Status.ERROR]
    assert len(errors) == 7 and len(server.requests) == 3
    assert all(r.error_type == "BudgetExhausted" and r.attempts == 0 for r in errors)
    assert re.search(
        r"budget exhausted: \$[0-9.]+ spent.* of the \$1\.5750 limit; the next call of 'j'",
        errors[0].reasoning or "",
    )
    assert budget.spent_usd == pytest.approx(3 * CALL_USD) and budget.refused == 7


async def test_concurrent_calls_never_spend_past_the_budget() -> None:
    """At max_concurrency 10, running calls reserve their estimate: spending stays <= limit."""
    budget = Budget(usd=4 * CALL_USD)
    async with priced_model() as (server, model):
        evaluator = Evaluator(LLMJudge("j", model, "{{input}}"), budget=budget)
        statuses = [s async for case in evaluator.run(CASES, concurrency=10) for s in
                    (r.status for r in case.results)]  # fmt: skip
    assert len(server.requests) == 4
    assert statuses.count(Status.ERROR) == 6
    assert budget.spent_usd <= 4 * CALL_USD + 1e-9


async def test_token_budget() -> None:
    """A token budget counts input + output tokens of finished calls."""
    budget = Budget(tokens=3_000_000)
    async with priced_model() as (server, model):
        statuses = await _run(Evaluator(LLMJudge("j", model, "{{input}}"), budget=budget))
    assert len(server.requests) == 2
    assert statuses.count(Status.ERROR) == 8
    assert budget.spent_tokens == 3_000_000


async def test_unpriced_model_cannot_spend_a_usd_budget() -> None:
    """With a dollar budget, a judge whose model has no price stops after its first answer."""
    async with priced_model("house-model") as (server, model):
        evaluator = Evaluator(LLMJudge("j", model, "{{input}}"), budget=Budget(usd=100.0))
        results = [r async for case in evaluator.run(CASES) for r in case.results]
    assert len(server.requests) == 1
    refused = [r for r in results if r.error_type == "BudgetExhausted"]
    assert len(refused) == 9
    assert "'house-model' of judge 'j' has no price" in (refused[0].reasoning or "")


async def test_deterministic_judges_are_not_metered() -> None:
    """An exhausted budget refuses only model-backed judges; the others keep judging."""

    @judge
    def length(ctx: Context) -> Judgment:
        return Judgment.passed("ok")

    async with priced_model() as (server, model):
        jury = Jury({"llm": LLMJudge("j", model, "{{input}}"), "length": length})
        evaluator = Evaluator(jury, budget=Budget(usd=0.0))
        results = [r async for case in evaluator.run(CASES) for r in case.results]
    assert server.requests == []
    by_name = {name: [r for r in results if r.name == name] for name in ("llm", "length")}
    assert all(r.error_type == "BudgetExhausted" for r in by_name["llm"])
    assert all(r.status is Status.PASS for r in by_name["length"])


async def test_cache_hits_do_not_spend(tmp_path: Path) -> None:
    """Answers served from the cache cost nothing, so a warm cache runs within any budget."""
    async with SqliteCache(tmp_path / "c.db") as cache, priced_model(cache=cache) as (server, m):
        await _run(Evaluator(LLMJudge("j", m, "{{input}}")))  # warm the cache
        budget = Budget(usd=CALL_USD / 2)
        statuses = await _run(Evaluator(LLMJudge("j", m, "{{input}}"), budget=budget))
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

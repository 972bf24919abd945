"""Providers that report each call's charge: an OpenRouter answer costs its ``usage.cost``.

OpenRouter bills a model at the price of whichever provider served the call, so no table price
per model name holds; each answer says what it was charged (its usage accounting). Every test
goes through the real client over loopback HTTP against `FakeModelServer`, which sends
``usage.cost`` the way OpenRouter does (``FakeResponse(cost=...)``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from agentjudge.core import Context, Message
from agentjudge.engine import Budget, Evaluator
from agentjudge.judges import LLMJudge
from agentjudge.models import ModelRequest, OpenAIChat, model_from_string, prices, response_cost
from agentjudge.models._registry import PROVIDERS, reports_cost
from agentjudge.testing import FakeModelServer, FakeResponse

USAGE = {"prompt_tokens": 1_000, "completion_tokens": 200, "total_tokens": 1_200}
ROUTER = "openrouter:openai/gpt-4o-mini"
KEY = "key-123456789"


def ask(schema: Mapping[str, Any] | None = None) -> ModelRequest:
    return ModelRequest(
        messages=(Message(role="user", content="Grade this."),), response_schema=schema
    )


@pytest.fixture
def router_price() -> Iterator[None]:
    """A table price for the OpenRouter model (what a budget reserves by), removed after."""
    prices.set(ROUTER, input=100.0, output=100.0)
    yield
    prices.set(ROUTER)


def test_only_openrouter_reports_its_costs() -> None:
    """The registry's price key: OpenRouter's preset reports costs, the other providers do not."""
    assert reports_cost("openrouter") and reports_cost("OpenRouter")
    for provider in ("openai", "anthropic", "groq", "together", "mistral", "bedrock", "nope"):
        assert not reports_cost(provider), provider


async def test_an_openrouter_answer_costs_the_charge_it_reports() -> None:
    """No table price is needed: the answer's usage.cost is its cost."""
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=USAGE, cost=0.0123)) as server,
        model_from_string(ROUTER, base_url=server.base_url, api_key=KEY) as model,
    ):
        response = await model.complete(ask())
    assert ROUTER not in prices
    assert response.raw is not None and response.raw["usage"]["cost"] == 0.0123
    assert response_cost(model.name, response) == 0.0123
    assert server.received[0].json["usage"] == {"include": True}  # the usage-accounting opt-in


async def test_only_openrouter_requests_ask_for_usage_accounting() -> None:
    """Other presets send no "usage" field; an extra_body "usage" overrides OpenRouter's."""
    async with FakeModelServer(FakeResponse(text="PASS", usage=USAGE)) as server:
        for name in ("groq:llama-3.1-8b-instant", "mistral:mistral-small-latest", "openai:gpt-4o"):
            async with model_from_string(name, base_url=server.base_url, api_key=KEY) as model:
                await model.complete(ask())
        own = {"usage": {"include": False}}
        async with model_from_string(
            ROUTER, base_url=server.base_url, api_key=KEY, extra_body=own
        ) as model:
            await model.complete(ask())
    assert ["usage" in r.json for r in server.received] == [False, False, False, True]
    assert server.received[-1].json["usage"] == {"include": False}


async def test_a_run_costs_what_openrouter_reported() -> None:
    """An evaluation on OpenRouter: each result's cost_usd is its call's charge, summed by case."""
    charges = [0.001, 0.0025, 0.04]
    async with FakeModelServer(FakeResponse(text="Answer: YES", usage=USAGE)) as server:
        for charge in charges:
            server.enqueue(FakeResponse(text="Answer: YES", usage=USAGE, cost=charge))
        async with model_from_string(ROUTER, base_url=server.base_url, api_key=KEY) as model:
            evaluator = Evaluator(LLMJudge("j", model, "{{input}}"))
            cases = [Context(input=f"q{i}") for i in range(len(charges))]
            results = [
                r async for case in evaluator.run(cases, concurrency=1) for r in case.results
            ]
    assert [r.cost_usd for r in results] == pytest.approx(charges)
    assert sum(r.cost_usd or 0.0 for r in results) == pytest.approx(sum(charges))


@pytest.mark.usefixtures("router_price")
async def test_the_reported_charge_wins_over_a_table_price() -> None:
    """A price set for an OpenRouter model is not used when the answer says what it cost."""
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=USAGE, cost=0.5)) as server,
        model_from_string(ROUTER, base_url=server.base_url, api_key=KEY) as model,
    ):
        response = await model.complete(ask())
    assert response_cost(model.name, response) == 0.5


async def test_a_cost_in_another_providers_answer_is_not_trusted() -> None:
    """usage.cost from a provider that does not report costs is ignored: the table prices it."""
    async with FakeModelServer(FakeResponse(text="PASS", usage=USAGE, cost=99.0)) as server:
        for name in ("openai:gpt-4o-mini", "groq:llama-3.1-8b-instant"):
            async with model_from_string(name, base_url=server.base_url, api_key=KEY) as model:
                response = await model.complete(ask())
            assert response_cost(name, response) == pytest.approx(prices.cost(name, response.usage))
            assert response_cost(name, response) != 99.0


@pytest.mark.parametrize("bad", ['"0.5"', "-1", "true", "null", "1e999"])
@pytest.mark.usefixtures("router_price")
async def test_a_malformed_reported_cost_falls_back_to_the_table(bad: str) -> None:
    """A cost that is no number of USD >= 0 is not a charge: the table prices the answer."""
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "openai/gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "PASS"}}],
        "usage": {**USAGE, "cost": "COST"},
    }
    raw = json.dumps(body).replace('"COST"', bad)
    async with (
        FakeModelServer(FakeResponse(raw_body=raw)) as server,
        model_from_string(ROUTER, base_url=server.base_url, api_key=KEY) as model,
    ):
        response = await model.complete(ask())
    assert response_cost(model.name, response) == pytest.approx((1_000 + 200) * 100.0 / 1e6)


@pytest.mark.usefixtures("router_price")
async def test_an_answer_reasked_for_its_schema_is_priced_from_the_table() -> None:
    """A schema re-ask sums two requests' usage; the last body's charge covers one: table price."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(text="not json", usage=USAGE, cost=0.01))
        server.enqueue(FakeResponse(json={"ok": True}, usage=USAGE, cost=0.02))
        async with model_from_string(ROUTER, base_url=server.base_url, api_key=KEY) as model:
            response = await model.complete(ask(schema))
    assert response.parsed == {"ok": True} and response.usage.input_tokens == 2_000
    assert response_cost(model.name, response) == pytest.approx(2 * 1_200 * 100.0 / 1e6)


@pytest.mark.usefixtures("router_price")
async def test_a_budget_settles_an_openrouter_call_at_its_reported_charge() -> None:
    """A dollar budget reserves by the table price, then counts what the call was charged."""
    budget = Budget(usd=10.0)
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES", usage=USAGE, cost=0.0042)) as server,
        model_from_string(ROUTER, base_url=server.base_url, api_key=KEY) as model,
    ):
        evaluator = Evaluator(LLMJudge("j", model, "{{input}}"), budget=budget)
        [result] = await evaluator.evaluate(input="q")
    assert result.cost_usd == pytest.approx(0.0042)
    assert budget.spent_usd == pytest.approx(0.0042)


def test_a_fake_response_refuses_a_cost_that_is_no_charge() -> None:
    """FakeResponse(cost=...) takes a finite number of USD >= 0, as OpenRouter reports."""
    for bad in (-0.01, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="cost must be a finite number"):
            FakeResponse(cost=bad)


class _Gateway(OpenAIChat):
    """A provider class of its own whose answers carry their charge (the protocol's price key)."""

    provider = "gateway"
    reports_cost = True


async def test_a_provider_class_that_reports_costs_is_priced_by_its_charge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """reports_cost on a registered class (not only a preset) makes its charges its costs."""
    monkeypatch.setitem(PROVIDERS, "gateway", _Gateway)
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=USAGE, cost=0.25)) as server,
        model_from_string("gateway:big", base_url=server.base_url, api_key=KEY) as model,
    ):
        response = await model.complete(ask())
    assert model.name == "gateway:big" and reports_cost("gateway")
    assert response_cost(model.name, response) == 0.25

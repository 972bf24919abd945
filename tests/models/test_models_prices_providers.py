"""The shipped prices of the providers beyond OpenAI and Anthropic, through the real clients.

Each priced model is called over loopback HTTP against `FakeModelServer` through the client
`model_from_string` builds, and its answer is priced the way judges price it (`response_cost`):
the expected dollars are written out here, so a changed table entry fails a test.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from agentjudge.core import Message
from agentjudge.models import ModelRequest, PriceTable, Usage, model_from_string, response_cost
from agentjudge.testing import FakeModelServer, FakeResponse

OPENAI_USAGE = {"prompt_tokens": 1_000_000, "completion_tokens": 500_000, "total_tokens": 1_500_000}
GEMINI_USAGE = {
    "promptTokenCount": 1_000_000,
    "candidatesTokenCount": 500_000,
    "totalTokenCount": 1_500_000,
}
READ = "2026-11-26"

# client name -> USD for 1M input + 0.5M output tokens (input + output / 2 per the table)
PRESET_COSTS = {
    "xai:grok-4-1-fast-reasoning": 0.20 + 0.50 / 2,
    "xai:grok-4-1-fast-non-reasoning": 0.20 + 0.50 / 2,
    "xai:grok-4.20-0309-reasoning": 2.00 + 6.00 / 2,
    "xai:grok-4.20-0309-non-reasoning": 2.00 + 6.00 / 2,
    "fireworks:accounts/fireworks/models/gpt-oss-120b": 0.15 + 0.60 / 2,
    "fireworks:accounts/fireworks/models/gpt-oss-20b": 0.07 + 0.30 / 2,
    "groq:llama-3.1-8b-instant": 0.05 + 0.08 / 2,
    "groq:llama-3.3-70b-versatile": 0.59 + 0.79 / 2,
    "groq:openai/gpt-oss-120b": 0.15 + 0.60 / 2,
    # DeepSeek: the peak rates (off-peak is half), an upper bound
    "deepseek:deepseek-flash": 0.30 + 1.20 / 2,
    "deepseek:deepseek-v4-flash": 0.30 + 1.20 / 2,  # the legacy name, billed as Flash
    "deepseek:deepseek-v4-pro": 1.32 + 3.96 / 2,
    # Mistral: its docs' prices; the -latest names and mistral-medium-3 as its docs map them
    "mistral:mistral-large-2512": 0.50 + 1.50 / 2,
    "mistral:mistral-large-latest": 0.50 + 1.50 / 2,
    "mistral:mistral-medium-3-5": 1.50 + 7.50 / 2,
    "mistral:mistral-medium-3": 1.50 + 7.50 / 2,
    "mistral:mistral-medium-latest": 1.50 + 7.50 / 2,
    "mistral:mistral-small-2603": 0.15 + 0.60 / 2,
    "mistral:mistral-small-latest": 0.15 + 0.60 / 2,
    "mistral:ministral-14b-2512": 0.20 + 0.20 / 2,
    "mistral:ministral-14b-latest": 0.20 + 0.20 / 2,
    "mistral:ministral-8b-2512": 0.15 + 0.15 / 2,
    "mistral:ministral-8b-latest": 0.15 + 0.15 / 2,
    "mistral:ministral-3b-2512": 0.10 + 0.10 / 2,
    "mistral:ministral-3b-latest": 0.10 + 0.10 / 2,
    "mistral:codestral-2508": 0.30 + 0.90 / 2,
    "mistral:codestral-latest": 0.30 + 0.90 / 2,
    "together:openai/gpt-oss-120b": 0.15 + 0.60 / 2,
}
GEMINI_COSTS = {
    "gemini:gemini-2.5-flash": 0.30 + 2.50 / 2,
    "gemini:gemini-2.5-flash-lite": 0.10 + 0.40 / 2,
}
UNPRICED = (
    "deepseek:deepseek-chat",
    "mistral:mistral-large-2411",  # retired: its docs no longer price it
    "together:meta-llama/Llama-3.3-70B-Instruct-Turbo",  # transcriptions disagree
    "openrouter:openai/gpt-4o-mini",
    "groq:some-model-nobody-priced",
    "xai:grok-unknown",
)


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="Grade this."),))


@pytest.mark.parametrize("name", sorted(PRESET_COSTS))
async def test_a_preset_model_costs_what_the_table_says(name: str) -> None:
    """xAI, Fireworks, Groq, DeepSeek, Mistral and Together answers are priced by client name."""
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=OPENAI_USAGE)) as server,
        model_from_string(name, base_url=server.base_url, api_key="key-123456789") as model,
    ):
        response = await model.complete(ask())
    assert model.name == name
    assert response_cost(model.name, response) == pytest.approx(PRESET_COSTS[name])


@pytest.mark.parametrize("name", sorted(GEMINI_COSTS))
async def test_a_gemini_model_costs_what_the_table_says(name: str) -> None:
    """Gemini 2.5 Flash and Flash-Lite answers are priced over the Gemini wire format."""
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=GEMINI_USAGE)) as server,
        model_from_string(name, base_url=f"{server.url}/v1beta", api_key="key-123456789") as model,
    ):
        response = await model.complete(ask())
    assert response_cost(model.name, response) == pytest.approx(GEMINI_COSTS[name])


@pytest.mark.parametrize("name", UNPRICED)
async def test_a_model_without_a_shipped_price_costs_none(name: str) -> None:
    """A preset model the table does not price has no cost (None), never a guess."""
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=OPENAI_USAGE)) as server,
        model_from_string(name, base_url=server.base_url, api_key="key-123456789") as model,
    ):
        response = await model.complete(ask())
    assert response.usage.input_tokens == 1_000_000
    assert response_cost(model.name, response) is None


def test_cached_and_batch_prices_of_the_new_entries() -> None:
    """xAI and Fireworks bill cache hits at their cached price; Fireworks batches at half."""
    table = PriceTable.default()
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=1_000_000)
    assert table.cost("xai:grok-4-1-fast-reasoning", usage) == pytest.approx(0.05)
    fireworks = "fireworks:accounts/fireworks/models/gpt-oss-120b"
    assert table.cost(fireworks, usage) == pytest.approx(0.015)
    plain = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert table.cost(fireworks, plain, batch=True) == pytest.approx(0.075 + 0.30)


async def test_a_mistral_cache_hit_costs_a_tenth_of_its_input_price() -> None:
    """Mistral counts cached tokens inside prompt_tokens and bills them at 10% of the input."""
    usage = {
        "prompt_tokens": 1_000_000,
        "completion_tokens": 0,
        "total_tokens": 1_000_000,
        "prompt_tokens_details": {"cached_tokens": 800_000},
    }
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=usage)) as server,
        model_from_string(
            "mistral:mistral-large-latest", base_url=server.base_url, api_key="key-123456789"
        ) as model,
    ):
        response = await model.complete(ask())
    assert response.usage.cache_read_tokens == 800_000
    assert response_cost(model.name, response) == pytest.approx(0.2 * 0.50 + 0.8 * 0.05)


def test_bedrock_prices_outside_the_us_regions_and_by_endpoint_are_not_shipped() -> None:
    """Only US (N. Virginia, Oregon) prices are shipped: eu./apac./global. profiles have none."""
    table = PriceTable.default()
    usage = Usage(input_tokens=1000, output_tokens=100)
    for model in (
        "eu.anthropic.claude-3-5-haiku-20241022-v1:0",
        "apac.anthropic.claude-sonnet-4-20250514-v1:0",
        "global.anthropic.claude-haiku-4-5-20251001-v1:0",  # priced by endpoint
        "anthropic.claude-haiku-4-5-20251001-v1:0",
    ):
        assert table.cost(f"bedrock:{model}", usage) is None, model
    assert table.cost("bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0", usage) is not None


def test_every_priced_provider_has_a_read_date_and_a_source() -> None:
    """Each provider with a shipped price has its own read date and a named source URL."""
    table = PriceTable.default()
    shipped = json.loads(
        resources.files("agentjudge.models").joinpath("prices.json").read_text(encoding="utf-8")
    )
    providers = {name.partition(":")[0] for name in table.names}
    assert providers == set(shipped["read"])
    for provider in providers:
        assert any(f"({provider}, read " in source for source in shipped["sources"]), provider
    for provider in ("xai", "fireworks", "groq", "gemini", "deepseek", "mistral", "together"):
        assert table.read_on(f"{provider}:m") == READ
    for provider in ("bedrock",):
        assert table.read_on(f"{provider}:m") == READ

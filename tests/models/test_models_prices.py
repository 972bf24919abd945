"""Prices: the shipped dated table, overrides from files and code, and the cost judges record."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.core import Context
from agentjudge.engine import Evaluator
from agentjudge.judges import LLMJudge
from agentjudge.models import (
    AnthropicMessages,
    ModelPrice,
    OpenAIChat,
    PriceTable,
    SqliteCache,
    Usage,
    prices,
    response_cost,
)
from agentjudge.models._types import ModelResponse
from agentjudge.testing import FakeModelServer, FakeResponse

MINI = "openai:gpt-4o-mini"
ANTHROPIC_USAGE = {"input_tokens": 100, "output_tokens": 10}
USAGE = {"prompt_tokens": 1_000_000, "completion_tokens": 500_000, "total_tokens": 1_500_000}


def test_shipped_table_is_dated_and_prices_known_models() -> None:
    """The shipped table has an ISO as_of date and per-million prices for common models."""
    table = PriceTable.default()
    assert table.as_of is not None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.as_of)
    price = table.get(MINI)
    assert price is not None and price.input == 0.15 and price.output == 0.60
    assert table.get("openai:gpt-4o-mini-2024-07-18") == price  # a dated snapshot alias
    assert "anthropic:claude-sonnet-4-5" in table


def test_openai_cached_tokens_are_inside_input_tokens() -> None:
    """OpenAI style: cached prompt tokens are billed at cached_input, the rest at input."""
    price = ModelPrice(input=2.0, output=8.0, cached_input=0.5)
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=400_000)
    assert price.cost(usage, provider="openai") == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.1 * 8)


def test_anthropic_cache_tokens_are_apart_from_input_tokens() -> None:
    """Anthropic style: input, cache reads and cache writes are billed separately."""
    price = ModelPrice(input=3.0, output=15.0, cached_input=0.3, cache_write_input=3.75)
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=0,
        cache_read_tokens=1_000_000,
        cache_creation_tokens=1_000_000,
    )
    assert price.cost(usage, provider="anthropic") == pytest.approx(3.0 + 0.3 + 3.75)


def test_batch_prices_apply_to_batch_calls() -> None:
    """A batch call is priced at batch_input / batch_output."""
    price = ModelPrice(input=2.0, output=8.0, batch_input=1.0, batch_output=4.0)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert price.cost(usage, batch=True) == pytest.approx(5.0)
    assert price.cost(usage) == pytest.approx(10.0)


def test_unknown_model_or_incomplete_usage_has_no_price() -> None:
    """No price for an unknown model, a usage without counts, or unpriced cache writes."""
    table = PriceTable.default()
    full = Usage(input_tokens=10, output_tokens=10)
    assert table.cost("openai:my-private-finetune", full) is None
    assert table.cost(MINI, Usage(input_tokens=10)) is None
    price = ModelPrice(input=1.0, output=1.0)
    assert price.cost(Usage(input_tokens=1, output_tokens=1, cache_creation_tokens=5)) is None


def test_cached_response_costs_nothing() -> None:
    """response_cost is 0 for a cached answer, even for an unpriced model."""
    response = ModelResponse(text="x", cached=True, usage=Usage(input_tokens=5, output_tokens=5))
    assert response_cost("openai:unknown-model", response) == 0.0


def test_set_in_code_adds_and_removes_a_price() -> None:
    """PriceTable.set adds a price from fields and removes it with no price."""
    table = PriceTable()
    table.set("openai:local", input=1.0, output=2.0)
    assert table.cost("openai:local", Usage(input_tokens=10**6, output_tokens=10**6)) == 3.0
    table.set("openai:local")
    assert "openai:local" not in table
    with pytest.raises(ValueError, match="finite number of USD >= 0"):
        table.set("openai:local", input=-1.0, output=2.0)


def test_load_json_and_toml_files(tmp_path: Path) -> None:
    """A user price file (JSON or TOML) loads and overrides the shipped prices on update."""
    json_file = tmp_path / "prices.json"
    json_file.write_text(
        '{"as_of": "2030-01-01", "models": {"openai:gpt-4o-mini": {"input": 1, "output": 2}}}'
    )
    toml_file = tmp_path / "prices.toml"
    toml_file.write_text('[models."openai:house"]\ninput = 0.5\noutput = 0.25\n')
    table = PriceTable.default()
    table.update(PriceTable.load(json_file))
    table.update(PriceTable.load(toml_file))
    assert table.as_of == "2030-01-01"
    assert table.get(MINI) == ModelPrice(input=1, output=2)
    assert table.get("openai:house") == ModelPrice(input=0.5, output=0.25)


def test_bad_price_files_name_file_line_and_field(tmp_path: Path) -> None:
    """Errors name the file, the line of a syntax error, or the field and what is expected."""
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "models": {\n    "x": {"input": 1,, }\n  }\n}')
    with pytest.raises(ValueError, match=r"broken\.json: line 3: not valid JSON"):
        PriceTable.load(broken)
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"models": {"openai:x": {"input": "cheap", "output": 1}}}')
    expected = r"wrong\.json: invalid price file \(model 'openai:x' field 'input'"
    with pytest.raises(ValueError, match=expected):
        PriceTable.load(wrong)
    bad_alias = tmp_path / "alias.json"
    bad_alias.write_text('{"aliases": {"openai:a": "openai:nowhere"}}')
    with pytest.raises(ValueError, match=r"alias\.json: alias 'openai:a' points to"):
        PriceTable.load(bad_alias)
    with pytest.raises(ValueError, match=r"missing\.json: cannot read the price file"):
        PriceTable.load(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ('"0.15"', r'got "0\.15" \(a string: write the number without quotes\)'),
        ("true", "got true"),
    ],
)
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_price_files_take_numbers_only(
    tmp_path: Path, written: str, shown: str, suffix: str
) -> None:
    """A quoted number or a boolean is no price: the error names the file, model and field."""
    file = tmp_path / f"prices{suffix}"
    if suffix == ".json":
        file.write_text(f'{{"models": {{"openai:gpt-4.1": {{"input": 1, "output": {written}}}}}}}')
    else:
        file.write_text(f'[models."openai:gpt-4.1"]\ninput = 1\noutput = {written}\n')
    with pytest.raises(ValueError) as caught:
        PriceTable.load(file)
    message = str(caught.value)
    assert message.startswith(f"{file}: invalid price file")
    assert re.search(rf"model 'openai:gpt-4\.1' field 'output': .*{shown}", message), message
    in_code: Any = True if written == "true" else "0.15"
    with pytest.raises(ValueError, match="a price must be a number of USD"):
        PriceTable().set("openai:x", input=1, output=in_code)
    # a whole number is a number
    file.write_text(file.read_text().replace(written, "2"))
    assert PriceTable.load(file).get("openai:gpt-4.1") == ModelPrice(input=1.0, output=2.0)


async def test_llm_judge_records_usage_and_cost_over_http() -> None:
    """An LLM judge's result carries the usage and the cost priced from the shared table."""
    answer = FakeResponse(text="Answer: YES", usage=USAGE)
    async with (
        FakeModelServer(answer) as server,
        OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k") as model,
    ):
        [result] = await Evaluator(LLMJudge("j", model, "{{input}}")).evaluate(input="q")
    assert result.usage == {"input_tokens": 1_000_000, "output_tokens": 500_000,
                            "total_tokens": 1_500_000}  # fmt: skip
    assert result.cost_usd == pytest.approx(0.15 + 0.5 * 0.60)
    assert result.judgment is not None and result.judgment.metadata["cached"] is False


async def test_unpriced_model_has_no_cost_key() -> None:
    """A model missing from the table gets no cost_usd (never a guessed price)."""
    async with (
        FakeModelServer(FakeResponse(text="Answer: NO", usage=ANTHROPIC_USAGE)) as server,
        AnthropicMessages("house-model", base_url=server.base_url, api_key="k") as model,
    ):
        result = await LLMJudge("j", model, "{{input}}")(Context(input="q"))
    assert "cost_usd" not in result.metadata
    assert "usage" in result.metadata


async def test_code_override_prices_a_new_model() -> None:
    """prices.set on the shared table prices a model the judges then record."""
    prices.set("openai:house-model", input=10.0, output=20.0)
    try:
        async with (
            FakeModelServer(FakeResponse(text="Answer: YES", usage=USAGE)) as server,
            OpenAIChat("house-model", base_url=server.base_url, api_key="k") as model,
        ):
            result = await LLMJudge("j", model, "{{input}}")(Context(input="q"))
    finally:
        prices.set("openai:house-model")
    assert result.metadata["cost_usd"] == pytest.approx(10.0 + 10.0)


async def test_cache_hit_costs_nothing_and_bills_no_tokens(tmp_path: Path) -> None:
    """A cached answer is marked cached, costs 0 and reports zero input and output tokens."""
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES", usage=USAGE)) as server,
        SqliteCache(tmp_path / "cache.db") as cache,
        OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k", cache=cache) as model,
    ):
        judge = LLMJudge("j", model, "{{input}}")
        first = await judge(Context(input="q"))
        second = await judge(Context(input="q"))
    assert len(server.requests) == 1
    assert first.metadata["cost_usd"] > 0 and first.metadata["cached"] is False
    assert second.metadata["cached"] is True
    assert second.metadata["cost_usd"] == 0.0
    assert second.metadata["usage"] == {"input_tokens": 0, "output_tokens": 0}


def test_the_shipped_table_dates_each_providers_prices() -> None:
    """Gemini's prices carry the date they were read; OpenAI's and Anthropic's theirs."""
    table = PriceTable.default()
    assert table.read_on("gemini:gemini-2.5-flash") == "2026-11-26"
    assert table.read_on("openai:gpt-4o") == table.read_on("anthropic:x") == "2025-10-15"
    flash = table.get("gemini:gemini-2.5-flash")
    assert flash is not None and (flash.input, flash.output) == (0.3, 2.5)
    assert flash.batch_input == 0.15 and flash.batch_output == 1.25
    assert "gemini:gemini-2.5-flash-lite" in table


def test_unconfirmed_prices_are_unknown_not_guessed() -> None:
    """Gemini 2.5 Pro (tiered by prompt length) and unconfirmed presets have no shipped price."""
    table = PriceTable.default()
    usage = Usage(input_tokens=1000, output_tokens=100)
    assert table.cost("gemini:gemini-2.5-pro", usage) is None
    for name in ("deepseek:deepseek-chat", "together:m", "mistral:mistral-small"):
        assert table.cost(name, usage) is None


def test_a_price_file_may_date_providers_apart(tmp_path: Path) -> None:
    """A price file's 'read' dates a provider's prices; update() carries them over."""
    path = tmp_path / "p.json"
    path.write_text(
        '{"as_of": "2030-01-01", "read": {"Acme": "2030-02-02"}, '
        '"models": {"acme:m": {"input": 1, "output": 2}}}'
    )
    loaded = PriceTable.load(path)
    assert loaded.read_on("acme:m") == "2030-02-02"
    assert loaded.read_on("other:m") == "2030-01-01"
    table = PriceTable(as_of="2020-01-01")
    table.update(loaded)
    assert table.read_on("acme:m") == "2030-02-02"


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["set", "remove", "alias", "lookup"]),
            st.sampled_from(["openai:a", "openai:b", "b", "openai:c"]),
            st.sampled_from(["openai:a", "openai:b", "b"]),
        ),
        max_size=12,
    )
)
def test_lookup_answers_as_the_table_stands_after_every_edit(
    steps: list[tuple[str, str, str]],
) -> None:
    """`PriceTable.lookup` keeps its answers until the next edit (issue 19.11), never after."""
    table = PriceTable()
    for number, (step, name, other) in enumerate(steps):
        if step == "set":
            table.set(name, input=float(number), output=1.0)
        elif step == "remove":
            table.set(name)
        elif step == "alias" and other in table._models:
            table.alias(name, other)
        for client, model in (("openai:a", None), ("openai:x", "b"), ("openai:c", "a")):
            fresh = PriceTable()
            fresh._models, fresh._aliases = dict(table._models), dict(table._aliases)
            assert table.lookup(client, model) == fresh.lookup(client, model)

"""The shipped Amazon Bedrock prices (US East / US West on-demand), through the Converse client.

Each priced model id is called over loopback HTTP against `FakeModelServer`'s SigV4-checked
Converse route through the client `model_from_string` builds, and priced the way judges price
it (`response_cost`); the expected dollars are written out here, so a changed entry fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_support import use_fake_aws
from sdk_support import sdk

from agentjudge.core import Message
from agentjudge.models import ModelRequest, model_from_string, response_cost
from agentjudge.testing import FakeModelServer, FakeResponse

botocore_session = sdk("botocore.session")
pytestmark = pytest.mark.xdist_group("sdk")  # botocore imports in one worker (sdk_support)

USAGE = {"inputTokens": 1_000_000, "outputTokens": 500_000, "totalTokens": 1_500_000}

# model id -> USD for 1M input + 0.5M output tokens (input + output / 2 per the table)
COSTS = {
    "anthropic.claude-3-haiku-20240307-v1:0": 0.25 + 1.25 / 2,
    "anthropic.claude-3-5-haiku-20241022-v1:0": 0.80 + 4.00 / 2,
    "anthropic.claude-3-5-sonnet-20240620-v1:0": 3.00 + 15.00 / 2,
    "anthropic.claude-3-5-sonnet-20241022-v2:0": 3.00 + 15.00 / 2,
    "anthropic.claude-3-7-sonnet-20250219-v1:0": 3.00 + 15.00 / 2,
    "anthropic.claude-sonnet-4-20250514-v1:0": 3.00 + 15.00 / 2,
    "anthropic.claude-opus-4-20250514-v1:0": 15.00 + 75.00 / 2,
    "amazon.nova-pro-v1:0": 0.80 + 3.20 / 2,
    "amazon.nova-lite-v1:0": 0.06 + 0.24 / 2,
    "meta.llama3-3-70b-instruct-v1:0": 0.72 + 0.72 / 2,
    "deepseek.r1-v1:0": 1.35 + 5.40 / 2,
}


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The fake's test credentials in the environment; no profile, file or metadata service."""
    use_fake_aws(monkeypatch, tmp_path)


def ask() -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="Grade this."),))


async def _cost(name: str, usage: dict[str, int]) -> float | None:
    botocore_session.get_session  # noqa: B018 - skips the test without the bedrock extra
    async with (
        FakeModelServer(FakeResponse(text="PASS", usage=usage)) as server,
        model_from_string(f"bedrock:{name}", base_url=server.url) as model,
    ):
        response = await model.complete(ask())
    return response_cost(model.name, response)


@pytest.mark.parametrize("model", sorted(COSTS))
async def test_a_bedrock_model_costs_what_the_table_says(model: str) -> None:
    """Each priced model id, called in-region, costs its US on-demand price."""
    assert await _cost(model, USAGE) == pytest.approx(COSTS[model])


@pytest.mark.parametrize("model", sorted(COSTS))
async def test_a_us_inference_profile_costs_what_its_model_does(model: str) -> None:
    """The us. cross-region profile is billed at its (US) source region's price: the same."""
    assert await _cost(f"us.{model}", USAGE) == pytest.approx(COSTS[model])


async def test_bedrock_claude_cache_reads_and_writes_are_billed_apart() -> None:
    """Converse counts cache reads and writes apart from inputTokens, each at its own price."""
    usage = {
        "inputTokens": 1_000_000,
        "outputTokens": 0,
        "cacheReadInputTokens": 1_000_000,
        "cacheWriteInputTokens": 1_000_000,
        "totalTokens": 3_000_000,
    }
    cost = await _cost("us.anthropic.claude-3-5-haiku-20241022-v1:0", usage)
    assert cost == pytest.approx(0.80 + 0.08 + 1.00)


async def test_a_cache_write_without_a_shipped_write_price_has_no_cost() -> None:
    """Nova's cache-write price is not shipped: a call that wrote to the cache costs None."""
    usage = {"inputTokens": 10, "outputTokens": 10, "cacheWriteInputTokens": 5}
    assert await _cost("amazon.nova-pro-v1:0", usage) is None

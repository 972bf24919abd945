"""The provider protocol: what differs by provider is asked of its class, never of its name.

The registry is the only list of providers: a provider added there (or through an entry point)
gets batch mode, prices and budgets from its own class attributes and hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentjudge.core import Message
from agentjudge.harness._batch_mode import BatchMode
from agentjudge.models import (
    BatchAPI,
    BatchCollector,
    HTTPModelClient,
    ModelPrice,
    ModelRequest,
    OpenAIBatchAPI,
    Reply,
    Usage,
    read_usage,
    reply_from,
)
from agentjudge.models._registry import PROVIDERS, counts_cache_apart
from agentjudge.models._spend import _input_total
from agentjudge.testing import FakeModelServer, FakeResponse


class EchoChat(HTTPModelClient):
    """A minimal provider on the OpenAI wire, written from the protocol alone."""

    provider: ClassVar[str] = "echoproto"
    path: ClassVar[str] = "/chat/completions"
    default_base_url: ClassVar[str] = "http://127.0.0.1:9/v1"
    base_url_env: ClassVar[str] = "ECHOPROTO_BASE_URL"
    api_key_env: ClassVar[str] = "ECHOPROTO_API_KEY"
    api_key_header: ClassVar[str] = "authorization"
    cache_tokens_apart: ClassVar[bool] = True

    def request_body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        return {"model": self.model, "messages": [m.model_dump() for m in messages]}

    def parse_reply(self, data: dict[str, Any]) -> Reply:
        choice = data["choices"][0]
        usage = read_usage(self.name, data.get("usage"), "usage", {"input_tokens": "prompt_tokens"})
        return reply_from(data, choice["message"]["content"], usage, model=None, finish=None)

    def batch_api(self) -> BatchAPI | None:
        return OpenAIBatchAPI.of(self)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "echoproto", EchoChat)
    monkeypatch.delenv("ECHOPROTO_BASE_URL", raising=False)


def test_prices_ask_the_provider_class_how_it_counts_cache_tokens(registered: None) -> None:
    """A registered provider with cache_tokens_apart is priced Anthropic-style; others are not."""
    price = ModelPrice(input=3.0, output=15.0, cached_input=0.3, cache_write_input=3.75)
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=0,
        cache_read_tokens=1_000_000,
        cache_creation_tokens=1_000_000,
    )
    assert counts_cache_apart("echoproto") and counts_cache_apart("anthropic")
    assert not counts_cache_apart("openai") and not counts_cache_apart("no-such-provider")
    assert price.cost(usage, provider="echoproto") == pytest.approx(3.0 + 0.3 + 3.75)
    assert price.cost(usage, provider="openai") == pytest.approx(0.3 + 3.75)
    assert _input_total("echoproto:m", usage) == 3_000_000  # budgets: the same rule
    assert _input_total("openai:m", usage) == 1_000_000


def test_batch_mode_asks_the_provider_for_its_batch_api(registered: None, tmp_path: Path) -> None:
    """Any HTTPModelClient whose batch_api() is not None is batched; no class list decides."""
    client = EchoChat("m", api_key="k-123456789")
    mode = BatchMode([client], tmp_path, retry_online=False, poll_interval=1.0)
    assert [c for c, _ in mode.pairs] == [client]
    assert mode.warnings == []


async def test_a_protocol_only_provider_answers_online_and_in_a_batch(tmp_path: Path) -> None:
    """The same answer online and through BatchCollector, with the client's key on both."""
    request = ModelRequest(messages=(Message(role="user", content="hi"),))
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        async with EchoChat("m", base_url=server.base_url, api_key="k-123456789") as client:
            online = await client.complete(request)
        async with BatchCollector(client, state_path=tmp_path / "s.json", linger=0.01) as batch:
            batched = await batch.complete(request)
    assert online.text == batched.text == "PASS"
    assert batched.usage == online.usage
    sent = [r for r in server.received if r.headers]  # batch items are answered inside the fake
    assert {r.headers["authorization"] for r in sent} == {"Bearer k-123456789"}


def test_hooks_under_their_old_private_names_are_refused() -> None:
    """A provider written against the old private hooks fails at import, naming the new ones."""
    with pytest.raises(TypeError, match=r"_body -> request_body.*_parse -> parse_reply"):

        class Old(HTTPModelClient):  # pragma: no cover - refused at class creation
            def _body(self) -> None: ...

            def _parse(self) -> None: ...

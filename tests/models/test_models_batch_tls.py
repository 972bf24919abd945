"""The TLS context of `BatchCollector`'s batch API calls is made once per process, not per start."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import certifi
import pytest

from agentjudge.models import AnthropicMessages, BatchCollector, OpenAIChat, _batch
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse


@pytest.fixture
def tls_loads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The CA bundles loaded from now on (each ``ssl.create_default_context``), none cached."""
    loads: list[Any] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        loads.append(kwargs.get("cafile") or kwargs.get("capath"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    monkeypatch.setattr(_batch, "_TLS_CONTEXTS", {})
    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.delenv("SSL_CERT_DIR")
    return loads


async def test_collectors_share_one_tls_context(tls_loads: list[Any], tmp_path: Path) -> None:
    """Three collector starts (two clients, one restarted) load the CA bundle once, certifi's."""
    async with FakeModelServer(FakeResponse(text="Answer: YES")) as server:
        openai = OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k")
        anthropic = AnthropicMessages("claude", base_url=server.base_url, api_key="k")
        for model, state in ((openai, "a.json"), (anthropic, "b.json"), (openai, "a.json")):
            async with BatchCollector(model, state_path=tmp_path / state):
                pass
    assert tls_loads == [certifi.where()]


async def test_a_changed_ssl_cert_file_gets_its_own_context(
    tls_loads: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SSL_CERT_FILE is read at each start, as httpx reads it: a new value, a new context."""
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    async with FakeModelServer(FakeResponse(text="Answer: YES")) as server:
        model = OpenAIChat("gpt-4o-mini", base_url=server.base_url, api_key="k")
        async with BatchCollector(model, state_path=tmp_path / "a.json"):
            pass
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        for _ in range(2):
            async with BatchCollector(model, state_path=tmp_path / "a.json"):
                pass
    assert tls_loads == [certifi.where(), str(bundle)]

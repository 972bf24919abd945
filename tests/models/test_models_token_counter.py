"""Token estimates when tiktoken is installed but cannot load its encodings (offline)."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from agentjudge.models._spend import CHARS_PER_TOKEN, TokenCounter


def _offline_tiktoken() -> Any:
    """What tiktoken does on a machine without network: it raises when fetching its files."""

    def fetch(*_: Any) -> Any:
        raise ConnectionError("Failed to resolve 'openaipublic.blob.core.windows.net'")

    return SimpleNamespace(encoding_for_model=fetch, get_encoding=fetch)


def test_an_encoding_that_cannot_load_falls_back_to_characters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The estimate falls back to characters / 4 with one warning instead of raising."""
    counter = TokenCounter()
    counter.kind, counter._module = "tiktoken", _offline_tiktoken()
    with caplog.at_level(logging.WARNING, logger="agentjudge.models"):
        first = counter.count("openai:gpt-4o-mini", "x" * 40)
        second = counter.count("openai:gpt-4o", "y" * 8)
    assert (first, second) == (40 // CHARS_PER_TOKEN, 8 // CHARS_PER_TOKEN)
    assert counter.kind == "chars/4"
    [record] = [r for r in caplog.records if "tiktoken" in r.getMessage()]
    assert "ConnectionError" in record.getMessage()

"""Token estimates when tiktoken is installed but cannot load its encodings (offline), and the
counts kept for texts counted on every call (a judge's schema under a budget)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentjudge.core import Message
from agentjudge.models._spend import (
    _TIKTOKEN_FILES,
    CHARS_PER_TOKEN,
    KEPT_COUNTS,
    TokenCounter,
    estimate_input_tokens,
    tiktoken_has_locally,
)


def _cache_file(folder: Path, encoding: str) -> Path:
    """Where tiktoken caches ``encoding``'s file in ``folder`` (named by its URL's SHA-1)."""
    key = hashlib.sha1(_TIKTOKEN_FILES.format(encoding).encode()).hexdigest()
    return folder / key


def _offline_tiktoken() -> Any:
    """What tiktoken does on a machine without network: it raises when fetching its files."""

    def fetch(*_: Any) -> Any:
        raise ConnectionError("Failed to resolve 'openaipublic.blob.core.windows.net'")

    return SimpleNamespace(encoding_name_for_model=lambda _: "o200k_base", get_encoding=fetch)


def test_an_encoding_that_cannot_load_falls_back_to_characters(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate falls back to characters / 4 with one warning instead of raising."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    _cache_file(tmp_path, "o200k_base").write_bytes(b"broken")
    counter = TokenCounter()
    counter.kind, counter._module = "tiktoken", _offline_tiktoken()
    with caplog.at_level(logging.WARNING, logger="agentjudge.models"):
        first = counter.count("openai:gpt-4o-mini", "x" * 40)
        second = counter.count("openai:gpt-4o", "y" * 8)
    assert (first, second) == (40 // CHARS_PER_TOKEN, 8 // CHARS_PER_TOKEN)
    assert counter.kind == "chars/4"
    [record] = [r for r in caplog.records if "tiktoken" in r.getMessage()]
    assert "ConnectionError" in record.getMessage()


def test_an_encoding_not_cached_is_never_downloaded(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real tiktoken, empty cache: characters / 4, and tiktoken's download is never called
    (it has no timeout: on a blackholed network it would block the event loop for minutes)."""
    tiktoken_load = pytest.importorskip("tiktoken.load")
    fetched: list[str] = []
    monkeypatch.setattr(tiktoken_load, "read_file", lambda url: fetched.append(url) or b"")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    counter = TokenCounter()
    assert counter.kind == "tiktoken"
    with caplog.at_level(logging.WARNING, logger="agentjudge.models"):
        assert counter.count("openai:gpt-4o-mini", "x" * 40) == 40 // CHARS_PER_TOKEN
    assert fetched == [] and counter.kind == "chars/4"
    assert any("never downloads" in r.getMessage() for r in caplog.records)


def test_the_cache_is_looked_up_where_tiktoken_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TIKTOKEN_CACHE_DIR first, then DATA_GYM_CACHE_DIR; an empty value means no cache."""
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
    _cache_file(second, "cl100k_base").write_bytes(b"x")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(second))
    assert tiktoken_has_locally("cl100k_base") and not tiktoken_has_locally("o200k_base")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(first))
    assert not tiktoken_has_locally("cl100k_base")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert not tiktoken_has_locally("cl100k_base")


class _CountingEncoding:
    """An encoding that splits on spaces and counts how often it encodes."""

    def __init__(self) -> None:
        self.encoded = 0

    def encode(self, text: str, disallowed_special: Any = ()) -> list[str]:
        self.encoded += 1
        return text.split()


def _local_tiktoken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: _CountingEncoding
) -> TokenCounter:
    """A counter on a tiktoken stand-in whose o200k_base file is in the cache."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    _cache_file(tmp_path, "o200k_base").write_bytes(b"x")
    counter = TokenCounter()
    counter.kind, counter._module = (
        "tiktoken",
        SimpleNamespace(
            encoding_name_for_model=lambda _: "o200k_base", get_encoding=lambda _: encoding
        ),
    )
    return counter


def test_kept_counts_equal_counts_and_are_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema counted on every call: tiktoken encodes it once per (model, text)."""
    encoding = _CountingEncoding()
    counter = _local_tiktoken(tmp_path, monkeypatch, encoding)
    texts = ["a b c", "a b", "a b c", "d", "a b"]
    for model in ("openai:gpt-4o", "openai:gpt-4o-mini"):
        for text in texts:
            assert counter.count_kept(model, text) == counter.count(model, text)
    assert encoding.encoded == 2 * len(texts) + 2 * 3  # count every time, count_kept once each
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    messages = [Message(role="user", content="one two three")]
    before = encoding.encoded
    for _ in range(3):
        expected = 3 + counter.count("m", json.dumps(schema, sort_keys=True))
        assert estimate_input_tokens("m", messages, schema, counter) == expected
    # per estimate: the message once; the schema once in all (plus the expected's own counts)
    assert encoding.encoded - before == 3 + 3 + 1


def test_kept_counts_are_bounded_and_not_kept_after_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most KEPT_COUNTS pairs; an encoding that fails to load keeps nothing."""
    counter = _local_tiktoken(tmp_path, monkeypatch, _CountingEncoding())
    for number in range(KEPT_COUNTS + 5):
        assert counter.count_kept("m", f"w {number}") == 2
        assert len(counter._kept) <= KEPT_COUNTS
    broken = TokenCounter()
    broken.kind, broken._module = "tiktoken", _offline_tiktoken()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    assert broken.count_kept("m", "x" * 40) == 40 // CHARS_PER_TOKEN
    assert broken._kept == {} and broken.kind == "chars/4"

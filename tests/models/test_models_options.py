"""One options object: the clients share one set of keywords, defaults and checks."""

from __future__ import annotations

import traceback
from typing import get_type_hints

import anyio
import pytest

import agentjudge
import agentjudge.engine
import agentjudge.models
from agentjudge._retry import call_with_retry
from agentjudge.models import (
    AnthropicMessages,
    ClientOptions,
    OpenAIChat,
    RetryPolicy,
    known_providers,
    model_from_string,
)
from agentjudge.models._options import ClientKeywords
from agentjudge.models._registry import PROVIDERS


def test_keywords_and_options_name_the_same_fields() -> None:
    """The typed keywords and the options object list exactly the same options."""
    assert set(get_type_hints(ClientKeywords)) == ClientOptions.names()


@pytest.mark.parametrize("cls", [OpenAIChat, AnthropicMessages])
def test_every_client_takes_the_shared_defaults(cls: type[OpenAIChat]) -> None:
    """Both clients default each shared option to the ClientOptions default."""
    defaults = ClientOptions()
    client = cls("m", api_key="k", base_url="http://127.0.0.1:9/v1")
    assert client.retry == defaults.retry
    assert client.timeout == defaults.timeout
    assert client.max_concurrency == defaults.max_concurrency
    assert client.schema_retries == defaults.schema_retries
    assert client.max_retry_after == defaults.max_retry_after
    assert client.max_response_bytes == defaults.max_response_bytes
    assert client.adaptive is defaults.adaptive


@pytest.mark.parametrize("cls", [OpenAIChat, AnthropicMessages])
def test_an_unknown_keyword_lists_the_options(cls: type[OpenAIChat]) -> None:
    """A misspelt option is a TypeError naming it, the client and every known option."""
    with pytest.raises(TypeError) as caught:
        cls("m", timout=5)  # type: ignore[call-arg]
    message = str(caught.value)
    assert f"{cls.__name__}() got unexpected keyword argument(s) 'timout'" in message
    assert "max_retry_after" in message
    assert "timeout" in message


@pytest.mark.parametrize(
    ("option", "value", "match"),
    [
        ("max_retry_after", True, "max_retry_after must be a finite number >= 0"),
        ("max_retry_after", float("inf"), "max_retry_after must be a finite number >= 0"),
        ("timeout", float("nan"), "timeout must be a positive number"),
        ("retry", 3, "retry must be a RetryPolicy or None"),
        ("max_concurrency", 0, "max_concurrency must be an integer >= 1"),
    ],
)
def test_bad_values_are_value_errors_naming_the_option(
    option: str, value: object, match: str
) -> None:
    """ClientOptions checks each value once, for every client and model_from_string."""
    with pytest.raises(ValueError, match=match):
        ClientOptions(**{option: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=match):
        model_from_string("anthropic:m", **{option: value})


def test_the_retry_policy_is_one_class_everywhere() -> None:
    """RetryPolicy imports as the same class from the package, the engine and the models."""
    assert agentjudge.RetryPolicy is agentjudge.engine.RetryPolicy is agentjudge.models.RetryPolicy
    assert RetryPolicy.__module__ == "agentjudge._retry"


def test_a_first_attempt_error_carries_no_tenacity_frames() -> None:
    """The first attempt runs outside tenacity: its error's traceback never passes through it."""

    async def fails() -> int:
        raise KeyError("first")

    async def main() -> None:
        with pytest.raises(KeyError) as caught:
            await call_with_retry(RetryPolicy(attempts=3), fails)
        files = [frame.filename for frame in traceback.extract_tb(caught.value.__traceback__)]
        assert not [f for f in files if "tenacity" in f]

    anyio.run(main)


def test_the_registry_lists_the_providers() -> None:
    """known_providers() is the registry's sorted keys, the names errors show."""
    assert known_providers() == tuple(sorted(PROVIDERS))
    assert {"anthropic", "azure", "groq", "ollama", "openai"} <= set(known_providers())
    with pytest.raises(ValueError, match="known providers: anthropic, azure, bedrock, deepseek"):
        model_from_string("nosuchprovider:pro")

"""model_from_string: "<provider>:<model>" builds the right client."""

from __future__ import annotations

import pytest

from agentjudge.models import AnthropicMessages, OpenAIChat, model_from_string


def test_openai_spec() -> None:
    """'openai:<model>' builds an OpenAIChat named after the spec."""
    model = model_from_string("openai:gpt-4o-mini", api_key="sk")
    assert isinstance(model, OpenAIChat)
    assert model.model == "gpt-4o-mini"
    assert model.name == "openai:gpt-4o-mini"


def test_anthropic_spec_forwards_kwargs() -> None:
    """'anthropic:<model>' builds AnthropicMessages; keyword arguments are forwarded."""
    model = model_from_string(
        "anthropic:claude-3-5-haiku-latest", max_tokens=64, base_url="http://127.0.0.1:1/v1"
    )
    assert isinstance(model, AnthropicMessages)
    assert model.name == "anthropic:claude-3-5-haiku-latest"
    assert model.max_tokens == 64
    assert model.base_url == "http://127.0.0.1:1/v1"


def test_model_names_may_contain_colons() -> None:
    """Only the first colon separates the provider (fine-tuned model ids keep theirs)."""
    assert model_from_string("openai:ft:gpt-4o:acme:123").model == "ft:gpt-4o:acme:123"


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("nosuch:pro", "unknown model provider 'nosuch'"),
        ("gpt-4o-mini", "must look like '<provider>:<model>'"),
        ("openai:", "must look like"),
        ("openai:   ", "must look like"),
    ],
)
def test_bad_specs_are_value_errors(spec: str, match: str) -> None:
    """Unknown providers, missing prefixes and blank models raise ValueError."""
    with pytest.raises(ValueError, match=match):
        model_from_string(spec)

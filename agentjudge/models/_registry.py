"""`model_from_string`: build a client from ``"<provider>:<model>"``."""

from __future__ import annotations

from typing import Any

from agentjudge.models._anthropic import AnthropicMessages
from agentjudge.models._openai import OpenAIChat

__all__ = ["PROVIDERS", "model_from_string"]

PROVIDERS: dict[str, type[OpenAIChat] | type[AnthropicMessages]] = {
    "openai": OpenAIChat,
    "anthropic": AnthropicMessages,
}
"""Provider prefixes and the client class each builds."""


def model_from_string(spec: str, **kwargs: Any) -> OpenAIChat | AnthropicMessages:
    """Build a model client from ``"openai:<model>"`` or ``"anthropic:<model>"``.

    Keyword arguments are forwarded to the client (``base_url``, ``rate_limit``, ``cache``...).

    Examples:
        >>> model_from_string("openai:gpt-4o-mini", api_key="sk-test").name
        'openai:gpt-4o-mini'

    Raises:
        ValueError: No ``provider:`` prefix, a blank model or an unknown provider.
    """
    if not isinstance(spec, str):
        raise ValueError(f"a model spec must be a string like 'openai:gpt-4o-mini', got {spec!r}")
    provider, sep, model = spec.partition(":")
    known = ", ".join(sorted(PROVIDERS))
    if not sep or not model.strip():
        raise ValueError(
            f"model spec {spec!r} must look like '<provider>:<model>', "
            f"e.g. 'openai:gpt-4o-mini' (providers: {known})"
        )
    cls = PROVIDERS.get(provider.strip().lower())
    if cls is None:
        raise ValueError(
            f"unknown model provider {provider!r} in {spec!r}; known providers: {known}"
        )
    return cls(model.strip(), **kwargs)

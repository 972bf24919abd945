"""The provider registry: which ``"<provider>:<model>"`` prefixes name which client class.

`model_from_string` and the harness (``task = "openai:<model>"``) both read `PROVIDERS`, so a
provider added here is known everywhere at once, and an unknown one is refused with the same
message everywhere (naming the known providers), never tried as a Python module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from agentjudge.models._http import HTTPModelClient

__all__ = [
    "PROVIDERS",
    "known_providers",
    "model_from_string",
    "provider_class",
    "split_model_spec",
]

PROVIDERS: dict[str, type[HTTPModelClient] | str] = {
    "openai": "agentjudge.models._openai:OpenAIChat",
    "anthropic": "agentjudge.models._anthropic:AnthropicMessages",
}
"""Provider prefixes (lower case) and the client class each builds: the class itself, or
``"module:Class"``, imported on first use so that naming the providers (the harness asks for
every task reference) does not load the HTTP stack."""


def provider_class(provider: str) -> type[HTTPModelClient] | None:
    """The client class registered for ``provider`` (lower case), imported now; None if unknown."""
    entry = PROVIDERS.get(provider)
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = cast("type[HTTPModelClient]", getattr(importlib.import_module(module), attr))
        PROVIDERS[provider] = entry
    return entry


def known_providers() -> tuple[str, ...]:
    """The registered provider prefixes, sorted."""
    return tuple(sorted(PROVIDERS))


def split_model_spec(spec: object) -> tuple[type[HTTPModelClient], str]:
    """The client class and the model name of ``"<provider>:<model>"``.

    Only the first colon separates the provider (model ids may hold colons); the provider is
    matched case-insensitively and both parts are stripped of surrounding blanks.

    Raises:
        ValueError: Not a string, no ``provider:`` prefix, a blank model or an unknown
            provider (the message lists the known ones).
    """
    known = ", ".join(known_providers())
    if not isinstance(spec, str):
        raise ValueError(f"a model spec must be a string like 'openai:gpt-4o-mini', got {spec!r}")
    provider, sep, model = spec.partition(":")
    if not sep or not model.strip():
        raise ValueError(
            f"model spec {spec!r} must look like '<provider>:<model>', "
            f"e.g. 'openai:gpt-4o-mini' (providers: {known})"
        )
    cls = provider_class(provider.strip().lower())
    if cls is None:
        raise ValueError(
            f"unknown model provider {provider!r} in {spec!r}; known providers: {known}"
        )
    return cls, model.strip()


def model_from_string(spec: str, **kwargs: Any) -> HTTPModelClient:
    """Build a model client from ``"<provider>:<model>"`` (see `PROVIDERS`).

    Keyword arguments are forwarded to the client (``base_url``, ``rate_limit``, ``cache``...).

    Examples:
        >>> model_from_string("openai:gpt-4o-mini", api_key="sk-test").name
        'openai:gpt-4o-mini'

    Raises:
        ValueError: No ``provider:`` prefix, a blank model or an unknown provider.
    """
    cls, model = split_model_spec(spec)
    return cls(model, **kwargs)

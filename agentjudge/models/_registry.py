"""The provider registry: which ``"<provider>:<model>"`` prefixes name which client.

`model_from_string` and the harness (``task = "openai:<model>"``) both read the registry, so a
provider added here is known everywhere at once, and an unknown one is refused with the same
message everywhere (naming the known providers), never tried as a Python module. It is the only
list of providers: what else differs by provider (batch API, how prices count cache tokens, retry
hints) is asked of the provider's class through the provider protocol
(`agentjudge.models._provider`), never decided by its name elsewhere.

A provider is one of:

- a client class (an `HTTPModelClient` subclass), or ``"module:Class"`` naming one, imported on
  first use so that naming the providers (the harness asks for every task reference) does not
  load the HTTP stack;
- an `OpenAIPreset`: an OpenAI-compatible server that differs from OpenAI only by its base URL
  and API-key variable (Groq, Mistral, Ollama...), served by `OpenAICompatible`.

Third-party packages add providers through the ``agentjudge.providers`` entry-point group: the
entry's name is the prefix, its object a client class or an `OpenAIPreset`. Built-in prefixes
win over an entry point of the same name.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import importlib.metadata

    from agentjudge.models._http import HTTPModelClient

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROVIDERS",
    "OpenAIPreset",
    "counts_cache_apart",
    "is_provider",
    "known_providers",
    "model_from_string",
    "provider_class",
    "provider_factory",
    "reports_cost",
    "split_model_spec",
]

ENTRY_POINT_GROUP = "agentjudge.providers"
"""The entry-point group third-party providers register in (name: the prefix)."""


@dataclass(frozen=True)
class OpenAIPreset:
    """An OpenAI-compatible provider described by data: where it lives and how it is keyed.

    Args:
        base_url: The API root the chat-completions path is appended to.
        api_key_env: The environment variable the API key is read from (sent as a bearer
            token when set).
        key_required: False for servers that take no key (local ones): the client then never
            reports a missing key.
        batch: The server speaks the OpenAI Batch API (``/files`` + ``/batches``) at
            ``base_url``, so `BatchCollector` (``--batch``) can use it.
        base_url_env: The environment variable that overrides ``base_url`` (default
            ``<PREFIX>_BASE_URL``, e.g. ``GROQ_BASE_URL``).
        reports_cost: A price key: each answer's ``usage.cost`` is what the call was charged,
            in US dollars (OpenRouter's usage accounting), so costs and budgets take it
            instead of the price table (see `reports_cost`).
    """

    base_url: str
    api_key_env: str
    key_required: bool = True
    batch: bool = False
    base_url_env: str | None = None
    reports_cost: bool = False


PROVIDERS: dict[str, type[HTTPModelClient] | OpenAIPreset | str] = {
    "openai": "agentjudge.models._openai:OpenAIChat",
    "anthropic": "agentjudge.models._anthropic:AnthropicMessages",
    "azure": "agentjudge.models._azure:AzureOpenAIChat",
    "gemini": "agentjudge.models._gemini:GeminiChat",
    "bedrock": "agentjudge.models._bedrock:BedrockConverse",  # the bedrock extra (botocore)
    # hosted OpenAI-compatible APIs (base URLs as each provider documents for the OpenAI SDK)
    "deepseek": OpenAIPreset("https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    "fireworks": OpenAIPreset("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "groq": OpenAIPreset("https://api.groq.com/openai/v1", "GROQ_API_KEY", batch=True),
    "mistral": OpenAIPreset("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "openrouter": OpenAIPreset(
        "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", reports_cost=True
    ),
    "together": OpenAIPreset("https://api.together.ai/v1", "TOGETHER_API_KEY"),
    "xai": OpenAIPreset("https://api.x.ai/v1", "XAI_API_KEY"),
    # local servers: no key needed (one is sent if its variable is set, e.g. vllm --api-key)
    "llamacpp": OpenAIPreset("http://localhost:8080/v1", "LLAMACPP_API_KEY", key_required=False),
    "lmstudio": OpenAIPreset("http://localhost:1234/v1", "LMSTUDIO_API_KEY", key_required=False),
    "ollama": OpenAIPreset("http://localhost:11434/v1", "OLLAMA_API_KEY", key_required=False),
    "vllm": OpenAIPreset("http://localhost:8000/v1", "VLLM_API_KEY", key_required=False),
}
"""Provider prefixes (lower case) and what each builds: a client class, ``"module:Class"``
(imported on first use) or an `OpenAIPreset`."""

_plugin_cache: tuple[tuple[str, ...], dict[str, importlib.metadata.EntryPoint]] | None = None

_Found = list[tuple[str, list["importlib.metadata.EntryPoint"]]]
_folder_cache: dict[str, tuple[int, _Found]] = {}
"""Per ``sys.path`` entry (absolute): its modification time when read, and the distributions
found there (normalized name, their provider entry points), so that a change of ``sys.path`` (a
run puts its project folder first) reads only the entries new to it. A distribution installed
into an entry changes the entry's modification time, and so is found (the newer reading
replaces the older); a missing entry is not kept."""


def _plugins() -> dict[str, importlib.metadata.EntryPoint]:
    """The ``agentjudge.providers`` entry points installed (re-read when ``sys.path`` changes).

    The same as ``importlib.metadata.entry_points(group=...)`` read into a dict: distributions
    in ``sys.path`` order, the first of a name hiding later ones, and of two entry points of one
    name the later one kept.
    """
    global _plugin_cache
    key = tuple(sys.path)
    if _plugin_cache is None or _plugin_cache[0] != key:
        seen: set[str] = set()
        plugins: dict[str, importlib.metadata.EntryPoint] = {}
        for entry in key:
            for name, entries in _plugins_at(entry):
                if name not in seen:
                    seen.add(name)
                    plugins.update((ep.name.strip().lower(), ep) for ep in entries)
        _plugin_cache = (key, plugins)
    return _plugin_cache[1]


def _plugins_at(entry: str) -> _Found:
    """The distributions in one ``sys.path`` entry and their provider entry points (cached)."""
    import importlib.metadata  # only when a name is not a built-in provider

    folder = os.path.abspath(entry or ".")
    try:
        stamp = os.stat(folder).st_mtime_ns
    except OSError:
        stamp = -1  # missing now: nothing is found there, and it is read again once it exists
    cached = _folder_cache.get(folder)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    found = [
        (_distribution_key(dist), list(dist.entry_points.select(group=ENTRY_POINT_GROUP)))
        for dist in importlib.metadata.distributions(path=[folder])
    ]
    # Kept only for a folder last changed over a second ago: a change within the same tick of
    # the file system's clock would leave its modification time as it was.
    if time.time() - stamp / 1e9 > 1.0:
        _folder_cache[folder] = (stamp, found)
    return found


def _distribution_key(dist: importlib.metadata.Distribution) -> str:
    """The name importlib.metadata tells distributions apart by (from the folder's name)."""
    name = getattr(dist, "_normalized_name", None)
    return name if isinstance(name, str) else str(dist.name).lower().replace("-", "_")


def _load_plugin(provider: str, entry: importlib.metadata.EntryPoint) -> Any:
    from agentjudge.models._http import HTTPModelClient

    where = f"entry point {entry.name!r} = {entry.value!r} ({ENTRY_POINT_GROUP})"
    try:
        loaded = entry.load()
    except Exception as exc:
        raise ValueError(f"model provider {provider!r}: {where} failed to load: {exc!r}") from exc
    if isinstance(loaded, OpenAIPreset):
        return loaded
    if isinstance(loaded, type) and issubclass(loaded, HTTPModelClient):
        return loaded
    raise ValueError(
        f"model provider {provider!r}: {where} is {loaded!r}, "
        "not an HTTPModelClient subclass or an OpenAIPreset"
    )


def _entry(provider: str) -> type[HTTPModelClient] | OpenAIPreset | None:
    entry = PROVIDERS.get(provider)
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = cast("type[HTTPModelClient]", getattr(importlib.import_module(module), attr))
        PROVIDERS[provider] = entry
    if entry is None and provider in _plugins():
        loaded = _load_plugin(provider, _plugins()[provider])
        return cast("type[HTTPModelClient] | OpenAIPreset", loaded)
    return entry


def provider_class(provider: str) -> type[HTTPModelClient] | None:
    """The client class registered for ``provider`` (lower case), imported now; None if unknown.

    A preset's class is `OpenAICompatible` (build it with `provider_factory`, which passes the
    preset).

    Raises:
        ValueError: An entry point of that name that fails to load or holds no provider.
    """
    entry = _entry(provider)
    if isinstance(entry, OpenAIPreset):
        from agentjudge.models._compatible import OpenAICompatible

        return OpenAICompatible
    return entry


def provider_factory(provider: str) -> Callable[..., HTTPModelClient] | None:
    """What builds a client of ``provider``: ``factory(model, **options)``; None if unknown.

    Raises:
        ValueError: An entry point of that name that fails to load or holds no provider.
    """
    entry = _entry(provider)
    if isinstance(entry, OpenAIPreset):
        from agentjudge.models._compatible import OpenAICompatible

        return partial(OpenAICompatible, provider=provider, preset=entry)
    return entry


def counts_cache_apart(provider: str) -> bool:
    """The price key of ``provider``: its ``input_tokens`` exclude prompt-cache tokens.

    Asked of the registered class (its ``cache_tokens_apart``, imported now); False for a name
    that is no registered provider (e.g. a client given ``name=``) or whose entry point fails
    to load: cache tokens are then read as counted inside ``input_tokens``, as most do.
    """
    try:
        cls = provider_class(provider.lower())
    except ValueError:
        return False
    return bool(getattr(cls, "cache_tokens_apart", False))


def reports_cost(provider: str) -> bool:
    """The price key of ``provider``: its answers carry their charge in USD at ``usage.cost``.

    An `OpenAIPreset`'s ``reports_cost`` (OpenRouter), else the registered class's
    ``reports_cost``; False for a name that is no registered provider or whose entry point fails
    to load (the price table is used then).
    """
    try:
        entry = _entry(provider.lower())
    except ValueError:
        return False
    return bool(getattr(entry, "reports_cost", False))


def is_provider(prefix: str) -> bool:
    """True when ``prefix`` (any case) is a registered provider.

    The installed entry points are read only for a name that is not built in.
    """
    name = prefix.lower()
    return name in PROVIDERS or name in _plugins()


def known_providers() -> tuple[str, ...]:
    """The registered provider prefixes (built-in and installed entry points), sorted."""
    return tuple(sorted(set(PROVIDERS) | set(_plugins())))


def split_model_spec(spec: object) -> tuple[Callable[..., HTTPModelClient], str]:
    """What builds the client of ``"<provider>:<model>"`` (see `provider_factory`), and the model.

    Only the first colon separates the provider (model ids may hold colons); the provider is
    matched case-insensitively and both parts are stripped of surrounding blanks.

    Raises:
        ValueError: Not a string, no ``provider:`` prefix, a blank model or an unknown
            provider (the message lists the known ones).
    """
    if not isinstance(spec, str):
        raise ValueError(f"a model spec must be a string like 'openai:gpt-4o-mini', got {spec!r}")
    provider, sep, model = spec.partition(":")
    if not sep or not model.strip():
        raise ValueError(
            f"model spec {spec!r} must look like '<provider>:<model>', "
            f"e.g. 'openai:gpt-4o-mini' (providers: {', '.join(known_providers())})"
        )
    factory = provider_factory(provider.strip().lower())
    if factory is None:
        raise ValueError(
            f"unknown model provider {provider!r} in {spec!r}; "
            f"known providers: {', '.join(known_providers())}"
        )
    return factory, model.strip()


def model_from_string(spec: str, **kwargs: Any) -> HTTPModelClient:
    """Build a model client from ``"<provider>:<model>"`` (see `PROVIDERS`).

    Keyword arguments are forwarded to the client (``base_url``, ``rate_limit``, ``cache``...).

    Examples:
        >>> model_from_string("openai:gpt-4o-mini", api_key="sk-test").name
        'openai:gpt-4o-mini'
        >>> model_from_string("ollama:llama3.1").base_url
        'http://localhost:11434/v1'

    Raises:
        ValueError: No ``provider:`` prefix, a blank model or an unknown provider.
    """
    factory, model = split_model_spec(spec)
    return factory(model, **kwargs)

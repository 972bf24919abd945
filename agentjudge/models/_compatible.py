"""`OpenAICompatible`: an OpenAI-compatible provider configured by an `OpenAIPreset`.

One class serves every preset of the registry (Groq, Mistral, Ollama...): the preset only
changes where requests go, which variable holds the key and whether one is needed. The client
keeps the preset's prefix in its name (``"groq:llama-3.1-8b-instant"``), which is what prices,
reports and the cache key on.
"""

from __future__ import annotations

import re
from typing import Any, Unpack

from agentjudge.core import Message
from agentjudge.models._batch_api import BatchAPI
from agentjudge.models._openai import OpenAIChat
from agentjudge.models._options import ClientKeywords
from agentjudge.models._registry import PROVIDERS, OpenAIPreset
from agentjudge.models._types import ModelRequest

__all__ = ["OpenAICompatible"]


def _preset(provider: str, preset: OpenAIPreset | None) -> OpenAIPreset:
    if preset is not None:
        return preset
    known = PROVIDERS.get(provider)
    if not isinstance(known, OpenAIPreset):
        presets = sorted(name for name, v in PROVIDERS.items() if isinstance(v, OpenAIPreset))
        raise ValueError(
            f"{provider!r} is not an OpenAI-compatible preset; pass preset=OpenAIPreset(...) "
            f"or use one of: {', '.join(presets)}"
        )
    return known


class OpenAICompatible(OpenAIChat):
    """An `OpenAIChat` for an OpenAI-compatible provider named by a preset.

    ``model_from_string("groq:llama-3.1-8b-instant")`` builds one; so does
    ``OpenAICompatible("llama3.1", provider="ollama")``. The base URL is ``base_url=``, else
    the preset's ``base_url_env`` variable (``OLLAMA_BASE_URL``...), else the preset's URL; the
    key is ``api_key=``, else the preset's ``api_key_env`` (``GROQ_API_KEY``...). A preset with
    ``key_required=False`` (the local servers) never reports a missing key.

    Args:
        model: The model name the server knows.
        provider: The prefix (lower case): the client's name is ``"<provider>:<model>"``.
        preset: The preset; default: the registry's preset of ``provider``.
        strict_schema: As for `OpenAIChat`.
        **options: The options every client shares (see `ClientOptions`).

    Raises:
        ValueError: No ``preset`` and ``provider`` is not a registered preset.
    """

    def __init__(
        self,
        model: str,
        *,
        provider: str,
        preset: OpenAIPreset | None = None,
        strict_schema: bool = True,
        **options: Unpack[ClientKeywords],
    ) -> None:
        chosen = _preset(provider, preset)
        env = chosen.base_url_env or re.sub(r"\W", "_", provider.upper()) + "_BASE_URL"
        # Instance values shadow OpenAIChat's class-level ones (they are pickled with the rest).
        vars(self).update(
            provider=provider,
            api_key_env=chosen.api_key_env,
            base_url_env=env,
            default_base_url=chosen.base_url,
        )
        self.preset = chosen
        super().__init__(model, strict_schema=strict_schema, **options)

    def __repr__(self) -> str:
        shown = f"{self.model!r}, provider={self.provider!r}, base_url={self.base_url!r}"
        return f"OpenAICompatible({shown})"

    def request_body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        """As `OpenAIChat`'s; a preset that ``reports_cost`` also asks for the call's charge.

        OpenRouter's usage-accounting opt-in, ``"usage": {"include": true}``, is sent (its docs
        now report the cost in every answer and call the opt-in deprecated and without
        effect: sending it keeps the cost coming where it is still needed). An ``extra_body``
        ``usage`` wins.
        """
        body = super().request_body(request, messages, schema)
        if self.preset.reports_cost and "usage" not in body:
            body["usage"] = {"include": True}
        return body

    def batch_api(self) -> BatchAPI | None:
        """The OpenAI Batch API at ``base_url`` when the preset says the server speaks it."""
        return super().batch_api() if self.preset.batch else None

    @property
    def missing_key(self) -> str | None:
        """None for a preset that needs no key; else as for every client (names the variable)."""
        if not self.preset.key_required:
            return None
        return super().missing_key

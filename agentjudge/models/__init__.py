"""Model clients over httpx, one protocol per provider; retries, rate limits, cache.

```python
from agentjudge.models import OpenAIChat, ModelRequest, RateLimit, SqliteCache

async with OpenAIChat("gpt-4o-mini", rate_limit=RateLimit(rpm=500)) as model:
    response = await model.complete(ModelRequest(messages=[...]))
```

A provider is one `HTTPModelClient` subclass implementing the provider protocol (`Reply`,
`reply_from`, `read_usage`, `CapacitySignals`, `BatchAPI`: see docs/how-to/providers.md).

Every name loads its module on first access (PEP 562): the value types (`ModelRequest`,
`ModelResponse`, `Usage`, `ModelClient`), prices, rate limits and the cache without the HTTP
stack, so judges can use the value types without httpx; the clients (and everything that needs
httpx or aiohttp) only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentjudge._lazy import lazy_attribute
from agentjudge.exceptions import ModelError, ModelHTTPError, ModelResponseError

if TYPE_CHECKING:
    from agentjudge._retry import RetryPolicy
    from agentjudge.models._anthropic import AnthropicMessages
    from agentjudge.models._azure import AzureOpenAIChat
    from agentjudge.models._batch import BatchCollector
    from agentjudge.models._batch_api import (
        AnthropicBatchAPI,
        BatchAPI,
        OpenAIBatchAPI,
        PollResult,
        Results,
    )
    from agentjudge.models._bedrock import BedrockConverse
    from agentjudge.models._cache import SqliteCache
    from agentjudge.models._compatible import OpenAICompatible
    from agentjudge.models._gemini import GeminiChat
    from agentjudge.models._headers import CapacitySignals, header_signals
    from agentjudge.models._http import HTTPModelClient, ResponseTooLarge, default_transport
    from agentjudge.models._openai import OpenAIChat
    from agentjudge.models._options import DEFAULT_MAX_RESPONSE_BYTES, ClientOptions
    from agentjudge.models._prices import ModelPrice, PriceTable, prices, response_cost
    from agentjudge.models._provider import Reply, reply_from
    from agentjudge.models._ratelimit import RateLimit
    from agentjudge.models._registry import OpenAIPreset, known_providers, model_from_string
    from agentjudge.models._types import (
        ModelClient,
        ModelRequest,
        ModelResponse,
        TokenLogprob,
        Usage,
    )
    from agentjudge.models._usage import read_usage

# Loaded on first access: the clients' modules import httpx / aiohttp; the values, prices, rate
# limits and the cache are not needed by a run whose judges call no model (the command line
# imports this package to recognise ``provider:model`` names). `RetryPolicy` too (a pydantic
# model, with tenacity): the Ray broker imports the adaptive controller from this package and
# needs neither (~0.1 s of CPU in every run's broker interpreter).
_LAZY: dict[str, str] = {
    "RetryPolicy": "agentjudge._retry",
    "SqliteCache": "agentjudge.models._cache",
    "CapacitySignals": "agentjudge.models._headers",
    "header_signals": "agentjudge.models._headers",
    "ModelPrice": "agentjudge.models._prices",
    "PriceTable": "agentjudge.models._prices",
    "prices": "agentjudge.models._prices",
    "response_cost": "agentjudge.models._prices",
    "RateLimit": "agentjudge.models._ratelimit",
    "ModelClient": "agentjudge.models._types",
    "ModelRequest": "agentjudge.models._types",
    "ModelResponse": "agentjudge.models._types",
    "TokenLogprob": "agentjudge.models._types",
    "Usage": "agentjudge.models._types",
    "read_usage": "agentjudge.models._usage",
    "AnthropicMessages": "agentjudge.models._anthropic",
    "AnthropicBatchAPI": "agentjudge.models._batch_api",
    "BatchAPI": "agentjudge.models._batch_api",
    "HTTPModelClient": "agentjudge.models._http",
    "OpenAIBatchAPI": "agentjudge.models._batch_api",
    "PollResult": "agentjudge.models._batch_api",
    "Reply": "agentjudge.models._provider",
    "Results": "agentjudge.models._batch_api",
    "reply_from": "agentjudge.models._provider",
    "AzureOpenAIChat": "agentjudge.models._azure",
    "BatchCollector": "agentjudge.models._batch",
    "ClientOptions": "agentjudge.models._options",
    "DEFAULT_MAX_RESPONSE_BYTES": "agentjudge.models._options",
    "GeminiChat": "agentjudge.models._gemini",
    "BedrockConverse": "agentjudge.models._bedrock",
    "ResponseTooLarge": "agentjudge.models._http",
    "default_transport": "agentjudge.models._http",
    "OpenAIChat": "agentjudge.models._openai",
    "OpenAICompatible": "agentjudge.models._compatible",
    "OpenAIPreset": "agentjudge.models._registry",
    "known_providers": "agentjudge.models._registry",
    "model_from_string": "agentjudge.models._registry",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "AnthropicBatchAPI",
    "AnthropicMessages",
    "AzureOpenAIChat",
    "BatchAPI",
    "BatchCollector",
    "BedrockConverse",
    "CapacitySignals",
    "ClientOptions",
    "GeminiChat",
    "HTTPModelClient",
    "ModelClient",
    "ModelError",
    "ModelHTTPError",
    "ModelPrice",
    "ModelRequest",
    "ModelResponse",
    "ModelResponseError",
    "OpenAIBatchAPI",
    "OpenAIChat",
    "OpenAICompatible",
    "OpenAIPreset",
    "PollResult",
    "PriceTable",
    "RateLimit",
    "Reply",
    "ResponseTooLarge",
    "Results",
    "RetryPolicy",
    "SqliteCache",
    "TokenLogprob",
    "Usage",
    "default_transport",
    "header_signals",
    "known_providers",
    "model_from_string",
    "prices",
    "read_usage",
    "reply_from",
    "response_cost",
]

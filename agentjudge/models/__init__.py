"""Model clients over httpx: OpenAI-compatible and Anthropic, retries, rate limits, cache.

```python
from agentjudge.models import OpenAIChat, ModelRequest, RateLimit, SqliteCache

async with OpenAIChat("gpt-4o-mini", rate_limit=RateLimit(rpm=500)) as model:
    response = await model.complete(ModelRequest(messages=[...]))
```
"""

from __future__ import annotations

from agentjudge._retry import RetryPolicy
from agentjudge.exceptions import ModelError, ModelHTTPError, ModelResponseError
from agentjudge.models._anthropic import AnthropicMessages
from agentjudge.models._batch import BatchCollector
from agentjudge.models._cache import SqliteCache
from agentjudge.models._http import (
    HTTPModelClient,
    ResponseTooLarge,
    default_transport,
    parse_retry_after,
)
from agentjudge.models._openai import OpenAIChat
from agentjudge.models._options import DEFAULT_MAX_RESPONSE_BYTES, ClientOptions
from agentjudge.models._prices import ModelPrice, PriceTable, prices, response_cost
from agentjudge.models._ratelimit import RateLease, RateLimit
from agentjudge.models._registry import known_providers, model_from_string
from agentjudge.models._schema import schema_errors
from agentjudge.models._types import ModelClient, ModelRequest, ModelResponse, Usage

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "AnthropicMessages",
    "BatchCollector",
    "ClientOptions",
    "HTTPModelClient",
    "ModelClient",
    "ModelError",
    "ModelHTTPError",
    "ModelPrice",
    "ModelRequest",
    "ModelResponse",
    "ModelResponseError",
    "OpenAIChat",
    "PriceTable",
    "RateLease",
    "RateLimit",
    "ResponseTooLarge",
    "RetryPolicy",
    "SqliteCache",
    "Usage",
    "default_transport",
    "known_providers",
    "model_from_string",
    "parse_retry_after",
    "prices",
    "response_cost",
    "schema_errors",
]

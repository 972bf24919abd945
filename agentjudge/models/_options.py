"""Checks of the model clients' constructor options (each bad value is a clear ValueError)."""

from __future__ import annotations

import math
from typing import Any

import httpx

from agentjudge._retry import RetryPolicy
from agentjudge.models._cache import SqliteCache
from agentjudge.models._ratelimit import RateLimit

__all__ = ["check_client_options"]


def _int_at_least(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_numbers(
    timeout: object, max_retry_after: object, max_concurrency: object, schema_retries: object
) -> None:
    _int_at_least("max_concurrency", max_concurrency, 1)
    _int_at_least("schema_retries", schema_retries, 0)
    if timeout is not None and not (
        isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0
    ):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    if not (isinstance(max_retry_after, int | float) and max_retry_after >= 0):
        raise ValueError(f"max_retry_after must be a number >= 0, got {max_retry_after!r}")


def _check_objects(retry: object, rate_limit: object, cache: object, client: object) -> None:
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise ValueError(f"retry must be a RetryPolicy or None, got {retry!r}")
    if rate_limit is not None and not isinstance(rate_limit, RateLimit):
        raise ValueError(f"rate_limit must be a RateLimit or None, got {rate_limit!r}")
    if cache is not None and not isinstance(cache, SqliteCache):
        raise ValueError(f"cache must be a SqliteCache or None, got {cache!r}")
    if client is not None and not isinstance(client, httpx.AsyncClient):
        raise ValueError(f"client must be an httpx.AsyncClient, got {client!r}")


def check_client_options(**options: Any) -> None:
    """Raise ValueError naming the first bad option of an `HTTPModelClient`.

    Args:
        **options: ``model``, ``max_concurrency``, ``timeout``, ``schema_retries``,
            ``max_retry_after``, ``max_response_bytes``, ``retry``, ``rate_limit``,
            ``cache``, ``client`` and ``adaptive`` as given to the constructor.
    """
    model = options["model"]
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"model must be a non-blank string, got {model!r}")
    _check_numbers(
        options["timeout"],
        options["max_retry_after"],
        options["max_concurrency"],
        options["schema_retries"],
    )
    _int_at_least("max_response_bytes", options["max_response_bytes"], 1)
    if not isinstance(options["adaptive"], bool):
        raise ValueError(f"adaptive must be True or False, got {options['adaptive']!r}")
    _check_objects(options["retry"], options["rate_limit"], options["cache"], options["client"])

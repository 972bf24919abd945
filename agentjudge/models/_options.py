"""The model clients' shared constructor options: named, typed, defaulted and checked once.

`ClientKeywords` types the ``**options`` every client constructor takes (so type checkers and
editors see each keyword); `ClientOptions` holds their defaults and checks each value. A new
option is one field in each (a test keeps the two in step) and one line in `HTTPModelClient`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypedDict

import httpx

from agentjudge._retry import RetryPolicy
from agentjudge.models._cache import SqliteCache
from agentjudge.models._ratelimit import RateLimit

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "ClientKeywords", "ClientOptions"]

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""The largest response body a client reads by default (16 MiB)."""


class ClientKeywords(TypedDict, total=False):
    """The keyword arguments every model client takes (see `ClientOptions` for each)."""

    base_url: str | None
    api_key: str | None
    client: httpx.AsyncClient | None
    max_concurrency: int
    rate_limit: RateLimit | None
    retry: RetryPolicy | None
    timeout: float | None
    cache: SqliteCache | None
    schema_retries: int
    name: str | None
    headers: Mapping[str, str] | None
    extra_body: Mapping[str, Any] | None
    max_retry_after: float
    max_response_bytes: int
    adaptive: bool


def _int_at_least(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_instance(name: str, value: object, kind: type, what: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"{name} must be {what}, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientOptions:
    """The options shared by `OpenAIChat` and `AnthropicMessages`, with their defaults.

    Attributes:
        base_url: The API root; default the provider's ``*_BASE_URL`` variable, else its
            public endpoint. ``user:password@`` in it is sent as HTTP Basic authentication.
        api_key: The API key; default the provider's ``*_API_KEY`` variable. Never shown:
            reprs show no key and error texts show ``[REDACTED]`` in its place.
        client: An `httpx.AsyncClient` to send requests with (never closed by the model
            client); by default the client builds connections on the fastest transport.
        max_concurrency: HTTP requests the client keeps in flight at most.
        rate_limit: Request/token budgets shared by every client given the same object;
            default unlimited.
        retry: Retries for 408/409/429/5xx, transport errors and unusable bodies; None = one
            attempt.
        timeout: Seconds allowed for connecting, each read and each write of one attempt;
            None = no limit.
        cache: A `SqliteCache` answering repeated requests; default off.
        schema_retries: Re-asks when a structured answer does not follow the schema.
        name: The client name (default ``"<provider>:<model>"``), also the Evaluator resource.
        headers: Extra HTTP headers sent with every request.
        extra_body: Extra top-level JSON fields sent with every request (e.g. ``seed``).
        max_retry_after: Longest ``Retry-After`` honoured, seconds (finite); longer waits fall
            back to the backoff (at most 6 s). No header pauses the client longer than this,
            nor paces its requests more than 5 s apart. A wait
            longer than the time left before the caller's deadline fails at once
            (`ModelHTTPError` saying so).
        max_response_bytes: Largest response body read (default 16 MiB); a larger answer is
            a `ModelResponseError` (not retried).
        adaptive: Adapt concurrency and request rate to the provider's rate limits (429s,
            rate-limit headers, latency) beneath ``max_concurrency`` and ``rate_limit``;
            under a deadline, rate-limited answers are retried until it (see
            docs/how-to/cost-and-rate-limits.md). False: fixed concurrency, policy retries.

    Raises:
        ValueError: Naming the first option whose value is out of range or of the wrong type.
    """

    base_url: str | None = None
    api_key: str | None = None
    client: httpx.AsyncClient | None = None
    max_concurrency: int = 16
    rate_limit: RateLimit | None = None
    retry: RetryPolicy | None = field(default_factory=RetryPolicy)
    timeout: float | None = 60.0
    cache: SqliteCache | None = None
    schema_retries: int = 1
    name: str | None = None
    headers: Mapping[str, str] | None = None
    extra_body: Mapping[str, Any] | None = None
    max_retry_after: float = 60.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    adaptive: bool = True

    def __post_init__(self) -> None:
        _int_at_least("max_concurrency", self.max_concurrency, 1)
        _int_at_least("schema_retries", self.schema_retries, 0)
        _int_at_least("max_response_bytes", self.max_response_bytes, 1)
        timeout = self.timeout
        if timeout is not None and not (
            isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0
        ):
            raise ValueError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}"
            )
        wait = self.max_retry_after
        if isinstance(wait, bool) or not (isinstance(wait, int | float) and 0 <= wait < math.inf):
            raise ValueError(f"max_retry_after must be a finite number >= 0, got {wait!r}")
        if not isinstance(self.adaptive, bool):
            raise ValueError(f"adaptive must be True or False, got {self.adaptive!r}")
        _check_instance("retry", self.retry, RetryPolicy, "a RetryPolicy or None")
        _check_instance("rate_limit", self.rate_limit, RateLimit, "a RateLimit or None")
        _check_instance("cache", self.cache, SqliteCache, "a SqliteCache or None")
        _check_instance("client", self.client, httpx.AsyncClient, "an httpx.AsyncClient")

    @classmethod
    def of(cls, owner: str, options: Mapping[str, Any]) -> ClientOptions:
        """Check and default the keyword arguments given to the constructor of ``owner``.

        Raises:
            TypeError: An unknown keyword (the message lists the known ones).
            ValueError: A known keyword with a bad value.
        """
        known = cls.names()
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(
                f"{owner}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
                f"the options are: {', '.join(sorted(known))}"
            )
        return cls(**options)

    @classmethod
    def names(cls) -> frozenset[str]:
        """The option names."""
        return frozenset(f.name for f in fields(cls))

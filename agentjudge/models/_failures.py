"""How a model client's failed calls are classified and explained (shared by every provider).

- Retry classification: 408, 409, 429, 5xx, transport errors (timeouts included) and 2xx bodies
  that are not a usable completion are retried; other statuses are a `ModelHTTPError` at once.
- Hints: each `ModelHTTPError` says what to fix (`status_hint`, `exhausted_hint`).
"""

from __future__ import annotations

import re

import httpx

from agentjudge.exceptions import ModelResponseError, RetryableError

__all__ = [
    "RETRYABLE_STATUSES",
    "ResponseTooLarge",
    "RetryableStatus",
    "excerpt",
    "exhausted_hint",
    "is_retryable_error",
    "status_hint",
]

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Statuses retried besides every 5xx."""
_EXCERPT_CHARS = 500


class RetryableStatus(RetryableError):
    """A status worth retrying (408, 409, 429, 5xx); becomes `ModelHTTPError` when exhausted."""

    def __init__(self, status_code: int, excerpt: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status_code}: {excerpt}", retry_after=retry_after)
        self.status_code = status_code
        self.excerpt = excerpt


class ResponseTooLarge(ModelResponseError):
    """A response body longer than the client's ``max_response_bytes``; never retried.

    Attributes:
        limit: The ``max_response_bytes`` in force.
    """

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


def is_retryable_error(exc: BaseException) -> bool:
    """The client's own retry rule: retryable statuses, transport errors, unusable 2xx bodies.

    A body over ``max_response_bytes`` is not retried: the next answer would be as large.
    """
    if isinstance(exc, httpx.UnsupportedProtocol | ResponseTooLarge):
        return False
    return isinstance(exc, RetryableStatus | httpx.TransportError | ModelResponseError)


def is_retryable_status(status: int) -> bool:
    """408, 409, 429 and every 5xx."""
    return status in RETRYABLE_STATUSES or status >= 500


def excerpt(text: str) -> str:
    """``text`` on one line, cut to 500 characters."""
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "..."


def status_hint(status: int, *, key_env: str, model: str, base_url: str) -> str:
    """What to fix after a status that is not retried."""
    if status == 401:
        return f"authentication failed: check {key_env} / api_key"
    if status == 403:
        return "permission denied: check that the API key may use this model and endpoint"
    if status == 404:
        return f"not found: check the model name {model!r} and base_url {base_url!r}"
    if status in (400, 422):
        return (
            "the request was rejected: check parameters (temperature, max_tokens, "
            "extra_body) and response_schema"
        )
    if status == 413:
        return "the request is too large: shorten the prompt"
    return "the request was rejected and retrying will not help"


def exhausted_hint(status: int, attempts: int) -> str:
    """What to do once a retryable status outlasted the retry attempts."""
    tried = f"still HTTP {status} after {attempts} attempt{'s' if attempts != 1 else ''}"
    if status == 429:
        return f"{tried}: rate limited; lower RateLimit(rpm=..., tpm=...) or max_concurrency"
    if status >= 500:
        return f"{tried}: the server is failing; try later or allow more retry attempts"
    return f"{tried}; try later or allow more retry attempts"

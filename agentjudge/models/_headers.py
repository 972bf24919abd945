"""What a provider's response headers say about capacity: ``Retry-After`` and rate-limit headers.

Only the formats the standards and the providers define are read; anything else is ignored
(None) with a debug log on the ``agentjudge.models`` logger, so a hostile or broken header can
neither pause nor pace a client by accident:

- ``Retry-After`` (RFC 9110, section 10.2.3): delay-seconds (ASCII digits only) or an
  HTTP-date. ``1_0``, ``+5``, ``1e3``, ``0.5`` or ``inf`` are not delay-seconds.
- ``retry-after-ms`` (OpenAI, Azure OpenAI): milliseconds, digits with an optional decimal
  fraction (the providers' own SDKs read it as a decimal number).
- ``*-limit`` / ``*-remaining`` (OpenAI ``x-ratelimit-*``, Anthropic ``anthropic-ratelimit-*``,
  generic ``ratelimit-*``): integers.
- ``*-reset``: an OpenAI duration (``6m0s``, ``1s``, ``20ms``, ``0.5s``), an RFC 3339 time
  (Anthropic), or an integer: delay-seconds (the generic ``ratelimit-reset``), or, from
  ``EPOCH_RESET`` (1e9, i.e. 2001) on, a unix time, as proxies send (read as the seconds until
  it). A reset further away than ``MAX_RESET`` (one day) is ignored: no provider's per-minute or
  per-day budget resets later, and such a value would only slow the client down for nothing.

Every number returned is finite and >= 0.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = [
    "EPOCH_RESET",
    "MAX_RESET",
    "CapacitySignals",
    "RateHints",
    "header_signals",
    "parse_rate_hints",
    "parse_reset",
    "parse_retry_after",
]

logger = logging.getLogger("agentjudge.models")

EPOCH_RESET = 1e9
"""An integer reset at or above this (2001-09-09 as a unix time) is a unix time, not seconds."""
MAX_RESET = 86_400.0
"""The longest reset read, seconds (one day); a later one is ignored."""
LOW_REMAINING = 0.1
"""Below this share of the requests or tokens left, a budget is low."""

_INTEGER = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_DURATION = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?(?:ms|h|m|s))+")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_SHOWN = 40


def _ignored(name: str, text: str) -> None:
    shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    logger.debug("ignoring the response header %s: %r is not in a format it defines", name, shown)


def _number(name: str, text: str | None, form: re.Pattern[str]) -> float | None:
    """``text`` as a finite number when it matches ``form`` in full (surrounding space allowed)."""
    if text is None:
        return None
    value = float(text) if form.fullmatch(text.strip()) else math.inf  # float() skips spaces
    if math.isfinite(value):
        return value
    _ignored(name, text)
    return None


# -- Retry-After ----------------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, else ``Retry-After``.

    ``Retry-After`` is delay-seconds or an HTTP date (a date in the past means 0). Returns
    None when neither header is present in a format it defines.
    """
    return _retry_after({k.lower(): v for k, v in headers.items()}, now)


def _retry_after(lowered: Mapping[str, str], now: datetime | None = None) -> float | None:
    """`parse_retry_after` of headers whose names are lower case already."""
    millis = _number("retry-after-ms", lowered.get("retry-after-ms"), _DECIMAL)
    if millis is not None:
        return millis / 1000.0
    text = lowered.get("retry-after")
    if text is None:
        return None
    if _INTEGER.fullmatch(text.strip()):
        return _number("retry-after", text, _INTEGER)
    try:
        when = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        _ignored("retry-after", text)
        return None
    return _seconds_until(when, now)


def _seconds_until(when: datetime, now: datetime | None) -> float:
    """Seconds from ``now`` (default: the current UTC time) to ``when``; 0 when past.

    A ``when`` without a time zone is read as UTC.
    """
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


# -- the provider's rate-limit headers ------------------------------------------------------------


@dataclass(frozen=True)
class RateHints:
    """What a response's rate-limit headers said (None where a header was missing).

    Attributes:
        limit: Requests allowed in the provider's window / bucket.
        remaining: Requests left.
        reset: Seconds until the request budget is full again.
        token_limit: Tokens allowed.
        token_remaining: Tokens left.
        token_reset: Seconds until the token budget is full again.
    """

    limit: float | None = None
    remaining: float | None = None
    reset: float | None = None
    token_limit: float | None = None
    token_remaining: float | None = None
    token_reset: float | None = None

    @property
    def request_rate(self) -> float | None:
        """The refill rate the headers imply, requests per second (None if unknown)."""
        return _refill_rate(self.limit, self.remaining, self.reset)

    @property
    def token_rate(self) -> float | None:
        """The refill rate of the token budget the headers imply, tokens per second."""
        return _refill_rate(self.token_limit, self.token_remaining, self.token_reset)

    @property
    def exhausted(self) -> bool:
        """No request left, or fewer than 10% of the tokens: a refusal means a real limit."""
        return (self.remaining is not None and self.remaining < 1) or self.low

    @property
    def low(self) -> bool:
        """Fewer than 10% of the requests or of the tokens remain."""
        return fraction(self.remaining, self.limit) < LOW_REMAINING or (
            fraction(self.token_remaining, self.token_limit) < LOW_REMAINING
        )


def fraction(remaining: float | None, limit: float | None) -> float:
    """``remaining / limit`` (1.0 when either is unknown or the limit is 0)."""
    if remaining is None or not limit:
        return 1.0
    return remaining / limit


def parse_reset(text: str, *, now: datetime | None = None, name: str = "reset") -> float | None:
    """Seconds until a reset (see the module docstring for the formats); None if unreadable."""
    stripped = text.strip()
    seconds: float | None = None
    if _INTEGER.fullmatch(stripped):
        seconds = float(stripped)
        if EPOCH_RESET <= seconds < math.inf:  # a unix time
            seconds = max(0.0, seconds - (now or datetime.now(UTC)).timestamp())
    elif _DURATION.fullmatch(stripped):
        seconds = sum(float(n) * _UNIT[u] for n, u in _DURATION_PART.findall(stripped))
    elif _RFC3339.fullmatch(stripped):
        seconds = _rfc3339_seconds(stripped, now)
    if seconds is not None and seconds <= MAX_RESET:  # also False for inf and nan
        return seconds
    _ignored(name, text)
    return None


def _rfc3339_seconds(text: str, now: datetime | None) -> float | None:
    try:
        when = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:  # e.g. hour 25
        return None
    return _seconds_until(when, now)


_PREFIXES = (
    ("x-ratelimit-{}-requests", "x-ratelimit-{}-tokens"),
    ("anthropic-ratelimit-requests-{}", "anthropic-ratelimit-tokens-{}"),
    ("ratelimit-{}", None),
)

_Names = tuple[str, str, str] | None
"""A budget's (limit, remaining, reset) header names; None: the family has no such budget."""


def _names(pattern: str | None) -> _Names:
    if pattern is None:
        return None
    return pattern.format("limit"), pattern.format("remaining"), pattern.format("reset")


_FAMILIES: tuple[tuple[_Names, _Names], ...] = tuple(
    (_names(requests), _names(tokens)) for requests, tokens in _PREFIXES
)
"""Per header family (OpenAI, Anthropic, generic): its request and token header names."""


def parse_rate_hints(headers: Mapping[str, str]) -> RateHints | None:
    """The rate-limit headers of a response (the first family present), or None."""
    return _rate_hints({k.lower(): v for k, v in headers.items()})


def _rate_hints(lowered: Mapping[str, str]) -> RateHints | None:
    """`parse_rate_hints` of headers whose names are lower case already."""
    for requests, tokens in _FAMILIES:
        limit = _integer(lowered, requests, 0)
        token_limit = _integer(lowered, tokens, 0)
        if limit is None and token_limit is None:
            continue
        return RateHints(
            limit=limit,
            remaining=_integer(lowered, requests, 1),
            reset=_reset(lowered, requests),
            token_limit=token_limit,
            token_remaining=_integer(lowered, tokens, 1),
            token_reset=_reset(lowered, tokens),
        )
    return None


def _integer(lowered: Mapping[str, str], names: _Names, field: int) -> float | None:
    if names is None:
        return None
    text = lowered.get(names[field])
    return None if text is None else _number(names[field], text, _INTEGER)


def _reset(lowered: Mapping[str, str], names: _Names) -> float | None:
    if names is None:
        return None
    text = lowered.get(names[2])
    return parse_reset(text, name=names[2]) if text is not None else None


def _refill_rate(limit: float | None, remaining: float | None, reset: float | None) -> float | None:
    """``(limit - remaining) / reset``: the budget used up per second; None if unknown or 0."""
    if limit is None or remaining is None or not reset:
        return None
    rate = (limit - remaining) / reset
    return rate if 0 < rate < math.inf else None


@dataclass(frozen=True)
class CapacitySignals:
    """What one answer says about capacity, read by its provider from headers or body.

    A provider's ``capacity_signals`` hook returns it (see `agentjudge.models._provider`); the
    client bounds ``retry_after`` by ``max_retry_after`` and the adaptive controller reads both.

    Attributes:
        retry_after: Seconds the provider asked to wait before the next request (None: none
            asked, or not in a format it defines).
        rates: Its rate-limit budget (None: none reported).
    """

    retry_after: float | None = None
    rates: RateHints | None = None


def header_signals(headers: Mapping[str, str]) -> CapacitySignals:
    """The signals of the standard, OpenAI and Anthropic headers (the default of every provider).

    See `parse_retry_after` and `parse_rate_hints`. Read for every answer of an adaptive
    client, so the names are lowered once for both, and an answer with none of the headers
    they read (most answers of most servers) gets the empty signals at once: the same value
    (pinned by a property test, ``tests/models/test_models_header_signals.py``).
    """
    if _SIGNAL_HEADERS.isdisjoint(map(str.lower, headers)):  # no dict built for most answers
        return _NO_SIGNALS
    lowered = {k.lower(): v for k, v in headers.items()}
    return CapacitySignals(_retry_after(lowered), _rate_hints(lowered))


_NO_SIGNALS = CapacitySignals()
_SIGNAL_HEADERS = frozenset(
    {"retry-after", "retry-after-ms"}
    | {name for family in _FAMILIES for names in family if names is not None for name in names}
)
"""Every header name `header_signals` reads (lower case)."""

"""Reading providers' rate-limit headers, and the fake server's hidden limit that sends them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agentjudge.models._headers import parse_rate_hints, parse_reset
from agentjudge.testing import FakeModelServer, FakeRateLimit, FakeResponse

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_openai_durations() -> None:
    """OpenAI reset durations like 20ms, 1s and 1m30.5s are read as seconds."""
    assert parse_reset("20ms") == pytest.approx(0.02)
    assert parse_reset("1s") == 1.0
    assert parse_reset("1m30.5s") == pytest.approx(90.5)
    assert parse_reset("0.5s") == 0.5
    assert parse_reset("6m0s") == 360.0
    assert parse_reset("2") == 2.0  # delay-seconds (the generic ratelimit-reset)
    assert parse_reset("soon") is None


def test_rfc3339_reset_is_seconds_from_now() -> None:
    """An Anthropic-style RFC 3339 reset time is the seconds left until it."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = (now + timedelta(seconds=12)).isoformat().replace("+00:00", "Z")
    assert parse_reset(later, now=now) == pytest.approx(12.0)


def test_openai_headers_give_the_refill_rate() -> None:
    """x-ratelimit-* headers: 3000 allowed, 2990 left, full in 200 ms = 50 requests/s."""
    hints = parse_rate_hints(
        {
            "x-ratelimit-limit-requests": "3000",
            "x-ratelimit-remaining-requests": "2990",
            "x-ratelimit-reset-requests": "200ms",
            "x-ratelimit-limit-tokens": "1000",
            "x-ratelimit-remaining-tokens": "50",
        }
    )
    assert hints is not None
    assert hints.request_rate == pytest.approx(50.0)
    assert hints.low  # 5% of the tokens remain


def test_anthropic_and_generic_families() -> None:
    """anthropic-ratelimit-requests-* and generic ratelimit-* are read too."""
    anthropic = parse_rate_hints(
        {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "2"}
    )
    assert anthropic is not None and anthropic.remaining == 2 and anthropic.low
    generic = parse_rate_hints(
        {"RateLimit-Limit": "10", "RateLimit-Remaining": "5", "RateLimit-Reset": "1"}
    )
    assert generic is not None and generic.request_rate == pytest.approx(5.0)
    assert parse_rate_hints({"content-type": "application/json"}) is None


async def test_fake_limit_refuses_beyond_the_burst_with_provider_headers() -> None:
    """Past its burst the hidden limit answers 429 with Retry-After and x-ratelimit-* headers."""
    async with (
        FakeModelServer(FakeResponse(text="ok"), rate_limit=FakeRateLimit(rps=1, burst=2)) as s,
        httpx.AsyncClient() as http,
    ):
        answers = [await http.post(f"{s.base_url}/chat/completions", json=BODY) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[0].headers["x-ratelimit-limit-requests"] == "2"
    assert answers[0].headers["x-ratelimit-remaining-requests"] == "1"
    refused = answers[2]
    assert int(refused.headers["retry-after"]) >= 1  # delay-seconds: digits (RFC 9110)
    assert int(refused.headers["retry-after-ms"]) >= 1
    assert s.throttled == 1


def test_fake_limit_rejects_bad_settings() -> None:
    """A FakeRateLimit with a non-positive rate or burst is a ValueError naming it."""
    with pytest.raises(ValueError, match="rps"):
        FakeRateLimit(rps=0)
    with pytest.raises(ValueError, match="burst"):
        FakeRateLimit(burst=0)

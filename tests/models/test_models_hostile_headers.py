"""A provider's answers never wedge a client: hostile headers, epoch resets, 503 bursts (issue 19).

Items 1-4: the controller's rate stays in [MIN_RATE, MAX_RATE] and its capacity is always
released; no header paces or pauses a client past the documented bounds; one congestion event
is one backoff step; only the header formats the RFC and the providers define are read.
"""

from __future__ import annotations

import itertools
import logging
import time
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from virtual_clock import run_virtual

from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.models import ModelRequest, OpenAIChat, RetryPolicy
from agentjudge.models._adaptive import MAX_RATE, MIN_RATE, AdaptiveController, feedback
from agentjudge.models._headers import (
    header_signals,
    parse_rate_hints,
    parse_reset,
    parse_retry_after,
)
from agentjudge.testing import FakeModelServer, FakeResponse

FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
REQUEST = ModelRequest(messages=(Message(role="user", content="Grade this."),))
OVERFLOW = "1" + "0" * 306 + "h"  # 1e306 hours: inf seconds
NOW = datetime(2026, 1, 1, tzinfo=UTC)


# -- item 4: only the formats RFC 9110 and the providers define ---------------------------------


@pytest.mark.parametrize(
    "value", ["1_0", " +5", "+5", "1e3", "inf", "nan", "-1", "0x10", "\u0663", "1.5", "10s", ""]
)
def test_retry_after_outside_rfc_9110_is_ignored(
    value: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Retry-After is delay-seconds (ASCII digits) or an HTTP-date; anything else is logged."""
    with caplog.at_level(logging.DEBUG, logger="agentjudge.models"):
        assert parse_retry_after({"Retry-After": value}) is None
    assert "retry-after" in caplog.text


@pytest.mark.parametrize("value", ["1_000", "1e3", "inf", "-5", "+5", "5.", ".5"])
def test_retry_after_ms_outside_decimal_digits_is_ignored(value: str) -> None:
    """retry-after-ms is digits with an optional fraction, nothing of Python's float syntax."""
    assert parse_retry_after({"retry-after-ms": value}) is None


def test_retry_after_that_overflows_is_ignored() -> None:
    """Delay-seconds too large for a float are not an infinite wait."""
    assert parse_retry_after({"Retry-After": "9" * 400}) is None


@pytest.mark.parametrize("value", ["1_000", "1e3", "1.5", "inf", "1e-300", "-3", "0x10"])
def test_rate_limit_numbers_are_integers(value: str) -> None:
    """x-ratelimit limit and remaining are integers, as OpenAI and Anthropic send them."""
    assert parse_rate_hints({"x-ratelimit-limit-requests": value}) is None
    hints = parse_rate_hints(
        {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": value}
    )
    assert hints is not None and hints.limit == 100 and hints.remaining is None


@pytest.mark.parametrize("value", [OVERFLOW, "1e300", "1.5", "1_0s", "90000", "25h", "soon"])
def test_unreadable_or_far_resets_are_ignored(value: str) -> None:
    """Overflowing, float-syntax and beyond-a-day resets give None, not a tiny rate."""
    assert parse_reset(value, now=NOW) is None


def test_an_epoch_reset_is_read_as_the_time_until_it() -> None:
    """An integer from 1e9 on is a unix time (as proxies send): seconds until it, 0 if past."""
    epoch = int(NOW.timestamp())
    assert parse_reset(str(epoch + 60), now=NOW) == 60.0
    assert parse_reset(str(epoch - 60), now=NOW) == 0.0
    assert parse_reset(str(epoch * 1000), now=NOW) is None  # milliseconds: too far, ignored
    hints = parse_rate_hints(
        {
            "x-ratelimit-limit-requests": "100",
            "x-ratelimit-remaining-requests": "5",
            "x-ratelimit-reset-requests": str(int(time.time()) + 60),
        }
    )
    assert hints is not None and hints.request_rate == pytest.approx(95 / 60, rel=0.05)


# -- item 1: the controller, driven by arbitrary answers ------------------------------------------

FAMILIES = [
    ("x-ratelimit-{}-requests", "x-ratelimit-{}-tokens"),
    ("anthropic-ratelimit-requests-{}", "anthropic-ratelimit-tokens-{}"),
    ("ratelimit-{}", "ratelimit-{}"),
]
HOSTILE = [
    "inf", "-inf", "nan", "1e-300", "1e300", OVERFLOW, "1" + "0" * 400, "-1", "0", "1", "5",
    "100", "1_0", " +5", "1e3", "", "\u0663", "6m0s", "20ms", "0.5s", "1s", "86400",
    "2026-01-01T00:00:00Z", "Wed, 21 Oct 2015 07:28:00 GMT", str(int(time.time()) + 60),
]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(0, 10**15).map(str),
    st.floats().map(repr),
    st.text(max_size=6),
)
# Built once: a strategy made inside the composite is validated again at every draw, which was
# most of this property test's CPU.
FAMILY = st.sampled_from(FAMILIES)
HEADER = st.one_of(st.none(), VALUES)


@st.composite
def answer_headers(draw: st.DrawFn) -> dict[str, str]:
    """Headers of one family (limit, remaining, reset of requests and tokens) and Retry-After."""
    requests, tokens = draw(FAMILY)
    fields = ("limit", "remaining", "reset")
    names = [p.format(f) for p in (requests, tokens) for f in fields]
    names += ["retry-after", "retry-after-ms"]
    drawn = {name: draw(HEADER) for name in names}
    return {name: value for name, value in drawn.items() if value is not None}


ANSWERS = st.lists(
    st.tuples(st.sampled_from([200, 200, 200, 429, 503, 529, 500, 404]), answer_headers()),
    min_size=1,
    max_size=30,
)
MAX_WAIT = 10.0


def requests_left(limit: str, remaining: str, reset: str) -> dict[str, str]:
    """OpenAI request headers."""
    return {
        "x-ratelimit-limit-requests": limit,
        "x-ratelimit-remaining-requests": remaining,
        "x-ratelimit-reset-requests": reset,
    }


@settings(max_examples=60, deadline=None)
@given(answers=ANSWERS, workers=st.integers(1, 6))
@example(answers=[(200, requests_left("100", "5", OVERFLOW))] * 3, workers=2)  # the issue's
@example(answers=[(200, requests_left("1e-300", "0", "1e300"))] * 3, workers=2)
@example(answers=[(200, requests_left("100", "5", str(int(time.time()) + 60)))] * 3, workers=1)
@example(answers=[(200, requests_left("100", "5", "99999999"))] * 3, workers=1)
def test_arbitrary_answers_never_wedge_the_controller(
    answers: list[tuple[int, dict[str, str]]], workers: int
) -> None:
    """Every admitted request is sent, in-flight returns to 0, the rate stays in bounds and no
    admission waits past the bounds (a pause of max_retry_after, pacing of 5 s), without a
    deadline, whatever the headers say (virtual time: sleeps take none)."""

    async def main() -> tuple[int, float, AdaptiveController]:
        control = AdaptiveController(8)
        pending = iter(answers)
        sent = 0
        longest = 0.0

        async def worker() -> None:
            nonlocal sent, longest
            for status, headers in pending:
                asked = anyio.current_time()
                begun = await control.admit()
                longest = max(longest, begun - asked)
                sent += 1
                await anyio.sleep(0.02)  # the provider answers
                feedback(control, begun, status, header_signals(headers), MAX_WAIT)
                assert control.rate is None or MIN_RATE <= control.rate <= MAX_RATE
                assert 1 <= control.window <= control.ceiling

        async with anyio.create_task_group() as tg:
            for _ in range(workers):
                tg.start_soon(worker)
        return sent, longest, control

    sent, longest, control = run_virtual(main)
    assert sent == len(answers)
    assert control.in_flight == 0
    assert longest <= MAX_WAIT + 1 / MIN_RATE


def test_a_header_paces_requests_at_most_5_s_apart() -> None:
    """A reset a day away with 5 of 100 left (95 a day) paces at MIN_RATE, not 1 per 909 s."""
    slow = {
        "x-ratelimit-limit-requests": "100",
        "x-ratelimit-remaining-requests": "5",
        "x-ratelimit-reset-requests": "86400",
    }

    async def main() -> list[float]:
        control = AdaptiveController(4)
        starts = []
        for _ in range(4):
            begun = await control.admit()
            starts.append(begun)
            feedback(control, begun, 200, header_signals(slow), MAX_WAIT)
        assert control.rate == MIN_RATE
        return starts

    starts = run_virtual(main)
    assert max(b - a for a, b in itertools.pairwise(starts)) <= 1 / MIN_RATE


# -- item 1 and 2 over loopback --------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {
            "x-ratelimit-limit-requests": "100",
            "x-ratelimit-remaining-requests": "5",
            "x-ratelimit-reset-requests": OVERFLOW,
        },
        {
            "x-ratelimit-limit-requests": "1e-300",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "1e300",
        },
    ],
    ids=["overflowing-reset", "tiny-limit"],
)
async def test_a_hostile_200_does_not_wedge_the_client(headers: dict[str, str]) -> None:
    """30 requests answered 200 with hostile rate-limit headers all reach the server."""
    texts: list[str] = []

    async def call(model: OpenAIChat) -> None:
        texts.append((await model.complete(REQUEST)).text)

    async with (
        FakeModelServer(FakeResponse(text="PASS", headers=headers)) as server,
        OpenAIChat("m", base_url=server.base_url, timeout=None, retry=FAST) as model,
    ):
        with anyio.move_on_after(30):  # a guard only: it takes well under a second
            async with anyio.create_task_group() as tg:
                for _ in range(30):
                    tg.start_soon(call, model)
        assert model._session.get().controller.in_flight == 0
    assert texts == ["PASS"] * 30
    assert len(server.requests) == 30


async def test_an_epoch_reset_does_not_stall_a_client_without_a_timeout() -> None:
    """x-ratelimit-reset-requests as a unix time (+2 s), 5 of 100 left: 20 requests finish."""
    reset = str(int(time.time()) + 2)
    headers = {
        "x-ratelimit-limit-requests": "100",
        "x-ratelimit-remaining-requests": "5",
        "x-ratelimit-reset-requests": reset,
    }
    texts: list[str] = []
    async with (
        FakeModelServer(FakeResponse(text="PASS", headers=headers)) as server,
        OpenAIChat("m", base_url=server.base_url, timeout=None, retry=FAST) as model,
    ):
        with anyio.move_on_after(30):  # a guard only: ~95 requests/s are allowed
            for _ in range(20):
                texts.append((await model.complete(REQUEST)).text)
    assert texts == ["PASS"] * 20


async def test_a_failure_in_the_feedback_path_keeps_the_answer_and_the_capacity(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in the controller's bookkeeping is logged; the 200 is used, nothing leaks."""

    def broken(self: AdaptiveController) -> None:
        raise RuntimeError("a bug in the bookkeeping")

    monkeypatch.setattr(AdaptiveController, "_grow", broken)
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST) as model,
    ):
        for _ in range(3):
            assert (await model.complete(REQUEST)).text == "PASS"
        assert model._session.get().controller.in_flight == 0
    assert "failed to read an answer" in caplog.text


# -- item 3: one congestion event, one backoff step ------------------------------------------------


async def test_a_burst_of_503s_is_one_backoff_step() -> None:
    """16 requests in flight each get one 503 (no Retry-After): under a 4 s deadline each is
    retried after one short pause, none fails unsent."""
    refused = 0
    burst = anyio.Event()
    warm = True

    async def respond(_: Any) -> FakeResponse:
        nonlocal refused
        if warm or refused == 16:
            return FakeResponse(text="PASS", latency=0.01)
        refused += 1
        if refused == 16:
            burst.set()
        await burst.wait()  # all 16 are in flight together
        return FakeResponse(status=503, text="overloaded")

    outcomes: list[str] = []

    async def call(model: OpenAIChat) -> None:
        try:
            with anyio.fail_after(4):  # as an Evaluator timeout
                outcomes.append((await model.complete(REQUEST)).text)
        except ModelHTTPError as exc:
            outcomes.append(str(exc))

    async with (
        FakeModelServer(respond) as server,
        OpenAIChat("m", base_url=server.base_url, retry=FAST) as model,
    ):
        controller = model._session.get().controller
        for _ in range(100):  # slow start: one more in flight per answer
            if controller.window >= 16:
                break
            await model.complete(REQUEST)
        warm, warmed = False, len(server.requests)
        async with anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(call, model)
    assert outcomes == ["PASS"] * 16
    assert len(server.requests) == warmed + 32  # 16 refused, 16 retried
    assert controller.throttles == 16


async def test_a_pause_error_names_the_real_status_and_cause() -> None:
    """A request that cannot outwait a backoff after 503s (no Retry-After sent) fails unsent
    with HTTP 503 and "backoff", not "HTTP 429 ... Retry-After"."""
    patient = RetryPolicy(attempts=6, initial_delay=0.01, max_delay=0.02)
    fifth = anyio.Event()

    def fifth_503(_: Any) -> FakeResponse:
        fifth.set()
        return FakeResponse(status=503)

    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(*[FakeResponse(status=503)] * 4, fifth_503)
        async with (
            OpenAIChat("m", base_url=server.base_url, retry=patient) as model,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(model.complete, REQUEST)
            controller = model._session.get().controller
            # Polled only once the fifth 503 is sent: the four pauses before it (~1 s) would
            # be spent polling (wait_all_tasks_blocked returns at once while the client
            # sleeps), a second of CPU for nothing.
            await fifth.wait()
            while controller.throttles < 5:  # 5 steps: the last pause is 0.8-0.96 s
                await anyio.wait_all_tasks_blocked()
            with anyio.fail_after(0.3), pytest.raises(ModelHTTPError) as caught:
                await model.complete(REQUEST)
    message = str(caught.value)
    assert caught.value.status_code == 503
    assert "backoff after HTTP 503" in message and "not sent" in message
    assert "Retry-After" not in message
    assert len(server.requests) == 6  # the refused request's 5 + its successful retry


# -- item 4 over loopback -----------------------------------------------------------------------


async def test_retry_after_in_python_float_syntax_does_not_pause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Retry-After: 1_0 is not 10 s: it is ignored (logged), the backoff applies, the retry
    succeeds under a 5 s deadline."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        server.enqueue(FakeResponse(status=429, headers={"Retry-After": "1_0"}))
        async with OpenAIChat("m", base_url=server.base_url, retry=FAST) as model:
            with caplog.at_level(logging.DEBUG, logger="agentjudge.models"), anyio.fail_after(5):
                response = await model.complete(REQUEST)
    assert response.text == "PASS"
    assert len(server.requests) == 2
    assert "'1_0'" in caplog.text

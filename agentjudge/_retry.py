"""Retries: `RetryPolicy` and the only tenacity user in the package.

This module sits below both `agentjudge.engine` (judge attempts) and `agentjudge.models` (HTTP
attempts), which both use it; import-linter keeps tenacity out of every other module.

The first attempt never enters tenacity: `call_with_retry` makes it directly (the common case,
and the fast one) and hands over to tenacity only once it failed with a retryable error. A
caller that made its first attempt itself (the engine's fast path does) passes
``attempts_made=1`` and that attempt's error instead. tenacity itself is imported there too,
on the first retry: a process whose calls all succeed at once never loads it (~10 ms of CPU
in every ``agentjudge run``'s start-up before).

Backoff is exponential with full jitter: before attempt ``n + 1`` the engine waits a random time
in ``[0, min(max_delay, initial_delay * 2 ** (n - 1))]`` (or exactly that bound with
``jitter=False``). An exception carrying ``retry_after`` (`RetryableError`, model HTTP errors
with a ``Retry-After`` header) is waited exactly that long, even beyond ``max_delay``.
"""

from __future__ import annotations

import functools
import math
import os
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentjudge.exceptions import RetryableError

if TYPE_CHECKING:
    from tenacity import RetryCallState

__all__ = ["RetryPolicy", "call_with_retry", "retry_delay"]

T = TypeVar("T")


class RetryPolicy(BaseModel):
    """How many times to attempt a call and how long to wait in between.

    Attributes:
        attempts: Total attempts (1 = no retries).
        initial_delay: Backoff bound before the second attempt, seconds.
        max_delay: Cap on the backoff bound (not on an explicit ``retry_after``).
        jitter: Full jitter (random wait in [0, bound]); False waits the bound.
        retry_on: Exception types that are retried; everything else fails at once.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    attempts: int = Field(default=3, ge=1)
    initial_delay: float = Field(default=0.5, ge=0.0, allow_inf_nan=False)
    max_delay: float = Field(default=30.0, ge=0.0, allow_inf_nan=False)
    jitter: bool = True
    retry_on: tuple[type[BaseException], ...] = (TimeoutError, RetryableError)

    @field_validator("retry_on", mode="before")
    @classmethod
    def _types(cls, v: object) -> object:
        if isinstance(v, type):
            v = (v,)
        if not isinstance(v, tuple | list) or not all(
            isinstance(t, type) and issubclass(t, BaseException) for t in v
        ):
            raise ValueError("retry_on must be a tuple of exception classes")
        return tuple(v)

    @model_validator(mode="after")
    def _delays(self) -> RetryPolicy:
        if self.max_delay < self.initial_delay:
            raise ValueError(
                f"max_delay ({self.max_delay}) must be >= initial_delay ({self.initial_delay})"
            )
        return self

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(attempts=1)

    def is_retryable(self, exc: BaseException) -> bool:
        """True when ``exc`` is one of ``retry_on``."""
        return isinstance(exc, self.retry_on)


_NO_RETRY = RetryPolicy.none()


def retry_delay(
    policy: RetryPolicy, attempt: int, exc: BaseException | None, rng: random.Random | None = None
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
    explicit = getattr(exc, "retry_after", None)
    if isinstance(explicit, int | float) and math.isfinite(explicit) and explicit >= 0:
        return float(explicit)
    bound = float(min(policy.max_delay, policy.initial_delay * 2.0 ** (attempt - 1)))
    if not policy.jitter:
        return bound
    source = rng if rng is not None else random
    return float(source.uniform(0.0, bound))


async def call_with_retry(
    policy: RetryPolicy | None,
    fn: Callable[[], Awaitable[T]],
    *,
    attempts_made: int = 0,
    last_error: BaseException | None = None,
    retryable: Callable[[BaseException], bool] | None = None,
    on_retry: Callable[[int, BaseException, float], Any] | None = None,
) -> tuple[T, int]:
    """Call ``fn`` until it succeeds, a non-retryable error escapes or attempts run out.

    The first attempt (``attempts_made == 0``) is a plain ``await fn()``; tenacity takes over
    only after it failed with an error ``retryable`` (default ``policy.retry_on``) accepts.

    Args:
        policy: The policy; None means a single attempt.
        fn: The call, re-invoked for every attempt.
        attempts_made: Attempts already made by the caller (whose last failed with
            ``last_error``); the first wait here is the backoff after that attempt.
        last_error: The caller's last (retryable) error, when ``attempts_made > 0``.
        retryable: Overrides ``policy.retry_on`` to decide what is retried.
        on_retry: Called with (failed attempt number, error, delay) before each wait.

    Returns:
        ``(value, attempts)`` where ``attempts`` counts every attempt including the caller's.

    Raises:
        Exception: The last error, when it is not retryable or the attempts ran out.
    """
    policy = policy if policy is not None else _NO_RETRY
    should_retry = retryable or policy.is_retryable
    if attempts_made == 0:
        try:  # the first attempt runs outside tenacity (the common, fast path)
            return await fn(), 1
        except Exception as first:
            if policy.attempts <= 1 or not should_retry(first):
                raise
            attempts_made, last_error = 1, first
    remaining = policy.attempts - attempts_made
    if remaining <= 0:
        assert last_error is not None
        try:
            raise last_error
        finally:
            del last_error  # the error's traceback holds this frame: no cycle through it
    if attempts_made and last_error is not None:
        delay = retry_delay(policy, attempts_made, last_error)
        if on_retry is not None:
            on_retry(attempts_made, last_error, delay)
        await anyio.sleep(delay)
    del last_error  # (its traceback holds this frame, which a later error's holds too)
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        number = attempts_made + state.attempt_number
        delay = retry_delay(policy, number, exc)
        if on_retry is not None and exc is not None:
            on_retry(number, exc, delay)
        return delay

    retrying = AsyncRetrying(
        stop=stop_after_attempt(remaining),
        wait=wait,
        retry=retry_if_exception(should_retry),
        sleep=anyio.sleep,
        reraise=True,
    )
    state: RetryCallState | None = None
    try:
        async for attempt in retrying:
            state = attempt.retry_state
            with attempt:
                value = await fn()
            # (the outcome is not kept in a local: a failed one holds its error, whose
            # traceback holds this frame)
            if state.outcome is not None and not state.outcome.failed:
                return value, attempts_made + state.attempt_number
    except BaseException as exc:
        _skip_tenacity_frames(exc)
        raise
    finally:
        # tenacity's retrying object and its state refer to each other (cycles only the
        # garbage collector frees, ~40 of tenacity's own objects per retried call): without
        # the outcome they hold no error, traceback or frame of the attempts
        if state is not None:
            state.outcome = None
    raise AssertionError("unreachable")  # pragma: no cover


def _skip_tenacity_frames(exc: BaseException) -> None:
    """Unlink tenacity's own frames from the traceback of the error it re-raised.

    tenacity re-raises the last attempt's error through frames whose locals hold its retry
    state, which holds the error: a reference cycle (error -> traceback -> tenacity's frame ->
    state -> error) that only the garbage collector frees, with every frame of the failed
    attempts (~100 objects per timed-out judge call). The traceback keeps this frame and the
    attempt's own frames (where the error happened); only the entries between them, in
    tenacity and in `concurrent.futures` (its result holder), are skipped.
    """
    entry = exc.__traceback__  # this frame's
    if entry is None:
        return
    machinery = _machinery()
    after = entry.tb_next
    while after is not None and after.tb_frame.f_code.co_filename.startswith(machinery):
        after = after.tb_next
    entry.tb_next = after


@functools.cache
def _machinery() -> tuple[str, ...]:
    """The source files of tenacity's frames: its package's folder, `concurrent.futures`."""
    import concurrent.futures._base as futures_base

    import tenacity

    return (os.path.dirname(tenacity.__file__) + os.sep, futures_base.__file__)

"""The error `call_with_retry` gives up with: its attempt's frames kept, tenacity's skipped.

tenacity re-raises the last attempt's error through frames of its own whose locals hold its
retry state, which holds the error (a cycle only the garbage collector frees); those entries
are unlinked from the traceback. What the error's traceback shows is the retry layer's frame
and the attempt's, where the error happened.
"""

from __future__ import annotations

import os
import traceback
from collections import Counter

import pytest
import tenacity
from gc_support import failure_kinds, garbage_of

from agentjudge._retry import RetryPolicy, call_with_retry
from agentjudge.exceptions import RetryableError

POLICY = RetryPolicy(attempts=3, initial_delay=0.0, max_delay=0.0, jitter=False)


async def failing_attempt() -> None:
    raise RetryableError("the provider is overloaded")


async def test_the_last_error_keeps_the_attempts_frames_and_not_tenacitys() -> None:
    with pytest.raises(RetryableError) as info:
        await call_with_retry(POLICY, failing_attempt)
    entries = traceback.extract_tb(info.value.__traceback__)
    names = [entry.name for entry in entries]
    assert names[1:] == ["call_with_retry", "call_with_retry", "failing_attempt"], names
    tenacity_files = os.path.dirname(tenacity.__file__)
    assert not [e for e in entries if e.filename.startswith(tenacity_files)], names
    assert not [e for e in entries if "concurrent" in e.filename], names


async def test_an_error_not_retried_keeps_its_traceback_whole() -> None:
    """The first attempt's error, not retryable: raised as it was (tenacity never ran)."""

    async def refuses() -> None:
        raise ValueError("not retryable")

    with pytest.raises(ValueError) as info:
        await call_with_retry(POLICY, refuses)
    names = [entry.name for entry in traceback.extract_tb(info.value.__traceback__)]
    assert names[-1] == "refuses", names


async def test_a_retried_call_keeps_no_error_or_frame_in_a_cycle() -> None:
    """Every attempt fails: the errors and frames are freed with the last error (only
    tenacity's own objects, which refer to each other, are left to the collector)."""
    raised = []

    async def calls() -> None:
        for _ in range(4):
            with pytest.raises(RetryableError) as info:
                await call_with_retry(POLICY, failing_attempt)
            raised.append(type(info.value).__name__)
            del info  # (pytest's record of it, not the retry layer's)

    assert failure_kinds(await garbage_of(calls)) == Counter()
    assert raised == ["RetryableError"] * 4

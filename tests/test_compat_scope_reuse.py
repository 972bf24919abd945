"""An attempt's cancel scope is reused once exited untouched: as a new scope in every way.

`agentjudge._compat.recycle` keeps an exited `cancel_scope` scope (never cancelled, no timer,
task or child scope left) and the next `cancel_scope` call returns it, reset. The properties:
after any use (a deadline queued or armed with anyio's timer, a shield, child scopes, an
exception, a cancellation, a deadline that passed), the next scope is slot for slot what a new
scope is, and a scope that was cancelled, is active or holds a timer is never reused.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge import _compat

STEPS = st.lists(
    st.sampled_from(
        ["untimed", "timer", "passed", "shield", "child", "cancel", "child-cancel", "raise"]
    ),
    max_size=4,
)


def _slots(scope: Any) -> dict[str, Any]:
    return {name: getattr(scope, name) for name in type(scope).__slots__}


async def _use(scope: Any, steps: list[str]) -> None:
    """Enter ``scope`` and do ``steps`` in it (what an attempt may do to its scope)."""
    try:
        with scope:
            for step in steps:
                if step == "untimed":
                    _compat.untimed_deadline(scope, anyio.current_time() + 60)
                elif step == "timer":
                    scope.deadline = anyio.current_time() + 60
                elif step == "passed":
                    scope.deadline = anyio.current_time() - 1
                elif step == "shield":
                    scope.shield = True
                elif step == "child":
                    with anyio.CancelScope(deadline=anyio.current_time() + 5):
                        await anyio.lowlevel.checkpoint()
                elif step == "child-cancel":
                    with anyio.CancelScope() as child:
                        child.cancel()
                        await anyio.lowlevel.checkpoint()
                elif step == "cancel":
                    scope.cancel()
                elif step == "raise":
                    raise LookupError("the judge failed")
                await anyio.lowlevel.checkpoint()
    except LookupError:
        pass


@settings(max_examples=60, deadline=None)
@given(uses=st.lists(st.tuples(STEPS, st.booleans()), min_size=1, max_size=4))
def test_a_reused_scope_is_a_new_scope(uses: list[tuple[list[str], bool]]) -> None:
    """After any uses, every scope handed out holds what a new scope holds, slot for slot."""

    async def probe() -> None:
        _compat._SPARE.clear()
        for steps, outer in uses:
            scope = _compat.cancel_scope()
            fresh = _compat._asyncio_backend().create_cancel_scope()
            assert _slots(scope) == _slots(fresh)
            if outer:  # the scope gets a parent scope
                with anyio.CancelScope():
                    await _use(scope, steps)
            else:
                await _use(scope, steps)
            cancelled = scope.cancel_called
            _compat.recycle(scope)
            assert (scope in _compat._SPARE) == (not cancelled)
        _compat._SPARE.clear()

    anyio.run(probe, backend="asyncio")


def test_a_reused_scope_gives_the_judge_its_deadline_and_cancels() -> None:
    """A reused scope carries a new deadline to the code inside and cancels it when asked."""

    async def probe() -> tuple[float, float, bool]:
        _compat._SPARE.clear()
        first = _compat.cancel_scope()
        with first:
            first.deadline = anyio.current_time() + 30
        _compat.recycle(first)
        again = _compat.cancel_scope()
        assert again is first
        assert again.deadline == math.inf
        with again:
            at = anyio.current_time() + 10
            _compat.untimed_deadline(again, at)
            seen = anyio.current_effective_deadline()
            _compat.expire(again)
            await anyio.lowlevel.checkpoint()
        _compat.recycle(again)  # cancelled: not kept
        assert _compat._SPARE == []
        return seen, at, again.cancelled_caught

    seen, at, caught = anyio.run(probe, backend="asyncio")
    assert seen == at
    assert caught


def test_an_active_scope_or_one_holding_a_timer_is_not_kept() -> None:
    async def probe() -> None:
        _compat._SPARE.clear()
        scope = _compat.cancel_scope()
        with scope:
            _compat.recycle(scope)  # active
            assert _compat._SPARE == []
        unentered = _compat.cancel_scope()
        unentered.deadline = anyio.current_time() + 5  # never entered: no timer yet
        _compat.recycle(unentered)
        assert _compat._SPARE[:] == [unentered]
        _compat._SPARE.clear()

    anyio.run(probe, backend="asyncio")


@pytest.mark.parametrize("backend", ["trio"])
def test_another_backend_keeps_nothing(backend: str) -> None:
    pytest.importorskip(backend)

    async def probe() -> None:
        scope = _compat.cancel_scope()
        with scope:
            pass
        _compat.recycle(scope)
        assert _compat._SPARE == []

    anyio.run(probe, backend=backend)

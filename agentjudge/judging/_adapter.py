"""The one adapter that calls any accepted judge and returns a `Judgment`."""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
from anyio.lowlevel import RunVar

from agentjudge.core import Context, Judgment, judgment_problem
from agentjudge.judging._faults import run_sync_bounded

__all__ = [
    "JudgeReturnError",
    "call_judge",
    "coerce_judgment",
    "direct_async",
    "is_async_judge",
    "to_async",
]

SYNC_JUDGE_THREADS = 16
"""Worker threads shared by all sync judges of one event loop."""

_sync_limiter: RunVar[anyio.CapacityLimiter] = RunVar("agentjudge_sync_limiter")


def _thread_limiter() -> anyio.CapacityLimiter:
    try:
        return _sync_limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(SYNC_JUDGE_THREADS)
        _sync_limiter.set(limiter)
        return limiter


class JudgeReturnError(TypeError):
    """A judge returned something that is not a Judgment, a bool or a float in [0, 1]."""


def coerce_judgment(value: object, name: str) -> Judgment:
    """Turn a judge's return value into a `Judgment`.

    Raises:
        JudgeReturnError: the value is of another type, a non-finite / out-of-range float, or
            a Judgment built without validation (``model_construct``) that breaks its
            invariants.
    """
    if isinstance(value, Judgment):
        problem = judgment_problem(value)
        if problem is not None:
            raise JudgeReturnError(f"judge {name!r} returned an invalid Judgment: {problem}")
        return value
    if isinstance(value, bool):
        if value:
            return Judgment.passed(f"{name} returned True")
        return Judgment.failed(f"{name} returned False")
    if isinstance(value, int | float):
        score = float(value)
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise JudgeReturnError(f"judge {name!r} returned score {value!r}; expected [0, 1]")
        return Judgment.from_score(score, reasoning=f"{name} returned score {score:g}")
    raise JudgeReturnError(
        f"judge {name!r} returned {type(value).__name__}; "
        "expected Judgment, bool or float in [0, 1]"
    )


def is_async_judge(fn: object) -> bool:
    """True when calling ``fn`` returns an awaitable without doing blocking work first."""
    from agentjudge.judging._protocol import FunctionJudge

    if isinstance(fn, FunctionJudge):
        return True
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


async def call_judge(fn: Callable[..., Any], ctx: Context, *, name: str) -> Judgment:
    """Call any accepted judge once: async in place, sync on a bounded worker thread."""
    if is_async_judge(fn):
        value = await fn(ctx)
    else:
        value = await run_sync_bounded(fn, ctx, limiter=_thread_limiter(), what=f"judge {name!r}")
        if inspect.isawaitable(value):
            value = await value
    return coerce_judgment(value, name)


def direct_async(
    fn: Callable[..., Any], name: str
) -> tuple[Callable[[Context], Awaitable[object]], str] | None:
    """The async callable inside ``to_async(fn, name)`` and the name it coerces results under.

    Awaiting ``call(ctx)`` and passing the value to ``coerce_judgment(value, coerce_name)`` is
    exactly what ``to_async(fn, name)(ctx)`` does, minus one coroutine (the engine's hot
    path). None for sync judges (they run on a thread).
    """
    from agentjudge.judging._protocol import FunctionJudge

    inner: Any = fn
    while isinstance(inner, FunctionJudge):
        name = inner.name
        inner = inner.__wrapped__
    if is_async_judge(inner):
        return cast(Callable[[Context], Awaitable[object]], inner), name
    return None


def to_async(fn: Callable[..., Any], name: str) -> Callable[[Context], Awaitable[Judgment]]:
    """Return the one call shape the engine uses: ``async (ctx) -> Judgment``."""
    from agentjudge.judging._protocol import FunctionJudge

    if isinstance(fn, FunctionJudge):
        return fn._call
    if is_async_judge(fn):
        async_fn = cast(Callable[[Context], Awaitable[object]], fn)

        async def call_async(ctx: Context) -> Judgment:
            return coerce_judgment(await async_fn(ctx), name)

        return call_async

    async def call_sync(ctx: Context) -> Judgment:
        return await call_judge(fn, ctx, name=name)

    return call_sync

"""The judge protocol, the ``@judge`` decorator, ``named`` and ``judge_name``."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any, Protocol, overload, runtime_checkable

from agentjudge.core import Context, Judgment

__all__ = [
    "FunctionJudge",
    "Judge",
    "JudgeKind",
    "JudgeLike",
    "JudgeReturn",
    "judge",
    "judge_name",
    "named",
]

JudgeReturn = Judgment | bool | float
"""What a judge may return: a Judgment, a bool (PASS/FAIL) or a float score in [0, 1]."""

JudgeLike = Callable[[Context], JudgeReturn | Awaitable[JudgeReturn]]
"""Anything the engine accepts as a judge: async or sync callables of one Context."""


class JudgeKind(StrEnum):
    """What kind of work a judge does (informational; used by reports and telemetry)."""

    DETERMINISTIC = "deterministic"
    LLM = "llm"
    HYBRID = "hybrid"
    AGENT = "agent"


@runtime_checkable
class Judge(Protocol):
    """A judge: an async callable from `Context` to `Judgment`.

    Judge objects may also carry the attributes ``name``, ``kind``, ``description``,
    ``resource`` (the Evaluator limit it draws on), ``metric_key`` and ``sampling_rate``.
    """

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Judge one context."""
        ...


def judge_name(j: object) -> str:
    """Return the name the engine uses for ``j``.

    The ``name`` attribute if set, else a function's ``__name__``, else the class name.
    """
    name = getattr(j, "name", None)
    if isinstance(name, str) and name.strip():
        return name
    fn_name = getattr(j, "__name__", None)
    if isinstance(fn_name, str) and fn_name:
        return fn_name
    if isinstance(j, functools.partial):
        return judge_name(j.func)
    return type(j).__name__


class FunctionJudge:
    """A callable wrapped with judge attributes; calling it always returns a `Judgment`.

    Sync callables run on a worker thread; bool and float returns are converted (see
    `agentjudge.judging.call_judge`).
    """

    __slots__ = (
        "__wrapped__",
        "_call",
        "description",
        "kind",
        "metric_key",
        "name",
        "resource",
        "sampling_rate",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        kind: JudgeKind = JudgeKind.DETERMINISTIC,
        description: str = "",
        resource: str | None = None,
        metric_key: str | None = None,
        sampling_rate: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"judge name must be a non-blank string, got {name!r}")
        if resource is not None and (not isinstance(resource, str) or not resource.strip()):
            raise ValueError(f"resource must be a non-blank string or None, got {resource!r}")
        if metric_key is not None and (not isinstance(metric_key, str) or not metric_key.strip()):
            raise ValueError(f"metric_key must be a non-blank string or None, got {metric_key!r}")
        from agentjudge.judging._adapter import to_async

        self.__wrapped__ = fn
        self._call = to_async(fn, name)
        self.name = name
        self.kind = JudgeKind(kind)
        self.description = description
        self.resource = resource
        self.metric_key = metric_key
        self.sampling_rate = sampling_rate

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Judge one context."""
        return await self._call(ctx)

    def __repr__(self) -> str:
        return f"<judge {self.name!r} kind={self.kind.value}>"


@overload
def judge(fn: Callable[..., Any], /) -> FunctionJudge: ...


@overload
def judge(
    name: str | None = None,
    *,
    kind: JudgeKind = JudgeKind.DETERMINISTIC,
    description: str = "",
    resource: str | None = None,
    metric_key: str | None = None,
    sampling_rate: float | None = None,
) -> Callable[[Callable[..., Any]], FunctionJudge]: ...


def judge(
    name: str | Callable[..., Any] | None = None,
    *,
    kind: JudgeKind = JudgeKind.DETERMINISTIC,
    description: str = "",
    resource: str | None = None,
    metric_key: str | None = None,
    sampling_rate: float | None = None,
) -> FunctionJudge | Callable[[Callable[..., Any]], FunctionJudge]:
    """Turn a function of one `Context` into a named judge.

    Usable bare (``@judge``) or with arguments (``@judge("relevance", kind=JudgeKind.LLM)``).
    The function may be async or sync and may return a `Judgment`, a bool or a float in [0, 1].

    Args:
        name: Judge name; defaults to the function name.
        kind: What kind of work the judge does.
        description: One line for reports.
        resource: Name of the Evaluator limit (``limits=``) this judge draws on.
        metric_key: Metric the judge reports under.
        sampling_rate: Default fraction of evaluations this judge runs in (0..1).
    """

    def decorate(fn: Callable[..., Any], name: str | None = None) -> FunctionJudge:
        return FunctionJudge(
            fn,
            name=name if name is not None else judge_name(fn),
            kind=kind,
            description=description or (fn.__doc__ or "").strip().split("\n")[0],
            resource=resource,
            metric_key=metric_key,
            sampling_rate=sampling_rate,
        )

    if callable(name):
        return decorate(name)
    return functools.partial(decorate, name=name)


def named(
    fn: Callable[..., Any],
    name: str,
    description: str = "",
    kind: JudgeKind = JudgeKind.DETERMINISTIC,
) -> FunctionJudge:
    """Wrap a judge (or any accepted callable) under a new name.

    ``resource``, ``metric_key`` and ``sampling_rate`` are carried over from ``fn``.
    """
    return FunctionJudge(
        fn,
        name=name,
        kind=kind,
        description=description,
        resource=getattr(fn, "resource", None),
        metric_key=getattr(fn, "metric_key", None),
        sampling_rate=getattr(fn, "sampling_rate", None),
    )

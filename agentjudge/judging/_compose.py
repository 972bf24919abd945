"""Sequential composition: `all_of` and `any_of`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentjudge.core import Context, Judgment
from agentjudge.judging._adapter import call_judge
from agentjudge.judging._protocol import FunctionJudge, JudgeKind, judge_name

__all__ = ["all_of", "any_of"]


def _kind(judges: tuple[Callable[..., Any], ...]) -> JudgeKind:
    kinds = {getattr(j, "kind", JudgeKind.DETERMINISTIC) for j in judges}
    if len(kinds) == 1:
        return JudgeKind(kinds.pop())
    return JudgeKind.HYBRID if kinds else JudgeKind.DETERMINISTIC


def all_of(*judges: Callable[..., Any]) -> FunctionJudge:
    """Run judges in order; return the first non-PASS judgment unchanged.

    Later judges are not called. All PASS gives a new PASS "All checks passed"; no judges
    gives PASS. Exceptions from a judge propagate (the engine turns them into ERROR).
    """
    names = [judge_name(j) for j in judges]

    async def run(ctx: Context) -> Judgment:
        for j, name in zip(judges, names, strict=True):
            judgment = await call_judge(j, ctx, name=name)
            if not judgment.is_pass:
                return judgment
        return Judgment.passed("All checks passed")

    return FunctionJudge(run, name=f"all_of({', '.join(names)})", kind=_kind(judges))


def any_of(*judges: Callable[..., Any]) -> FunctionJudge:
    """Run judges in order; return the first PASS judgment unchanged.

    Later judges are not called. No PASS (or no judges) gives a new FAIL "All checks failed".
    """
    names = [judge_name(j) for j in judges]

    async def run(ctx: Context) -> Judgment:
        for j, name in zip(judges, names, strict=True):
            judgment = await call_judge(j, ctx, name=name)
            if judgment.is_pass:
                return judgment
        return Judgment.failed("All checks failed")

    return FunctionJudge(run, name=f"any_of({', '.join(names)})", kind=_kind(judges))

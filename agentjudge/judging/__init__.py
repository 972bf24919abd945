"""Layer 2: the judge protocol, naming, the one call adapter and sequential composition."""

from __future__ import annotations

from agentjudge.judging._adapter import (
    JudgeReturnError,
    call_judge,
    coerce_judgment,
    direct_async,
    is_async_judge,
    to_async,
)
from agentjudge.judging._compose import all_of, any_of
from agentjudge.judging._protocol import (
    FunctionJudge,
    Judge,
    JudgeKind,
    JudgeLike,
    JudgeReturn,
    judge,
    judge_name,
    named,
)

__all__ = [
    "FunctionJudge",
    "Judge",
    "JudgeKind",
    "JudgeLike",
    "JudgeReturn",
    "JudgeReturnError",
    "all_of",
    "any_of",
    "call_judge",
    "coerce_judgment",
    "direct_async",
    "is_async_judge",
    "judge",
    "judge_name",
    "named",
    "to_async",
]

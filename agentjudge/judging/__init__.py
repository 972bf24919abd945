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
from agentjudge.judging._faults import (
    MAX_ABANDONED_THREADS,
    StrayCancellation,
    ThreadsExhausted,
    abandoned_threads,
    cancel_requested,
    error_type_name,
    is_stray_cancellation,
    run_sync_bounded,
)
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
from agentjudge.judging._queueing import QueueClock, add_queued, queue_clock

__all__ = [
    "MAX_ABANDONED_THREADS",
    "FunctionJudge",
    "Judge",
    "JudgeKind",
    "JudgeLike",
    "JudgeReturn",
    "JudgeReturnError",
    "QueueClock",
    "StrayCancellation",
    "ThreadsExhausted",
    "abandoned_threads",
    "add_queued",
    "all_of",
    "any_of",
    "call_judge",
    "cancel_requested",
    "coerce_judgment",
    "direct_async",
    "error_type_name",
    "is_async_judge",
    "is_stray_cancellation",
    "judge",
    "judge_name",
    "named",
    "queue_clock",
    "run_sync_bounded",
    "to_async",
]

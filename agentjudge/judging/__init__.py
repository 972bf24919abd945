"""Layer 2: the judge protocol, naming, the one call adapter and sequential composition."""

from __future__ import annotations

# Names imported "as" themselves are plumbing shared with the engine and the harness: importable,
# deliberately not public (not in __all__).
from agentjudge.judging._adapter import JudgeReturnError
from agentjudge.judging._adapter import call_judge as call_judge
from agentjudge.judging._adapter import coerce_judgment as coerce_judgment
from agentjudge.judging._adapter import direct_async as direct_async
from agentjudge.judging._adapter import is_async_judge as is_async_judge
from agentjudge.judging._adapter import to_async as to_async
from agentjudge.judging._compose import all_of, any_of
from agentjudge.judging._faults import MAX_ABANDONED_THREADS as MAX_ABANDONED_THREADS
from agentjudge.judging._faults import StrayCancellation as StrayCancellation
from agentjudge.judging._faults import ThreadsExhausted
from agentjudge.judging._faults import abandoned_threads as abandoned_threads
from agentjudge.judging._faults import cancel_requested as cancel_requested
from agentjudge.judging._faults import error_type_name as error_type_name
from agentjudge.judging._faults import is_stray_cancellation as is_stray_cancellation
from agentjudge.judging._faults import run_sync_bounded as run_sync_bounded
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
from agentjudge.judging._queueing import QueueClock as QueueClock
from agentjudge.judging._queueing import add_queued as add_queued
from agentjudge.judging._queueing import current_owner as current_owner
from agentjudge.judging._queueing import end_attempt as end_attempt
from agentjudge.judging._queueing import queue_clock as queue_clock
from agentjudge.judging._queueing import start_attempt as start_attempt
from agentjudge.judging._spending import SpendGate as SpendGate
from agentjudge.judging._spending import SpendHold as SpendHold
from agentjudge.judging._spending import spend_gate as spend_gate
from agentjudge.judging._traceback import USER_MARK as USER_MARK
from agentjudge.judging._traceback import short_traceback as short_traceback

__all__ = [
    "FunctionJudge",
    "Judge",
    "JudgeKind",
    "JudgeLike",
    "JudgeReturn",
    "JudgeReturnError",
    "ThreadsExhausted",
    "all_of",
    "any_of",
    "judge",
    "judge_name",
    "named",
]

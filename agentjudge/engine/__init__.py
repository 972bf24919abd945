"""Layer 3: the scheduling engine (Evaluator, juries, cascades, retries)."""

from __future__ import annotations

from agentjudge._retry import RetryPolicy, call_with_retry, retry_delay
from agentjudge.engine._budget import Budget, BudgetExhausted
from agentjudge.engine._composite import Cascade, Jury, Tier
from agentjudge.engine._evaluator import EvaluationHandle, Evaluator, ResultCallback
from agentjudge.engine._inline import await_armed

__all__ = [
    "Budget",
    "BudgetExhausted",
    "Cascade",
    "EvaluationHandle",
    "Evaluator",
    "Jury",
    "ResultCallback",
    "RetryPolicy",
    "Tier",
    "await_armed",
    "call_with_retry",
    "retry_delay",
]

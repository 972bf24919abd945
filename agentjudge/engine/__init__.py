"""Layer 3: the scheduling engine (Evaluator, juries, cascades, retries)."""

from __future__ import annotations

from agentjudge._retry import RetryPolicy
from agentjudge.engine._background import BackgroundEvaluator
from agentjudge.engine._budget import Budget, BudgetExhausted
from agentjudge.engine._composite import Cascade, Jury, Tier
from agentjudge.engine._evaluator import EvaluationHandle, Evaluator, ResultCallback

# Internal plumbing for the harness (not public, not in __all__).
from agentjudge.engine._inline import await_armed as await_armed
from agentjudge.engine._otel import OtelEventSink
from agentjudge.engine._sinks import CallbackSink, OnlineResult, Sink
from agentjudge.engine._stores import JsonlSink, SqliteSink

__all__ = [
    "BackgroundEvaluator",
    "Budget",
    "BudgetExhausted",
    "CallbackSink",
    "Cascade",
    "EvaluationHandle",
    "Evaluator",
    "JsonlSink",
    "Jury",
    "OnlineResult",
    "OtelEventSink",
    "ResultCallback",
    "RetryPolicy",
    "Sink",
    "SqliteSink",
    "Tier",
]

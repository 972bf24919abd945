"""agentjudge: an asyncio-native evaluation engine for LLM and agent outputs.

Every judge is an async callable ``Context -> Judgment``. An `Evaluator` schedules judges,
juries (many judges voting) and cascades (cheap tiers first) concurrently, under bounded
concurrency, timeouts and retries.
"""

from __future__ import annotations

from agentjudge.core import (
    CaseResult,
    Check,
    Context,
    ExecutionStatus,
    JudgeResult,
    Judgment,
    Message,
    Status,
    TierAttempt,
    TierPolicy,
    Verdict,
)
from agentjudge.engine import (
    Cascade,
    EvaluationHandle,
    Evaluator,
    Jury,
    RetryPolicy,
    Tier,
)
from agentjudge.exceptions import (
    AgentJudgeError,
    DatasetError,
    EvaluationCancelled,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    RetryableError,
    TemplateError,
)
from agentjudge.judging import (
    FunctionJudge,
    Judge,
    JudgeKind,
    all_of,
    any_of,
    judge,
    judge_name,
    named,
)
from agentjudge.voting import (
    Average,
    Consensus,
    ErrorPolicy,
    Majority,
    Median,
    TiePolicy,
    VotingStrategy,
    WeightedAverage,
)

__version__ = "0.1.0"

__all__ = [
    "AgentJudgeError",
    "Average",
    "Cascade",
    "CaseResult",
    "Check",
    "Consensus",
    "Context",
    "DatasetError",
    "ErrorPolicy",
    "EvaluationCancelled",
    "EvaluationHandle",
    "Evaluator",
    "ExecutionStatus",
    "FunctionJudge",
    "Judge",
    "JudgeKind",
    "JudgeResult",
    "Judgment",
    "Jury",
    "Majority",
    "Median",
    "Message",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "RetryPolicy",
    "RetryableError",
    "Status",
    "TemplateError",
    "TiePolicy",
    "Tier",
    "TierAttempt",
    "TierPolicy",
    "Verdict",
    "VotingStrategy",
    "WeightedAverage",
    "__version__",
    "all_of",
    "any_of",
    "judge",
    "judge_name",
    "named",
]

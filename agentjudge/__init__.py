"""agentjudge: an asyncio-native evaluation engine for LLM and agent outputs.

Every judge is an async callable ``Context -> Judgment``. An `Evaluator` schedules judges,
juries (many judges voting) and cascades (cheap tiers first) concurrently, under bounded
concurrency, timeouts and retries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from agentjudge.harness import Case, TaskOutput
    from agentjudge.judges import (
        BuildSuccess,
        CitationPrecision,
        CitationRecall,
        ClassVersionJudge,
        CommandJudge,
        ContextualRelevanceJudge,
        CorrectnessJudge,
        CoverageImprovement,
        CoverageMetrics,
        CoveragePreservation,
        FaithfulnessJudge,
        FileComparison,
        FileContent,
        FileExists,
        HallucinationJudge,
        LabelClassifier,
        LLMJudge,
        MatchMode,
        MissingPolicy,
        PromptTemplate,
        PycVersionJudge,
        RefusalCorrectness,
        RefusalPolicy,
        RouteAccuracy,
        Runner,
        RunnerResult,
        ScoreJudge,
        SupersetDiff,
        citation_precision,
        citation_recall,
        refusal_correctness,
        route_accuracy,
    )
    from agentjudge.models import (
        AnthropicMessages,
        ModelClient,
        ModelRequest,
        ModelResponse,
        OpenAIChat,
        RateLimit,
        SqliteCache,
        Usage,
        model_from_string,
    )

__version__ = "0.1.0"

# Judges, model clients and the harness import httpx and friends: load them on first access so that
# `import agentjudge` stays light (PEP 562).
_LAZY: dict[str, str] = {
    "PromptTemplate": "agentjudge.judges",
    "MissingPolicy": "agentjudge.judges",
    "LabelClassifier": "agentjudge.judges",
    "LLMJudge": "agentjudge.judges",
    "CorrectnessJudge": "agentjudge.judges",
    "FaithfulnessJudge": "agentjudge.judges",
    "ContextualRelevanceJudge": "agentjudge.judges",
    "HallucinationJudge": "agentjudge.judges",
    "Runner": "agentjudge.judges",
    "RunnerResult": "agentjudge.judges",
    "ScoreJudge": "agentjudge.judges",
    "FileExists": "agentjudge.judges",
    "FileContent": "agentjudge.judges",
    "MatchMode": "agentjudge.judges",
    "SupersetDiff": "agentjudge.judges",
    "CommandJudge": "agentjudge.judges",
    "BuildSuccess": "agentjudge.judges",
    "ClassVersionJudge": "agentjudge.judges",
    "PycVersionJudge": "agentjudge.judges",
    "CoveragePreservation": "agentjudge.judges",
    "CoverageImprovement": "agentjudge.judges",
    "CoverageMetrics": "agentjudge.judges",
    "FileComparison": "agentjudge.judges",
    "CitationPrecision": "agentjudge.judges",
    "CitationRecall": "agentjudge.judges",
    "RouteAccuracy": "agentjudge.judges",
    "RefusalCorrectness": "agentjudge.judges",
    "RefusalPolicy": "agentjudge.judges",
    "citation_precision": "agentjudge.judges",
    "citation_recall": "agentjudge.judges",
    "route_accuracy": "agentjudge.judges",
    "refusal_correctness": "agentjudge.judges",
    "ModelClient": "agentjudge.models",
    "ModelRequest": "agentjudge.models",
    "ModelResponse": "agentjudge.models",
    "Usage": "agentjudge.models",
    "OpenAIChat": "agentjudge.models",
    "AnthropicMessages": "agentjudge.models",
    "RateLimit": "agentjudge.models",
    "SqliteCache": "agentjudge.models",
    "model_from_string": "agentjudge.models",
    "Case": "agentjudge.harness",
    "TaskOutput": "agentjudge.harness",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentjudge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AgentJudgeError",
    "AnthropicMessages",
    "Average",
    "BuildSuccess",
    "Cascade",
    "Case",
    "CaseResult",
    "Check",
    "CitationPrecision",
    "CitationRecall",
    "ClassVersionJudge",
    "CommandJudge",
    "Consensus",
    "Context",
    "ContextualRelevanceJudge",
    "CorrectnessJudge",
    "CoverageImprovement",
    "CoverageMetrics",
    "CoveragePreservation",
    "DatasetError",
    "ErrorPolicy",
    "EvaluationCancelled",
    "EvaluationHandle",
    "Evaluator",
    "ExecutionStatus",
    "FaithfulnessJudge",
    "FileComparison",
    "FileContent",
    "FileExists",
    "FunctionJudge",
    "HallucinationJudge",
    "Judge",
    "JudgeKind",
    "JudgeResult",
    "Judgment",
    "Jury",
    "LLMJudge",
    "LabelClassifier",
    "Majority",
    "MatchMode",
    "Median",
    "Message",
    "MissingPolicy",
    "ModelClient",
    "ModelError",
    "ModelHTTPError",
    "ModelRequest",
    "ModelResponse",
    "ModelResponseError",
    "OpenAIChat",
    "PromptTemplate",
    "PycVersionJudge",
    "RateLimit",
    "RefusalCorrectness",
    "RefusalPolicy",
    "RetryPolicy",
    "RetryableError",
    "RouteAccuracy",
    "Runner",
    "RunnerResult",
    "ScoreJudge",
    "SqliteCache",
    "Status",
    "SupersetDiff",
    "TaskOutput",
    "TemplateError",
    "TiePolicy",
    "Tier",
    "TierAttempt",
    "TierPolicy",
    "Usage",
    "Verdict",
    "VotingStrategy",
    "WeightedAverage",
    "__version__",
    "all_of",
    "any_of",
    "citation_precision",
    "citation_recall",
    "judge",
    "judge_name",
    "model_from_string",
    "named",
    "refusal_correctness",
    "route_accuracy",
]

"""Built-in judges: LLM / RAG, agent trajectories, files, commands, coverage, comparison, retrieval.

Deterministic judges never call a model; LLM judges call an `agentjudge.models.ModelClient`
(or a `Runner`) and draw on the Evaluator limit named after their client (``resource``).

`__all__` holds what a user programs against: the judges, their options, the `Runner`
protocol, and the documented helpers (`parse_coverage`, `compare_contents`,
`normalize_requirement`, `parse_verdict`, the retrieval metric functions). The judges' shared
base classes, prompt plumbing and lookup tables live in the private modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentjudge._lazy import lazy_attribute

if TYPE_CHECKING:
    from agentjudge.judges._agent import (
        ForbiddenTools,
        StepEfficiency,
        ToolArgumentsValid,
        ToolSelection,
    )
    from agentjudge.judges._bytecode import PYC_MAGIC_NUMBERS, ClassVersionJudge, PycVersionJudge
    from agentjudge.judges._classifier import LabelClassifier
    from agentjudge.judges._commands import BuildSuccess, CommandJudge
    from agentjudge.judges._compare import FileComparison, compare_contents, normalize_requirement
    from agentjudge.judges._confidence import (
        LogprobConfidence,
        SelfConsistency,
        SimulatedAnnotators,
    )
    from agentjudge.judges._conversation import (
        CONSISTENCY_RUBRIC,
        GOAL_COMPLETION_RUBRIC,
        TRAJECTORY_RUBRIC,
        ConversationJudge,
        TrajectoryJudge,
    )
    from agentjudge.judges._coverage import (
        CoverageImprovement,
        CoverageMetric,
        CoverageMetrics,
        CoveragePreservation,
        CoverageReportError,
        parse_coverage,
    )
    from agentjudge.judges._files import FileContent, FileExists, MatchMode, SupersetDiff
    from agentjudge.judges._llm import LLMJudge
    from agentjudge.judges._pairwise import PairwiseJudge
    from agentjudge.judges._rag import (
        VERDICT_SCHEMA,
        ContextualRelevanceJudge,
        CorrectnessJudge,
        FaithfulnessJudge,
        HallucinationJudge,
    )
    from agentjudge.judges._replay import ReplayJudge
    from agentjudge.judges._retrieval import (
        CitationPrecision,
        CitationRecall,
        RefusalCorrectness,
        RefusalPolicy,
        RouteAccuracy,
        citation_precision,
        citation_recall,
        refusal_correctness,
        route_accuracy,
    )
    from agentjudge.judges._score import Runner, RunnerResult, ScoreJudge
    from agentjudge.judges._template import MissingPolicy, PromptTemplate
    from agentjudge.judges._trajectory import TrajectoryMatch
    from agentjudge.judges._verdict import parse_verdict

# Loaded on first use (PEP 562): a suite that uses two judges imports their two modules, not
# every built-in judge (their prompts, schemas, subprocess and comparison plumbing).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "agentjudge.judges._agent": (
        "ForbiddenTools",
        "StepEfficiency",
        "ToolArgumentsValid",
        "ToolSelection",
    ),
    "agentjudge.judges._bytecode": ("PYC_MAGIC_NUMBERS", "ClassVersionJudge", "PycVersionJudge"),
    "agentjudge.judges._classifier": ("LabelClassifier",),
    "agentjudge.judges._commands": ("BuildSuccess", "CommandJudge"),
    "agentjudge.judges._compare": ("FileComparison", "compare_contents", "normalize_requirement"),
    "agentjudge.judges._confidence": (
        "LogprobConfidence",
        "SelfConsistency",
        "SimulatedAnnotators",
    ),
    "agentjudge.judges._conversation": (
        "CONSISTENCY_RUBRIC",
        "GOAL_COMPLETION_RUBRIC",
        "TRAJECTORY_RUBRIC",
        "ConversationJudge",
        "TrajectoryJudge",
    ),
    "agentjudge.judges._coverage": (
        "CoverageImprovement",
        "CoverageMetric",
        "CoverageMetrics",
        "CoveragePreservation",
        "CoverageReportError",
        "parse_coverage",
    ),
    "agentjudge.judges._files": ("FileContent", "FileExists", "MatchMode", "SupersetDiff"),
    "agentjudge.judges._llm": ("LLMJudge",),
    "agentjudge.judges._pairwise": ("PairwiseJudge",),
    "agentjudge.judges._rag": (
        "VERDICT_SCHEMA",
        "ContextualRelevanceJudge",
        "CorrectnessJudge",
        "FaithfulnessJudge",
        "HallucinationJudge",
    ),
    "agentjudge.judges._replay": ("ReplayJudge",),
    "agentjudge.judges._retrieval": (
        "CitationPrecision",
        "CitationRecall",
        "RefusalCorrectness",
        "RefusalPolicy",
        "RouteAccuracy",
        "citation_precision",
        "citation_recall",
        "refusal_correctness",
        "route_accuracy",
    ),
    "agentjudge.judges._score": ("Runner", "RunnerResult", "ScoreJudge"),
    "agentjudge.judges._template": ("MissingPolicy", "PromptTemplate"),
    "agentjudge.judges._trajectory": ("TrajectoryMatch",),
    "agentjudge.judges._verdict": ("parse_verdict",),
}
_LAZY: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "CONSISTENCY_RUBRIC",
    "GOAL_COMPLETION_RUBRIC",
    "PYC_MAGIC_NUMBERS",
    "TRAJECTORY_RUBRIC",
    "VERDICT_SCHEMA",
    "BuildSuccess",
    "CitationPrecision",
    "CitationRecall",
    "ClassVersionJudge",
    "CommandJudge",
    "ContextualRelevanceJudge",
    "ConversationJudge",
    "CorrectnessJudge",
    "CoverageImprovement",
    "CoverageMetric",
    "CoverageMetrics",
    "CoveragePreservation",
    "CoverageReportError",
    "FaithfulnessJudge",
    "FileComparison",
    "FileContent",
    "FileExists",
    "ForbiddenTools",
    "HallucinationJudge",
    "LLMJudge",
    "LabelClassifier",
    "LogprobConfidence",
    "MatchMode",
    "MissingPolicy",
    "PairwiseJudge",
    "PromptTemplate",
    "PycVersionJudge",
    "RefusalCorrectness",
    "RefusalPolicy",
    "ReplayJudge",
    "RouteAccuracy",
    "Runner",
    "RunnerResult",
    "ScoreJudge",
    "SelfConsistency",
    "SimulatedAnnotators",
    "StepEfficiency",
    "SupersetDiff",
    "ToolArgumentsValid",
    "ToolSelection",
    "TrajectoryJudge",
    "TrajectoryMatch",
    "citation_precision",
    "citation_recall",
    "compare_contents",
    "normalize_requirement",
    "parse_coverage",
    "parse_verdict",
    "refusal_correctness",
    "route_accuracy",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

"""Built-in judges: LLM / RAG, agent trajectories, files, commands, coverage, comparison, retrieval.

Deterministic judges never call a model; LLM judges call an `agentjudge.models.ModelClient`
(or a `Runner`) and draw on the Evaluator limit named after their client (``resource``).

`__all__` holds what a user programs against: the judges, their options, the `Runner`
protocol, and the documented helpers (`parse_coverage`, `compare_contents`,
`normalize_requirement`, `parse_verdict`, the retrieval metric functions). The judges' shared
base classes, prompt plumbing and lookup tables live in the private modules.
"""

from __future__ import annotations

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
from agentjudge.judges._confidence import LogprobConfidence, SelfConsistency, SimulatedAnnotators
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

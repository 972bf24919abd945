"""Built-in judges: LLM / RAG judges, files, commands, coverage, comparison, retrieval metrics.

Deterministic judges never call a model; LLM judges call an `agentjudge.models.ModelClient`
(or a `Runner`) and draw on the Evaluator limit named after their client (``resource``).
"""

from __future__ import annotations

from agentjudge.judges._bytecode import (
    PYC_MAGIC_NUMBERS,
    ClassVersionJudge,
    PycVersionJudge,
    pyc_magic_for,
)
from agentjudge.judges._classifier import LabelClassifier
from agentjudge.judges._commands import DEFAULT_OUTPUT_LIMIT, BuildSuccess, CommandJudge
from agentjudge.judges._compare import (
    FileComparison,
    comparator_for,
    compare_contents,
    normalize_requirement,
)
from agentjudge.judges._coverage import (
    DEFAULT_COVERAGE_REPORTS,
    CoverageImprovement,
    CoverageMetric,
    CoverageMetrics,
    CoveragePreservation,
    CoverageReportError,
    parse_coverage,
    parse_coverage_bytes,
)
from agentjudge.judges._files import FileContent, FileExists, MatchMode, SupersetDiff
from agentjudge.judges._llm import LLMJudge, ModelJudgeBase
from agentjudge.judges._paths import DeterministicJudge, PathEscapeError, WorkspaceError
from agentjudge.judges._rag import (
    VERDICT_SCHEMA,
    ContextualRelevanceJudge,
    CorrectnessJudge,
    FaithfulnessJudge,
    HallucinationJudge,
    rag_answer,
    rag_context,
    rag_question,
)
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
from agentjudge.judges._score import (
    SCORE_SCHEMA,
    ModelRunner,
    Runner,
    RunnerResult,
    ScoreJudge,
    evaluation_input,
    format_messages,
)
from agentjudge.judges._template import VARIABLES, MissingPolicy, PromptTemplate, render_value
from agentjudge.judges._verdict import parse_verdict

__all__ = [
    "DEFAULT_COVERAGE_REPORTS",
    "DEFAULT_OUTPUT_LIMIT",
    "PYC_MAGIC_NUMBERS",
    "SCORE_SCHEMA",
    "VARIABLES",
    "VERDICT_SCHEMA",
    "BuildSuccess",
    "CitationPrecision",
    "CitationRecall",
    "ClassVersionJudge",
    "CommandJudge",
    "ContextualRelevanceJudge",
    "CorrectnessJudge",
    "CoverageImprovement",
    "CoverageMetric",
    "CoverageMetrics",
    "CoveragePreservation",
    "CoverageReportError",
    "DeterministicJudge",
    "FaithfulnessJudge",
    "FileComparison",
    "FileContent",
    "FileExists",
    "HallucinationJudge",
    "LLMJudge",
    "LabelClassifier",
    "MatchMode",
    "MissingPolicy",
    "ModelJudgeBase",
    "ModelRunner",
    "PathEscapeError",
    "PromptTemplate",
    "PycVersionJudge",
    "RefusalCorrectness",
    "RefusalPolicy",
    "RouteAccuracy",
    "Runner",
    "RunnerResult",
    "ScoreJudge",
    "SupersetDiff",
    "WorkspaceError",
    "citation_precision",
    "citation_recall",
    "comparator_for",
    "compare_contents",
    "evaluation_input",
    "format_messages",
    "normalize_requirement",
    "parse_coverage",
    "parse_coverage_bytes",
    "parse_verdict",
    "pyc_magic_for",
    "rag_answer",
    "rag_context",
    "rag_question",
    "refusal_correctness",
    "render_value",
    "route_accuracy",
]

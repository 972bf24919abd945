"""Hub of the deterministic judge families: every public name, for ``agentjudge.judges``.

Families: files, commands, bytecode, coverage, semantic comparison, retrieval metrics.
"""

from __future__ import annotations

from agentjudge.judges._bytecode import (
    PYC_MAGIC_NUMBERS,
    ClassVersionJudge,
    PycVersionJudge,
    pyc_magic_for,
)
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
from agentjudge.judges._paths import DeterministicJudge, PathEscapeError, WorkspaceError
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

__all__ = [
    "DEFAULT_COVERAGE_REPORTS",
    "DEFAULT_OUTPUT_LIMIT",
    "PYC_MAGIC_NUMBERS",
    "BuildSuccess",
    "CitationPrecision",
    "CitationRecall",
    "ClassVersionJudge",
    "CommandJudge",
    "CoverageImprovement",
    "CoverageMetric",
    "CoverageMetrics",
    "CoveragePreservation",
    "CoverageReportError",
    "DeterministicJudge",
    "FileComparison",
    "FileContent",
    "FileExists",
    "MatchMode",
    "PathEscapeError",
    "PycVersionJudge",
    "RefusalCorrectness",
    "RefusalPolicy",
    "RouteAccuracy",
    "SupersetDiff",
    "WorkspaceError",
    "citation_precision",
    "citation_recall",
    "comparator_for",
    "compare_contents",
    "normalize_requirement",
    "parse_coverage",
    "parse_coverage_bytes",
    "pyc_magic_for",
    "refusal_correctness",
    "route_accuracy",
]

"""Hub for the model-backed judges: templates, classifiers, LLM / RAG judges, ScoreJudge."""

from __future__ import annotations

from agentjudge.judges._classifier import LabelClassifier
from agentjudge.judges._llm import LLMJudge, ModelJudgeBase
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
    "SCORE_SCHEMA",
    "VARIABLES",
    "VERDICT_SCHEMA",
    "ContextualRelevanceJudge",
    "CorrectnessJudge",
    "FaithfulnessJudge",
    "HallucinationJudge",
    "LLMJudge",
    "LabelClassifier",
    "MissingPolicy",
    "ModelJudgeBase",
    "ModelRunner",
    "PromptTemplate",
    "Runner",
    "RunnerResult",
    "ScoreJudge",
    "evaluation_input",
    "format_messages",
    "parse_verdict",
    "rag_answer",
    "rag_context",
    "rag_question",
    "render_value",
]

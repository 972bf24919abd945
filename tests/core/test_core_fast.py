"""Typed fast constructors (``X.fast``) build values equal to validated ones and miss no field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agentjudge._compat import build_model
from agentjudge.core import (
    CaseResult,
    Context,
    ExecutionStatus,
    JudgeResult,
    Judgment,
    Status,
    TierAttempt,
    TierPolicy,
    Verdict,
)
from agentjudge.core._fast import check_fast

PASS = Judgment.passed("fine", score=0.9)
RESULT_FIELDS: dict[str, Any] = {
    "name": "j",
    "judgment": PASS,
    "sampled": True,
    "metric_key": "acc",
    "tier": "cheap",
    "attempts": 2,
    "duration_s": 0.5,
    "queued_s": 0.25,
    "error_type": None,
    "traceback": None,
}
RESULT = JudgeResult(**RESULT_FIELDS)
CONTEXT_FIELDS: dict[str, Any] = {
    "input": "q",
    "output": "a",
    "expected": "a",
    "messages": (),
    "workspace": None,
    "status": ExecutionStatus.SUCCESS,
    "started_at": datetime(2024, 1, 1, tzinfo=UTC),
    "duration": timedelta(seconds=1.5),
    "error": None,
    "metadata": MappingProxyType({"case_id": "c1"}),
}
VERDICT = Verdict(judgment=PASS, results=(RESULT,), tiers=())
CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (JudgeResult, RESULT_FIELDS),
    (
        Judgment,
        {
            "status": Status.PASS,
            "score": 0.5,
            "label": None,
            "confidence": 0.5,
            "reasoning": "r",
            "checks": (),
            "metadata": MappingProxyType({}),
        },
    ),
    (Context, CONTEXT_FIELDS),
    (Verdict, {"judgment": PASS, "results": (RESULT,), "tiers": ()}),
    (
        TierAttempt,
        {
            "name": "cheap",
            "policy": TierPolicy.FINAL,
            "judgment": PASS,
            "results": (RESULT,),
            "skipped": ("other",),
            "failure": None,
            "stopped": True,
        },
    ),
    (CaseResult, {"context": Context(**CONTEXT_FIELDS), "results": (RESULT,), "verdict": VERDICT}),
]


@pytest.mark.parametrize(("cls", "fields"), CASES, ids=[c.__name__ for c, _ in CASES])
def test_fast_equals_validated(cls: type[BaseModel], fields: dict[str, Any]) -> None:
    """X.fast(**every field) equals X(**every field) in value, dumps, repr and fields set."""
    fast = cls.fast(**fields)  # type: ignore[attr-defined]
    slow = cls(**fields)
    assert fast == slow
    assert fast.model_dump_json() == slow.model_dump_json()
    assert repr(fast) == repr(slow)
    assert fast.model_fields_set == slow.model_fields_set == set(cls.model_fields)
    assert list(fast.__dict__) == list(cls.model_fields)


@pytest.mark.parametrize(("cls", "fields"), CASES, ids=[c.__name__ for c, _ in CASES])
def test_fast_refuses_a_missing_field(cls: type[BaseModel], fields: dict[str, Any]) -> None:
    """Leaving a field out of X.fast is a TypeError at the call, never a half-built value."""
    missing = dict(fields)
    missing.popitem()
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument"):
        cls.fast(**missing)  # type: ignore[attr-defined]


class _Two(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    a: int
    b: int = 0


def test_check_fast_rejects_a_fast_that_misses_a_field() -> None:
    """A model whose fast does not take every field fails check_fast, naming the fields."""

    class Missing(_Two):
        @classmethod
        def fast(cls, *, a: int) -> Missing:
            return build_model(cls, {"a": a}, {"a", "b"})

    with pytest.raises(TypeError, match=r"Missing.fast must take the fields \['a', 'b'\]"):
        check_fast(Missing)


def test_check_fast_rejects_optional_or_positional_fields() -> None:
    """A fast with a default or a positional parameter fails check_fast."""

    class Loose(_Two):
        @classmethod
        def fast(cls, a: int, *, b: int = 0) -> Loose:
            return build_model(cls, {"a": a, "b": b}, {"a", "b"})

    with pytest.raises(TypeError, match=r"\['a', 'b'\] must be required keyword-only"):
        check_fast(Loose)


def test_check_fast_rejects_a_fast_that_drops_a_field() -> None:
    """A fast that takes a field but does not store it fails check_fast."""

    class Drops(_Two):
        @classmethod
        def fast(cls, *, a: int, b: int) -> Drops:
            return build_model(cls, {"a": a}, {"a", "b"})

    with pytest.raises(TypeError, match=r"Drops.fast does not store \['b'\]"):
        check_fast(Drops)

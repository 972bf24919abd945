"""What a judge says: `Status`, `Check` and `Judgment`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from operator import itemgetter
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from agentjudge._compat import build_model
from agentjudge.core._fast import check_fast
from agentjudge.core._portable import freeze_metadata, thaw

__all__ = [
    "AGGREGATION_KEY",
    "Check",
    "Judgment",
    "PortableMetadata",
    "Status",
    "judgment_problem",
]

AGGREGATION_KEY = "aggregation"
"""Metadata key reserved for voting evidence; the factories refuse it."""


class Status(StrEnum):
    """The outcome of one judgment. Wire values are lower case."""

    PASS = "pass"
    FAIL = "fail"
    ABSTAIN = "abstain"
    ERROR = "error"


PortableMetadata = Annotated[
    Mapping[str, Any],
    PlainValidator(freeze_metadata),
    PlainSerializer(thaw),
    WithJsonSchema({"type": "object", "additionalProperties": True}),
]
"""A JSON-portable metadata mapping, deep-validated and stored read-only."""


class Check(BaseModel):
    """One granular sub-assertion of a judgment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """Non-blank name of the check."""
    passed: bool = Field(strict=True)
    """Whether the assertion held."""
    message: str = ""
    """Human-readable detail."""

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("check name must be non-blank")
        return v

    @classmethod
    def ok(cls, name: str, message: str = "") -> Check:
        """A passing check."""
        return cls(name=name, passed=True, message=message)

    @classmethod
    def fail(cls, name: str, message: str = "") -> Check:
        """A failing check."""
        return cls(name=name, passed=False, message=message)


class Judgment(BaseModel):
    """What a judge says about one context.

    Invariants (enforced at construction): ``score`` is finite and within [0, 1] and is forbidden
    on ABSTAIN and ERROR; ``confidence`` is finite and within [0, 1] and is forbidden on ERROR;
    ``label`` is non-blank when set and forbidden on ERROR; ``reasoning``
    must be non-blank on ABSTAIN and ERROR; ``metadata`` is JSON-portable and read-only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Status = Field(strict=False)
    """PASS, FAIL, ABSTAIN or ERROR."""
    score: float | None = None
    """Normalised score in [0, 1]; None when the judge measured none."""
    label: str | None = None
    """Categorical label, e.g. the word a classifier matched."""
    confidence: float | None = None
    """How sure the judge is of its own status/label, in [0, 1]; None when it measured none.

    Forbidden on ERROR. Deterministic judges leave it None, read as "certain" (1.0) where a
    number is needed (jury aggregation, confidence-aware cascades).
    """
    reasoning: str = ""
    """Why; required on ABSTAIN and ERROR."""
    checks: tuple[Check, ...] = ()
    """Granular sub-assertions."""
    metadata: PortableMetadata = Field(default_factory=lambda: MappingProxyType({}))
    """JSON-portable, read-only extra facts. Key ``aggregation`` holds voting evidence."""

    @classmethod
    def fast(
        cls,
        *,
        status: Status,
        score: float | None,
        label: str | None,
        confidence: float | None,
        reasoning: str,
        checks: tuple[Check, ...],
        metadata: Mapping[str, Any],
    ) -> Judgment:
        """Build from already-valid values without validation (the engine's hot path).

        Every field is a required keyword; the values must be what validation would accept
        unchanged and keep the invariants (``metadata`` a frozen portable mapping; see
        `agentjudge.core._fast`).
        """
        return build_model(
            cls,
            {
                "status": status,
                "score": score,
                "label": label,
                "confidence": confidence,
                "reasoning": reasoning,
                "checks": checks,
                "metadata": metadata,
            },
            _JUDGMENT_FIELDS,
        )

    @field_validator("status", mode="before")
    @classmethod
    def _wire_status(cls, v: object) -> object:
        if isinstance(v, str) and not isinstance(v, Status) and v not in Status._value2member_map_:
            allowed = ", ".join(repr(s.value) for s in Status)
            raise ValueError(f"status must be one of {allowed} (lower case), got {v!r}")
        return v

    @field_validator("score", "confidence", mode="before")
    @classmethod
    def _unit_number(cls, v: object, info: ValidationInfo) -> object:
        if v is None:
            return v
        name = info.field_name
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"{name} must be a real number, got {type(v).__name__}")
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v}")
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be between 0.0 and 1.0, got {v}")
        return float(v)

    @model_validator(mode="after")
    def _invariants(self) -> Judgment:
        status = self.status
        if status in (Status.ABSTAIN, Status.ERROR):
            if self.score is not None:
                raise ValueError(
                    f"score: {status.value} represents no completed measurement, "
                    "so it must not carry a score"
                )
            if not self.reasoning.strip():
                raise ValueError(f"reasoning: must be non-blank on {status.value}")
            if status is Status.ERROR and self.confidence is not None:
                raise ValueError("confidence: an error judgment must not carry a confidence")
        if self.label is not None:
            if not self.label.strip():
                raise ValueError("label: must be non-blank when set")
            if status is Status.ERROR:
                raise ValueError("label: an error judgment must not carry a label")
        return self

    # ----------------------------------------------------------------- factories
    @classmethod
    def _make(cls, status: Status, reasoning: str, fields: dict[str, Any]) -> Judgment:
        metadata = fields.get("metadata")
        if isinstance(metadata, Mapping) and AGGREGATION_KEY in metadata:
            raise ValueError(
                "metadata: key 'aggregation' is reserved for voting evidence; "
                "construct Judgment(...) directly if you really mean it"
            )
        return cls(status=status, reasoning=reasoning, **fields)

    @classmethod
    def passed(cls, reasoning: str = "", **fields: Any) -> Judgment:
        """A PASS judgment; extra fields (score, label, checks, metadata) pass through."""
        return cls._make(Status.PASS, reasoning, fields)

    @classmethod
    def failed(cls, reasoning: str = "", **fields: Any) -> Judgment:
        """A FAIL judgment; extra fields pass through."""
        return cls._make(Status.FAIL, reasoning, fields)

    @classmethod
    def abstained(cls, reasoning: str, **fields: Any) -> Judgment:
        """An ABSTAIN judgment (no finding); reasoning is required."""
        return cls._make(Status.ABSTAIN, reasoning, fields)

    @classmethod
    def errored(cls, reasoning: str, **fields: Any) -> Judgment:
        """An ERROR judgment (the judge could not measure); reasoning is required."""
        return cls._make(Status.ERROR, reasoning, fields)

    @classmethod
    def from_score(
        cls,
        score: float,
        *,
        threshold: float = 0.5,
        low: float = 0.0,
        high: float = 1.0,
        reasoning: str = "",
        **fields: Any,
    ) -> Judgment:
        """Normalise ``score`` from [low, high] into [0, 1]; PASS iff normalised >= threshold.

        Raises:
            ValueError: non-finite inputs, ``high <= low``, ``score`` outside [low, high] or
                ``threshold`` outside [0, 1].
        """
        for name, value in (("score", score), ("threshold", threshold), ("low", low)):
            _require_real(name, value)
        _require_real("high", high)
        if not high > low:
            raise ValueError(f"high must be greater than low, got low={low}, high={high}")
        if not low <= score <= high:
            raise ValueError(f"score {score} is outside [{low}, {high}]")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {threshold}")
        normalised = (score - low) / (high - low)
        normalised = min(1.0, max(0.0, normalised))
        status = Status.PASS if normalised >= threshold else Status.FAIL
        return cls._make(status, reasoning, {**fields, "score": normalised})

    # ----------------------------------------------------------------- derived
    @property
    def is_pass(self) -> bool:
        """True iff the status is PASS."""
        return self.status is Status.PASS

    @property
    def effective_score(self) -> float | None:
        """The score if set, else 1.0 for PASS and 0.0 for FAIL, None for ABSTAIN and ERROR."""
        if self.score is not None:
            return self.score
        if self.status is Status.PASS:
            return 1.0
        if self.status is Status.FAIL:
            return 0.0
        return None


def _require_real(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a real number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")


_NO_SCORE = (Status.ABSTAIN, Status.ERROR)


_PLAIN_FIELDS = itemgetter(
    "status", "score", "label", "confidence", "reasoning", "checks", "metadata"
)
"""A judgment's fields `judgment_problem` reads, in one call (a missing one: KeyError)."""


def judgment_problem(judgment: Judgment) -> str | None:
    """What is wrong with a judgment built without validation, or None when it is sound.

    ``Judgment.model_construct(...)`` (or any other bypass) skips the invariants; the engine
    calls this on every judgment a judge returns so that garbage becomes an ERROR result
    instead of a vote. It re-checks the invariants cheaply (types, ranges, the ABSTAIN/ERROR
    rules, the label rules) and validates metadata that was not frozen by validation.

    Most judgments (no score, confidence or checks, frozen metadata: every LLM judge's
    PASS/FAIL verdict, labelled or not) are found sound with one lookup of all their fields
    (`_problem_of`'s answer for them: `tests/core/test_judgment_problem_fast.py`).
    """
    values = judgment.__dict__
    try:
        status, score, label, confidence, reasoning, checks, metadata = _PLAIN_FIELDS(values)
    except (KeyError, TypeError):
        return _problem_of(values)
    if (
        type(status) is Status
        and score is None
        and (label is None or (type(label) is str and status is not Status.ERROR and label.strip()))
        and confidence is None
        and type(reasoning) is str
        and type(checks) is tuple
        and not checks
        and type(metadata) is MappingProxyType
        and (status not in _NO_SCORE or reasoning.strip())
    ):
        return None
    return _problem_of(values)


def _problem_of(values: dict[str, Any]) -> str | None:
    """`judgment_problem` of a judgment's ``__dict__``, every invariant checked in turn."""
    status = values.get("status")
    if type(status) is not Status:
        return f"status must be a Status, got {status!r}"
    score = values.get("score")
    if score is not None:
        if type(score) is not float or not 0.0 <= score <= 1.0:
            return f"score must be a finite float within [0, 1], got {score!r}"
        if status in _NO_SCORE:
            return f"score: {status.value} must not carry a score"
    reasoning = values.get("reasoning")
    if type(reasoning) is not str:
        return f"reasoning must be a str, got {type(reasoning).__name__}"
    if status in _NO_SCORE and not reasoning.strip():
        return f"reasoning: must be non-blank on {status.value}"
    label = values.get("label")
    if label is not None and (
        type(label) is not str or not label.strip() or status is Status.ERROR
    ):
        return f"label: {label!r} is not allowed here (non-blank str, never on error)"
    confidence = values.get("confidence")
    if confidence is not None and (
        type(confidence) is not float or not 0.0 <= confidence <= 1.0 or status is Status.ERROR
    ):
        return f"confidence: {confidence!r} is not allowed here (a float in [0, 1], never on error)"
    return _parts_problem(values)


def _parts_problem(values: dict[str, Any]) -> str | None:
    checks = values.get("checks")
    # ``checks and``: most judgments have none, and all() over a generator costs ~0.3 µs.
    if type(checks) is not tuple or (checks and not all(type(c) is Check for c in checks)):
        return "checks must be a tuple of Check"
    metadata = values.get("metadata")
    if type(metadata) is not MappingProxyType:
        try:
            freeze_metadata(metadata)
        except (TypeError, ValueError) as exc:
            return f"metadata: {exc}"
    return None


_JUDGMENT_FIELDS = set(Judgment.model_fields)
check_fast(Judgment)

"""What the engine records: `JudgeResult`, `TierAttempt`, `Verdict`, `CaseResult`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentjudge._compat import build_model
from agentjudge.core._context import Context
from agentjudge.core._fast import check_fast
from agentjudge.core._judgment import Judgment, Status

__all__ = ["CaseResult", "JudgeResult", "TierAttempt", "TierPolicy", "Verdict"]


class JudgeResult(BaseModel):
    """What the engine records for one judge on one context."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The judge's name, unique inside one evaluation."""
    judgment: Judgment | None
    """What the judge said; None only when the judge was not sampled."""
    sampled: bool = True
    """False when sampling drew this judge out (it was never called)."""
    metric_key: str | None = None
    """The metric this judge reports under, if configured."""
    tier: str | None = None
    """The cascade tier that ran it."""
    attempts: int = Field(default=1, ge=0)
    """1 + retries actually made (0 when never called)."""
    duration_s: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    """Working time of the judge, excluding time queued for a slot."""
    queued_s: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    """Time spent waiting for concurrency slots and rate limits."""
    error_type: str | None = None
    """Exception class name when the judge raised or timed out."""
    traceback: tuple[str, ...] | None = None
    """Where the judge raised: its traceback's last frames, innermost last, each
    ``"path:line in function"``, frames of the user's own code prefixed with ``"> "``
    (`agentjudge.judging.short_traceback`). None when the judge did not raise, or when
    agentjudge raised it with no user code involved (a timeout). Never source lines or
    values."""

    @classmethod
    def fast(
        cls,
        *,
        name: str,
        judgment: Judgment | None,
        sampled: bool,
        metric_key: str | None,
        tier: str | None,
        attempts: int,
        duration_s: float,
        queued_s: float,
        error_type: str | None,
        traceback: tuple[str, ...] | None,
    ) -> JudgeResult:
        """Build from already-valid values without validation (the engine's hot path).

        Every field is a required keyword; the values must be what validation would accept
        unchanged (see `agentjudge.core._fast`).
        """
        return build_model(
            cls,
            {
                "name": name,
                "judgment": judgment,
                "sampled": sampled,
                "metric_key": metric_key,
                "tier": tier,
                "attempts": attempts,
                "duration_s": duration_s,
                "queued_s": queued_s,
                "error_type": error_type,
                "traceback": traceback,
            },
            _JUDGE_RESULT_FIELDS,
        )

    @model_validator(mode="after")
    def _sampled_iff_judgment(self) -> JudgeResult:
        if not self.name.strip():
            raise ValueError("name: must be non-blank")
        if self.sampled and self.judgment is None:
            raise ValueError("judgment: required when sampled is true")
        if not self.sampled and self.judgment is not None:
            raise ValueError("judgment: must be None when sampled is false")
        return self

    @property
    def status(self) -> Status | None:
        """The judgment's status, None when not sampled."""
        return None if self.judgment is None else self.judgment.status

    @property
    def score(self) -> float | None:
        """The judgment's own score (not the effective score)."""
        return None if self.judgment is None else self.judgment.score

    @property
    def reasoning(self) -> str | None:
        """The judgment's reasoning, None when not sampled."""
        return None if self.judgment is None else self.judgment.reasoning

    @property
    def success(self) -> bool:
        """True when sampled and the judge reached PASS or FAIL."""
        return self.judgment is not None and self.judgment.status in (Status.PASS, Status.FAIL)

    @property
    def usage(self) -> Mapping[str, int] | None:
        """Token counts of the model calls behind the judgment (``metadata["usage"]``).

        None when the judge made no model call or the provider reported no usage. A cached
        answer reports zero input and output tokens (nothing was billed).
        """
        return judgment_usage(self.judgment)

    @property
    def cost_usd(self) -> float | None:
        """What the model calls behind the judgment cost in US dollars (``metadata["cost_usd"]``).

        0.0 for a cached answer; None when the judge made no model call or its model has no
        price (see ``agentjudge.models.prices``).
        """
        return judgment_cost_usd(self.judgment)

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens of the judgment's model calls (None: no usage reported)."""
        return judgment_tokens(self.judgment)


def judgment_usage(judgment: Judgment | None) -> Mapping[str, int] | None:
    """The valid token counts in ``judgment.metadata["usage"]``, None when there are none."""
    raw = None if judgment is None else judgment.metadata.get("usage")
    if not isinstance(raw, Mapping):
        return None
    counts = {
        str(k): v
        for k, v in raw.items()
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0
    }
    return MappingProxyType(counts)


def judgment_cost_usd(judgment: Judgment | None) -> float | None:
    """``judgment.metadata["cost_usd"]`` when it is a finite number >= 0, else None."""
    raw = None if judgment is None else judgment.metadata.get("cost_usd")
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    value = float(raw)
    return value if math.isfinite(value) and value >= 0 else None


def judgment_tokens(judgment: Judgment | None) -> int | None:
    """Input plus output tokens in the judgment's usage (None: no usage reported)."""
    usage = judgment_usage(judgment)
    if not usage or ("input_tokens" not in usage and "output_tokens" not in usage):
        return None
    return usage.get("input_tokens", 0) + usage.get("output_tokens", 0)


class TierPolicy(StrEnum):
    """When a cascade tier stops the cascade."""

    REJECT_ON_ANY_FAIL = "reject_on_any_fail"
    """Stop with FAIL as soon as any member FAILs; otherwise escalate."""
    ACCEPT_ON_ALL_PASS = "accept_on_all_pass"
    """Stop with PASS when every member PASSes; otherwise escalate."""
    STOP_ON_AGREEMENT = "stop_on_agreement"
    """Stop when all members agree (all PASS or all FAIL); escalate on a split."""
    STOP_ON_CONFIDENCE = "stop_on_confidence"
    """Stop with the tier's PASS/FAIL aggregate when its confidence >= the threshold.

    Requires ``Tier(..., threshold=...)``. Everything else escalates: a None confidence, an
    ERROR, and an ABSTAIN however confident (a tier that abstains decided nothing).
    """
    FINAL = "final"
    """Always stop with the tier's aggregate; the last tier must be FINAL."""


class TierAttempt(BaseModel):
    """One cascade tier that was entered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """Tier name."""
    policy: TierPolicy
    """The tier's stop policy."""
    judgment: Judgment | None
    """The tier's judgment; None if the tier failed."""
    results: tuple[JudgeResult, ...] = ()
    """Results of the members that completed, configured order."""
    skipped: tuple[str, ...] = ()
    """Members cancelled or never started."""
    failure: str | None = None
    """Why the tier failed (its voting or a nested composite raised)."""
    stopped: bool = False
    """True if this tier stopped the cascade."""

    @classmethod
    def fast(
        cls,
        *,
        name: str,
        policy: TierPolicy,
        judgment: Judgment | None,
        results: tuple[JudgeResult, ...],
        skipped: tuple[str, ...],
        failure: str | None,
        stopped: bool,
    ) -> TierAttempt:
        """Build from already-valid values without validation (the engine's hot path).

        Every field is a required keyword; the values must be what validation would accept
        unchanged (see `agentjudge.core._fast`).
        """
        return build_model(
            cls,
            {
                "name": name,
                "policy": policy,
                "judgment": judgment,
                "results": results,
                "skipped": skipped,
                "failure": failure,
                "stopped": stopped,
            },
            _TIER_ATTEMPT_FIELDS,
        )


class Verdict(BaseModel):
    """The outcome of one evaluation: the aggregate and the individual results."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judgment: Judgment
    """The aggregate (a single judge: its own judgment)."""
    results: tuple[JudgeResult, ...] = ()
    """Individual results, configured order."""
    tiers: tuple[TierAttempt, ...] = ()
    """Cascades: one per tier entered."""

    @classmethod
    def fast(
        cls,
        *,
        judgment: Judgment,
        results: tuple[JudgeResult, ...],
        tiers: tuple[TierAttempt, ...],
    ) -> Verdict:
        """Build from already-valid values without validation (the engine's hot path).

        Every field is a required keyword; the values must be what validation would accept
        unchanged (see `agentjudge.core._fast`).
        """
        return build_model(
            cls,
            {
                "judgment": judgment,
                "results": results,
                "tiers": tiers,
            },
            _VERDICT_FIELDS,
        )

    @property
    def by_name(self) -> Mapping[str, JudgeResult]:
        """Results keyed by judge name."""
        return MappingProxyType({r.name: r for r in self.results})


class CaseResult(BaseModel):
    """One case of `Evaluator.run`: its context, results and verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    context: Context
    """The context evaluated."""
    results: tuple[JudgeResult, ...]
    """Individual results, configured order."""
    verdict: Verdict
    """The aggregate verdict."""

    @classmethod
    def fast(
        cls,
        *,
        context: Context,
        results: tuple[JudgeResult, ...],
        verdict: Verdict,
    ) -> CaseResult:
        """Build from already-valid values without validation (the engine's hot path).

        Every field is a required keyword; the values must be what validation would accept
        unchanged (see `agentjudge.core._fast`).
        """
        return build_model(
            cls,
            {
                "context": context,
                "results": results,
                "verdict": verdict,
            },
            _CASE_RESULT_FIELDS,
        )


_JUDGE_RESULT_FIELDS = set(JudgeResult.model_fields)
_TIER_ATTEMPT_FIELDS = set(TierAttempt.model_fields)
_VERDICT_FIELDS = set(Verdict.model_fields)
_CASE_RESULT_FIELDS = set(CaseResult.model_fields)
check_fast(JudgeResult)
check_fast(TierAttempt)
check_fast(Verdict)
check_fast(CaseResult)

"""The five shipped strategies: `Majority`, `Consensus`, `Average`, `Median`, `WeightedAverage`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from agentjudge.core import Judgment, Status
from agentjudge.voting._base import _CountingStrategy, _Strategy
from agentjudge.voting._intern import _interned
from agentjudge.voting._policies import ErrorPolicy, TiePolicy, _check_enum, _check_threshold
from agentjudge.voting._population import (
    _ABSTAIN,
    _FAIL,
    _PASS,
    _TIE_STATUS,
    _build,
    _fmt,
    _left_out,
    _Population,
    _running_note,
)


@dataclass(frozen=True, slots=True, repr=False)
class Majority(_CountingStrategy):
    """PASS when more eligible judgments pass than fail, FAIL when more fail.

    Statuses are counted and scores ignored; the aggregate carries no score. A tie (as many PASS
    as FAIL votes) is resolved by ``tie``.

    Args:
        tie: The status of a tie.
        errors: What to do with ERROR judgments.

    Raises:
        ValueError: ``tie`` or ``errors`` is not one of the enum values.
    """

    tie: TiePolicy = TiePolicy.FAIL
    """The status a tie resolves to."""
    errors: ErrorPolicy = ErrorPolicy.PROPAGATE
    """The error policy."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tie", _check_enum(TiePolicy, "tie", self.tie))
        object.__setattr__(self, "errors", _check_enum(ErrorPolicy, "errors", self.errors))

    def __repr__(self) -> str:
        return f"Majority(tie=TiePolicy.{self.tie.name}, errors=ErrorPolicy.{self.errors.name})"

    @property
    def name(self) -> str:
        """``"majority"``."""
        return "majority"

    def _from_population(self, pop: _Population) -> Judgment:
        if type(self) is not Majority:  # a subclass may read more than the counts
            return _Strategy._from_population(self, pop)
        return _interned(self, self.tie._value_, pop)

    def _status_of(self, margin: int) -> Status:
        if margin > 0:
            return _PASS
        if margin < 0:
            return _FAIL
        return _TIE_STATUS[self.tie]

    def _certain(self, pop: _Population) -> bool:
        if not pop.eligible:
            # All running judges abstaining, one passing or one failing give three outcomes.
            return False
        # Each running judge moves the margin (passes - fails) by +1, -1 or 0.
        margin = pop.passed - pop.failed
        low, high = margin - pop.running, margin + pop.running
        # The status only changes at margin 0, so the two ends of the range tell it all: if the
        # range straddles 0 they differ, and if 0 is an end the tie status is one of them.
        return self._status_of(low) == self._status_of(high)

    def _conclude(self, pop: _Population) -> Judgment:
        p, f = pop.passed, pop.failed
        if p > f:
            return self._result(
                pop, _PASS, f"Majority vote: {p} passed, {f} failed; majority pass", None
            )
        if p < f:
            return self._result(
                pop, _FAIL, f"Majority vote: {p} passed, {f} failed; majority fail", None
            )
        return self._result(
            pop,
            _TIE_STATUS[self.tie],
            f"Tie: {p} passed, {f} failed; the tie policy resolves it as {self.tie._value_}",
            None,
        )


@dataclass(frozen=True, slots=True, repr=False)
class Consensus(_CountingStrategy):
    """PASS when every eligible judgment passes, FAIL when every one fails, else ABSTAIN.

    Statuses are counted and scores ignored; the aggregate carries no score. A split panel is
    "no finding" (ABSTAIN), not a failure.

    Args:
        errors: What to do with ERROR judgments.

    Raises:
        ValueError: ``errors`` is not an `ErrorPolicy` value.
    """

    errors: ErrorPolicy = ErrorPolicy.PROPAGATE
    """The error policy."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", _check_enum(ErrorPolicy, "errors", self.errors))

    def __repr__(self) -> str:
        return f"Consensus(errors=ErrorPolicy.{self.errors.name})"

    @property
    def name(self) -> str:
        """``"consensus"``."""
        return "consensus"

    def _from_population(self, pop: _Population) -> Judgment:
        if type(self) is not Consensus:  # a subclass may read more than the counts
            return _Strategy._from_population(self, pop)
        return _interned(self, "", pop)

    def _certain(self, pop: _Population) -> bool:
        # Once both a PASS and a FAIL vote arrived, nothing can restore unanimity.
        return pop.passed > 0 and pop.failed > 0

    def _conclude(self, pop: _Population) -> Judgment:
        p, f = pop.passed, pop.failed
        if f == 0:
            return self._result(pop, _PASS, f"Unanimous: all {p} eligible judgment(s) passed", None)
        if p == 0:
            return self._result(pop, _FAIL, f"Unanimous: all {f} eligible judgment(s) failed", None)
        return self._result(
            pop,
            _ABSTAIN,
            f"No consensus: {p} passed, {f} failed among {p + f} eligible judgment(s)",
            None,
        )


@dataclass(frozen=True, slots=True, repr=False)
class _ScoreStrategy(_Strategy):
    """Strategies over effective scores: PASS iff the aggregate score >= threshold."""

    threshold: float = 0.5
    """Pass mark in [0, 1], inclusive."""
    errors: ErrorPolicy = ErrorPolicy.PROPAGATE
    """The error policy."""

    _label: ClassVar[str] = ""

    def _on_side(self, passed: bool, score: float, verdict: bool) -> bool:
        # A member backs the verdict when its own score is on the verdict's side of the mark.
        return (score >= self.threshold) is verdict

    def _verdict(self, pop: _Population, score: float, detail: str = "") -> Judgment:
        score = min(1.0, max(0.0, score))
        if score >= self.threshold:
            status, verdict = _PASS, "pass"
        else:
            status, verdict = _FAIL, "fail"
        reasoning = (
            f"{self._label} {_fmt(score)} over {pop.eligible} eligible judgment(s){detail} "
            f"(threshold {_fmt(self.threshold)}): {verdict}"
        )
        return self._result(pop, status, reasoning, score)

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _check_threshold(self.threshold))
        object.__setattr__(self, "errors", _check_enum(ErrorPolicy, "errors", self.errors))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(threshold={self.threshold!r}, "
            f"errors=ErrorPolicy.{self.errors.name})"
        )


@dataclass(frozen=True, slots=True, repr=False)
class Average(_ScoreStrategy):
    """The mean effective score of the eligible judgments; PASS iff it is >= ``threshold``.

    A judgment's effective score is its score, else 1.0 for PASS and 0.0 for FAIL; an ERROR
    treated as FAIL counts 0.0. The aggregate stores the mean as its score.

    Args:
        threshold: Pass mark in [0, 1], inclusive.
        errors: What to do with ERROR judgments.

    Raises:
        ValueError: ``threshold`` is not a finite number in [0, 1], or ``errors`` is invalid.
    """

    _label = "Average score"

    @property
    def name(self) -> str:
        """``"average"``."""
        return "average"

    def _conclude(self, pop: _Population) -> Judgment:
        return self._verdict(pop, math.fsum(pop.scores) / pop.eligible)


@dataclass(frozen=True, slots=True, repr=False)
class Median(_ScoreStrategy):
    """The median effective score (mean of the two middle ones for an even count).

    PASS iff the median is >= ``threshold``; the aggregate stores the median as its score.

    Args:
        threshold: Pass mark in [0, 1], inclusive.
        errors: What to do with ERROR judgments.

    Raises:
        ValueError: ``threshold`` is not a finite number in [0, 1], or ``errors`` is invalid.
    """

    _label = "Median score"

    @property
    def name(self) -> str:
        """``"median"``."""
        return "median"

    def _conclude(self, pop: _Population) -> Judgment:
        ordered = sorted(pop.scores)
        mid = len(ordered) // 2
        median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        return self._verdict(pop, median)


@dataclass(frozen=True, slots=True, repr=False)
class WeightedAverage(_ScoreStrategy):
    """The weighted mean effective score, ``sum(s * w) / sum(w)`` over eligible judgments.

    Weights are given per input judgment (``None`` means all 1.0) and validated before anything
    else. If the eligible judgments carry no weight at all (say the only positively weighted
    judge abstained) the aggregate is ABSTAIN. The evidence adds ``inputWeight`` (sum of all
    weights) and ``eligibleWeight`` (sum over the eligible judgments).

    Args:
        threshold: Pass mark in [0, 1], inclusive.
        errors: What to do with ERROR judgments.

    Raises:
        ValueError: ``threshold`` is not a finite number in [0, 1], or ``errors`` is invalid.
    """

    _label = "Weighted average score"
    _weighted_confidence = True

    @property
    def name(self) -> str:
        """``"weightedAverage"``."""
        return "weightedAverage"

    def _add_evidence(self, evidence: dict[str, Any], pop: _Population, *, eligible: bool) -> None:
        evidence["inputWeight"] = pop.input_weight()
        evidence["eligibleWeight"] = pop.eligible_weight() if eligible else 0.0

    def _conclude(self, pop: _Population) -> Judgment:
        total = pop.eligible_weight()
        if total == 0.0:
            return _build(
                status=_ABSTAIN,
                reasoning=(
                    f"No eligible weight: the {pop.eligible} eligible judgment(s) all have "
                    "weight 0" + _left_out(pop) + _running_note(pop.running)
                ),
                metadata=self._metadata(pop, eligible=True),
            )
        return self._verdict(
            pop, pop.weighted_score_sum() / total, detail=f" with total weight {_fmt(total)}"
        )

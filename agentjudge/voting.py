"""Voting: turn the judgments of several judges into one.

Five strategies ship here: `Majority`, `Consensus`, `Average`, `Median` and `WeightedAverage`.
They are small immutable objects with two methods the engine calls:

* ``aggregate(judgments, weights=None)`` folds finished judgments into one aggregate judgment;
* ``decided(done, weights=None)`` looks at a partly finished jury (``None`` = still running) and
  returns the final aggregate once no outcome of the running judges can change its status. It
  powers early stopping.

Population rules shared by all five strategies:

* an empty list of judgments is a `ValueError`;
* ABSTAIN judgments leave the population (counted as ``explicitAbstainCount``);
* ERROR judgments follow the `ErrorPolicy`: PROPAGATE makes the aggregate ERROR, TREAT_AS_FAIL
  counts them as FAIL votes (score 0.0), TREAT_AS_ABSTAIN and IGNORE remove them (counted apart);
* an empty population gives ABSTAIN.

Every aggregate carries its evidence in ``metadata["aggregation"]`` (see `aggregation_evidence`
for the keys). Write your own strategy by implementing the `VotingStrategy` protocol.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from agentjudge.core import AGGREGATION_KEY, Judgment, Status, construct

__all__ = [
    "Average",
    "Consensus",
    "ErrorPolicy",
    "Majority",
    "Median",
    "TiePolicy",
    "VotingStrategy",
    "WeightedAverage",
    "check_weights",
]

_REASON_EXCERPT = 200
_E = TypeVar("_E", bound=StrEnum)


class TiePolicy(StrEnum):
    """How `Majority` resolves a tie (as many PASS votes as FAIL votes)."""

    PASS = "pass"
    """A tie passes."""
    FAIL = "fail"
    """A tie fails (the default)."""
    ABSTAIN = "abstain"
    """A tie is no finding."""


class ErrorPolicy(StrEnum):
    """What a strategy does with ERROR judgments."""

    PROPAGATE = "propagate"
    """Any ERROR makes the aggregate ERROR (the default)."""
    TREAT_AS_FAIL = "treat_as_fail"
    """An ERROR counts as a FAIL vote (effective score 0.0)."""
    TREAT_AS_ABSTAIN = "treat_as_abstain"
    """An ERROR leaves the population, counted as ``errorsTreatedAsAbstainCount``."""
    IGNORE = "ignore"
    """An ERROR leaves the population, counted as ``ignoredErrorCount``."""


@runtime_checkable
class VotingStrategy(Protocol):
    """What the engine needs from a voting strategy; implement it to write your own.

    Both methods must be pure functions of their arguments. ``decided`` must be sound: it may
    only return a judgment when no outcome of the running judges (each may still PASS, FAIL,
    ABSTAIN or ERROR, with any score) could change the aggregate's status. Returning ``None``
    while anything is running is always sound; when nothing is running it should return what
    ``aggregate`` returns.
    """

    @property
    def name(self) -> str:
        """Short name, recorded as ``strategy`` in the evidence."""
        ...

    def aggregate(
        self, judgments: Sequence[Judgment], weights: Sequence[float] | None = None
    ) -> Judgment:
        """Fold finished judgments (and optional per-judgment weights) into one judgment."""
        ...

    def decided(
        self, done: Sequence[Judgment | None], weights: Sequence[float] | None = None
    ) -> Judgment | None:
        """The final aggregate if the running judges (``None``) can no longer change it."""
        ...


# --------------------------------------------------------------------------- input checks


def check_weights(weights: Sequence[float] | None, count: int) -> tuple[float, ...]:
    """Validate per-judgment weights and return them as floats (``None`` -> all 1.0).

    Args:
        weights: One weight per judgment, or ``None``.
        count: The number of judgments the weights belong to.

    Returns:
        ``count`` finite, non-negative floats, not all zero.

    Raises:
        ValueError: ``weights`` is not a sequence, has the wrong length, holds a non-number, a
            non-finite or negative value, is all zero, or sums beyond the float range.
    """
    if weights is None:
        return (1.0,) * count
    if isinstance(weights, str | bytes | Mapping) or not isinstance(weights, Iterable):
        raise ValueError(
            f"weights must be a sequence of numbers, one per judgment, got {type(weights).__name__}"
        )
    values = tuple(weights)
    if len(values) != count:
        raise ValueError(
            f"weights has {len(values)} entries but there are {count} judgments; "
            "give exactly one weight per judgment"
        )
    checked: list[float] = []
    for i, w in enumerate(values):
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise ValueError(f"weights[{i}] must be a real number, got {type(w).__name__}")
        value = float(w)
        if not math.isfinite(value):
            raise ValueError(f"weights[{i}] must be finite, got {value}")
        if value < 0:
            raise ValueError(f"weights[{i}] must be >= 0, got {value}")
        checked.append(value)
    if count and not any(checked):
        raise ValueError(
            "weights are all zero, so no judgment could influence the result; "
            "give at least one judgment a positive weight"
        )
    try:
        total = math.fsum(checked)
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("weights sum beyond the float range; scale them down")
    return tuple(checked)


def _check_judgments(judgments: Sequence[Judgment]) -> tuple[Judgment, ...]:
    items = tuple(judgments)
    if not items:
        raise ValueError("Cannot aggregate an empty list of judgments")
    for i, j in enumerate(items):
        if not isinstance(j, Judgment):
            raise ValueError(f"judgments[{i}] must be a Judgment, got {type(j).__name__}")
    return items


def _check_done(done: Sequence[Judgment | None]) -> tuple[Judgment | None, ...]:
    items = tuple(done)
    if not items:
        raise ValueError("Cannot aggregate an empty list of judgments")
    for i, j in enumerate(items):
        if j is not None and not isinstance(j, Judgment):
            raise ValueError(
                f"done[{i}] must be a Judgment or None (still running), got {type(j).__name__}"
            )
    return items


def _check_threshold(threshold: object) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise ValueError(f"threshold must be a real number, got {type(threshold).__name__}")
    value = float(threshold)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"threshold must be a finite number within [0, 1], got {threshold!r}")
    return value


def _check_enum(kind: type[_E], knob: str, value: object) -> _E:
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value in kind._value2member_map_:
        return kind(value)
    allowed = ", ".join(repr(m.value) for m in kind)
    raise ValueError(f"{knob} must be a {kind.__name__} ({allowed}), got {value!r}")


# --------------------------------------------------------------------------- population


@dataclass(slots=True)
class _Population:
    """Finished judgments sorted by the error policy (eligible = PASS/FAIL votes)."""

    input_count: int = 0
    passed: int = 0
    failed: int = 0
    scores: list[float] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    explicit_abstain: int = 0
    errors: int = 0
    ignored: int = 0
    as_abstain: int = 0
    as_fail: int = 0
    input_weight: float = 0.0
    first_error: str = ""

    @property
    def eligible(self) -> int:
        return len(self.scores)


def _resolve(
    judgments: Iterable[Judgment], weights: Iterable[float], policy: ErrorPolicy
) -> _Population:
    pop = _Population()
    input_weights: list[float] = []
    for j, w in zip(judgments, weights, strict=True):
        pop.input_count += 1
        input_weights.append(w)
        status = j.status
        if status is Status.ABSTAIN:
            pop.explicit_abstain += 1
            continue
        if status is Status.ERROR:
            pop.errors += 1
            if not pop.first_error:
                pop.first_error = j.reasoning
            if policy is ErrorPolicy.TREAT_AS_FAIL:
                pop.as_fail += 1
                pop.failed += 1
                pop.scores.append(0.0)
                pop.weights.append(w)
            elif policy is ErrorPolicy.TREAT_AS_ABSTAIN:
                pop.as_abstain += 1
            elif policy is ErrorPolicy.IGNORE:
                pop.ignored += 1
            continue
        score = j.effective_score
        assert score is not None  # PASS and FAIL always have an effective score
        if status is Status.PASS:
            pop.passed += 1
        else:
            pop.failed += 1
        pop.scores.append(score)
        pop.weights.append(w)
    pop.input_weight = math.fsum(input_weights)
    return pop


def _fmt(x: float) -> str:
    return format(x, ".6g")


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _REASON_EXCERPT:
        return text[: _REASON_EXCERPT - 3] + "..."
    return text


def _left_out(pop: _Population) -> str:
    parts: list[str] = []
    if pop.explicit_abstain:
        parts.append(f"{pop.explicit_abstain} abstained")
    if pop.ignored:
        parts.append(f"{pop.ignored} error(s) ignored")
    if pop.as_abstain:
        parts.append(f"{pop.as_abstain} error(s) treated as abstain")
    if pop.as_fail:
        parts.append(f"{pop.as_fail} error(s) counted as fail")
    return f" ({', '.join(parts)})" if parts else ""


def _build(
    *,
    status: Status,
    reasoning: str,
    metadata: Mapping[str, Mapping[str, Any]],
    score: float | None = None,
) -> Judgment:
    """Build an aggregate without re-validating it (the hot path of every jury).

    Every value is valid by construction: ``reasoning`` is non-blank, ``score`` is a float in
    [0, 1] and only given for PASS/FAIL, and ``metadata`` is a read-only mapping of str, int and
    finite float evidence, exactly what validation would have produced.
    """
    return construct(
        Judgment,
        {
            "status": status,
            "score": score,
            "label": None,
            "reasoning": reasoning,
            "checks": (),
            "metadata": metadata,
        },
    )


def _running_note(running: int) -> str:
    return f"; decided early with {running} judgment(s) still running" if running else ""


# --------------------------------------------------------------------------- strategies


class _Strategy:
    """Shared machinery: validation, population resolution, evidence, early decisions."""

    __slots__ = ()

    errors: ErrorPolicy

    @property
    def name(self) -> str:  # pragma: no cover - every strategy overrides it
        raise NotImplementedError

    # ---- public API
    def aggregate(
        self, judgments: Sequence[Judgment], weights: Sequence[float] | None = None
    ) -> Judgment:
        """Fold finished judgments into one aggregate judgment.

        Args:
            judgments: The finished judgments (at least one).
            weights: Optional per-judgment weights (same length, finite, >= 0, not all zero).
                Every strategy validates them; only `WeightedAverage` uses them.

        Returns:
            The aggregate, with its evidence in ``metadata["aggregation"]``.

        Raises:
            ValueError: an empty list, a non-Judgment item, or invalid weights.
        """
        items = _check_judgments(judgments)
        w = check_weights(weights, len(items))
        return self._from_population(_resolve(items, w, self.errors), running=0)

    def decided(
        self, done: Sequence[Judgment | None], weights: Sequence[float] | None = None
    ) -> Judgment | None:
        """The final aggregate if no outcome of the still-running judges can change its status.

        ``done`` holds one entry per judge: its judgment once finished, ``None`` while it runs.
        When nothing is running this returns exactly ``aggregate(done, weights)``. Under
        PROPAGATE an arrived ERROR decides ERROR at once. `Majority` and `Consensus` decide as
        soon as their status is certain; the score-based strategies wait for every judge.

        An early decision is the aggregate of the finished judgments only (its status is the
        certain one): the evidence counts (``inputCount``, ``eligibleCount``, ...) and weights
        describe the finished judgments, and an extra ``runningCount`` key says how many were
        still running. ``weights`` cover all of ``done`` and are validated as a whole.

        Raises:
            ValueError: an empty ``done``, an item that is neither Judgment nor None, or invalid
                weights.
        """
        items = _check_done(done)
        w = check_weights(weights, len(items))
        finished = [(j, wi) for j, wi in zip(items, w, strict=True) if j is not None]
        running = len(items) - len(finished)
        pop = _resolve((j for j, _ in finished), (wi for _, wi in finished), self.errors)
        if running == 0:
            return self._from_population(pop, running=0)
        if self.errors is ErrorPolicy.PROPAGATE:
            # A running judge could still error, so only an arrived ERROR is certain.
            return self._from_population(pop, running=running) if pop.errors else None
        if not self._certain(pop, running):
            return None
        return self._from_population(pop, running=running)

    # ---- hooks
    def _certain(self, pop: _Population, running: int) -> bool:
        """Whether ``running`` more votes (each PASS, FAIL or none) cannot change the status."""
        return False

    def _extra_evidence(self, pop: _Population, *, eligible: bool) -> dict[str, Any]:
        return {}

    def _conclude(self, pop: _Population, running: int) -> Judgment:  # pragma: no cover
        raise NotImplementedError

    # ---- shared building blocks
    def _from_population(self, pop: _Population, *, running: int) -> Judgment:
        if self.errors is ErrorPolicy.PROPAGATE and pop.errors:
            return _build(
                status=Status.ERROR,
                reasoning=(
                    f"{pop.errors} of {pop.input_count} judgment(s) errored and the error "
                    f"policy is propagate; first error: {_excerpt(pop.first_error)}"
                    + _running_note(running)
                ),
                metadata=self._metadata(pop, eligible=False, running=running),
            )
        if not pop.eligible:
            return self._no_result(pop, running)
        return self._conclude(pop, running)

    def _no_result(self, pop: _Population, running: int) -> Judgment:
        if pop.ignored:
            reason = f"No eligible judgments: {pop.ignored} error(s) ignored"
        elif pop.as_abstain:
            reason = f"No eligible judgments: {pop.as_abstain} error(s) treated as abstentions"
        else:
            reason = f"All {pop.explicit_abstain} judgment(s) abstained"
        if (pop.ignored or pop.as_abstain) and pop.explicit_abstain:
            reason += f" and {pop.explicit_abstain} abstained"
        return _build(
            status=Status.ABSTAIN,
            reasoning=reason + _running_note(running),
            metadata=self._metadata(pop, eligible=True, running=running),
        )

    def _metadata(
        self, pop: _Population, *, eligible: bool, running: int
    ) -> Mapping[str, Mapping[str, Any]]:
        evidence: dict[str, Any] = {
            "strategy": self.name,
            "errorPolicy": self.errors.value,
            "inputCount": pop.input_count,
            "eligibleCount": pop.eligible if eligible else 0,
            "explicitAbstainCount": pop.explicit_abstain,
            "errorCount": pop.errors,
            "ignoredErrorCount": pop.ignored,
            "errorsTreatedAsAbstainCount": pop.as_abstain,
            "errorsTreatedAsFailCount": pop.as_fail,
        }
        evidence.update(self._extra_evidence(pop, eligible=eligible))
        if running:
            evidence["runningCount"] = running
        return MappingProxyType({AGGREGATION_KEY: MappingProxyType(evidence)})

    def _result(
        self, pop: _Population, status: Status, reasoning: str, running: int, score: float | None
    ) -> Judgment:
        return _build(
            status=status,
            score=score,
            reasoning=reasoning + _left_out(pop) + _running_note(running),
            metadata=self._metadata(pop, eligible=True, running=running),
        )


class _CountingStrategy(_Strategy):
    """Strategies that count PASS and FAIL statuses (scores ignored)."""

    __slots__ = ()

    def _extra_evidence(self, pop: _Population, *, eligible: bool) -> dict[str, Any]:
        return {
            "passCount": pop.passed if eligible else 0,
            "failCount": pop.failed if eligible else 0,
        }


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

    def _status_of(self, margin: int) -> Status:
        if margin > 0:
            return Status.PASS
        if margin < 0:
            return Status.FAIL
        return Status(self.tie.value)

    def _certain(self, pop: _Population, running: int) -> bool:
        if not pop.eligible:
            # All running judges abstaining, one passing or one failing give three outcomes.
            return False
        # Each running judge moves the margin (passes - fails) by +1, -1 or 0.
        margin = pop.passed - pop.failed
        low, high = margin - running, margin + running
        # The status only changes at margin 0, so the two ends of the range tell it all: if the
        # range straddles 0 they differ, and if 0 is an end the tie status is one of them.
        return self._status_of(low) == self._status_of(high)

    def _conclude(self, pop: _Population, running: int) -> Judgment:
        p, f = pop.passed, pop.failed
        status = self._status_of(p - f)
        if p == f:
            reasoning = f"Tie: {p} passed, {f} failed; the tie policy resolves it as {self.tie}"
        else:
            reasoning = f"Majority vote: {p} passed, {f} failed; majority {status}"
        return self._result(pop, status, reasoning, running, None)


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

    def _certain(self, pop: _Population, running: int) -> bool:
        # Once both a PASS and a FAIL vote arrived, nothing can restore unanimity.
        return pop.passed > 0 and pop.failed > 0

    def _conclude(self, pop: _Population, running: int) -> Judgment:
        p, f = pop.passed, pop.failed
        if f == 0:
            return self._result(
                pop, Status.PASS, f"Unanimous: all {p} eligible judgment(s) passed", running, None
            )
        if p == 0:
            return self._result(
                pop, Status.FAIL, f"Unanimous: all {f} eligible judgment(s) failed", running, None
            )
        return self._result(
            pop,
            Status.ABSTAIN,
            f"No consensus: {p} passed, {f} failed among {p + f} eligible judgment(s)",
            running,
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

    def _verdict(self, pop: _Population, score: float, running: int, detail: str = "") -> Judgment:
        score = min(1.0, max(0.0, score))
        status = Status.PASS if score >= self.threshold else Status.FAIL
        reasoning = (
            f"{self._label} {_fmt(score)} over {pop.eligible} eligible judgment(s){detail} "
            f"(threshold {_fmt(self.threshold)}): {status}"
        )
        return self._result(pop, status, reasoning, running, score)

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

    def _conclude(self, pop: _Population, running: int) -> Judgment:
        return self._verdict(pop, math.fsum(pop.scores) / pop.eligible, running)


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

    def _conclude(self, pop: _Population, running: int) -> Judgment:
        ordered = sorted(pop.scores)
        mid = len(ordered) // 2
        median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        return self._verdict(pop, median, running)


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

    @property
    def name(self) -> str:
        """``"weightedAverage"``."""
        return "weightedAverage"

    def _extra_evidence(self, pop: _Population, *, eligible: bool) -> dict[str, Any]:
        return {
            "inputWeight": pop.input_weight,
            "eligibleWeight": math.fsum(pop.weights) if eligible else 0.0,
        }

    def _conclude(self, pop: _Population, running: int) -> Judgment:
        total = math.fsum(pop.weights)
        if total == 0.0:
            return _build(
                status=Status.ABSTAIN,
                reasoning=(
                    f"No eligible weight: the {pop.eligible} eligible judgment(s) all have "
                    "weight 0" + _left_out(pop) + _running_note(running)
                ),
                metadata=self._metadata(pop, eligible=True, running=running),
            )
        weighted = math.fsum(s * w for s, w in zip(pop.scores, pop.weights, strict=True))
        return self._verdict(
            pop, weighted / total, running, detail=f" with total weight {_fmt(total)}"
        )

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

import itertools
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from agentjudge.core import AGGREGATION_KEY, Judgment, Status

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
    kind = type(weights)
    if (kind is not list and kind is not tuple) and (
        isinstance(weights, str | bytes | Mapping) or not isinstance(weights, Iterable)
    ):
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
        if type(w) is float:
            value = w  # the common case: no need for the slower numbers.Real check
        elif isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise ValueError(f"weights[{i}] must be a real number, got {type(w).__name__}")
        else:
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
    for j in items:
        if not isinstance(j, Judgment):
            i = _index_of(items, j)
            raise ValueError(f"judgments[{i}] must be a Judgment, got {type(j).__name__}")
    return items


def _check_done(done: Sequence[Judgment | None]) -> tuple[Judgment | None, ...]:
    items = tuple(done)
    if not items:
        raise ValueError("Cannot aggregate an empty list of judgments")
    for j in items:
        if j is not None and not isinstance(j, Judgment):
            i = _index_of(items, j)
            raise ValueError(
                f"done[{i}] must be a Judgment or None (still running), got {type(j).__name__}"
            )
    return items


def _index_of(items: tuple[object, ...], item: object) -> int:
    """The position of ``item`` itself (by identity; ``==`` could be anything on bad input)."""
    return next(i for i, x in enumerate(items) if x is item)


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

# Enum members looked up once: ``Status.PASS`` goes through the enum metaclass (~0.1 µs a time).
_PASS, _FAIL, _ABSTAIN, _ERROR = Status.PASS, Status.FAIL, Status.ABSTAIN, Status.ERROR
_PROPAGATE, _TREAT_AS_FAIL = ErrorPolicy.PROPAGATE, ErrorPolicy.TREAT_AS_FAIL
_TREAT_AS_ABSTAIN, _IGNORE = ErrorPolicy.TREAT_AS_ABSTAIN, ErrorPolicy.IGNORE
_TIE_STATUS = {TiePolicy.PASS: _PASS, TiePolicy.FAIL: _FAIL, TiePolicy.ABSTAIN: _ABSTAIN}
_ONES = itertools.repeat(1.0)  # zip() partner of an unweighted ballot; zip never exhausts it


class _Population:
    """The finished judgments of a ballot, sorted by the error policy.

    Eligible judgments are the PASS and FAIL votes (an ERROR treated as FAIL is a FAIL vote with
    score 0.0); ``scores`` holds their effective scores in order, when asked for (counting
    strategies ignore scores). ``None`` entries are judges still running: they are only counted
    (``running``). Weights are tracked only when given (``weights`` and ``input_weights`` are
    then those of the eligible and of the finished judgments, else ``None`` and empty): without
    them every judgment weighs 1.0.
    """

    __slots__ = (
        "as_abstain",
        "as_fail",
        "eligible",
        "errors",
        "explicit_abstain",
        "failed",
        "first_error",
        "ignored",
        "input_count",
        "input_weights",
        "passed",
        "running",
        "scores",
        "weights",
    )

    def __init__(  # noqa: C901 - the inlined hot loop of every jury (see pyproject)
        self,
        items: tuple[Judgment | None, ...],
        weights: tuple[float, ...] | None,
        policy: ErrorPolicy,
        scored: bool,
    ) -> None:
        """Sort ``items`` (with one weight each, or ``None``) under ``policy``.

        Only with ``scored`` are the effective scores collected.
        """
        passed = failed = abstained = errors = running = 0
        first_error = ""
        scores: list[float] = []
        weighted = weights is not None
        eligible_weights: list[float] = []
        input_weights: list[float] = []
        # The callers checked that there is one weight per item, and any ``strict=`` keyword
        # makes zip() cost twice as much (about 0.2 µs), so none is given.
        for j, w in zip(items, weights if weights is not None else _ONES):  # noqa: B905
            if j is None:
                running += 1
                continue
            if weighted:
                input_weights.append(w)
            status = j.status
            if status is _ABSTAIN:
                abstained += 1
                continue
            if status is _ERROR:
                errors += 1
                if errors == 1:
                    first_error = j.reasoning
                if policy is _TREAT_AS_FAIL:
                    failed += 1
                    if scored:
                        scores.append(0.0)
                    if weighted:
                        eligible_weights.append(w)
                continue
            score: float | None
            if type(j) is not Judgment or (status is not _PASS and status is not _FAIL):
                # A subclass may redefine effective_score, and a status that is not a Status
                # member (only model_construct makes one) has none: that fails here, as always.
                score = j.effective_score
                assert score is not None  # PASS and FAIL always have an effective score
            elif scored:
                # Judgment.effective_score, inlined: this loop is the hot path of every jury.
                score = j.score
                if score is None:
                    score = 1.0 if status is _PASS else 0.0
            else:
                score = 0.0  # not needed: counting strategies ignore scores
            if status is _PASS:
                passed += 1
            else:
                failed += 1
            if scored:
                scores.append(score)
            if weighted:
                eligible_weights.append(w)
        self.input_count = len(items) - running
        self.running = running
        self.passed = passed
        self.failed = failed
        self.eligible = passed + failed
        self.scores = scores
        self.weights = eligible_weights if weighted else None
        self.input_weights = input_weights
        self.explicit_abstain = abstained
        self.errors = errors
        self.first_error = first_error
        self.as_fail = errors if policy is _TREAT_AS_FAIL else 0
        self.as_abstain = errors if policy is _TREAT_AS_ABSTAIN else 0
        self.ignored = errors if policy is _IGNORE else 0

    def input_weight(self) -> float:
        """The total weight of the finished judgments."""
        if self.weights is None:
            return float(self.input_count)  # == math.fsum([1.0] * input_count)
        return math.fsum(self.input_weights)

    def eligible_weight(self) -> float:
        """The total weight of the eligible judgments."""
        if self.weights is None:
            return float(self.eligible)
        return math.fsum(self.weights)

    def weighted_score_sum(self) -> float:
        """The sum of the eligible judgments' effective scores times their weights."""
        weights = _ONES if self.weights is None else self.weights
        return math.fsum(s * w for s, w in zip(self.scores, weights))  # noqa: B905 (same length)


def _fmt(x: float) -> str:
    return format(x, ".6g")


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _REASON_EXCERPT:
        return text[: _REASON_EXCERPT - 3] + "..."
    return text


def _left_out(pop: _Population) -> str:
    if not (pop.explicit_abstain or pop.errors):
        return ""  # the common case: every judgment voted
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
    return Judgment.fast(
        status=status, score=score, label=None, reasoning=reasoning, checks=(), metadata=metadata
    )


def _running_note(running: int) -> str:
    return f"; decided early with {running} judgment(s) still running" if running else ""


# Interned aggregates of the counting strategies. Their result is a pure function of the
# strategy's settings and the population's counts (plus the first error's excerpt when errors
# propagate), so equal keys share one frozen Judgment: a jury of judges that keep returning the
# same statuses builds its aggregate once. Cleared when full, so it never holds more than
# ``_INTERN_LIMIT`` entries (error excerpts are at most ``_REASON_EXCERPT`` characters).
_INTERNED: dict[tuple[Any, ...], Judgment] = {}
_INTERN_LIMIT = 512


def _interned(strategy: _Strategy, setting: str, pop: _Population) -> Judgment:
    """``strategy._from_population(pop)``, shared between equal keys (see ``_INTERNED``).

    ``setting`` holds whatever of the strategy's own settings (besides its error policy) the
    result depends on. The key holds every count the result reads; the population's weights
    and scores are not read by the counting strategies.
    """
    errors = pop.errors
    policy = strategy.errors
    key = (
        type(strategy),
        setting,
        policy._value_,
        pop.input_count,
        pop.running,
        pop.passed,
        pop.failed,
        pop.explicit_abstain,
        errors,
        # Only an ERROR aggregate quotes the first error, and only as its excerpt.
        _excerpt(pop.first_error) if errors and policy is _PROPAGATE else None,
    )
    found = _INTERNED.get(key)
    if found is None:
        found = _Strategy._from_population(strategy, pop)
        if len(_INTERNED) >= _INTERN_LIMIT:
            _INTERNED.clear()
        _INTERNED[key] = found
    return found


# --------------------------------------------------------------------------- strategies


class _Strategy:
    """Shared machinery: validation, population resolution, evidence, early decisions."""

    __slots__ = ()

    errors: ErrorPolicy
    _scored: ClassVar[bool] = True
    """Whether the strategy needs the effective scores (counting strategies do not)."""

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
        w = None if weights is None else check_weights(weights, len(items))
        return self._from_population(_Population(items, w, self.errors, self._scored))

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
        w = None if weights is None else check_weights(weights, len(items))
        pop = _Population(items, w, self.errors, self._scored)
        if pop.running == 0:
            return self._from_population(pop)
        if self.errors is _PROPAGATE:
            # A running judge could still error, so only an arrived ERROR is certain.
            return self._from_population(pop) if pop.errors else None
        if not self._certain(pop):
            return None
        return self._from_population(pop)

    # ---- hooks
    def _certain(self, pop: _Population) -> bool:
        """Whether ``pop.running`` more votes (each PASS, FAIL or none) cannot change the status."""
        return False

    def _add_evidence(self, evidence: dict[str, Any], pop: _Population, *, eligible: bool) -> None:
        """Add the strategy's own keys to the shared ``evidence`` (none by default)."""

    def _conclude(self, pop: _Population) -> Judgment:  # pragma: no cover
        raise NotImplementedError

    # ---- shared building blocks
    def _from_population(self, pop: _Population) -> Judgment:
        if pop.errors and self.errors is _PROPAGATE:
            return _build(
                status=_ERROR,
                reasoning=(
                    f"{pop.errors} of {pop.input_count} judgment(s) errored and the error "
                    f"policy is propagate; first error: {_excerpt(pop.first_error)}"
                    + _running_note(pop.running)
                ),
                metadata=self._metadata(pop, eligible=False),
            )
        if not pop.eligible:
            return self._no_result(pop)
        return self._conclude(pop)

    def _no_result(self, pop: _Population) -> Judgment:
        if pop.ignored:
            reason = f"No eligible judgments: {pop.ignored} error(s) ignored"
        elif pop.as_abstain:
            reason = f"No eligible judgments: {pop.as_abstain} error(s) treated as abstentions"
        else:
            reason = f"All {pop.explicit_abstain} judgment(s) abstained"
        if (pop.ignored or pop.as_abstain) and pop.explicit_abstain:
            reason += f" and {pop.explicit_abstain} abstained"
        return _build(
            status=_ABSTAIN,
            reasoning=reason + _running_note(pop.running),
            metadata=self._metadata(pop, eligible=True),
        )

    def _metadata(self, pop: _Population, *, eligible: bool) -> Mapping[str, Mapping[str, Any]]:
        evidence: dict[str, Any] = {
            "strategy": self.name,
            # ``_value_`` is what ``.value`` returns, without the enum property's overhead.
            "errorPolicy": self.errors._value_,
            "inputCount": pop.input_count,
            "eligibleCount": pop.eligible if eligible else 0,
            "explicitAbstainCount": pop.explicit_abstain,
            "errorCount": pop.errors,
            "ignoredErrorCount": pop.ignored,
            "errorsTreatedAsAbstainCount": pop.as_abstain,
            "errorsTreatedAsFailCount": pop.as_fail,
        }
        self._add_evidence(evidence, pop, eligible=eligible)
        if pop.running:
            evidence["runningCount"] = pop.running
        return MappingProxyType({AGGREGATION_KEY: MappingProxyType(evidence)})

    def _result(
        self, pop: _Population, status: Status, reasoning: str, score: float | None
    ) -> Judgment:
        return _build(
            status=status,
            score=score,
            reasoning=reasoning + _left_out(pop) + _running_note(pop.running),
            metadata=self._metadata(pop, eligible=True),
        )


class _CountingStrategy(_Strategy):
    """Strategies that count PASS and FAIL statuses (scores ignored)."""

    __slots__ = ()
    _scored = False

    def _add_evidence(self, evidence: dict[str, Any], pop: _Population, *, eligible: bool) -> None:
        evidence["passCount"] = pop.passed if eligible else 0
        evidence["failCount"] = pop.failed if eligible else 0


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

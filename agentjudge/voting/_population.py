"""The population of a ballot and the helpers that build an aggregate from it (the hot path)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from agentjudge.core import Judgment, Status
from agentjudge.voting._policies import ErrorPolicy, TiePolicy

_REASON_EXCERPT = 200


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
        "has_confidence",
        "ignored",
        "input_count",
        "input_weights",
        "items",
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
        has_confidence = False
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
            if j.confidence is not None:
                has_confidence = True
            if status is _PASS:
                passed += 1
            else:
                failed += 1
            if scored:
                scores.append(score)
            if weighted:
                eligible_weights.append(w)
        self.items = items
        self.has_confidence = has_confidence
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

    def sides(self) -> list[tuple[bool, float, float, float]]:
        """Per eligible judgment: (passed, effective score, confidence, weight).

        The slow path behind confidence aggregation, only taken when a judgment carries a
        confidence: a confidence of None reads as 1.0 (certain), as does an ERROR counted as a
        FAIL vote; the weight is 1.0 without weights.
        """
        out: list[tuple[bool, float, float, float]] = []
        weights = _ONES if self.weights is None else self.input_weights
        finished = [j for j in self.items if j is not None]
        for j, w in zip(finished, weights):  # noqa: B905 - one weight per finished judgment
            status = j.status
            if status is _ERROR:
                if self.as_fail:
                    out.append((False, 0.0, 1.0, w))
                continue
            if status is not _PASS and status is not _FAIL:
                continue
            score = j.effective_score
            assert score is not None  # PASS and FAIL always have one
            confidence = 1.0 if j.confidence is None else j.confidence
            out.append((status is _PASS, score, confidence, w))
        return out

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
    confidence: float | None = None,
) -> Judgment:
    """Build an aggregate without re-validating it (the hot path of every jury).

    Every value is valid by construction: ``reasoning`` is non-blank, ``score`` is a float in
    [0, 1] and only given for PASS/FAIL, and ``metadata`` is a read-only mapping of str, int and
    finite float evidence, exactly what validation would have produced.
    """
    return Judgment.fast(
        status=status,
        score=score,
        label=None,
        confidence=confidence,
        reasoning=reasoning,
        checks=(),
        metadata=metadata,
    )


def _running_note(running: int) -> str:
    return f"; decided early with {running} judgment(s) still running" if running else ""

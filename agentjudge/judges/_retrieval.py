"""Retrieval and routing metrics: pure functions and the judges built on them.

The four code-based evaluators of an offline RAG / routing harness:

- `citation_precision`: share of the cited sources that were expected;
- `citation_recall`: share of the expected sources that were cited;
- `route_accuracy`: whether the request went to the expected route (sub-agent);
- `refusal_correctness`: whether the system refused exactly when it had to.

Citations compare as case-insensitive sets (``casefold``, surrounding whitespace stripped,
blank entries dropped, duplicates collapsed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from agentjudge.core import Context, Judgment
from agentjudge.judges._paths import DeterministicJudge

__all__ = [
    "CitationPrecision",
    "CitationRecall",
    "RefusalCorrectness",
    "RefusalPolicy",
    "RouteAccuracy",
    "citation_precision",
    "citation_recall",
    "refusal_correctness",
    "route_accuracy",
]


class RefusalPolicy(StrEnum):
    """Whether a case demands, allows or forbids a refusal."""

    REQUIRED = "required"
    """The system must refuse."""
    ACCEPTABLE = "acceptable"
    """Refusing and answering are both fine; the case is not scored."""
    FORBIDDEN = "forbidden"
    """The system must answer."""

    @classmethod
    def coerce(cls, value: RefusalPolicy | str | bool) -> RefusalPolicy:
        """Accept a policy, its value (any case) or a bool (True: REQUIRED, False: FORBIDDEN).

        Raises:
            ValueError: an unknown string or another type.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, bool):
            return cls.REQUIRED if value else cls.FORBIDDEN
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        allowed = ", ".join(repr(p.value) for p in cls)
        raise ValueError(f"refusal policy must be one of {allowed} or a bool, got {value!r}")


def _citation_set(values: Iterable[str], label: str) -> set[str]:
    if values is None or isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TypeError(
            f"{label} citations must be a collection of strings, got {type(values).__name__}"
        )
    result: set[str] = set()
    for item in values:
        if not isinstance(item, str):
            raise TypeError(
                f"{label} citations must be strings, got {type(item).__name__}: {item!r}"
            )
        text = item.strip().casefold()
        if text:
            result.add(text)
    return result


def citation_precision(predicted: Iterable[str], expected: Iterable[str]) -> float:
    """Share of predicted citations that are expected: ``|P & E| / |P|``.

    No predicted citations scores 1.0 when none were expected, else 0.0.

    Raises:
        TypeError: an argument is not a collection of strings (a bare string is refused).
    """
    p = _citation_set(predicted, "predicted")
    e = _citation_set(expected, "expected")
    if not p:
        return 1.0 if not e else 0.0
    return len(p & e) / len(p)


def citation_recall(predicted: Iterable[str], expected: Iterable[str]) -> float:
    """Share of expected citations that were predicted: ``|E & P| / |E|``.

    No expected citations scores 1.0 whatever was predicted.

    Raises:
        TypeError: an argument is not a collection of strings (a bare string is refused).
    """
    p = _citation_set(predicted, "predicted")
    e = _citation_set(expected, "expected")
    if not e:
        return 1.0
    return len(e & p) / len(e)


def route_accuracy(predicted: str, expected: str) -> float:
    """1.0 when the routes are equal after trimming, ignoring case; else 0.0.

    Raises:
        TypeError: an argument is not a string.
    """
    for label, value in (("predicted", predicted), ("expected", expected)):
        if not isinstance(value, str):
            raise TypeError(f"{label} route must be a string, got {type(value).__name__}")
    return 1.0 if predicted.strip().casefold() == expected.strip().casefold() else 0.0


def refusal_correctness(refused: bool, policy: RefusalPolicy | str | bool) -> float | None:
    """1.0 when the refusal behaviour obeys ``policy``, 0.0 when not, None for ACCEPTABLE.

    Raises:
        TypeError: ``refused`` is not a bool.
        ValueError: ``policy`` is not a `RefusalPolicy`, one of its values or a bool.
    """
    if not isinstance(refused, bool):
        raise TypeError(f"refused must be a bool, got {type(refused).__name__}: {refused!r}")
    rule = RefusalPolicy.coerce(policy)
    if rule is RefusalPolicy.ACCEPTABLE:
        return None
    return 1.0 if refused == (rule is RefusalPolicy.REQUIRED) else 0.0


_MISSING = object()


def _field(obj: Any, field: str, where: str) -> Any:
    """Read ``field`` from ``obj`` as a mapping key or an attribute; raise a clear error."""
    if obj is None:
        raise LookupError(f"{where} is None; expected an object with {field!r} (key or attribute)")
    value = obj.get(field, _MISSING) if isinstance(obj, Mapping) else getattr(obj, field, _MISSING)
    if value is _MISSING:
        raise LookupError(f"{where} has no {field!r} (neither a key nor an attribute)")
    if value is None:
        raise LookupError(f"{where}.{field} is None")
    return value


def _validate_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be within [0, 1], got {threshold!r}")
    return float(threshold)


class _MetricJudge(DeterministicJudge):
    default_name = ""

    def __init__(self, name: str | None, metric_key: str | None, description: str) -> None:
        super().__init__(name or self.default_name, description)
        key = metric_key if metric_key is not None else self.default_name
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"metric_key must be a non-blank string, got {metric_key!r}")
        self.metric_key: str | None = key


class _CitationJudge(_MetricJudge):
    def __init__(
        self, threshold: float, name: str | None, metric_key: str | None, description: str
    ) -> None:
        self.threshold = _validate_threshold(threshold)
        super().__init__(name, metric_key, description)

    def _sets(self, ctx: Context) -> tuple[set[str], set[str]] | Judgment:
        try:
            predicted = _citation_set(_field(ctx.output, "citations", "ctx.output"), "predicted")
            expected = _citation_set(_field(ctx.expected, "citations", "ctx.expected"), "expected")
        except (LookupError, TypeError) as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        return predicted, expected


def _meta(predicted: set[str], expected: set[str]) -> dict[str, Any]:
    return {
        "predicted": sorted(predicted),
        "expected": sorted(expected),
        "matched": len(predicted & expected),
    }


class CitationPrecision(_CitationJudge):
    """Scores `citation_precision` of ``ctx.output.citations`` against ``ctx.expected.citations``.

    Fields are read as keys or attributes. PASS iff the score >= ``threshold``. Missing or
    malformed fields are ERROR naming the field.

    Args:
        threshold: Passing score (default 0.5, like every score-returning judge).
        name: Judge name; defaults to ``"citation_precision"``.
        metric_key: Metric key; defaults to ``"citation_precision"``.
    """

    default_name = "citation_precision"

    def __init__(
        self, threshold: float = 0.5, *, name: str | None = None, metric_key: str | None = None
    ) -> None:
        super().__init__(threshold, name, metric_key, "Share of cited sources that were expected")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        sets = self._sets(ctx)
        if isinstance(sets, Judgment):
            return sets
        predicted, expected = sets
        score = citation_precision(predicted, expected)
        if not predicted:
            why = "no citations, none expected" if not expected else "no citations given"
        else:
            why = f"{len(predicted & expected)} of {len(predicted)} cited sources were expected"
        return Judgment.from_score(
            score,
            threshold=self.threshold,
            reasoning=f"Citation precision {score:.3f}: {why}",
            metadata=_meta(predicted, expected),
        )


class CitationRecall(_CitationJudge):
    """Scores `citation_recall` of ``ctx.output.citations`` against ``ctx.expected.citations``.

    PASS iff the score >= ``threshold``. Missing or malformed fields are ERROR naming the field.

    Args:
        threshold: Passing score (default 0.5).
        name: Judge name; defaults to ``"citation_recall"``.
        metric_key: Metric key; defaults to ``"citation_recall"``.
    """

    default_name = "citation_recall"

    def __init__(
        self, threshold: float = 0.5, *, name: str | None = None, metric_key: str | None = None
    ) -> None:
        super().__init__(threshold, name, metric_key, "Share of expected sources that were cited")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        sets = self._sets(ctx)
        if isinstance(sets, Judgment):
            return sets
        predicted, expected = sets
        score = citation_recall(predicted, expected)
        if not expected:
            why = "no citations expected"
        else:
            why = f"{len(predicted & expected)} of {len(expected)} expected sources were cited"
        return Judgment.from_score(
            score,
            threshold=self.threshold,
            reasoning=f"Citation recall {score:.3f}: {why}",
            metadata=_meta(predicted, expected),
        )


class RouteAccuracy(_MetricJudge):
    """PASS (score 1.0) when ``ctx.output.route`` equals ``ctx.expected.route``, else FAIL (0.0).

    Routes compare trimmed and case-insensitively. Missing fields are ERROR naming the field.

    Args:
        name: Judge name; defaults to ``"route_accuracy"``.
        metric_key: Metric key; defaults to ``"route_accuracy"``.
    """

    default_name = "route_accuracy"

    def __init__(self, *, name: str | None = None, metric_key: str | None = None) -> None:
        super().__init__(name, metric_key, "Whether the request took the expected route")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        try:
            predicted = _field(ctx.output, "route", "ctx.output")
            expected = _field(ctx.expected, "route", "ctx.expected")
            score = route_accuracy(predicted, expected)
        except (LookupError, TypeError) as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        meta = {"predicted": predicted, "expected": expected}
        if score == 1.0:
            return Judgment.passed(f"Route {predicted!r} as expected", score=1.0, metadata=meta)
        return Judgment.failed(
            f"Expected route {expected!r}, got {predicted!r}", score=0.0, metadata=meta
        )


class RefusalCorrectness(_MetricJudge):
    """Scores `refusal_correctness` of ``ctx.output.refused`` under ``ctx.expected.refusal``.

    ``refusal`` is a `RefusalPolicy` (or its value) or a bool (True: REQUIRED, False:
    FORBIDDEN). PASS 1.0 / FAIL 0.0; ACCEPTABLE is ABSTAIN, so the case leaves the means.
    Missing or malformed fields are ERROR naming the field.

    Args:
        name: Judge name; defaults to ``"refusal_correctness"``.
        metric_key: Metric key; defaults to ``"refusal_correctness"``.
    """

    default_name = "refusal_correctness"

    def __init__(self, *, name: str | None = None, metric_key: str | None = None) -> None:
        super().__init__(name, metric_key, "Whether the system refused exactly when it had to")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        try:
            refused = _field(ctx.output, "refused", "ctx.output")
            policy = RefusalPolicy.coerce(_field(ctx.expected, "refusal", "ctx.expected"))
            score = refusal_correctness(refused, policy)
        except (LookupError, TypeError) as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        except ValueError as exc:
            return Judgment.errored(f"{self.name}: ctx.expected.refusal: {exc}")
        meta = {"refused": refused, "policy": policy.value}
        if score is None:
            return Judgment.abstained(
                "Refusal is acceptable here: refusing and answering are both fine, not scored",
                metadata=meta,
            )
        if score == 1.0:
            what = "refused as required" if refused else "answered; refusal was forbidden"
            return Judgment.passed(f"Correct: {what}", score=1.0, metadata=meta)
        what = (
            "refused although an answer was required"
            if refused
            else "answered although a refusal was required"
        )
        return Judgment.failed(f"Incorrect: {what}", score=0.0, metadata=meta)

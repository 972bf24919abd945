"""The shared machinery of the shipped strategies: validation, population, evidence, decisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

from agentjudge.core import AGGREGATION_KEY, Judgment, Status
from agentjudge.voting._policies import ErrorPolicy, _check_done, _check_judgments, check_weights
from agentjudge.voting._population import (
    _ABSTAIN,
    _ERROR,
    _FAIL,
    _PASS,
    _PROPAGATE,
    _build,
    _excerpt,
    _left_out,
    _Population,
    _running_note,
)


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
        confidence = None
        if pop.has_confidence and (status is _PASS or status is _FAIL):
            confidence = self._confidence(pop, status is _PASS)
        return _build(
            status=status,
            score=score,
            confidence=confidence,
            reasoning=reasoning + _left_out(pop) + _running_note(pop.running),
            metadata=self._metadata(pop, eligible=True),
        )

    def _on_side(self, passed: bool, score: float, verdict: bool) -> bool:
        """Whether a member (its status ``passed``, its effective ``score``) backs ``verdict``."""
        return passed is verdict

    _weighted_confidence: ClassVar[bool] = False
    """Whether the members' weights weigh their confidence (`WeightedAverage` only)."""

    def _confidence(self, pop: _Population, verdict: bool) -> float:
        """The aggregate's confidence: the share of support for ``verdict`` (True = PASS).

        Each eligible member contributes its confidence (None read as 1.0) when it backs the
        verdict and 0 when it does not, weighted by its weight for `WeightedAverage`; the sum is
        divided by the total weight. For a counting strategy this is the mean confidence of the
        winning side times its vote share.
        """
        total = backing = 0.0
        for passed, score, confidence, weight in pop.sides():
            w = weight if self._weighted_confidence else 1.0
            total += w
            if self._on_side(passed, score, verdict):
                backing += w * confidence
        return min(1.0, backing / total) if total > 0.0 else 0.0


class _CountingStrategy(_Strategy):
    """Strategies that count PASS and FAIL statuses (scores ignored)."""

    __slots__ = ()
    _scored = False

    def _add_evidence(self, evidence: dict[str, Any], pop: _Population, *, eligible: bool) -> None:
        evidence["passCount"] = pop.passed if eligible else 0
        evidence["failCount"] = pop.failed if eligible else 0

"""The intern cache of the counting strategies (`Majority`, `Consensus`)."""

from __future__ import annotations

from typing import Any

from agentjudge.core import Judgment
from agentjudge.voting._base import _Strategy
from agentjudge.voting._population import _PROPAGATE, _excerpt, _Population

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
    if pop.has_confidence:  # the aggregate's confidence depends on more than the counts
        return _Strategy._from_population(strategy, pop)
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

"""Composite judges: `Jury`, `Tier` and `Cascade` (all judges, so they nest)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentjudge.core import Context, Judgment, TierPolicy
from agentjudge.judging import JudgeKind, judge_name
from agentjudge.voting import Majority, VotingStrategy, check_weights

if TYPE_CHECKING:
    from agentjudge.engine._evaluator import Evaluator

__all__ = ["Cascade", "Jury", "Tier", "member_names", "unique_name"]


def member_names(judges: Sequence[Any]) -> list[str]:
    """Names for jury members: `judge_name`, lambdas as ``judge#<i+1>``, repeats ``x-2``..."""
    used: set[str] = set()
    names: list[str] = []
    for i, j in enumerate(judges):
        base = judge_name(j)
        names.append(unique_name(f"judge#{i + 1}" if base == "<lambda>" else base, used))
    return names


def unique_name(base: str, used: set[str]) -> str:
    """Return ``base``, or ``base-2``, ``base-3``... whichever is not in ``used`` (and add it)."""
    name, k = base, 1
    while name in used:
        k += 1
        name = f"{base}-{k}"
    used.add(name)
    return name


def _kind_of(members: Sequence[Any]) -> JudgeKind:
    kinds = {JudgeKind(getattr(m, "kind", JudgeKind.DETERMINISTIC)) for m in members}
    return kinds.pop() if len(kinds) == 1 else JudgeKind.HYBRID


class _Composite:
    """Shared behaviour: composites are judges; calling one runs it standalone."""

    name: str
    description: str = ""
    resource: str | None = None
    metric_key: str | None = None
    sampling_rate: float | None = None
    _standalone: Evaluator | None = None

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Evaluate standalone and return the aggregate judgment.

        Members run concurrently with no timeout and no retries; to schedule them under an
        Evaluator's limits, pass the composite to the Evaluator (or nest it in a Jury/Cascade).
        """
        from agentjudge.engine._evaluator import Evaluator

        if self._standalone is None:
            self._standalone = Evaluator(self, timeout=None, retry=None)
        verdict = await self._standalone.verdict(ctx)
        return verdict.judgment


class Jury(_Composite):
    """Many judges voting; members run concurrently.

    Args:
        judges: A sequence of judges, or a mapping name -> judge.
        voting: The voting strategy (default `Majority`).
        weights: One weight per judge (finite, >= 0, not all zero).
        name: The jury's name.
        early_stop: Cancel running members as soon as ``voting.decided(...)`` is certain.
    """

    def __init__(
        self,
        judges: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]],
        *,
        voting: VotingStrategy | None = None,
        weights: Sequence[float] | None = None,
        name: str = "jury",
        early_stop: bool = False,
    ) -> None:
        if isinstance(judges, Mapping):
            names = [str(k) for k in judges]
            members = list(judges.values())
            for key in names:
                if not key.strip():
                    raise ValueError("jury member names must be non-blank")
        else:
            if isinstance(judges, str | bytes) or not isinstance(judges, Sequence):
                judges = [judges]
            members = list(judges)
            names = member_names(members)
        if not members:
            raise ValueError("a jury needs at least one judge")
        for i, m in enumerate(members):
            if not callable(m):
                raise ValueError(f"jury member {names[i]!r} is not callable: {m!r}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"jury name must be non-blank, got {name!r}")
        self.name = name
        self.members: tuple[Callable[..., Any], ...] = tuple(members)
        self.names: tuple[str, ...] = tuple(names)
        self.voting: VotingStrategy = voting if voting is not None else Majority()
        self.weights = None if weights is None else check_weights(weights, len(members))
        self.early_stop = bool(early_stop)
        self.kind = _kind_of(members)
        self._standalone = None

    def __repr__(self) -> str:
        return f"Jury({list(self.names)!r}, voting={self.voting.name!r}, name={self.name!r})"


class Tier:
    """One stage of a cascade.

    Args:
        name: Tier name (unique within the cascade).
        judge_or_jury: A judge, or a Jury whose members are the tier's members.
        policy: When this tier stops the cascade.
        threshold: The confidence a tier's aggregate needs, in [0, 1], or ``math.inf``: "no
            tested threshold", a tier that never decides (what
            `agentjudge.calibration.calibrate_thresholds` returns for such a tier with
            ``untested="escalate"``). Required by `TierPolicy.STOP_ON_CONFIDENCE` (stop when
            the aggregate is a PASS or FAIL whose confidence >= threshold, escalate otherwise);
            on a FINAL tier it means "abstain rather than guess": an aggregate below it (or
            without a confidence) becomes ABSTAIN. Other policies take none.

    Raises:
        ValueError: a blank name, a judge that is not callable, an unknown policy, or a
            threshold that is missing (STOP_ON_CONFIDENCE), neither a number in [0, 1] nor
            ``math.inf``, or given to a policy that does not use it.
    """

    def __init__(
        self,
        name: str,
        judge_or_jury: Callable[..., Any],
        policy: TierPolicy = TierPolicy.FINAL,
        *,
        threshold: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"tier name must be non-blank, got {name!r}")
        if not callable(judge_or_jury):
            raise ValueError(f"tier {name!r}: {judge_or_jury!r} is not a judge")
        self.name = name
        self.judge = judge_or_jury
        self.policy = TierPolicy(policy)
        self.threshold = _check_tier_threshold(name, self.policy, threshold)

    def __repr__(self) -> str:
        extra = "" if self.threshold is None else f", threshold={self.threshold!r}"
        return f"Tier({self.name!r}, {judge_name(self.judge)!r}, policy={self.policy.name}{extra})"


_THRESHOLD_POLICIES = (TierPolicy.STOP_ON_CONFIDENCE, TierPolicy.FINAL)


def _check_tier_threshold(name: str, policy: TierPolicy, threshold: object) -> float | None:
    if threshold is None:
        if policy is TierPolicy.STOP_ON_CONFIDENCE:
            raise ValueError(f"tier {name!r}: STOP_ON_CONFIDENCE needs a threshold in [0, 1]")
        return None
    if policy not in _THRESHOLD_POLICIES:
        raise ValueError(
            f"tier {name!r}: {policy.name} takes no threshold (only STOP_ON_CONFIDENCE and FINAL)"
        )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ValueError(f"tier {name!r}: threshold must be a number in [0, 1], got {threshold!r}")
    if threshold != math.inf and not 0.0 <= threshold <= 1.0:  # NaN fails both tests
        raise ValueError(
            f"tier {name!r}: threshold must be within [0, 1] (or math.inf: never decides), "
            f"got {threshold!r}"
        )
    return float(threshold)


class Cascade(_Composite):
    """Cheap tiers first; later tiers run only when earlier ones did not stop.

    Args:
        tiers: The tiers, in order; the last one must be FINAL; names unique.
        name: The cascade's name.
        short_circuit: With False (calibration runs) every tier runs every member to
            completion and is recorded in `Verdict.tiers` with its own judgment; ``stopped``
            marks the tier that would have stopped the cascade, and the cascade's judgment is
            the one the short-circuiting cascade would have returned. It costs every tier's
            calls on every case.
    """

    def __init__(
        self, tiers: Sequence[Tier], *, name: str = "cascade", short_circuit: bool = True
    ) -> None:
        tiers = tuple(tiers)
        if not tiers:
            raise ValueError("a cascade needs at least one tier")
        seen: set[str] = set()
        for t in tiers:
            if not isinstance(t, Tier):
                raise ValueError(f"cascade tiers must be Tier objects, got {t!r}")
            if t.name in seen:
                raise ValueError(f"duplicate cascade tier name: {t.name!r}")
            seen.add(t.name)
        if tiers[-1].policy is not TierPolicy.FINAL:
            raise ValueError(
                f"the last tier must use TierPolicy.FINAL, but {tiers[-1].name!r} uses "
                f"{tiers[-1].policy.name}"
            )
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"cascade name must be non-blank, got {name!r}")
        if not isinstance(short_circuit, bool):
            raise ValueError(f"short_circuit must be a bool, got {short_circuit!r}")
        self.name = name
        self.tiers = tiers
        self.short_circuit = short_circuit
        self.kind = _kind_of([t.judge for t in tiers])
        self._standalone = None

    def __repr__(self) -> str:
        extra = "" if self.short_circuit else ", short_circuit=False"
        return f"Cascade({list(self.tiers)!r}, name={self.name!r}{extra})"

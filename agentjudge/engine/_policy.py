"""Cascade tier policies: each `TierPolicy` is one small object that decides a tier.

A rule looks at the tier's partial results each time a member finishes (``last`` = that
member's index) and once more when every member is done (``last=None``, with the tier's
aggregate in ``view.aggregate``). It answers with a `Judgment` (stop the cascade with it),
`ESCALATE` (go on to the next tier) or None (undecided: keep waiting). Once a rule answers,
the tier's still-running members are cancelled. A new policy is one new class in `RULES`.

Confidence passes through: a rule that stops with the tier's aggregate keeps its confidence;
`RejectOnAnyFail` carries the deciding member's confidence, and `AcceptOnAllPass` and
`StopOnAgreement` the lowest of the members' (a member without one reads as certain, 1.0;
None when no member has one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from agentjudge.core import Judgment, Status, TierPolicy
from agentjudge.engine._plan import TierNode

__all__ = ["ESCALATE", "RULES", "Outcome", "TierRule", "TierView", "confident"]


class _Escalate:
    """The answer "go on to the next tier" (a singleton, `ESCALATE`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ESCALATE"


ESCALATE: Final = _Escalate()

Outcome = Judgment | _Escalate | None
"""Stop with this judgment, escalate, or undecided."""


@dataclass(slots=True)
class TierView:
    """What a rule may look at: the tier, its members' outcomes so far, the group's voting."""

    tier: TierNode
    out: Sequence[Any]
    """Per member: a Judgment, None (unsampled) or still pending."""
    decided: Callable[[], Judgment | None]
    """The group's voting decision from the judgments so far, if already certain."""
    aggregate: Judgment | None = None
    """The tier's aggregate, set before the final call (``last=None``)."""

    def judgments(self) -> list[Judgment]:
        """The judgments that arrived, in member order."""
        return [j for j in self.out if isinstance(j, Judgment)]


class TierRule:
    """Decides one tier from its partial results (see the module docstring)."""

    policy: TierPolicy

    def decide(self, view: TierView, last: int | None) -> Outcome:
        """Stop (a Judgment), escalate (`ESCALATE`) or undecided (None)."""
        raise NotImplementedError


def confident(judgment: Judgment | None, threshold: float) -> bool:
    """Whether ``judgment`` carries a confidence of at least ``threshold`` (None never does)."""
    return (
        judgment is not None
        and judgment.confidence is not None
        and judgment.confidence >= threshold
    )


def _early(view: TierView) -> Judgment | None:
    """The group's already-certain voting decision, when the tier's jury stops early."""
    group = view.tier.group
    if group.early_stop and group.voting is not None:
        return view.decided()
    return None


class FinalTier(TierRule):
    """Always stop with the tier's aggregate (early stop when its voting is already certain).

    With a threshold, an aggregate whose confidence is below it (or None) becomes ABSTAIN:
    "abstain rather than guess". An early decision stops the tier only when it is confident.
    """

    policy = TierPolicy.FINAL

    def decide(self, view: TierView, last: int | None) -> Outcome:
        threshold = view.tier.threshold
        if last is not None:
            early = _early(view)
            if threshold is None or confident(early, threshold):
                return early
            return None
        aggregate = view.aggregate
        if threshold is None or confident(aggregate, threshold):
            return aggregate
        assert aggregate is not None  # the scheduler sets it before the final call
        return _not_confident(view.tier.name, aggregate, threshold)


def _not_confident(tier: str, aggregate: Judgment, threshold: float) -> Judgment:
    got = (
        "no confidence"
        if aggregate.confidence is None
        else f"confidence {aggregate.confidence:.6g}"
    )
    untested = threshold == math.inf  # JSON has no infinity: say it in words
    below = (
        "but it has no tested threshold (math.inf: it never decides)"
        if untested
        else f"below its threshold {threshold:.6g}"
    )
    return Judgment.abstained(
        f"no tier was confident enough: the final tier {tier!r} said "
        f"{aggregate.status.value} with {got}, {below}",
        metadata={
            "tier": tier,
            **({"untested": True} if untested else {"threshold": threshold}),
            "unconfident_status": aggregate.status.value,
        },
    )


class StopOnConfidence(TierRule):
    """Stop with the tier's PASS or FAIL aggregate when its confidence >= the threshold.

    The tier waits for its members (or for its jury's early decision, when that is already a
    confident PASS or FAIL); anything else escalates: a None confidence, an ERROR aggregate (it
    has none) and an ABSTAIN however confident - a tier that abstains has decided nothing,
    which is how calibration counts it (`agentjudge.harness._calibrate`: never accepted).
    A threshold of ``math.inf`` (a tier without a tested threshold) therefore never stops.
    """

    policy = TierPolicy.STOP_ON_CONFIDENCE

    def decide(self, view: TierView, last: int | None) -> Outcome:
        threshold = view.tier.threshold
        assert threshold is not None  # Tier() refuses STOP_ON_CONFIDENCE without one
        if last is not None:
            early = _early(view)
            return early if _decides(early, threshold) else None
        return view.aggregate if _decides(view.aggregate, threshold) else ESCALATE


def _decides(judgment: Judgment | None, threshold: float) -> bool:
    """A confident verdict: PASS or FAIL with a confidence of at least ``threshold``."""
    return (
        judgment is not None
        and judgment.status in (Status.PASS, Status.FAIL)
        and confident(judgment, threshold)
    )


def _least_confidence(judgments: Sequence[Judgment]) -> float | None:
    """The lowest confidence among ``judgments`` (None read as 1.0); None when none has one."""
    found = [j.confidence for j in judgments if j.confidence is not None]
    return min(found) if found else None


class RejectOnAnyFail(TierRule):
    """Stop with FAIL as soon as any member fails; escalate when none did."""

    policy = TierPolicy.REJECT_ON_ANY_FAIL

    def decide(self, view: TierView, last: int | None) -> Outcome:
        if last is None:
            return ESCALATE
        judgment = view.out[last]
        if judgment.status is not Status.FAIL:
            return None
        name = view.tier.group.members[last].name
        return Judgment.failed(
            f"tier {view.tier.name!r} rejected: {name} failed"
            + (f": {judgment.reasoning}" if judgment.reasoning else ""),
            confidence=judgment.confidence,
            metadata={"tier": view.tier.name, "decided_by": name},
        )


class AcceptOnAllPass(TierRule):
    """Stop with PASS when every member passed; escalate at the first that did not."""

    policy = TierPolicy.ACCEPT_ON_ALL_PASS

    def decide(self, view: TierView, last: int | None) -> Outcome:
        if last is not None:
            return ESCALATE if view.out[last].status is not Status.PASS else None
        completed = view.judgments()
        if completed and all(j.status is Status.PASS for j in completed):
            return Judgment.passed(
                f"tier {view.tier.name!r} accepted: all {len(completed)} members passed",
                confidence=_least_confidence(completed),
                metadata={"tier": view.tier.name},
            )
        return ESCALATE


class StopOnAgreement(TierRule):
    """Stop when all members agree (all PASS or all FAIL); escalate on a split."""

    policy = TierPolicy.STOP_ON_AGREEMENT

    def decide(self, view: TierView, last: int | None) -> Outcome:
        if last is not None:
            seen = {j.status for j in view.judgments()}
            status = view.out[last].status
            split = {Status.PASS, Status.FAIL} <= seen
            return ESCALATE if status in (Status.ABSTAIN, Status.ERROR) or split else None
        completed = view.judgments()
        statuses = {j.status for j in completed}
        if len(statuses) != 1 or not statuses <= {Status.PASS, Status.FAIL}:
            return ESCALATE
        agreed = statuses.pop()
        make = Judgment.passed if agreed is Status.PASS else Judgment.failed
        return make(
            f"tier {view.tier.name!r}: all {len(completed)} members agree ({agreed.value})",
            confidence=_least_confidence(completed),
            metadata={"tier": view.tier.name},
        )


RULES: dict[TierPolicy, TierRule] = {
    rule.policy: rule
    for rule in (
        FinalTier(),
        RejectOnAnyFail(),
        AcceptOnAllPass(),
        StopOnAgreement(),
        StopOnConfidence(),
    )
}
"""The rule object of every `TierPolicy`."""

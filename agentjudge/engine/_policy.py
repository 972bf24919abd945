"""Cascade tier policies: each `TierPolicy` is one small object that decides a tier.

A rule looks at the tier's partial results each time a member finishes (``last`` = that
member's index) and once more when every member is done (``last=None``, with the tier's
aggregate in ``view.aggregate``). It answers with a `Judgment` (stop the cascade with it),
`ESCALATE` (go on to the next tier) or None (undecided: keep waiting). Once a rule answers,
the tier's still-running members are cancelled. A new policy is one new class in `RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from agentjudge.core import Judgment, Status, TierPolicy
from agentjudge.engine._plan import TierNode

__all__ = ["ESCALATE", "RULES", "Outcome", "TierRule", "TierView"]


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


class FinalTier(TierRule):
    """Always stop with the tier's aggregate (early stop when its voting is already certain)."""

    policy = TierPolicy.FINAL

    def decide(self, view: TierView, last: int | None) -> Outcome:
        if last is None:
            return view.aggregate
        group = view.tier.group
        if group.early_stop and group.voting is not None:
            return view.decided()
        return None


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
            metadata={"tier": view.tier.name},
        )


RULES: dict[TierPolicy, TierRule] = {
    rule.policy: rule
    for rule in (FinalTier(), RejectOnAnyFail(), AcceptOnAllPass(), StopOnAgreement())
}
"""The rule object of every `TierPolicy`."""

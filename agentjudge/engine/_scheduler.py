"""Composite policy: how juries and cascades run their members, vote and decide tiers.

A context flows through the engine like this (docs/concepts/engine.md draws it):

1. `Scheduler.execute` starts at the plan's root: a leaf, a group (a jury) or a cascade.
2. A group's members run concurrently through `Scheduler.gather`, the one entry for both
   ways of running them: the fast path (`agentjudge.engine._fastpath`) for the leading
   instant members of a flat group, then the general way (`_Members`) for the rest, which
   takes every member's slots up front (case-major fairness), queues members without a task
   when the global limit is full (`agentjudge.engine._admission`) and spends a task only on
   members that suspend.
3. Each leaf runs through the leaf boundary (`agentjudge.engine._leaf`): attempts, timeout,
   retries, failure as data, the one result record.
4. As members finish, the group's voting may decide early (``early_stop``), and a cascade
   tier's rule (`agentjudge.engine._policy`) decides stop / escalate / undecided; either
   cancels the members still running.
"""

from __future__ import annotations

from collections.abc import Awaitable
from time import perf_counter
from typing import Any, cast

import anyio
from anyio.lowlevel import cancel_shielded_checkpoint

from agentjudge.core import Judgment, TierAttempt, TierPolicy, Verdict
from agentjudge.engine._admission import Admission
from agentjudge.engine._detached import single_exception
from agentjudge.engine._fastpath import FastPath, OnDone
from agentjudge.engine._inline import start_all
from agentjudge.engine._leaf import LeafRunner
from agentjudge.engine._plan import CascadeNode, Group, Leaf, Node, Plan, TierNode
from agentjudge.engine._policy import ESCALATE, RULES, TierView
from agentjudge.engine._state import (
    PENDING,
    Carried,
    CompositeFailure,
    LeafStats,
    Queued,
    RunState,
)

__all__ = ["Scheduler"]


def _never(i: int, judgment: Judgment | None) -> bool:
    return False


class Scheduler:
    """Runs one evaluator's plan: groups, cascades and their decisions.

    Args:
        plan: The compiled judges.
        leaves: The leaf boundary.
        fast: The fast path.
    """

    __slots__ = ("_nested", "admission", "fast", "leaves", "plan")

    def __init__(self, plan: Plan, leaves: LeafRunner, fast: FastPath) -> None:
        self.plan = plan
        self.leaves = leaves
        self.fast = fast
        self.admission: Admission = leaves.admission
        self._nested = frozenset(_groups_with_siblings(plan.root, under=False))
        """Ids of groups that run alongside siblings (inside a jury of two or more)."""

    def execute(self, run: RunState) -> Awaitable[Verdict]:
        """Evaluate one run from the plan's root and build its verdict.

        A plain function returning the evaluation's coroutine: a root leaf's is the leaf
        boundary's own (`LeafRunner.verdict`), one coroutine fewer alive while its judge waits.
        """
        root = self.plan.root
        if type(root) is Leaf:
            return self.leaves.verdict(root, run)
        return self._execute(root, run)

    async def _execute(self, root: Node | None, run: RunState) -> Verdict:
        """`execute` of a root that is not a leaf: a group, a cascade or nothing."""
        try:
            if type(root) is Group:
                judgment = await self.run_group(root, run)
            elif root is None:
                judgment = Judgment.abstained("no judges are configured")
            else:
                assert isinstance(root, CascadeNode)
                judgment = await self.run_cascade(root, run, record=True)
        except CompositeFailure as exc:
            judgment = Judgment.errored(str(exc))
        return run.verdict_of(judgment)

    async def run_node(
        self, node: Node, run: RunState, stats: LeafStats | None = None
    ) -> Judgment | None:
        """Run any node to its judgment (None: an unsampled leaf)."""
        if type(node) is Leaf:
            return (await self.leaves.run(node, run, stats)).judgment
        if type(node) is Group:
            return await self.run_group(node, run)
        assert isinstance(node, CascadeNode)
        return await self.run_cascade(node, run, record=False)

    # ------------------------------------------------------------------ groups
    async def gather(
        self, group: Group, run: RunState, out: list[Any], on_done: OnDone | None
    ) -> None:
        """Run the group's members concurrently, storing each outcome in ``out`` as it arrives.

        The one entry for running a group, fast path or not. Entries end as a Judgment, None
        (unsampled leaf) or PENDING (cancelled / never started). ``on_done`` returning True
        cancels the rest. A nested composite failure cancels the rest and raises.
        """
        members = group.members
        if len(members) == 1:
            out[0] = await self.run_node(members[0], run)
            if on_done is not None:
                on_done(0, out[0])
            return
        if await self._record_unsampled(group, run, out, on_done):
            return
        stats: list[LeafStats | None] = [None] * len(members)
        start, failure, carried = 0, None, None
        if self.fast.starts(group, run):
            start, failure, stop, carried = await self.fast.gather(
                group.leaves, run, out, on_done, stats
            )
            if stop or start == len(members):
                # The general way's task group checkpoints once when it closes, even with no
                # task to wait for. Where siblings run alongside (a group nested in a jury),
                # so do we, so that both ways let them run at the same moments; elsewhere
                # nothing in this evaluation can observe it, and a checkpoint per evaluation
                # would cost more than the whole inline loop.
                if id(group) in self._nested:
                    await cancel_shielded_checkpoint()
                return
        members_run = _Members(self, group, run, out, on_done or _never, stats)
        await members_run.run(start, failure, carried)

    async def _record_unsampled(
        self, group: Group, run: RunState, out: list[Any], on_done: OnDone | None
    ) -> bool:
        """Record the group's unsampled leaves first, in member order; True: ``on_done`` stops.

        They are never called, need no slot and cannot be cancelled, so both ways of running
        the group record all of them before anything runs (a short-circuit never skips one).
        """
        if all(run.sampled):
            return False
        leaves = self.leaves
        for i, m in enumerate(group.members):
            if type(m) is Leaf and not run.sampled[m.index]:
                result = leaves.record(m, run, None, 0, 0.0, 0.0)
                if leaves.on_result is not None:
                    await leaves.notify(m, result)
                out[i] = None
                if on_done is not None and on_done(i, None):
                    return True
        return False

    @staticmethod
    def _ballot(
        group: Group, out: list[Any], *, running: bool
    ) -> tuple[list[Judgment | None], list[float] | None]:
        """The members that vote, with their weights (None when the group has none).

        Completed judgments vote; with ``running``, still-running members are included as None
        (as `VotingStrategy.decided` expects). Unsampled members never vote.
        """
        votes: list[Judgment | None] = []
        weights: list[float] | None = None if group.weights is None else []
        for i, j in enumerate(out):
            if isinstance(j, Judgment):
                votes.append(j)
            elif running and j is PENDING:
                votes.append(None)
            else:
                continue
            if weights is not None:
                assert group.weights is not None
                weights.append(group.weights[i])
        return votes, weights

    def vote(self, group: Group, out: list[Any]) -> Judgment | None:
        """Aggregate the judgments that completed (None when none did)."""
        weights: list[float] | None = None
        if group.weights is None:
            judgments = [j for j in out if isinstance(j, Judgment)]
        else:
            ballot, weights = self._ballot(group, out, running=False)
            judgments = [j for j in ballot if j is not None]
        if not judgments:
            return None
        if group.voting is None:
            return judgments[0]
        try:
            return group.voting.aggregate(judgments, weights)
        except Exception as exc:
            raise CompositeFailure(
                f"{group.name}: voting {group.voting.name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def decided(self, group: Group, out: list[Any]) -> Judgment | None:
        """The group's voting decision from the judgments so far, if already certain."""
        assert group.voting is not None
        done, weights = self._ballot(group, out, running=True)
        try:
            return group.voting.decided(done, weights)
        except Exception:
            return None

    async def run_group(self, group: Group, run: RunState) -> Judgment:
        """A jury: its members, early stop when its voting is certain, the vote."""
        out: list[Any] = [PENDING] * len(group.members)
        decision: Judgment | None = None
        on_done: OnDone | None = None
        if group.early_stop and group.voting is not None:

            def on_done(i: int, judgment: Judgment | None) -> bool:
                nonlocal decision
                decision = self.decided(group, out)
                return decision is not None

        await self.gather(group, run, out, on_done)
        if decision is not None:
            return decision
        return self.vote(group, out) or Judgment.abstained(
            f"{group.name}: no member was sampled or completed"
        )

    # ------------------------------------------------------------------ cascades
    async def run_cascade(self, cascade: CascadeNode, run: RunState, *, record: bool) -> Judgment:
        """Tiers in order until one stops the cascade (all of them without short-circuit)."""
        chosen: Judgment | None = None
        for tier in cascade.tiers:
            judgment, stopped, failure = await self.run_tier(tier, run, cascade.short_circuit)
            deciding = chosen is None and stopped and judgment is not None
            if record:
                run.add_tier(_tier_attempt(tier, run, judgment, deciding, failure))
            if deciding:
                chosen = judgment
            elif chosen is None and failure is not None and tier.policy is TierPolicy.FINAL:
                chosen = Judgment.errored(f"the final cascade tier {tier.name!r} failed: {failure}")
            if chosen is not None and cascade.short_circuit:
                return chosen
        if chosen is not None:
            return chosen
        return Judgment.errored(f"{cascade.name}: no cascade tier returned a verdict")

    async def run_tier(
        self, tier: TierNode, run: RunState, short_circuit: bool = True
    ) -> tuple[Judgment | None, bool, str | None]:
        """Run one tier; returns (judgment, whether it stops the cascade, failure).

        Without ``short_circuit`` the rule's first decision is kept but cancels nobody: every
        member runs to completion.
        """
        group, rule = tier.group, RULES[tier.policy]
        out: list[Any] = [PENDING] * len(group.members)
        view = TierView(tier, out, lambda: self.decided(group, out))
        stop_with: Judgment | None = None
        escalate = False

        def on_done(i: int, judgment: Judgment | None) -> bool:
            nonlocal stop_with, escalate
            if judgment is None or stop_with is not None or escalate:
                return False  # unsampled, or already decided (only without short-circuit)
            outcome = rule.decide(view, i)
            if outcome is None:
                return False
            if outcome is ESCALATE:
                escalate = True
            else:
                stop_with = cast(Judgment, outcome)
            return short_circuit

        try:
            await self.gather(group, run, out, on_done)
            if stop_with is not None:
                return stop_with, True, None
            aggregate = self.vote(group, out)
        except CompositeFailure as exc:
            return None, False, str(exc)
        if aggregate is None:
            aggregate = Judgment.abstained(f"tier {tier.name!r}: no member was sampled")
        if escalate:
            return aggregate, False, None
        view.aggregate = aggregate
        outcome = rule.decide(view, None)
        if isinstance(outcome, Judgment):
            return outcome, True, None
        return aggregate, False, None


def _groups_with_siblings(node: Node | None, *, under: bool) -> list[int]:
    """Ids of the groups below ``node`` that some concurrent group contains (``under``)."""
    if node is None or type(node) is Leaf:
        return []
    if type(node) is Group:
        found = [id(node)] if under else []
        inner = under or len(node.members) > 1
        for member in node.members:
            found += _groups_with_siblings(member, under=inner)
        return found
    assert isinstance(node, CascadeNode)
    found = []
    for tier in node.tiers:
        found += _groups_with_siblings(tier.group, under=under)
    return found


def _tier_attempt(
    tier: TierNode, run: RunState, judgment: Judgment | None, stopped: bool, failure: str | None
) -> TierAttempt:
    leaves = tier.group.leaves
    return TierAttempt.fast(
        name=tier.name,
        policy=tier.policy,
        judgment=judgment,
        results=tuple(r for r in (run.results[x.index] for x in leaves) if r is not None),
        skipped=tuple(x.name for x in leaves if run.results[x.index] is None),
        failure=failure,
        stopped=stopped,
    )


class _Members:
    """The general way of running a group's members from ``start`` on (see the module doc).

    Case-major fairness: every member's slots are taken now, in member order, so the members
    of one evaluation start together (a cascade tier can short-circuit early) instead of
    interleaving with other evaluations. Members whose slots are not free wait in the
    evaluator's FIFO queue without a task (only the global limit stands between them and a
    slot), or start as their own task waiting on their resource limiter.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        group: Group,
        run: RunState,
        out: list[Any],
        on_done: OnDone,
        stats: list[LeafStats | None],
    ) -> None:
        self.scheduler = scheduler
        self.admission = scheduler.admission
        self.members = group.members
        self.run_state = run
        self.out = out
        self.on_done = on_done
        self.stats = stats
        self.inline = [True] * len(group.members)
        self.queued: list[Queued] = []
        self.pending = 0
        self.all_started: anyio.Event | None = None
        self.failures: list[CompositeFailure] = []
        self.stop = False
        self.first_failure: Exception | None = None
        self.start = 0
        self.carried: Carried | None = None
        self.tg: anyio.abc.TaskGroup | None = None

    def _reserve_all(self) -> None:
        for i in range(self.start, len(self.members)):
            m = self.members[i]
            if self.stats[i] is None and type(m) is Leaf and self.run_state.sampled[m.index]:
                st = LeafStats(perf_counter())
                self.stats[i] = st
                self.inline[i] = self.admission.reserve(m, st)

    async def run(
        self, start: int, first_failure: Exception | None, carried: Carried | None = None
    ) -> None:
        """Run members ``start`` on.

        Args:
            start: The first member to run.
            first_failure: Member ``start``'s first attempt raised this (it is retried).
            carried: Member ``start``'s attempt, begun by the fast path, suspended: it is
                driven in this task while the members after it start in a new one (as
                `start_all` does with a member that suspends).
        """
        self.start, self.first_failure, self.carried = start, first_failure, carried
        if carried is not None:
            self.stats[carried.index] = carried.stats  # it holds its slots: reserve none
        self._reserve_all()
        try:
            async with anyio.create_task_group() as tg:
                self.tg = tg
                if carried is None:
                    await self._start_from(start)
                else:
                    if start + 1 < len(self.members):
                        tg.start_soon(self._start_from, start + 1)
                    await self._member_carried(carried)
        except BaseExceptionGroup as group:
            raise single_exception(group) from None
        finally:
            self._release_unused()
        if self.failures:
            raise self.failures[0]

    async def _start_from(self, start: int) -> None:
        assert self.tg is not None
        await start_all(
            self.tg,
            self._member,
            len(self.members),
            self._stopped,
            self._runs_inline,
            self._start_later,
            start,
        )
        if self.pending:
            self.admission.dispatch()
        if self.pending:
            self.all_started = anyio.Event()
            await self.all_started.wait()

    async def _member_carried(self, carried: Carried) -> None:
        self.carried = None
        i = carried.index
        leaf = cast(Leaf, self.members[i])
        result = await self.scheduler.leaves.carry(leaf, self.run_state, carried)
        self._done(i, result.judgment)

    def _release_unused(self) -> None:
        carried = self.carried
        if carried is not None:  # cancelled before it could be driven: give everything back
            self.carried = None
            carried.coro.close()
            leaf = cast(Leaf, self.members[carried.index])
            self.admission.release(leaf, carried.stats)
        for entry in self.queued:
            entry.dead = True
        # each entry's launch closes over this object: dropped now, the group's objects are
        # freed as it ends instead of by the garbage collector (a cycle per queued case)
        self.queued.clear()
        for m, held in zip(self.members, self.stats, strict=True):
            if held is not None and held.reserved:
                self.admission.unreserve(cast(Leaf, m), held)

    def _stopped(self) -> bool:
        return self.stop

    def _runs_inline(self, i: int) -> bool:
        return self.inline[i]

    def _start_later(self, i: int) -> None:
        m, st = self.members[i], self.stats[i]
        assert self.tg is not None
        if (
            type(m) is Leaf
            and st is not None
            and m.resource not in self.admission.limits
            and self.run_state.deadline is None  # under a deadline it waits in its own scope
        ):
            entry = Queued(st, lambda: self._launch(i))
            self.queued.append(entry)
            self.admission.waiting.append(entry)
            self.pending += 1
        else:
            self.tg.start_soon(self._member, i)

    def _launch(self, i: int) -> None:
        self.pending -= 1
        if self.pending == 0 and self.all_started is not None:
            self.all_started.set()
        assert self.tg is not None
        self.tg.start_soon(self._member, i)

    async def _member(self, i: int) -> None:
        scheduler, run = self.scheduler, self.run_state
        member = self.members[i]
        if type(member) is Leaf and not run.sampled[member.index]:
            return  # recorded before the group started (`Scheduler._record_unsampled`)
        try:
            if self.first_failure is not None and i == self.start:
                failed, self.first_failure = self.first_failure, None
                leaf = cast(Leaf, self.members[i])
                result = await scheduler.leaves.run(leaf, run, self.stats[i], failed)
                judgment = result.judgment
            else:
                judgment = await scheduler.run_node(self.members[i], run, self.stats[i])
        except CompositeFailure as exc:
            self.failures.append(exc)
            self._finish()
        else:
            self._done(i, judgment)

    def _done(self, i: int, judgment: Judgment | None) -> None:
        self.out[i] = judgment
        if self.on_done(i, judgment):
            self._finish()

    def _finish(self) -> None:
        """Stop the group: cancel the members still running, start no more."""
        if not self.stop:
            self.stop = True
            assert self.tg is not None
            self.tg.cancel_scope.cancel()

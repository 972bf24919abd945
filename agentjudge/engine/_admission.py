"""Admission control: the global and per-resource slots a judge call needs, and the queue.

A leaf (one judge call) holds one token of its resource limiter (when its resource has a
limit) and one of the global limiter (``max_concurrency``) while an attempt runs; composites
never hold slots, so nesting cannot deadlock. Members of a group whose global slot is not free
wait in one FIFO queue *without a task* (`Queued`); `Admission.dispatch` launches them as slots
come back, first come first served.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import anyio
from anyio import WouldBlock

from agentjudge.engine._plan import Leaf
from agentjudge.engine._state import LeafStats, Queued

__all__ = ["Admission", "AdmissionStatistics", "LimiterStatistics", "acquire"]


@dataclass(frozen=True, slots=True)
class LimiterStatistics:
    """One limiter, read-only (in the style of ``anyio.CapacityLimiter.statistics()``)."""

    total: int
    """Tokens the limiter has."""
    borrowed: int
    """Tokens lent to judge calls now."""
    queued: int
    """Judge calls waiting for a token (tasks waiting plus members queued without a task)."""


@dataclass(frozen=True, slots=True)
class AdmissionStatistics:
    """What `Evaluator.statistics()` returns."""

    global_limit: LimiterStatistics
    """The ``max_concurrency`` limiter."""
    resources: Mapping[str, LimiterStatistics]
    """One entry per resource named in ``limits``."""


async def acquire(limiter: anyio.CapacityLimiter, borrower: object) -> None:
    """Take a token for ``borrower``, waiting only when none is free."""
    try:
        limiter.acquire_on_behalf_of_nowait(borrower)
    except WouldBlock:
        await limiter.acquire_on_behalf_of(borrower)


class Admission:
    """The slots and the waiting queue of one evaluator, shared by all its evaluations.

    Args:
        max_concurrency: Tokens of the global limiter.
        limits: Tokens per resource name.
    """

    __slots__ = ("_global", "_max", "_resources", "limits", "waiting")

    def __init__(self, max_concurrency: int, limits: Mapping[str, int]) -> None:
        self._max = max_concurrency
        self.limits = dict(limits)
        self._global: anyio.CapacityLimiter | None = None
        self._resources: dict[str, anyio.CapacityLimiter] = {}
        self.waiting: deque[Queued] = deque()
        """Members queued for a global slot, oldest first."""

    # ------------------------------------------------------------------ limiters
    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The global limiter (created on first use, inside the event loop)."""
        if self._global is None:
            self._global = anyio.CapacityLimiter(self._max)
        return self._global

    def resource_limiter(self, resource: str) -> anyio.CapacityLimiter | None:
        """The limiter of one resource named in ``limits`` (None if it has no limit)."""
        limiter = self._resources.get(resource)
        if limiter is None and resource in self.limits:
            limiter = anyio.CapacityLimiter(self.limits[resource])
            self._resources[resource] = limiter
        return limiter

    def limiters(self, leaf: Leaf) -> tuple[anyio.CapacityLimiter | None, anyio.CapacityLimiter]:
        """The leaf's resource limiter (None without a limit) and the global limiter."""
        resource = self.resource_limiter(leaf.resource) if leaf.resource is not None else None
        return resource, self._global or self.limiter

    def free(self, leaf: Leaf) -> bool:
        """Whether ``leaf`` could take its slots now without waiting or jumping the queue."""
        limiter = self._global or self.limiter
        if self.waiting or limiter.available_tokens < 1:
            return False
        if leaf.resource is None:
            return True
        resource = self.resource_limiter(leaf.resource)
        return resource is None or resource.available_tokens >= 1

    def fits(self, leaves: tuple[Leaf, ...], sampled: tuple[bool, ...]) -> bool:
        """Whether every sampled leaf of a group could take its slots now, all at once.

        The general way reserves all of a group's slots up front; the fast path runs a group
        only when that reservation would succeed too, so both start the same members in the
        same order.
        """
        limiter = self._global or self.limiter
        if self.waiting:
            return False
        if not self.limits and all(sampled):  # the common case: count the leaves
            return limiter.available_tokens >= len(leaves)
        need = 0
        per_resource: dict[str, int] | None = None
        for leaf in leaves:
            if not sampled[leaf.index]:
                continue
            need += 1
            if leaf.resource is not None and leaf.resource in self.limits:
                per_resource = per_resource or {}
                per_resource[leaf.resource] = per_resource.get(leaf.resource, 0) + 1
        if limiter.available_tokens < need:
            return False
        for name, count in (per_resource or {}).items():
            resource = self.resource_limiter(name)
            assert resource is not None
            if resource.available_tokens < count:
                return False
        return True

    # ------------------------------------------------------------------ slots
    def reserve(self, leaf: Leaf, stats: LeafStats) -> bool:
        """Take this leaf's slots now if they are free (never waits); True on success."""
        resource, limiter = self.limiters(leaf)
        if resource is not None:
            try:
                resource.acquire_on_behalf_of_nowait(stats)
            except WouldBlock:
                return False
        try:
            limiter.acquire_on_behalf_of_nowait(stats)
        except WouldBlock:
            if resource is not None:
                resource.release_on_behalf_of(stats)
            return False
        stats.reserved = True
        return True

    def unreserve(self, leaf: Leaf, stats: LeafStats) -> None:
        """Give back slots `reserve` took for a member that will not use them."""
        if stats.reserved:
            stats.reserved = False
            resource, limiter = self.limiters(leaf)
            limiter.release_on_behalf_of(stats)
            if resource is not None:
                resource.release_on_behalf_of(stats)
            self.dispatch()

    def take(self, leaf: Leaf, stats: LeafStats) -> None:
        """Take the slots for an attempt of ``leaf`` now; the caller checked `free`.

        Raises:
            RuntimeError: a slot was not free after all. The fast path's invariant is broken
                (something awaited between the check and the take): an engine bug, never a
                judge's ERROR.
        """
        resource, limiter = self.limiters(leaf)
        try:
            if resource is not None:
                resource.acquire_on_behalf_of_nowait(stats)
            limiter.acquire_on_behalf_of_nowait(stats)
        except WouldBlock as exc:
            if resource is not None and stats in resource.statistics().borrowers:
                resource.release_on_behalf_of(stats)
            raise RuntimeError(
                f"agentjudge engine invariant broken: judge {leaf.name!r} was checked to have "
                "free slots, but they were taken before it could use them"
            ) from exc

    def take_global(self, stats: LeafStats) -> bool:
        """Take a global slot for ``stats`` if one is free and nobody is queued; True if taken.

        `acquire_global` without its coroutine, for callers that await only when this fails.
        """
        if self.waiting:
            return False
        try:
            (self._global or self.limiter).acquire_on_behalf_of_nowait(stats)
        except WouldBlock:
            return False
        return True

    async def acquire_global(self, stats: LeafStats) -> None:
        """Take a global slot for ``stats``, waiting in the FIFO queue when none is free.

        Every wait for a global slot goes through the one queue, so a member that first waited
        for its resource slot cannot jump ahead of members queued before it.
        """
        if self.take_global(stats):
            return
        limiter = self._global or self.limiter
        granted = anyio.Event()
        entry = Queued(stats, granted.set)
        self.waiting.append(entry)
        self.dispatch()  # free slots go to the queue in order (maybe to this entry at once)
        try:
            await granted.wait()
        except BaseException:
            entry.dead = True
            if stats.reserved:  # granted while being cancelled: give it back
                stats.reserved = False
                limiter.release_on_behalf_of(stats)
                self.dispatch()
            raise
        stats.reserved = False  # the slot is this attempt's now, not a reservation

    def release(self, leaf: Leaf, stats: LeafStats) -> None:
        """Return the slots an attempt of ``leaf`` held (global, then resource)."""
        (self._global or self.limiter).release_on_behalf_of(stats)
        if self.waiting:
            self.dispatch()
        if leaf.resource in self.limits:  # only a resource with a limit has a slot to return
            self.limiters(leaf)[0].release_on_behalf_of(stats)  # type: ignore[union-attr]

    def dispatch(self) -> None:
        """Hand free global slots to queued members, first come first served."""
        waiting = self.waiting
        limiter = self._global
        while waiting and limiter is not None:
            entry = waiting[0]
            if entry.dead:
                waiting.popleft()
                continue
            try:
                limiter.acquire_on_behalf_of_nowait(entry.stats)
            except WouldBlock:
                return
            waiting.popleft()
            entry.stats.reserved = True
            entry.launch()

    # ------------------------------------------------------------------ statistics
    def statistics(self) -> AdmissionStatistics:
        """Borrowed and queued per limiter, read-only."""
        limiter = self.limiter
        stats = limiter.statistics()
        queued = sum(1 for entry in self.waiting if not entry.dead)
        resources = {}
        for name in self.limits:
            resource = self.resource_limiter(name)
            assert resource is not None
            r = resource.statistics()
            resources[name] = LimiterStatistics(
                total=int(r.total_tokens), borrowed=r.borrowed_tokens, queued=r.tasks_waiting
            )
        return AdmissionStatistics(
            global_limit=LimiterStatistics(
                total=int(stats.total_tokens),
                borrowed=stats.borrowed_tokens,
                queued=stats.tasks_waiting + queued,
            ),
            resources=resources,
        )

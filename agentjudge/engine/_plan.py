"""Compile what the user configured (judges, juries, cascades) into an immutable execution plan.

The plan is a small tree: `Leaf` (one judge call), `Group` (members voting: a jury, or the
members of a cascade tier) and `CascadeNode`. Leaves are numbered in configured order
(depth first, later cascade tiers included); that order fixes result order and the order of
sampling draws. Leaf names are unique within the plan: members of a nested composite are
qualified by its name (``"cascade/judge"``) and repeats become ``name-2``, ``name-3``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from agentjudge.core import Context, Judgment, TierPolicy
from agentjudge.engine._composite import Cascade, Jury, unique_name
from agentjudge.engine._knobs import check_rate
from agentjudge.judging import JudgeKind, direct_async, judge_name, to_async
from agentjudge.voting import VotingStrategy

__all__ = [
    "CascadeNode",
    "Group",
    "Leaf",
    "Node",
    "Plan",
    "TierNode",
    "compile_plan",
]


@dataclass(frozen=True, slots=True, eq=False)
class Leaf:
    """One judge call."""

    name: str
    index: int
    call: Callable[[Context], Awaitable[Judgment]]
    resource: str | None
    metric_key: str | None
    rate: float
    tier: str | None
    step: Callable[[Context], Coroutine[Any, Any, object]]
    """What the inline path calls: the judge's own coroutine function when it has one
    (`direct_async`, one coroutine less per call), else ``call``."""
    coerce_as: str | None
    """The name ``step``'s return value is coerced under (None: ``step`` coerces itself)."""
    metered: bool = False
    """True for a model-backed judge (``kind`` LLM, or a ``client`` attribute): a `Budget`
    admits each of its attempts."""
    attempt_timeout: object = None
    """The judge's own ``attempt_timeout`` attribute (checked by `resolve_timeouts`)."""


@dataclass(frozen=True, slots=True, eq=False)
class Group:
    """Members judged concurrently and combined by ``voting`` (None: one member, no vote)."""

    name: str
    members: tuple[Node, ...]
    voting: VotingStrategy | None
    weights: tuple[float, ...] | None
    early_stop: bool
    leaves: tuple[Leaf, ...]
    flat: bool = field(init=False)
    """True when every member is a leaf (no nested composite)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "flat", all(type(m) is Leaf for m in self.members))


@dataclass(frozen=True, slots=True, eq=False)
class TierNode:
    """One cascade tier."""

    name: str
    policy: TierPolicy
    group: Group
    threshold: float | None = None
    """The tier's confidence threshold (`Tier.threshold`)."""


@dataclass(frozen=True, slots=True, eq=False)
class CascadeNode:
    """Tiers in order."""

    name: str
    tiers: tuple[TierNode, ...]
    leaves: tuple[Leaf, ...]
    short_circuit: bool = True
    """False: every tier runs to completion (`Cascade.short_circuit`)."""


Node = Leaf | Group | CascadeNode


@dataclass(frozen=True, slots=True)
class Plan:
    """The compiled evaluation: the root node and every leaf in configured order."""

    root: Node | None
    leaves: tuple[Leaf, ...] = ()
    resources: frozenset[str] = field(default_factory=frozenset)


class _Compiler:
    def __init__(self, sampling: Mapping[str, float]) -> None:
        self.sampling = sampling
        self.used: set[str] = set()
        self.leaves: list[Leaf] = []

    def leaf(self, judge: Callable[..., Any], name: str, tier: str | None) -> Leaf:
        name = unique_name(name, self.used)
        rate: object = getattr(judge, "sampling_rate", None)
        where = f"judge {name!r}"
        if name in self.sampling:
            rate, where = self.sampling[name], f"sampling[{name!r}]"
        resource = getattr(judge, "resource", None)
        if resource is not None and (not isinstance(resource, str) or not resource.strip()):
            raise ValueError(
                f"judge {name!r}: resource must be a non-blank string, got {resource!r}"
            )
        metric_key = getattr(judge, "metric_key", None)
        call = to_async(judge, name)
        direct = direct_async(judge, name)
        step, coerce_as = (call, None) if direct is None else direct
        leaf = Leaf(
            name=name,
            index=len(self.leaves),
            call=call,
            step=cast(Callable[[Context], Coroutine[Any, Any, object]], step),
            coerce_as=coerce_as,
            resource=resource,
            metric_key=metric_key if isinstance(metric_key, str) else None,
            rate=1.0 if rate is None else check_rate(rate, where),
            tier=tier,
            metered=getattr(judge, "kind", None) == JudgeKind.LLM
            or getattr(judge, "client", None) is not None,
            attempt_timeout=getattr(judge, "attempt_timeout", None),
        )
        self.leaves.append(leaf)
        return leaf

    def node(self, obj: Callable[..., Any], name: str, prefix: str, tier: str | None) -> Node:
        if isinstance(obj, Jury):
            return self.jury(obj, f"{prefix}{name}/", tier, name)
        if isinstance(obj, Cascade):
            return self.cascade(obj, f"{prefix}{name}/")
        return self.leaf(obj, f"{prefix}{name}", tier)

    def jury(self, jury: Jury, prefix: str, tier: str | None, name: str) -> Group:
        start = len(self.leaves)
        members = tuple(
            self.node(m, n, prefix, tier) for m, n in zip(jury.members, jury.names, strict=True)
        )
        return Group(
            name=name,
            members=members,
            voting=jury.voting,
            weights=jury.weights,
            early_stop=jury.early_stop,
            leaves=tuple(self.leaves[start:]),
        )

    def cascade(self, cascade: Cascade, prefix: str) -> CascadeNode:
        start = len(self.leaves)
        tiers: list[TierNode] = []
        for t in cascade.tiers:
            if isinstance(t.judge, Jury):
                group = self.jury(t.judge, prefix, t.name, t.name)
            else:
                g_start = len(self.leaves)
                member = self.node(t.judge, judge_name(t.judge), prefix, t.name)
                group = Group(
                    name=t.name,
                    members=(member,),
                    voting=None,
                    weights=None,
                    early_stop=False,
                    leaves=tuple(self.leaves[g_start:]),
                )
            tiers.append(TierNode(name=t.name, policy=t.policy, group=group, threshold=t.threshold))
        return CascadeNode(
            name=cascade.name,
            tiers=tuple(tiers),
            leaves=tuple(self.leaves[start:]),
            short_circuit=cascade.short_circuit,
        )


def compile_plan(
    judges: object,
    sampling: Mapping[str, float] | None = None,
) -> Plan:
    """Compile ``judges`` (a judge, sequence, mapping, Jury or Cascade; None = no judges).

    Raises:
        ValueError: unknown names in ``sampling``, rates outside [0, 1], non-callable judges.
    """
    sampling = dict(sampling or {})
    compiler = _Compiler(sampling)
    root: Node | None
    if judges is None:
        root = None
    elif isinstance(judges, Jury):
        root = compiler.jury(judges, "", None, judges.name)
    elif isinstance(judges, Cascade):
        root = compiler.cascade(judges, "")
    elif isinstance(judges, Mapping | Sequence) and not isinstance(judges, str | bytes):
        if not judges:
            root = None
        else:
            jury = Jury(judges)
            root = compiler.jury(jury, "", None, jury.name)
    elif callable(judges):
        root = compiler.leaf(judges, judge_name(judges), None)
    else:
        raise ValueError(
            f"judges must be a judge, a sequence or mapping of judges, a Jury or a Cascade; "
            f"got {type(judges).__name__}"
        )
    names = {leaf.name for leaf in compiler.leaves}
    unknown = sorted(set(sampling) - names)
    if unknown:
        raise ValueError(
            f"sampling names unknown judges {unknown}; known judges: {sorted(names) or 'none'}"
        )
    resources = frozenset(leaf.resource for leaf in compiler.leaves if leaf.resource)
    return Plan(root=root, leaves=tuple(compiler.leaves), resources=resources)

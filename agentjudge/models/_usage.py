"""Token usage as the providers report it: counts checked, sums kept within range."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentjudge._compat import build_model, check_buildable
from agentjudge.models._types import MAX_TOKEN_COUNT, Usage

__all__ = ["UsageReader", "add_usage", "read_usage"]

_USAGE_FIELDS = tuple(Usage.model_fields)
"""`Usage`'s fields in declaration order (what `build_model` takes)."""
check_buildable(Usage)


class UsageReader:
    """Reads a provider's token counts, never losing the answer over a bad one.

    A count that is present but not an integer within ``0..2**53-1`` is dropped (None) and a
    warning recorded.
    """

    def __init__(self, client: str) -> None:
        self.client = client
        self.warnings: list[str] = []

    def count(self, value: Any, where: str) -> int | None:
        """``value`` when it is a valid token count; None (with a warning) when it is not."""
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT:
            return value
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:40] + "..."
        self.warnings.append(
            f"{self.client}: {where}={shown} is not a token count (an integer within "
            "0..2**53-1); it was dropped from the usage"
        )
        return None


def read_usage(
    client: str, raw: Any, where: str, fields: Mapping[str, str]
) -> tuple[Usage, tuple[str, ...]]:
    """A provider's usage object ``raw`` as a `Usage`, and the warnings of reading it.

    Every count is checked here (`UsageReader.count`), so the `Usage` is built without
    validating it again (one is read per answer; equal to ``Usage(**counts)``, pinned by a
    property test). How ``fields`` is read (each path split into keys) is worked out once per
    mapping (`_plan`), not per answer.

    Args:
        client: The client's name (in warnings).
        raw: The usage object of the answer (anything but a dict: an empty `Usage`).
        where: Its key in the answer (``"usage"``, ``"usageMetadata"``), for warnings.
        fields: `Usage` field -> the dotted path of its count in ``raw``, e.g.
            ``{"reasoning_tokens": "completion_tokens_details.reasoning_tokens"}``.
    """
    if not isinstance(raw, dict):
        return Usage(), ()
    plan = _plan(fields)
    reader: UsageReader | None = None  # made for the first refused count only
    counts: dict[str, int | None] = _NO_COUNTS.copy()
    for field, key, deeper, path in plan.steps:
        value: Any = raw.get(key)
        if deeper:  # (no iterator made for a top-level count)
            for inner in deeper:
                value = value.get(inner) if isinstance(value, dict) else None
        if value is not None and (type(value) is not int or not 0 <= value <= MAX_TOKEN_COUNT):
            reader = reader or UsageReader(client)
            value = reader.count(value, f"{where}.{path}")  # refused: None and a warning
        counts[field] = value
    warnings = () if reader is None else tuple(reader.warnings)
    if not plan.known:  # a field Usage does not have: validation says so
        return Usage(**{f: counts[f] for f in fields}), warnings
    return build_model(Usage, counts, plan.shared_set), warnings


_NO_COUNTS: dict[str, int | None] = dict.fromkeys(_USAGE_FIELDS)
"""Every `Usage` field unset, in declaration order (copied per answer)."""


class _Plan:
    """How `read_usage` reads one ``fields`` mapping: worked out once per mapping."""

    __slots__ = ("fields", "known", "shared_set", "snapshot", "steps")

    def __init__(self, fields: Mapping[str, str]) -> None:
        self.fields = fields
        """The mapping itself (held, so its id is not reused while the plan is kept)."""
        self.snapshot = dict(fields)
        """Its items when planned: a mapping changed since is planned again."""
        steps = []
        for field, path in fields.items():
            first, *deeper = path.split(".")
            steps.append((field, first, tuple(deeper), path))
        self.steps: tuple[tuple[str, str, tuple[str, ...], str], ...] = tuple(steps)
        """(field, first key, the keys below it, the dotted path) per field, in order."""
        self.shared_set = set(fields)
        """``model_fields_set`` of every `Usage` read by this plan: one set shared by all of
        them (`build_model` allows it: `Usage` is frozen), not a new one per answer."""
        self.known = self.shared_set <= _NO_COUNTS.keys()
        """Every field is a `Usage` field (else validation refuses the counts)."""


_PLANS: dict[int, _Plan] = {}
"""Each ``fields`` mapping's plan, by id (the providers' few mappings; bounded)."""


def _plan(fields: Mapping[str, str]) -> _Plan:
    """The plan of ``fields`` (made on first use, and again when the mapping changed)."""
    plan = _PLANS.get(id(fields))
    if plan is not None and plan.fields is fields and plan.snapshot == fields:
        return plan
    if len(_PLANS) >= 256:  # mappings made per call: never grows without bound
        _PLANS.clear()
    plan = _PLANS[id(fields)] = _Plan(fields)
    return plan


def add_usage(a: Usage | None, b: Usage, warnings: list[str]) -> Usage:
    """``a + b`` field by field; a sum above 2**53-1 is dropped with a warning."""
    if a is None:
        return b
    merged: dict[str, int | None] = {}
    for field in Usage.model_fields:
        x, y = getattr(a, field), getattr(b, field)
        total = None if x is None and y is None else (x or 0) + (y or 0)
        if total is not None and total > MAX_TOKEN_COUNT:
            warnings.append(f"the summed usage {field}={total} is above 2**53-1; it was dropped")
            total = None
        merged[field] = total
    return Usage(**merged)

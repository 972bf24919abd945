"""Expected vs actual tool calls, step by step: the diff a failing trajectory judgment carries.

A *step* is an assistant message that calls tools, numbered from 1 on each side. Judges that
compare a trajectory with a reference (`TrajectoryMatch`, `ToolSelection`, `TrajectoryJudge`)
put the diff in a failing judgment's ``metadata["tool_call_diff"]`` (`DIFF_KEY`), which
``agentjudge report`` (text, ``--case``, ``--json``) and the HTML report render::

    {"calls": [entry, ...], "omitted": 0}

Each entry has ``op``: ``"match"`` (the call is as expected), ``"arguments"`` (the expected
tool was called with other arguments; ``keys`` lists the top-level argument keys that differ),
``"missing"`` (an expected call the agent did not make) or ``"extra"`` (a call the reference
does not have); ``step`` (the agent's step; absent for a missing call) and ``reference_step``
(absent for an extra call); ``expected`` and ``actual``: ``{"name", "arguments"}`` (arguments
whose JSON exceeds `ARGS_CHARS` characters become that text, cut). At most `MAX_DIFF_CALLS`
entries are kept, matches dropped first; ``omitted`` counts the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any

from agentjudge.core import Message, ToolCall, thaw

__all__ = [
    "ARGS_CHARS",
    "DIFF_KEY",
    "MAX_DIFF_CALLS",
    "differing",
    "exact_diff",
    "json_equal",
    "located_steps",
    "paired_diff",
    "stepwise_diff",
    "tool_call_steps",
]

DIFF_KEY = "tool_call_diff"
"""The metadata key of the diff."""
MAX_DIFF_CALLS = 50
"""Most entries kept in a diff."""
ARGS_CHARS = 500
"""Arguments whose JSON is longer are kept as their (cut) JSON text."""

Same = Callable[[ToolCall, ToolCall], bool]
"""``same(actual_call, reference_call)``: the two calls match (name and arguments)."""
Located = tuple[int, ToolCall]
"""A call with its 1-based step number."""


def tool_call_steps(messages: Iterable[Message]) -> list[tuple[ToolCall, ...]]:
    """The tool calls of each step (each assistant message that calls tools), in order."""
    return [m.tool_calls for m in messages if m.tool_calls]


def json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: numbers by value, but a boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping | list | tuple) or isinstance(b, Mapping | list | tuple):
        return False
    return a == b


def _call(call: ToolCall) -> dict[str, Any]:
    arguments: Any = thaw(call.arguments)
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > ARGS_CHARS:
        arguments = text[: ARGS_CHARS - 1] + "…"
    return {"name": call.name, "arguments": arguments}


def _differing_keys(actual: ToolCall, reference: ToolCall) -> list[str]:
    mine, theirs = actual.arguments, reference.arguments
    return sorted(
        key
        for key in set(mine) | set(theirs)
        if key not in mine or key not in theirs or not json_equal(mine[key], theirs[key])
    )


def _entry(op: str, actual: Located | None, reference: Located | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"op": op}
    if actual is not None:
        entry["step"] = actual[0]
    if reference is not None:
        entry["reference_step"] = reference[0]
        entry["expected"] = _call(reference[1])
    if actual is not None:
        entry["actual"] = _call(actual[1])
    if op == "arguments" and actual is not None and reference is not None:
        entry["keys"] = _differing_keys(actual[1], reference[1])
    return entry


def _pair_up(
    actual: Sequence[Located], reference: Sequence[Located], same: Same
) -> list[dict[str, Any]]:
    """Entries for two groups of calls: matches, same tool with other arguments, the rest."""
    free = list(range(len(actual)))
    entries: list[tuple[int, dict[str, Any]]] = []
    leftover: list[int] = []
    for r, ref in enumerate(reference):
        k = next((k for k in free if same(actual[k][1], ref[1])), None)
        if k is None:
            leftover.append(r)
            continue
        free.remove(k)
        entries.append((k, _entry("match", actual[k], ref)))
    for r in leftover:
        ref = reference[r]
        k = next((k for k in free if actual[k][1].name == ref[1].name), None)
        if k is None:
            entries.append((len(actual) + r, _entry("missing", None, ref)))
        else:
            free.remove(k)
            entries.append((k, _entry("arguments", actual[k], ref)))
    entries += [(k, _entry("extra", actual[k], None)) for k in free]
    return [entry for _, entry in sorted(entries, key=lambda item: item[0])]


def _bounded(entries: list[dict[str, Any]]) -> dict[str, Any]:
    if len(entries) <= MAX_DIFF_CALLS:
        return {"calls": entries, "omitted": 0}
    matches = sum(e["op"] == "match" for e in entries)
    drop = min(matches, len(entries) - MAX_DIFF_CALLS)
    kept = [e for e in entries if e["op"] != "match" or (drop := drop - 1) < 0]
    return {"calls": kept[:MAX_DIFF_CALLS], "omitted": len(entries) - len(kept[:MAX_DIFF_CALLS])}


def stepwise_diff(
    actual: Sequence[Sequence[ToolCall]], reference: Sequence[Sequence[ToolCall]], same: Same
) -> dict[str, Any]:
    """The diff of two trajectories whose steps are compared in order.

    Steps are aligned by their tool names (an inserted or skipped step shifts the rest, as in
    a text diff); the calls of two aligned steps pair up by `same`, then by tool name
    (``"arguments"``); what is left is missing or extra.

    Args:
        actual: The agent's calls per step (`tool_call_steps`).
        reference: The reference's calls per step.
        same: Whether an actual call matches a reference call.
    """
    names = SequenceMatcher(
        None,
        [tuple(c.name for c in s) for s in actual],
        [tuple(c.name for c in s) for s in reference],
        autojunk=False,
    )
    entries: list[dict[str, Any]] = []
    for _, a0, a1, r0, r1 in names.get_opcodes():
        for k in range(max(a1 - a0, r1 - r0)):
            mine = [(a0 + k + 1, c) for c in actual[a0 + k]] if a0 + k < a1 else []
            theirs = [(r0 + k + 1, c) for c in reference[r0 + k]] if r0 + k < r1 else []
            entries += _pair_up(mine, theirs, same)
    return _bounded(entries)


def paired_diff(
    actual: Sequence[Located],
    reference: Sequence[Located],
    paired: Sequence[int | None],
    *,
    report_missing: bool = True,
    report_extra: bool = True,
) -> dict[str, Any]:
    """The diff of two trajectories whose calls were paired in any order.

    Args:
        actual: The agent's calls with their step numbers.
        reference: The reference's calls with their step numbers.
        paired: For each actual call, the index of the reference call it matched, or None.
        report_missing: List reference calls nothing matched (False: they are allowed).
        report_extra: List actual calls that matched nothing (False: they are allowed).
    """
    used = {j for j in paired if j is not None}
    entries = [
        _entry("match", actual[k], reference[j]) for k, j in enumerate(paired) if j is not None
    ]
    rest = _pair_up(
        [actual[k] for k, j in enumerate(paired) if j is None],
        [ref for j, ref in enumerate(reference) if j not in used],
        lambda _a, _r: False,
    )
    entries += [
        e
        for e in rest
        if (e["op"] != "missing" or report_missing) and (e["op"] != "extra" or report_extra)
    ]
    entries.sort(key=_order)
    return _bounded(entries)


def _order(entry: dict[str, Any]) -> tuple[int, int]:
    step = entry.get("step")
    return (entry["reference_step"], 1) if step is None else (step, 0)


def located_steps(messages: Iterable[Message]) -> list[Located]:
    """Every tool call with its 1-based step number."""
    return [(n, call) for n, calls in enumerate(tool_call_steps(messages), 1) for call in calls]


def _same_exactly(call: ToolCall, reference: ToolCall) -> bool:
    return call.name == reference.name and json_equal(call.arguments, reference.arguments)


def exact_diff(actual: Iterable[Message], reference: Iterable[Message]) -> dict[str, Any] | None:
    """The `stepwise_diff` of two trajectories, calls equal by name and arguments.

    None when no call differs.
    """
    return differing(
        stepwise_diff(tool_call_steps(actual), tool_call_steps(reference), _same_exactly)
    )


def differing(diff: dict[str, Any]) -> dict[str, Any] | None:
    """``diff`` when some call in it differs, else None (nothing worth showing)."""
    return diff if any(e["op"] != "match" for e in diff["calls"]) else None

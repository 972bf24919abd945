"""Tool-call diffs of failing trajectory judgments, as report text and as HTML report data.

The trajectory judges (`agentjudge.judges.TrajectoryMatch`, ``ToolSelection``,
``TrajectoryJudge`` given a reference) put the diff in a failing judgment's
``metadata["tool_call_diff"]`` (format: `agentjudge.judges._trajectory_diff`). This module
only reads that JSON, as stored in results.jsonl: `tool_diff` picks it out, `tool_diff_lines`
words it for ``agentjudge report`` and ``--case``, `html_tool_diff` packs it for the browser
report, which draws it as a table in the case view.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "DIFF_KEY",
    "OPS",
    "html_tool_diff",
    "tool_diff",
    "tool_diff_lines",
    "without_diff",
]

DIFF_KEY = "tool_call_diff"
"""The judgment metadata key holding the diff."""
OPS = ("match", "arguments", "missing", "extra")
"""The kinds of diff entries, by their code in the HTML report's data."""
_MARKS = {"match": "=", "arguments": "~", "missing": "-", "extra": "+"}
_LEGEND = "= as expected, ~ other arguments, - missing, + extra"


def tool_diff(metadata: object) -> dict[str, Any] | None:
    """The well-formed tool-call diff in a judgment's metadata, or None."""
    if not isinstance(metadata, Mapping):
        return None
    diff = metadata.get(DIFF_KEY)
    if not isinstance(diff, Mapping) or not isinstance(diff.get("calls"), list):
        return None
    calls = [c for c in diff["calls"] if isinstance(c, Mapping) and c.get("op") in _MARKS]
    omitted = diff.get("omitted")
    return {"calls": calls, "omitted": omitted if isinstance(omitted, int) else 0}


def without_diff(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata but its diff (shown on its own, not twice)."""
    return {k: v for k, v in metadata.items() if k != DIFF_KEY}


def show_call(call: object) -> str:
    """``name({"arg": ...})`` of a diff entry's ``expected`` / ``actual``."""
    if not isinstance(call, Mapping):
        return "?"
    arguments = call.get("arguments")
    text = (
        arguments
        if isinstance(arguments, str)
        else json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
    )
    return f"{call.get('name')}({text})"


def _where(entry: Mapping[str, Any]) -> str:
    if entry.get("step") is None:
        return f"reference step {entry.get('reference_step')}"
    return f"step {entry['step']}"


def _entry_text(entry: Mapping[str, Any]) -> str:
    op = entry["op"]
    if op == "match":
        return show_call(entry.get("actual"))
    if op == "missing":
        return f"{show_call(entry.get('expected'))} missing"
    if op == "extra":
        return f"{show_call(entry.get('actual'))} extra (not in the reference)"
    keys = ", ".join(str(k) for k in entry.get("keys") or ()) or "?"
    return (
        f"{(entry.get('expected') or {}).get('name')}: arguments differ in {keys}: expected "
        f"{show_call(entry.get('expected'))}, got {show_call(entry.get('actual'))}"
    )


def tool_diff_lines(
    diff: Mapping[str, Any], indent: str, cut: Callable[[str], str] = str
) -> list[str]:
    """The diff as report lines, one per call, each passed through ``cut``."""
    lines = [f"{indent}tool calls, expected vs actual ({_LEGEND}):"]
    for entry in diff["calls"]:
        text = f"{_MARKS[entry['op']]} {_where(entry)}: {_entry_text(entry)}"
        lines.append(f"{indent}  {cut(text)}")
    if diff.get("omitted"):
        lines.append(f"{indent}  ... and {diff['omitted']} more")
    return lines


def html_tool_diff(metadata: object, ref: Callable[[Any], int | None]) -> list[Any] | None:
    """The diff packed for the HTML report (None: the judgment has none).

    ``[omitted, [op code, step, reference step, expected ref, actual ref, keys ref], ...]``:
    op codes index `OPS`, calls are ``name(arguments)`` texts in the string table (``ref``),
    missing values are null.
    """
    diff = tool_diff(metadata)
    if diff is None:
        return None
    rows: list[Any] = [diff["omitted"]]
    for entry in diff["calls"]:
        rows.append(
            [
                OPS.index(entry["op"]),
                entry.get("step"),
                entry.get("reference_step"),
                ref(show_call(entry["expected"])) if "expected" in entry else None,
                ref(show_call(entry["actual"])) if "actual" in entry else None,
                ref(", ".join(str(k) for k in entry.get("keys") or ()) or None),
            ]
        )
    return rows

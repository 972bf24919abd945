"""Terminal text for cases: those needing attention, error reasons, one case in full, flips.

The data comes from `agentjudge.harness._cases`; this module only words it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentjudge.core._rows import USER_MARK
from agentjudge.harness._cases import (
    CaseJudge,
    FailingCase,
    FailingCases,
    judge_line,
    row_tags,
)
from agentjudge.harness._summary import FlippedCase, RunSummary
from agentjudge.harness._text import plural
from agentjudge.harness._tool_diff import tool_diff_lines, without_diff

__all__ = [
    "attention_lines",
    "case_text",
    "error_reason_lines",
    "flip_lines",
    "traceback_lines",
]

LINE_CHARS = 120
"""Reasoning and reasons are cut to this many characters in lists (``--case`` shows all)."""
_KIND_WORDS = {
    "task_error": ("task error", "task errors"),
    "judge_error": ("judge error", "judge errors"),
    "fail": ("failing", "failing"),
    "abstain": ("abstaining", "abstaining"),
}
_KIND_TITLES = {
    "task_error": "TASK ERROR",
    "judge_error": "JUDGE ERROR",
    "fail": "FAIL",
    "abstain": "ABSTAIN",
}


def one_line(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (with "...")."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def traceback_lines(frames: Sequence[str] | None, indent: str) -> list[str]:
    """A short traceback, innermost last; the user's frames stand out by their ``> `` mark."""
    if not frames:
        return []
    lines = [f"{indent}traceback (innermost last; {USER_MARK.strip()} your code):"]
    for frame in frames:
        shown = frame if frame.startswith(USER_MARK) else " " * len(USER_MARK) + frame
        lines.append(f"{indent}  {shown}")
    return lines


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _judge_lines(judges: Sequence[CaseJudge], indent: str) -> list[str]:
    width = max((len(j.name) for j in judges), default=0)
    lines = []
    for j in judges:
        status = "(not sampled)" if j.status is None else j.status.upper()
        lines.append(
            f"{indent}{j.name.ljust(width)}  {status:<7}  {_score(j.score):>5}  "
            f"{one_line(j.reasoning)}".rstrip()
        )
        for check in j.failed_checks:
            message = one_line(check.get("message", ""))
            lines.append(f"{indent}    failed check {check.get('name')}: {message}")
        if j.tool_call_diff is not None:
            lines += tool_diff_lines(j.tool_call_diff, indent + "    ", one_line)
        lines += traceback_lines(j.traceback, indent + "    ")
    return lines


def _case_lines(case: FailingCase) -> list[str]:
    tags = f"  [{', '.join(case.tags)}]" if case.tags else ""
    verdict = "" if case.verdict is None else f" (verdict {case.verdict})"
    lines = ["", f"{case.id}  {_KIND_TITLES[case.kind]}{verdict}{tags}"]
    if case.error is not None:
        lines.append(f"  error: {one_line(case.error, 2 * LINE_CHARS)}")
        lines += traceback_lines(case.traceback, "  ")
    lines += _judge_lines(case.judges, "  ")
    return lines


def attention_lines(found: FailingCases, cases_total: int, run_dir: str) -> list[str]:
    """The "cases needing attention" section: counts by kind, then the listed cases."""
    kinds = ", ".join(plural(found.counts.get(kind, 0), *_KIND_WORDS[kind]) for kind in _KIND_WORDS)
    head = f"cases needing attention: {found.total} of {cases_total} ({kinds})"
    if not found.total:
        return [head]
    if not found.cases:
        return [f"{head}; list them with --cases N"]
    lines = [f"{head}; most severe first:"]
    for case in found.cases:
        lines += _case_lines(case)
    more = found.total - len(found.cases)
    if more > 0:
        lines += [
            "",
            f"... and {more} more (agentjudge report {run_dir} --cases all; "
            "one case in full: --case ID)",
        ]
    return lines


def error_reason_lines(found: FailingCases, summary: RunSummary) -> list[str]:
    """Why judges and the task errored: the most common reasons with their counts."""
    lines: list[str] = []
    for name, reasons in found.judge_errors.items():
        errors = found.judge_error_counts.get(name, 0)
        judged = summary.judges[name].count if name in summary.judges else errors
        every = " (every one)" if errors == judged else ""
        lines.append(f"  {name}: {errors} of {plural(judged, 'judgment')} errored{every}")
        lines += [f"    {r.count}x {one_line(r.reason)}" for r in reasons]
    if found.task_errors:
        errors = summary.cases.errors
        lines.append(f"  task: {errors} of {plural(summary.cases.total, 'case')} errored")
        lines += [f"    {r.count}x {one_line(r.reason)}" for r in found.task_errors]
    return ["errors (most common reasons):", *lines] if lines else []


def _json_block(title: str, value: Any) -> list[str]:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return [f"{title}:", *("  " + line for line in text.splitlines())]


def _full_judge(result: Mapping[str, Any]) -> list[str]:
    j = judge_line(result)
    status = "(not sampled)" if j.status is None else j.status.upper()
    facts = [f"score {_score(j.score)}"]
    judgment = result.get("judgment") or {}
    for key in ("label", "confidence"):
        if judgment.get(key) is not None:
            facts.append(f"{key} {judgment[key]}")
    if j.tier is not None:
        facts.append(f"tier {j.tier}")
    facts.append(f"attempts {result.get('attempts', '-')}")
    if j.error_type is not None:
        facts.append(f"error_type {j.error_type}")
    lines = [f"  {j.name}: {status}  ({', '.join(facts)})"]
    if j.reasoning:
        lines += ["    reasoning:", *("      " + line for line in j.reasoning.splitlines())]
    for check in judgment.get("checks") or ():
        mark = "PASS" if check.get("passed") else "FAIL"
        lines.append(f"    check {mark} {check.get('name')}: {check.get('message', '')}")
    metadata = judgment.get("metadata") or {}
    if j.tool_call_diff is not None:  # shown as a diff below
        metadata = without_diff(metadata)
    if metadata:
        lines.append(f"    metadata: {json.dumps(metadata, default=str)}")
    if j.tool_call_diff is not None:
        lines += tool_diff_lines(j.tool_call_diff, "    ")
    return lines + traceback_lines(j.traceback, "    ")


def case_text(row: Mapping[str, Any]) -> str:
    """One results row in full: what the task got and gave, and every judgment."""
    verdict = row.get("verdict")
    status = verdict.get("status") if isinstance(verdict, Mapping) else None
    tags = row_tags(row)
    lines = [
        f"case {row.get('id')}  verdict {status or '-'}"
        + (f"  tags {', '.join(tags)}" if tags else "")
    ]
    for key in ("input", "output", "expected", "metadata", "extra", "human"):
        if key in row:
            lines += _json_block(key, row[key])
    lines.append(f"duration_s: {row.get('duration_s')}")
    if row.get("error") is not None:
        lines.append(f"task error: {row['error']}")
        lines += traceback_lines(row.get("traceback"), "  ")
    results = [r for r in row.get("results") or () if isinstance(r, Mapping)]
    if results:
        lines.append("judges:")
        for result in results:
            lines += _full_judge(result)
    if isinstance(verdict, Mapping):
        lines.append(
            f"verdict: {str(status).upper()} (score {_score(verdict.get('score'))}) "
            f"{verdict.get('reasoning', '')}".rstrip()
        )
    for tier in row.get("tiers") or ():
        stopped = ", stopped" if tier.get("stopped") else ""
        lines.append(
            f"tier {tier.get('name')} ({tier.get('policy')}): {tier.get('status')}{stopped}"
            + (f"; failure: {tier['failure']}" if tier.get("failure") else "")
        )
    return "\n".join(lines)


def flip_lines(flips: Sequence[FlippedCase], limit: int | None, indent: str) -> list[str]:
    """Flipped cases (up to ``limit``) with each side's reason when it was recorded."""
    shown = list(flips) if limit is None else list(flips[:limit])
    lines = []
    for flip in shown:
        lines.append(f"{indent}{flip.id}: {flip.before} -> {flip.after}")
        before, after = flip.before_reason, flip.after_reason
        if before is not None or after is not None:
            lines.append(f"{indent}    before: {one_line(before or '-')}")
            lines.append(f"{indent}    after:  {one_line(after or '-')}")
    if len(flips) > len(shown):
        lines.append(f"{indent}... and {len(flips) - len(shown)} more (--cases N)")
    return lines

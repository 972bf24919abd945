"""Terminal reports: one run (per judge and per tag) and the comparison of two runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentjudge.harness._agreement_report import agreement_compare_lines, agreement_lines
from agentjudge.harness._baseline import (
    Comparison,
    case_statuses,
    compare_rows,
    load_summary,
    summary_path,
)
from agentjudge.harness._cascade_summary import cascade_lines
from agentjudge.harness._cost import CostLine, CostSummary
from agentjudge.harness._pairwise_summary import pairwise_lines
from agentjudge.harness._results import iter_rows
from agentjudge.harness._summary import (
    BaselineOutcome,
    DatasetInfo,
    FlippedCase,
    GateOutcome,
    JudgeSummary,
    RunAggregate,
    RunSummary,
)
from agentjudge.harness._text import plural

__all__ = ["format_summary", "gate_line", "render_compare", "render_report", "row_tags"]

MAX_LISTED = 20
"""Case ids listed per category in a comparison."""
MAX_TAG_COLUMNS = 6
"""Up to this many tags are shown as columns (one row per measure); more as rows."""


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _delta(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _cases(summary: RunSummary) -> str:
    """``"30 cases, 1 task error"``."""
    return f"{plural(summary.cases.total, 'case')}, {plural(summary.cases.errors, 'task error')}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A plain aligned table: first column left-aligned, the others right-aligned."""
    body = [list(r) for r in rows]
    widths = [len(h) for h in headers]
    for row in body:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in body)
    return "\n".join(out)


def _judge_row(name: str, s: JudgeSummary) -> list[str]:
    c = s.counts
    return [
        name,
        _num(s.mean),
        _num(s.pass_rate),
        _ci(s.ci95),
        s.ci_method or "-",
        _ci(s.pass_rate_ci95),
        str(c.get("pass", 0)),
        str(c.get("fail", 0)),
        str(c.get("abstain", 0)),
        str(c.get("error", 0)),
    ]


_JUDGE_HEADERS = (
    "judge",
    "mean",
    "pass_rate",
    "ci95 (mean)",
    "ci_method",
    "pass_rate ci95 (wilson)",
    "pass",
    "fail",
    "abstain",
    "error",
)


def _baseline_lines(b: BaselineOutcome) -> list[str]:
    lines = [
        "",
        f"baseline {b.summary}: {'PASS' if b.passed else 'FAIL'} "
        f"(max regression {_num(b.max_regression)})",
    ]
    for name, j in b.judges.items():
        flag = "  REGRESSED" if j.regressed else ""
        missing = " (judge no longer present)" if j.missing else ""
        flips = ""
        if j.flips is not None:
            flips = (
                f"  flips {j.flips} ({j.newly_failing} pass -> not pass, "
                f"{j.newly_passing} not pass -> pass)"
            )
        lines.append(
            f"  {name}: {_num(j.baseline_mean)} -> {_num(j.mean)} "
            f"({_delta(j.delta)}){flag}{missing}{flips}"
        )
    count = b.flipped_count
    if not b.flips_checked:
        lines.append("  flipped cases: not checked (no results.jsonl beside the baseline)")
        return lines
    lines.append(
        f"  flipped pass -> not pass: {count} (verdicts; {b.fixed_count} not pass -> pass)"
    )
    for f in b.flipped[:MAX_LISTED]:
        lines.append(f"    {f.id}: {f.before} -> {f.after}")
    if count > MAX_LISTED:
        lines.append(f"    ... and {count - MAX_LISTED} more (see summary.json)")
    return lines


def gate_line(g: GateOutcome) -> str:
    """``  PASS  correctness.mean>=0.9  (value 0.9312)``, with the reason of an undefined value."""
    reason = (g.model_extra or {}).get("reason")
    why = f"  {reason}" if reason else ""
    return f"  {'PASS' if g.passed else 'FAIL'}  {g.expr}  (value {_num(g.value, 4)}){why}"


def _result_line(summary: RunSummary) -> str:
    if summary.passed:
        return "result: PASSED"
    reasons = []
    failed_gates = sum(1 for g in summary.gates if not g.passed)
    if failed_gates:
        reasons.append(f"{failed_gates} gate(s) failed")
    if summary.baseline is not None and not summary.baseline.passed:
        reasons.append("the baseline check failed")
    untrusted = [c.name for c in summary.checks if c.enforced and not c.passed]
    if untrusted:
        reasons.append(f"the run cannot be trusted ({', '.join(untrusted)})")
    return "result: FAILED" + (f": {'; '.join(reasons)}" if reasons else "")


def format_summary(summary: RunSummary) -> str:
    """Per-judge table, cases, gates and the baseline check of one run."""
    cases = summary.cases
    lines = [
        f"run {summary.run_id} ({summary.status})  dataset {summary.dataset.path} "
        f"({plural(summary.dataset.rows, 'row')})"
    ]
    if summary.status != "completed":
        lines.append(
            f"note: this run did not complete ({summary.status}); the numbers cover what was "
            "recorded then. Finish it with `agentjudge run ... --resume`."
        )
    lines.extend(f"warning: {warning}" for warning in summary.warnings)
    lines += [
        f"cases: {cases.total}, task errors: {cases.errors} (rate {_num(cases.error_rate)})",
        "",
    ]
    rows = [_judge_row(name, s) for name, s in summary.judges.items()]
    if summary.verdict is not None:
        rows.append(_judge_row("(verdict)", summary.verdict))
    lines.append(table(_JUDGE_HEADERS, rows))
    lines += pairwise_lines(summary.judges)
    lines += agreement_lines(summary, table)
    lines += cost_lines(summary.cost)
    if summary.budget is not None:
        lines += ["", f"budget: {summary.budget.message}"]
    if summary.gates:
        lines.append("")
        lines.append("gates:")
        lines.extend(gate_line(g) for g in summary.gates)
    if summary.baseline is not None:
        lines += _baseline_lines(summary.baseline)
    if summary.checks:
        lines += ["", "trust checks:"]
        for c in summary.checks:
            mark = (
                "PASS"
                if c.passed
                else "WARN"
                if c.warning
                else ("FAIL" if c.enforced else "FAIL (allowed)")
            )
            lines.append(f"  {mark}  {c.name}: {c.message}")
    if summary.passed is not None:
        lines += ["", _result_line(summary)]
    return "\n".join(lines)


def _usd(line: CostLine) -> str:
    """``$0.0123``; ``>= $0.0100 (2 unpriced calls)`` when some call had no price."""
    if line.usd is not None:
        return f"${line.usd:.4f}"
    return f">= ${line.priced_usd:.4f} ({line.unpriced_calls} unpriced calls)"


def _cost_row(name: str, line: CostLine) -> list[str]:
    return [
        name,
        str(line.calls),
        str(line.cached_calls),
        str(line.input_tokens),
        str(line.output_tokens),
        str(line.cached_tokens),
        _usd(line),
    ]


_COST_HEADERS = ["", "calls", "cache hits", "input tok", "output tok", "cached tok", "usd"]


def cost_lines(cost: CostSummary | None) -> list[str]:
    """The cost section of a report: totals, then by judge, model and tier (none: no lines)."""
    if cost is None or (not cost.calls and not cost.budget_refused):
        return []
    rows = [_cost_row("total", cost)]
    for title, lines in (("judge", cost.by_judge), ("model", cost.by_model)):
        rows += [_cost_row(f"{title} {k}", v) for k, v in lines.items()]
    rows += [_cost_row(f"tier {k}", v) for k, v in cost.by_tier.items()]
    out = ["", "cost (judge model calls):", table(_COST_HEADERS, rows)]
    if cost.usd is None:
        out.append(
            f"note: {plural(cost.unpriced_calls, 'call')} used a model with no price, so the "
            "total is unknown (add prices: suite key `prices` or agentjudge.models.prices.set)"
        )
    return out


def _cost_compare_lines(first: RunSummary, second: RunSummary) -> list[str]:
    """Cost of A and B and the change (nothing when neither run made a model call)."""
    a, b = first.cost, second.cost
    if (a is None or not a.calls) and (b is None or not b.calls):
        return []

    def cells(line: CostLine | None) -> list[str]:
        if line is None:
            return ["-", "-", "-"]
        return [_usd(line), str(line.input_tokens), str(line.output_tokens)]

    def change(key: str) -> str:
        x = None if a is None else getattr(a, key)
        y = None if b is None else getattr(b, key)
        if x is None or y is None:
            return "-"
        return f"{y - x:+.4f}" if key == "usd" else f"{y - x:+d}"

    rows = [
        ["A", *cells(a)],
        ["B", *cells(b)],
        ["change", change("usd"), change("input_tokens"), change("output_tokens")],
    ]
    return ["", "cost:", table(["", "usd", "input tok", "output tok"], rows)]


def row_tags(row: Mapping[str, Any]) -> list[str]:
    """Tags of a results row: ``metadata.tags`` / ``metadata.tag``, else extra ``tags``/``tag``."""
    found: list[str] = []
    for source in (row.get("metadata"), row.get("extra")):
        if not isinstance(source, Mapping):
            continue
        for key in ("tags", "tag"):
            value = source.get(key)
            if isinstance(value, str) and value.strip():
                found.append(value)
            elif isinstance(value, list):
                found.extend(v for v in value if isinstance(v, str) and v.strip())
    return list(dict.fromkeys(found))


def _tag_table(results: Path, judge_names: Sequence[str], seed: int) -> str | None:
    """Per-tag slices; tags as columns when there are few, as rows otherwise."""
    slices: dict[str, RunAggregate] = {}
    for row in iter_rows(results):
        for tag in row_tags(row):
            agg = slices.get(tag)
            if agg is None:
                agg = slices[tag] = RunAggregate(judge_names, seed=seed)
            agg.add_row(row)
    if not slices:
        return None
    names = list(judge_names)
    for agg in slices.values():
        names.extend(n for n in agg.names() if n not in names)
    tags = sorted(slices)
    cells: dict[str, list[str]] = {}
    for tag in tags:
        agg = slices[tag]
        judges = {n: agg.judges[n].summary(seed) for n in agg.judges}
        cells[tag] = [
            str(agg.total),
            str(agg.errors),
            _num(agg.verdict_summary().pass_rate),
            *[_num(judges[n].mean) if n in judges else "-" for n in names],
        ]
    labels = ["cases", "task errors", "verdict pass_rate", *[f"{n} mean" for n in names]]
    if len(tags) <= MAX_TAG_COLUMNS:
        return table(
            ["", *tags], [[label, *[cells[t][i] for t in tags]] for i, label in enumerate(labels)]
        )
    return table(["tag", *labels], [[t, *cells[t]] for t in tags])


def render_report(run_dir: str | Path) -> str:
    """The report of one run folder: the summary table plus per-tag slices.

    Raises:
        ValueError: no usable ``summary.json`` in the folder.
    """
    folder = Path(run_dir)
    summary = _summary_of(folder)
    parts = [format_summary(summary), *cascade_lines(summary)]
    results = summary_path(folder).parent / "results.jsonl"
    if results.is_file():
        tags = _tag_table(results, list(summary.judges), int(summary.config.get("seed", 0)))
        if tags is not None:
            parts.append("by tag:\n" + tags)
    return "\n\n".join(parts)


def _summary_of(folder: Path) -> RunSummary:
    """The folder's ``summary.json``; without one, a summary of its ``results.jsonl``.

    Folders written by the online JSONL sink (`agentjudge.engine.JsonlSink`) hold rows and no
    summary: they are summarised on the fly (no gates, no dataset).
    """
    results = folder / "results.jsonl"
    if not folder.is_dir() or (folder / "summary.json").exists() or not results.is_file():
        return load_summary(folder)
    aggregate = RunAggregate()
    for row in iter_rows(results):
        aggregate.add_row(row)
    now = datetime.now(UTC).isoformat()
    return RunSummary(
        run_id=f"online:{folder.name}",
        status="completed",
        started_at=now,
        completed_at=now,
        dataset=DatasetInfo(path=str(results), sha256="", rows=aggregate.total),
        config={"source": "results.jsonl without summary.json (online evaluation)"},
        judges=aggregate.judge_summaries(),
        verdict=aggregate.verdict_summary(),
        juries=aggregate.jury_summaries(),
        cases=aggregate.cases_summary(),
    )


def _flip_texts(flips: list[FlippedCase]) -> list[str]:
    return [f"{f.id}: {f.before} -> {f.after}" for f in flips]


def _compare_lines(comparison: Comparison, names: list[str]) -> list[str]:
    """Verdict changes, then each judge's flips (its own PASS <-> not PASS changes)."""
    lines = [""]
    lines += _list("flipped pass -> not pass (A -> B)", _flip_texts(comparison.newly_failing))
    lines += _list("flipped not pass -> pass (A -> B)", _flip_texts(comparison.newly_passing))
    lines += _list("other verdict changes", _flip_texts(comparison.changed))
    if comparison.only_before or comparison.only_after:
        lines.append(
            f"cases only in A: {comparison.only_before}; only in B: {len(comparison.only_after)}"
        )
    names = names + sorted(n for n in comparison.judges if n not in names)
    rows = []
    for name in names:
        down, up = comparison.judge_counts(name)
        rows.append([name, str(down + up), str(down), str(up)])
    lines += ["", "per-judge flips (A -> B; cases the judge judged in both runs):"]
    lines.append(table(["judge", "flips", "pass -> not pass", "not pass -> pass"], rows))
    for name in names:
        flips = comparison.judges.get(name)
        if flips:
            lines += _list(f"{name} flips", _flip_texts(flips))
    return lines


def _list(title: str, ids: list[str]) -> list[str]:
    lines = [f"{title}: {len(ids)}"]
    lines.extend(f"  {i}" for i in ids[:MAX_LISTED])
    if len(ids) > MAX_LISTED:
        lines.append(f"  ... and {len(ids) - MAX_LISTED} more")
    return lines


def render_compare(a: str | Path, b: str | Path) -> str:
    """Per-judge deltas (B - A) and the cases whose verdict changed between two runs.

    Raises:
        ValueError: either side has no usable ``summary.json``.
    """
    first, second = load_summary(a), load_summary(b)
    names = list(first.judges) + [n for n in second.judges if n not in first.judges]
    rows = []
    for name in names:
        x, y = first.judges.get(name), second.judges.get(name)
        mx = None if x is None else x.mean
        my = None if y is None else y.mean
        px = None if x is None else x.pass_rate
        py = None if y is None else y.pass_rate
        rows.append(
            [
                name,
                _num(mx),
                _num(my),
                _delta(None if mx is None or my is None else my - mx),
                _num(px),
                _num(py),
                _delta(None if px is None or py is None else py - px),
            ]
        )
    lines = [
        f"A: {first.run_id}  ({_cases(first)})",
        f"B: {second.run_id}  ({_cases(second)})",
        "",
        table(["judge", "mean A", "mean B", "delta", "pass_rate A", "pass_rate B", "delta"], rows),
    ]
    lines += agreement_compare_lines(first, second, table)
    lines += _cost_compare_lines(first, second)
    if first.dataset.sha256 != second.dataset.sha256:
        lines += ["", "note: the two runs read different datasets (sha256 differs)"]
    results_a = summary_path(Path(a)).parent / "results.jsonl"
    results_b = summary_path(Path(b)).parent / "results.jsonl"
    if results_a.is_file() and results_b.is_file():
        comparison = compare_rows(case_statuses(results_a), iter_rows(results_b))
        lines += _compare_lines(comparison, names)
    else:
        lines += ["", "flipped cases: not compared (results.jsonl missing on one side)"]
    return "\n".join(lines)

"""Terminal reports: one run (per judge and per tag) and the comparison of two runs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentjudge.harness._agreement_report import agreement_compare_lines, agreement_lines
from agentjudge.harness._baseline import (
    Comparison,
    add_reasons,
    case_statuses,
    compare_rows,
    load_summary,
    summary_path,
)
from agentjudge.harness._cascade_summary import cascade_lines
from agentjudge.harness._case_report import (
    attention_lines,
    case_text,
    error_reason_lines,
    flip_lines,
)
from agentjudge.harness._cases import DEFAULT_CASES, FailingCases, failing_cases, row_tags
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
from agentjudge.harness._text import did_you_mean, plural

__all__ = [
    "case_row",
    "cases_text",
    "format_summary",
    "gate_line",
    "render_case",
    "render_compare",
    "render_report",
    "report_data",
    "row_tags",
]
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


def _judge_flip_lines(name: str, flips: list[FlippedCase], limit: int | None) -> list[str]:
    """One judge's changed cases: PASS -> not pass first, then not pass -> PASS."""
    down = [f for f in flips if f.before == "pass"]
    up = [f for f in flips if f.before != "pass"]
    lines = []
    for title, group in ((f"{name} pass -> not pass", down), (f"{name} not pass -> pass", up)):
        if group:
            lines.append(f"  {title}: {len(group)}")
            lines += flip_lines(group, limit, "    ")
    return lines


def _baseline_lines(b: BaselineOutcome, limit: int | None) -> list[str]:
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
    lines += flip_lines(b.flipped, limit, "    ")
    if count > len(b.flipped) and (limit is None or limit > len(b.flipped)):
        lines.append(f"    ... and {count - len(b.flipped)} more not listed in summary.json")
    for name, j in b.judges.items():
        lines += _judge_flip_lines(name, j.flipped_cases, limit)
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


def format_summary(summary: RunSummary, cases: int | None = DEFAULT_CASES) -> str:
    """Per-judge table, cases, gates and the baseline check of one run.

    ``cases``: how many changed cases the baseline block lists per list (None: all).
    """
    counts = summary.cases
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
        f"cases: {counts.total}, task errors: {counts.errors} (rate {_num(counts.error_rate)})",
        "",
    ]
    rows = [_judge_row(name, s) for name, s in summary.judges.items()]
    if summary.verdict is not None:
        rows.append(_judge_row("(verdict)", summary.verdict))
    lines.append(table(_JUDGE_HEADERS, rows))
    lines += pairwise_lines({name: s.pairwise for name, s in summary.judges.items()})
    lines += agreement_lines(summary, table)
    lines += cost_lines(summary.cost)
    if summary.budget is not None:
        lines += ["", f"budget: {summary.budget.message}"]
    if summary.gates:
        lines.append("")
        lines.append("gates:")
        lines.extend(gate_line(g) for g in summary.gates)
    if summary.baseline is not None:
        lines += _baseline_lines(summary.baseline, cases)
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


class _Tags:
    """Per-tag aggregates, folded as the rows stream past."""

    def __init__(self, judge_names: Sequence[str], seed: int) -> None:
        self.judge_names = list(judge_names)
        self.seed = seed
        self.slices: dict[str, RunAggregate] = {}

    def watch(self, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """``rows``, each folded into its tags' aggregates on the way."""
        for row in rows:
            for tag in row_tags(row):
                agg = self.slices.get(tag)
                if agg is None:
                    agg = self.slices[tag] = RunAggregate(self.judge_names, seed=self.seed)
                agg.add_row(row)
            yield row

    def data(self) -> dict[str, dict[str, Any]]:
        """Per tag (sorted): cases, task errors, the verdict's pass rate and each judge's mean."""
        out = {}
        for tag in sorted(self.slices):
            agg = self.slices[tag]
            out[tag] = {
                "cases": agg.total,
                "task_errors": agg.errors,
                "verdict_pass_rate": agg.verdict_summary().pass_rate,
                "means": {n: agg.judges[n].summary(self.seed).mean for n in agg.names()},
            }
        return out


def _tag_table(data: Mapping[str, Mapping[str, Any]], judge_names: Sequence[str]) -> str | None:
    """Per-tag slices; tags as columns when there are few, as rows otherwise."""
    if not data:
        return None
    names = list(judge_names)
    for block in data.values():
        names.extend(n for n in block["means"] if n not in names)
    tags = list(data)
    cells: dict[str, list[str]] = {}
    for tag, block in data.items():
        means = block["means"]
        cells[tag] = [
            str(block["cases"]),
            str(block["task_errors"]),
            _num(block["verdict_pass_rate"]),
            *[_num(means[n]) if n in means else "-" for n in names],
        ]
    labels = ["cases", "task errors", "verdict pass_rate", *[f"{n} mean" for n in names]]
    if len(tags) <= MAX_TAG_COLUMNS:
        return table(
            ["", *tags], [[label, *[cells[t][i] for t in tags]] for i, label in enumerate(labels)]
        )
    return table(["tag", *labels], [[t, *cells[t]] for t in tags])


def _scan(
    folder: Path, summary: RunSummary, cases: int | None
) -> tuple[dict[str, dict[str, Any]], FailingCases | None]:
    """Per-tag data and the cases needing attention, in one pass over ``results.jsonl``."""
    results = summary_path(folder).parent / "results.jsonl"
    if not results.is_file():
        return {}, None
    tags = _Tags(list(summary.judges), int(summary.config.get("seed", 0)))
    online = summary.run_id.startswith("online:")
    found = failing_cases(
        tags.watch(_online_rows(results) if online else iter_rows(results)), cases
    )
    return tags.data(), found


def report_data(run_dir: str | Path, cases: int | None = DEFAULT_CASES) -> dict[str, Any]:
    """What `render_report` shows, as JSON values (``agentjudge report --json``).

    Keys: ``summary`` (the ``summary.json`` content), ``by_tag`` (per tag: ``cases``,
    ``task_errors``, ``verdict_pass_rate``, ``means``), ``attention`` (`FailingCases`; null
    without a results file).

    Raises:
        ValueError: no usable ``summary.json`` in the folder.
    """
    folder = Path(run_dir)
    summary = _summary_of(folder)
    tags, found = _scan(folder, summary, cases)
    return {
        "summary": summary.model_dump(mode="json"),
        "by_tag": tags,
        "attention": None if found is None else found.model_dump(mode="json"),
    }


def render_report(run_dir: str | Path, cases: int | None = DEFAULT_CASES) -> str:
    """The report of one run folder: summary, error reasons, per-tag slices, cases to look at.

    The cases needing attention are the first ``cases`` by severity (None: all).

    Raises:
        ValueError: no usable ``summary.json`` in the folder.
    """
    folder = Path(run_dir)
    summary = _summary_of(folder)
    tag_data, found = _scan(folder, summary, cases)
    parts = [format_summary(summary, cases)]
    if found is not None and (reasons := error_reason_lines(found, summary)):
        parts.append("\n".join(reasons))
    parts += cascade_lines(summary.cascade)
    tags = _tag_table(tag_data, list(summary.judges))
    if tags is not None:
        parts.append("by tag:\n" + tags)
    if found is not None:
        parts.append("\n".join(attention_lines(found, summary.cases.total, str(run_dir))))
    return "\n\n".join(parts)


def cases_text(run_dir: str | Path, summary: RunSummary, cases: int | None = DEFAULT_CASES) -> str:
    """Why judges and the task errored, and the cases needing attention.

    What ``run`` prints after its table; empty without a results file.
    """
    results = summary_path(Path(run_dir)).parent / "results.jsonl"
    if not results.is_file():
        return ""
    found = failing_cases(iter_rows(results), cases)
    parts = ["\n".join(lines) for lines in (error_reason_lines(found, summary),) if lines]
    parts.append("\n".join(attention_lines(found, summary.cases.total, str(run_dir))))
    return "\n\n".join(parts)


def case_row(run_dir: str | Path, case_id: str) -> dict[str, Any]:
    """The results row of one case of a run (``agentjudge report DIR --case ID --json``).

    Raises:
        ValueError: no results file, or no such case (with the closest ids).
    """
    results = summary_path(Path(run_dir)).parent / "results.jsonl"
    if not results.is_file():
        raise ValueError(f"no results file: {results}")
    found = None
    ids: list[str] = []
    for row in iter_rows(results):
        if row["id"] == case_id:
            found = row  # the last row wins, as on resume
        elif found is None and len(ids) < 100_000:
            ids.append(row["id"])
    if found is None:
        hint = did_you_mean(case_id, ids)
        raise ValueError(f"no case {case_id!r} in {results}{hint}")
    return found


def render_case(run_dir: str | Path, case_id: str) -> str:
    """One case in full: input, output, expected, metadata, each judgment, checks, traceback.

    Raises:
        ValueError: no results file, or no such case.
    """
    return case_text(case_row(run_dir, case_id))


def _online_rows(results: Path) -> Iterator[dict[str, Any]]:
    """The rows of an online sink's ``results.jsonl`` and its rotated backups, oldest first.

    `agentjudge.engine.JsonlSink` rotates to ``results.jsonl.1`` (newest) ...
    ``results.jsonl.<n>`` (oldest); the report reads them all.
    """
    backups = [p for p in results.parent.glob(f"{results.name}.*") if p.suffix[1:].isdigit()]
    backups.sort(key=lambda p: int(p.suffix[1:]), reverse=True)
    for path in (*backups, results):
        yield from iter_rows(path)


def _summary_of(folder: Path) -> RunSummary:
    """The folder's ``summary.json``; without one, a summary of its ``results.jsonl``.

    Folders written by the online JSONL sink (`agentjudge.engine.JsonlSink`) hold rows and no
    summary: they are summarised on the fly (no gates, no dataset), rotated files included.
    """
    results = folder / "results.jsonl"
    if not folder.is_dir() or (folder / "summary.json").exists() or not results.is_file():
        return load_summary(folder)
    aggregate = RunAggregate()
    for row in _online_rows(results):
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


def _compare_lines(comparison: Comparison, names: list[str], limit: int | None) -> list[str]:
    """Verdict changes, then each judge's flips (its own PASS <-> not PASS changes)."""
    lines = [""]
    for title, flips in (
        ("flipped pass -> not pass (A -> B)", comparison.newly_failing),
        ("flipped not pass -> pass (A -> B)", comparison.newly_passing),
        ("other verdict changes", comparison.changed),
    ):
        lines.append(f"{title}: {len(flips)}")
        lines += flip_lines(flips, limit, "  ")
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
        if comparison.judges.get(name):
            lines += _judge_flip_lines(name, comparison.judges[name], limit)
    return lines


def render_compare(a: str | Path, b: str | Path, cases: int | None = DEFAULT_CASES) -> str:
    """Per-judge deltas (B - A) and the cases that changed between two runs.

    ``cases``: how many changed cases each list shows, with the reasons before and after
    (None: all).

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
        add_reasons(comparison, results_a, results_b, cases)
        lines += _compare_lines(comparison, names, cases)
    else:
        lines += ["", "flipped cases: not compared (results.jsonl missing on one side)"]
    return "\n".join(lines)

"""Coverage reports and judges.

`parse_coverage`, `CoverageMetrics`, `CoveragePreservation` and `CoverageImprovement`.

One parser reads the three common formats:

- coverage.py JSON (``coverage json``): ``totals.covered_lines``, ``totals.num_statements`` and,
  with branch coverage, ``totals.covered_branches`` / ``totals.num_branches``;
- Cobertura XML (``coverage xml`` and many other tools): the root ``<coverage>`` attributes
  ``lines-covered``, ``lines-valid``, ``branches-covered``, ``branches-valid``;
- JaCoCo XML: the report-level ``<counter>`` elements, i.e. the direct children of the root
  ``<report>`` (not the last counter in document order, which may belong to anything).

XML goes through defusedxml: entity declarations and external references are refused. A report
that cannot be parsed raises `CoverageReportError`; the judges turn that into ERROR, never into
0 % coverage.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Literal
from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree as SafeET
from pydantic import BaseModel, ConfigDict

from agentjudge.core import Check, Context, Judgment
from agentjudge.exceptions import AgentJudgeError
from agentjudge.judges._paths import (
    DeterministicJudge,
    PathEscapeError,
    WorkspaceError,
    resolve_in_workspace,
)
from agentjudge.judges._safeio import (
    DEFAULT_MAX_BYTES,
    FileTooLargeError,
    NotRegularFileError,
    read_file,
    run_blocking,
)

__all__ = [
    "DEFAULT_COVERAGE_REPORTS",
    "CoverageImprovement",
    "CoverageMetric",
    "CoverageMetrics",
    "CoveragePreservation",
    "CoverageReportError",
    "parse_coverage",
    "parse_coverage_bytes",
]

DEFAULT_COVERAGE_REPORTS = ("coverage.json", "coverage.xml", "target/site/jacoco/jacoco.xml")
"""Report paths tried in order (relative to the workspace) when a judge has no ``report=``."""

CoverageMetric = Literal["line", "branch", "total"]
"""Which percentage a coverage judge compares: lines, branches, or both combined."""


class CoverageReportError(AgentJudgeError, ValueError):
    """A coverage report is missing, malformed or unsafe; the message names the file."""


def _pct(covered: int | None, total: int | None) -> float | None:
    if covered is None or total is None or total == 0:
        return None
    return covered * 100.0 / total


class CoverageMetrics(BaseModel):
    """Coverage totals of one report. Percentages are 0-100; None when nothing was measured."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["coverage.py", "cobertura", "jacoco"]
    """Report format the numbers came from."""
    source: str
    """Where the report was read from."""
    lines_covered: int
    """Covered lines (statements for coverage.py)."""
    lines_total: int
    """Measured lines."""
    branches_covered: int | None = None
    """Covered branches; None when branch coverage was not measured."""
    branches_total: int | None = None
    """Measured branches; None when branch coverage was not measured."""
    methods_covered: int | None = None
    """Covered methods (JaCoCo only)."""
    methods_total: int | None = None
    """Measured methods (JaCoCo only)."""

    @property
    def line_coverage(self) -> float | None:
        """Line coverage in percent; None when the report measured no lines."""
        return _pct(self.lines_covered, self.lines_total)

    @property
    def branch_coverage(self) -> float | None:
        """Branch coverage in percent; None when no branches were measured."""
        return _pct(self.branches_covered, self.branches_total)

    @property
    def method_coverage(self) -> float | None:
        """Method coverage in percent (JaCoCo only)."""
        return _pct(self.methods_covered, self.methods_total)

    @property
    def total_coverage(self) -> float | None:
        """Lines and branches combined, as coverage.py's headline percentage computes it."""
        return _pct(
            self.lines_covered + (self.branches_covered or 0),
            self.lines_total + (self.branches_total or 0),
        )

    def percent(self, metric: CoverageMetric) -> float | None:
        """The percentage for ``metric`` ("line", "branch" or "total")."""
        if metric == "line":
            return self.line_coverage
        if metric == "branch":
            return self.branch_coverage
        return self.total_coverage

    @property
    def summary(self) -> str:
        """One line such as ``"line 75.0% (6/8), branch 50.0% (1/2)"``."""
        parts = [_part("line", self.lines_covered, self.lines_total)]
        if self.branches_total is not None:
            parts.append(_part("branch", self.branches_covered, self.branches_total))
        if self.methods_total is not None:
            parts.append(_part("method", self.methods_covered, self.methods_total))
        return ", ".join(parts)


def _part(label: str, covered: int | None, total: int | None) -> str:
    pct = _pct(covered, total)
    shown = "n/a" if pct is None else f"{pct:.1f}%"
    return f"{label} {shown} ({covered}/{total})"


def _count(value: object, where: str, source: str) -> int:
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise CoverageReportError(
                f"{source}: {where} must be a whole number, got {value!r}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CoverageReportError(f"{source}: {where} must be an integer >= 0, got {value!r}")
    return value


def _pair(covered: int, total: int, what: str, source: str) -> None:
    if covered > total:
        raise CoverageReportError(f"{source}: {what} covered ({covered}) exceeds total ({total})")


def _parse_json(data: bytes, source: str) -> CoverageMetrics:
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CoverageReportError(f"{source}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise CoverageReportError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    totals = doc.get("totals") if isinstance(doc, dict) else None
    if not isinstance(totals, dict):
        raise CoverageReportError(
            f"{source}: not a coverage.py JSON report (no 'totals' object at the top level)"
        )
    for key in ("covered_lines", "num_statements"):
        if key not in totals:
            raise CoverageReportError(f"{source}: totals.{key} is missing")
    lines_covered = _count(totals["covered_lines"], "totals.covered_lines", source)
    lines_total = _count(totals["num_statements"], "totals.num_statements", source)
    _pair(lines_covered, lines_total, "lines", source)
    branches_covered = branches_total = None
    if "num_branches" in totals or "covered_branches" in totals:
        branches_covered = _count(totals.get("covered_branches"), "totals.covered_branches", source)
        branches_total = _count(totals.get("num_branches"), "totals.num_branches", source)
        _pair(branches_covered, branches_total, "branches", source)
    return CoverageMetrics(
        format="coverage.py",
        source=source,
        lines_covered=lines_covered,
        lines_total=lines_total,
        branches_covered=branches_covered,
        branches_total=branches_total,
    )


def _parse_cobertura(root: Element, source: str) -> CoverageMetrics:
    for attr in ("lines-covered", "lines-valid"):
        if root.get(attr) is None:
            raise CoverageReportError(
                f"{source}: the root <coverage> element has no {attr!r} attribute"
            )
    lines_covered = _count(root.get("lines-covered"), "<coverage lines-covered>", source)
    lines_total = _count(root.get("lines-valid"), "<coverage lines-valid>", source)
    _pair(lines_covered, lines_total, "lines", source)
    branches_covered = branches_total = None
    if root.get("branches-valid") is not None:
        branches_total = _count(root.get("branches-valid"), "<coverage branches-valid>", source)
        branches_covered = _count(
            root.get("branches-covered", "0"), "<coverage branches-covered>", source
        )
        _pair(branches_covered, branches_total, "branches", source)
        if branches_total == 0:
            branches_covered = branches_total = None
    return CoverageMetrics(
        format="cobertura",
        source=source,
        lines_covered=lines_covered,
        lines_total=lines_total,
        branches_covered=branches_covered,
        branches_total=branches_total,
    )


def _parse_jacoco(root: Element, source: str) -> CoverageMetrics:
    counters: dict[str, tuple[int, int]] = {}
    for counter in root.findall("counter"):
        kind = counter.get("type", "")
        where = f"<report><counter type={kind!r}>"
        missed = _count(counter.get("missed"), f"{where} missed", source)
        covered = _count(counter.get("covered"), f"{where} covered", source)
        counters[kind] = (covered, covered + missed)
    if "LINE" not in counters:
        raise CoverageReportError(
            f"{source}: the JaCoCo report has no report-level LINE counter "
            "(no <counter type='LINE'> directly under <report>; were any classes measured?)"
        )
    lines_covered, lines_total = counters["LINE"]
    branch = counters.get("BRANCH")
    method = counters.get("METHOD")
    return CoverageMetrics(
        format="jacoco",
        source=source,
        lines_covered=lines_covered,
        lines_total=lines_total,
        branches_covered=branch[0] if branch and branch[1] else None,
        branches_total=branch[1] if branch and branch[1] else None,
        methods_covered=method[0] if method else None,
        methods_total=method[1] if method else None,
    )


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_coverage_bytes(data: bytes, *, source: str = "<report>") -> CoverageMetrics:
    """Parse a coverage report's bytes (format detected from the content).

    Raises:
        CoverageReportError: malformed, unsafe or unrecognised report (message names ``source``).
    """
    head = data.lstrip()[:1]
    if head == b"{":
        return _parse_json(data, source)
    if head != b"<":
        raise CoverageReportError(
            f"{source}: not a coverage report (expected coverage.py JSON, Cobertura or JaCoCo XML)"
        )
    try:
        root = SafeET.fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except defusedxml.DefusedXmlException as exc:
        raise CoverageReportError(f"{source}: refused unsafe XML ({exc})") from None
    except ParseError as exc:
        line, column = exc.position
        raise CoverageReportError(
            f"{source}: not well-formed XML (line {line}, column {column}: {exc})"
        ) from None
    tag = _local(root.tag)
    if tag == "coverage":
        return _parse_cobertura(root, source)
    if tag == "report":
        return _parse_jacoco(root, source)
    raise CoverageReportError(
        f"{source}: XML root <{tag}> is neither Cobertura <coverage> nor JaCoCo <report>"
    )


def parse_coverage(path: str | os.PathLike[str]) -> CoverageMetrics:
    """Read and parse a coverage report file (blocking; judges call it on a worker thread).

    The file must be a regular file of at most 64 MiB (`DEFAULT_MAX_BYTES`); a named pipe is
    refused without waiting for a writer.

    Raises:
        CoverageReportError: the file is missing, unreadable, too large, malformed or unsafe.
    """
    source = os.fspath(path)
    metrics = _load_report(Path(path), None, source)
    if metrics is None:
        raise CoverageReportError(f"{source}: coverage report not found")
    return metrics


def _read_report(path: Path, within: Path | None, source: str) -> bytes | None:
    try:
        return read_file(path, within, DEFAULT_MAX_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except NotRegularFileError as exc:
        raise CoverageReportError(f"{source}: {exc.kind}, not a regular file") from None
    except FileTooLargeError as exc:
        raise CoverageReportError(
            f"{source}: too large ({exc.size} bytes; reports are read up to {exc.limit})"
        ) from None
    except OSError as exc:
        raise CoverageReportError(f"{source}: cannot read ({exc.strerror or exc})") from None


def _load_report(path: Path, within: Path | None, source: str) -> CoverageMetrics | None:
    """Parse the report at ``path`` (confined to ``within``); None when there is none.

    Raises:
        CoverageReportError: the report is unreadable, not a regular file, too large or bad.
    """
    data = _read_report(path, within, source)
    return None if data is None else parse_coverage_bytes(data, source=source)


def _baseline(ctx: Context, metric: CoverageMetric) -> float | Judgment:
    raw: Any = ctx.metadata.get("baseline_coverage")
    key = 'ctx.metadata["baseline_coverage"]'
    if raw is None:
        return Judgment.abstained(f"No baseline: {key} is not set")
    if isinstance(raw, CoverageMetrics):
        value = raw.percent(metric)
        if value is None:
            return Judgment.errored(f"{key} is a report without {metric} coverage data")
        return value
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return Judgment.errored(
            f"{key} must be a percentage (a number 0-100), got {type(raw).__name__}: {raw!r}"
        )
    if not math.isfinite(raw) or not 0.0 <= raw <= 100.0:
        return Judgment.errored(f"{key} must be a finite percentage within 0-100, got {raw!r}")
    return float(raw)


class _CoverageJudge(DeterministicJudge):
    def __init__(
        self,
        *,
        report: str | os.PathLike[str] | None,
        metric: CoverageMetric,
        name: str | None,
        description: str,
        allow_outside: bool,
    ) -> None:
        if metric not in ("line", "branch", "total"):
            raise ValueError(f'metric must be "line", "branch" or "total", got {metric!r}')
        self.report = os.fspath(report) if report is not None else None
        if self.report is not None and not self.report.strip():
            raise ValueError("report must be a non-blank path or None")
        self.metric: CoverageMetric = metric
        self.allow_outside = allow_outside
        super().__init__(name, description)

    async def _current(self, ctx: Context) -> tuple[CoverageMetrics, float] | Judgment:
        candidates = (self.report,) if self.report is not None else DEFAULT_COVERAGE_REPORTS
        within = None if self.allow_outside or ctx.workspace is None else Path(ctx.workspace)
        found: CoverageMetrics | None = None
        try:
            for candidate in candidates:
                path = await resolve_in_workspace(ctx, candidate, allow_outside=self.allow_outside)
                found = await run_blocking(_load_report, path, within, candidate)
                if found is not None:
                    break
        except (WorkspaceError, PathEscapeError) as exc:
            return Judgment.errored(str(exc))
        except CoverageReportError as exc:
            return Judgment.errored(f"Unusable coverage report: {exc}")
        if found is None:
            if self.report is not None:
                return Judgment.errored(f"Coverage report not found: {self.report}")
            return Judgment.errored(
                "No coverage report found in the workspace (looked for "
                + ", ".join(DEFAULT_COVERAGE_REPORTS)
                + "); pass report= to name it"
            )
        metrics = found
        shown = metrics.source
        value = metrics.percent(self.metric)
        if value is None:
            return Judgment.errored(
                f"{shown}: the report measured no {self.metric} coverage ({metrics.summary}); "
                "cannot compare"
            )
        return metrics, value

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        baseline = _baseline(ctx, self.metric)
        if isinstance(baseline, Judgment):
            return baseline
        current = await self._current(ctx)
        if isinstance(current, Judgment):
            return current
        metrics, value = current
        meta: dict[str, Any] = {
            "report": metrics.source,
            "format": metrics.format,
            "metric": self.metric,
            "baseline_coverage": baseline,
            "current_coverage": value,
            "summary": metrics.summary,
        }
        return self._judge(baseline, value, meta)

    def _judge(self, baseline: float, value: float, meta: dict[str, Any]) -> Judgment:
        """Compare coverage ``value`` with ``baseline``; ``meta`` holds the shared metadata."""
        raise NotImplementedError


class CoveragePreservation(_CoverageJudge):
    """PASS when coverage dropped by at most ``threshold`` percentage points from the baseline.

    The baseline is ``ctx.metadata["baseline_coverage"]``, a percentage 0-100 (or a
    `CoverageMetrics`); without one the judge abstains, and a malformed one is ERROR. The report
    is ``report=`` or the first of `DEFAULT_COVERAGE_REPORTS` found in the workspace; a missing,
    corrupt or unsafe report is ERROR. Any improvement passes; a drop of exactly ``threshold``
    passes.

    Args:
        threshold: Largest allowed drop in percentage points (>= 0).
        report: Report path relative to the workspace.
        metric: "line" (default), "branch" or "total" (lines and branches combined).
        name: Judge name; defaults to ``"CoveragePreservation"``.
        allow_outside: Allow the report path to resolve outside the workspace.

    Raises:
        ValueError: negative or non-finite threshold, unknown metric.
    """

    def __init__(
        self,
        threshold: float = 5.0,
        *,
        report: str | os.PathLike[str] | None = None,
        metric: CoverageMetric = "line",
        name: str | None = None,
        allow_outside: bool = False,
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise ValueError(f"threshold must be a number, got {threshold!r}")
        if not math.isfinite(threshold) or threshold < 0:
            raise ValueError(f"threshold must be finite and >= 0, got {threshold!r}")
        self.threshold = float(threshold)
        super().__init__(
            report=report,
            metric=metric,
            name=name,
            description=f"Verifies {metric} coverage drops by at most {threshold:g} points",
            allow_outside=allow_outside,
        )

    def _judge(self, baseline: float, value: float, meta: dict[str, Any]) -> Judgment:
        drop = baseline - value
        meta.update(coverage_drop=drop, threshold=self.threshold)
        what = (
            f"{self.metric.capitalize()} coverage drop {drop:.1f} points "
            f"({baseline:.1f}% -> {value:.1f}%)"
        )
        if drop <= self.threshold + 1e-9:
            return Judgment.passed(
                f"{what} within threshold of {self.threshold:.1f}",
                checks=(
                    Check.ok(
                        "coverage_preserved", f"drop {drop:.1f} <= {self.threshold:.1f} threshold"
                    ),
                ),
                metadata=meta,
            )
        return Judgment.failed(
            f"{what} exceeds threshold of {self.threshold:.1f}",
            checks=(
                Check.fail(
                    "coverage_preserved", f"drop {drop:.1f} > {self.threshold:.1f} threshold"
                ),
            ),
            metadata=meta,
        )


class CoverageImprovement(_CoverageJudge):
    """Scores the coverage gain over the baseline: ``clamp(gain / max_improvement, 0, 1)``.

    PASS iff the gain is strictly positive and, when ``minimum`` > 0, the current coverage is at
    least ``minimum``. Baseline and report handling as in `CoveragePreservation`.

    Args:
        max_improvement: Gain in percentage points that earns score 1.0 (> 0).
        minimum: Coverage (percent) the result must reach; 0 disables the check.
        report: Report path relative to the workspace.
        metric: "line" (default), "branch" or "total".
        name: Judge name; defaults to ``"CoverageImprovement"``.
        allow_outside: Allow the report path to resolve outside the workspace.

    Raises:
        ValueError: ``max_improvement`` <= 0 or non-finite; ``minimum`` outside 0-100.
    """

    def __init__(
        self,
        max_improvement: float = 50.0,
        minimum: float = 0.0,
        *,
        report: str | os.PathLike[str] | None = None,
        metric: CoverageMetric = "line",
        name: str | None = None,
        allow_outside: bool = False,
    ) -> None:
        for label, value in (("max_improvement", max_improvement), ("minimum", minimum)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{label} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{label} must be finite, got {value!r}")
        if max_improvement <= 0:
            raise ValueError(f"max_improvement must be > 0, got {max_improvement!r}")
        if not 0.0 <= minimum <= 100.0:
            raise ValueError(f"minimum must be within 0-100, got {minimum!r}")
        self.max_improvement = float(max_improvement)
        self.minimum = float(minimum)
        super().__init__(
            report=report,
            metric=metric,
            name=name,
            description=f"Scores the {metric} coverage gain (full marks at +{max_improvement:g})",
            allow_outside=allow_outside,
        )

    def _judge(self, baseline: float, value: float, meta: dict[str, Any]) -> Judgment:
        gain = value - baseline
        score = min(1.0, max(0.0, gain / self.max_improvement))
        meta.update(coverage_gain=gain, max_improvement=self.max_improvement, minimum=self.minimum)
        span = f"({baseline:.1f}% -> {value:.1f}%)"
        improved = gain > 0
        checks = [
            Check(
                name="coverage_improved",
                passed=improved,
                message=f"{gain:+.1f} points {span}",
            )
        ]
        meets = True
        if self.minimum > 0:
            meets = value >= self.minimum
            checks.append(
                Check(
                    name="minimum_coverage_met",
                    passed=meets,
                    message=f"{value:.1f}% {'>=' if meets else '<'} minimum {self.minimum:.1f}%",
                )
            )
        label = self.metric.capitalize()
        if improved and meets:
            return Judgment.passed(
                f"{label} coverage improved by {gain:.1f} points {span}",
                score=score,
                checks=tuple(checks),
                metadata=meta,
            )
        reasons = []
        if not improved:
            reasons.append(f"{label} coverage did not improve ({gain:+.1f} points {span})")
        if not meets:
            reasons.append(f"{value:.1f}% is below the minimum of {self.minimum:.1f}%")
        return Judgment.failed("; ".join(reasons), score=score, checks=tuple(checks), metadata=meta)

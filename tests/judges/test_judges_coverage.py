from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentjudge.core import Context, Status
from agentjudge.judges import (
    CoverageImprovement,
    CoverageMetrics,
    CoveragePreservation,
    CoverageReportError,
    parse_coverage,
)
from agentjudge.judges._coverage import parse_coverage_bytes

MODULE = """def f(x):
    if x > 0:
        return "pos"
    return "neg"


def g():
    return 3
"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real coverage.py JSON and Cobertura XML reports of a tiny module (4/6 lines, 1/2 arcs)."""
    root = tmp_path_factory.mktemp("coverage-project")
    (root / "mod.py").write_text(MODULE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COV")}
    # What `coverage run --branch --include=mod.py` of "import mod; mod.f(1)" and then
    # `coverage json` and `coverage xml` write, from one interpreter instead of three.
    measure = (
        "import coverage\n"
        "cov = coverage.Coverage(branch=True, include=['mod.py'])\n"
        "cov.start()\n"
        "import mod\n"
        "mod.f(1)\n"
        "cov.stop()\n"
        "cov.json_report(outfile='coverage.json')\n"
        "cov.xml_report(outfile='coverage.xml')\n"
    )
    subprocess.run(
        [sys.executable, "-c", measure], cwd=root, env=env, check=True, capture_output=True
    )
    return root


def workspace_with(tmp_path: Path, reports: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(reports / name, tmp_path / name)
    return tmp_path


def ctx_for(workspace: Path, **metadata: object) -> Context:
    return Context(workspace=workspace, metadata=metadata)


JACOCO = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">
<report name="demo">
  <sessioninfo id="s" start="1" dump="2"/>
  <package name="com/example">
    <class name="com/example/A" sourcefilename="A.java">
      <method name="run" desc="()V" line="3">
        <counter type="LINE" missed="0" covered="1"/>
      </method>
      <counter type="LINE" missed="9" covered="1"/>
      <counter type="BRANCH" missed="3" covered="1"/>
    </class>
    <counter type="LINE" missed="50" covered="50"/>
  </package>
  <counter type="INSTRUCTION" missed="40" covered="60"/>
  <counter type="LINE" missed="20" covered="80"/>
  <counter type="METHOD" missed="1" covered="9"/>
</report>
"""

BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<coverage lines-valid="10" lines-covered="&lol3;" line-rate="1"/>
"""

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE coverage [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<coverage lines-valid="10" lines-covered="5" line-rate="0.5">&secret;</coverage>
"""


# ----------------------------------------------------------------------------- parser
def test_real_coverage_json_and_xml_agree(reports: Path) -> None:
    """coverage.py JSON and Cobertura XML of the same run parse to the same totals."""
    from_json = parse_coverage(reports / "coverage.json")
    from_xml = parse_coverage(reports / "coverage.xml")
    assert from_json.format == "coverage.py" and from_xml.format == "cobertura"
    for metrics in (from_json, from_xml):
        assert (metrics.lines_covered, metrics.lines_total) == (4, 6)
        assert (metrics.branches_covered, metrics.branches_total) == (1, 2)
        assert metrics.line_coverage == pytest.approx(66.6667, abs=1e-3)
        assert metrics.branch_coverage == pytest.approx(50.0)
        assert metrics.total_coverage == pytest.approx(62.5)
    assert "line 66.7% (4/6)" in from_json.summary


def test_jacoco_uses_report_level_counters() -> None:
    """JaCoCo totals come from the counters directly under <report>, not nested ones."""
    metrics = parse_coverage_bytes(JACOCO, source="jacoco.xml")
    assert metrics.format == "jacoco"
    assert (metrics.lines_covered, metrics.lines_total) == (80, 100)
    assert metrics.branches_total is None  # the BRANCH counter belongs to a class only
    assert (metrics.methods_covered, metrics.methods_total) == (9, 10)


def test_jacoco_without_line_counter_is_an_error() -> None:
    """A JaCoCo report without report-level LINE counter is rejected, not 0 %."""
    with pytest.raises(CoverageReportError, match="LINE"):
        parse_coverage_bytes(b'<report name="x"><sessioninfo id="s"/></report>')


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (BOMB, "unsafe"),
        (XXE, "unsafe"),
        (b'{"totals": {"covered_lines": 3', "not valid JSON"),
        (b'{"meta": {}}', "totals"),
        (b'{"totals": {"covered_lines": 5, "num_statements": 4}}', "exceeds"),
        (b'{"totals": {"covered_lines": "x", "num_statements": 4}}', "covered_lines"),
        (b"<coverage line-rate='0.5'/>", "lines-covered"),
        (b"<coverage lines-valid='10' lines-covered='5'", "not well-formed"),
        (b"<html/>", "neither"),
        (b"plain text", "not a coverage report"),
    ],
)
def test_malformed_reports_raise(data: bytes, message: str) -> None:
    """Malformed, unsafe or foreign reports raise CoverageReportError with the reason."""
    with pytest.raises(CoverageReportError, match=message) as info:
        parse_coverage_bytes(data, source="cov.file")
    assert "cov.file" in str(info.value)


def test_parse_missing_file(tmp_path: Path) -> None:
    """A missing report file raises CoverageReportError naming it."""
    with pytest.raises(CoverageReportError, match="not found"):
        parse_coverage(tmp_path / "coverage.json")


# ----------------------------------------------------------------------------- judges
async def test_preservation_threshold_is_inclusive(tmp_path: Path, reports: Path) -> None:
    """A drop equal to the threshold passes; a larger drop fails."""
    ws = workspace_with(tmp_path, reports, "coverage.json")
    current = 400 / 6
    ok = await CoveragePreservation(threshold=5.0)(ctx_for(ws, baseline_coverage=current + 5.0))
    assert ok.status is Status.PASS
    assert ok.checks[0].name == "coverage_preserved"
    assert ok.metadata["coverage_drop"] == pytest.approx(5.0)
    assert ok.metadata["report"] == "coverage.json"
    bad = await CoveragePreservation(threshold=5.0)(ctx_for(ws, baseline_coverage=current + 5.5))
    assert bad.status is Status.FAIL
    assert "exceeds threshold" in bad.reasoning


async def test_preservation_any_improvement_passes(tmp_path: Path, reports: Path) -> None:
    """Coverage above the baseline passes (Cobertura report found by default)."""
    ws = workspace_with(tmp_path, reports, "coverage.xml")
    result = await CoveragePreservation(threshold=0)(ctx_for(ws, baseline_coverage=10))
    assert result.status is Status.PASS
    assert result.metadata["format"] == "cobertura"


async def test_default_report_order_prefers_json(tmp_path: Path, reports: Path) -> None:
    """With several reports present, coverage.json is used first."""
    ws = workspace_with(tmp_path, reports, "coverage.json", "coverage.xml")
    result = await CoveragePreservation()(ctx_for(ws, baseline_coverage=50))
    assert result.metadata["report"] == "coverage.json"


async def test_jacoco_default_location(tmp_path: Path) -> None:
    """The JaCoCo report is found at target/site/jacoco/jacoco.xml."""
    path = tmp_path / "target" / "site" / "jacoco" / "jacoco.xml"
    path.parent.mkdir(parents=True)
    path.write_bytes(JACOCO)
    result = await CoveragePreservation()(ctx_for(tmp_path, baseline_coverage=82.0))
    assert result.status is Status.PASS
    assert result.metadata["current_coverage"] == pytest.approx(80.0)
    assert result.metadata["format"] == "jacoco"


async def test_missing_baseline_abstains(tmp_path: Path, reports: Path) -> None:
    """No baseline_coverage is ABSTAIN for both judges."""
    ws = workspace_with(tmp_path, reports, "coverage.json")
    assert (await CoveragePreservation()(ctx_for(ws))).status is Status.ABSTAIN
    assert (await CoverageImprovement()(ctx_for(ws))).status is Status.ABSTAIN


@pytest.mark.parametrize("baseline", [float("nan"), float("inf"), 150, -1, "80", True, [80]])
async def test_malformed_baseline_is_error(tmp_path: Path, reports: Path, baseline: object) -> None:
    """A non-numeric, non-finite or out-of-range baseline is ERROR with the key named."""
    ws = workspace_with(tmp_path, reports, "coverage.json")
    result = await CoveragePreservation()(ctx_for(ws, baseline_coverage=baseline))
    assert result.status is Status.ERROR
    assert "baseline_coverage" in result.reasoning


async def test_missing_report_is_error(tmp_path: Path) -> None:
    """No report in the workspace is ERROR listing where it looked."""
    result = await CoveragePreservation()(ctx_for(tmp_path, baseline_coverage=80))
    assert result.status is Status.ERROR
    assert "coverage.json" in result.reasoning and "jacoco.xml" in result.reasoning
    named = await CoveragePreservation(report="out/cov.json")(
        ctx_for(tmp_path, baseline_coverage=1)
    )
    assert named.status is Status.ERROR and "out/cov.json" in named.reasoning


@pytest.mark.parametrize("data", [b'{"totals": {', BOMB, XXE, b"garbage"])
async def test_corrupt_report_is_error_not_zero(tmp_path: Path, data: bytes) -> None:
    """A corrupt or unsafe report is ERROR; it is never scored as 0 % coverage."""
    (tmp_path / "coverage.xml").write_bytes(data)
    for judge in (CoveragePreservation(), CoverageImprovement()):
        result = await judge(ctx_for(tmp_path, baseline_coverage=50))
        assert result.status is Status.ERROR
        assert result.score is None
        assert "coverage.xml" in result.reasoning


async def test_report_without_lines_is_error(tmp_path: Path) -> None:
    """A report that measured nothing cannot be compared: ERROR."""
    (tmp_path / "coverage.json").write_text('{"totals": {"covered_lines": 0, "num_statements": 0}}')
    result = await CoveragePreservation()(ctx_for(tmp_path, baseline_coverage=50))
    assert result.status is Status.ERROR and "no line coverage" in result.reasoning


async def test_report_path_escape_is_refused(tmp_path: Path, reports: Path) -> None:
    """report= outside the workspace is ERROR unless allow_outside."""
    ws = tmp_path / "ws"
    ws.mkdir()
    report = str(reports / "coverage.json")
    refused = await CoveragePreservation(report=report)(ctx_for(ws, baseline_coverage=50))
    assert refused.status is Status.ERROR and "outside the workspace" in refused.reasoning
    allowed = await CoveragePreservation(report=report, allow_outside=True)(
        ctx_for(ws, baseline_coverage=50)
    )
    assert allowed.status is Status.PASS


async def test_improvement_scores_gain(tmp_path: Path, reports: Path) -> None:
    """Score is gain / max_improvement, clamped; PASS needs a strictly positive gain."""
    ws = workspace_with(tmp_path, reports, "coverage.json")
    current = 400 / 6
    half = await CoverageImprovement(max_improvement=20)(
        ctx_for(ws, baseline_coverage=current - 10)
    )
    assert half.status is Status.PASS
    assert half.score == pytest.approx(0.5)
    full = await CoverageImprovement(max_improvement=5)(ctx_for(ws, baseline_coverage=0))
    assert full.score == 1.0
    none = await CoverageImprovement()(ctx_for(ws, baseline_coverage=current))
    assert none.status is Status.FAIL and none.score == 0.0
    worse = await CoverageImprovement()(ctx_for(ws, baseline_coverage=90))
    assert worse.status is Status.FAIL and worse.score == 0.0


async def test_improvement_minimum(tmp_path: Path, reports: Path) -> None:
    """An improvement below `minimum` fails with the minimum check."""
    ws = workspace_with(tmp_path, reports, "coverage.json")
    result = await CoverageImprovement(minimum=80)(ctx_for(ws, baseline_coverage=10))
    assert result.status is Status.FAIL
    assert [(c.name, c.passed) for c in result.checks] == [
        ("coverage_improved", True),
        ("minimum_coverage_met", False),
    ]
    assert result.score is not None and result.score > 0


async def test_branch_metric_and_metrics_baseline(tmp_path: Path, reports: Path) -> None:
    """metric='branch' compares branch coverage; a CoverageMetrics baseline is accepted."""
    ws = workspace_with(tmp_path, reports, "coverage.json")
    baseline = CoverageMetrics(
        format="cobertura",
        source="old.xml",
        lines_covered=1,
        lines_total=2,
        branches_covered=1,
        branches_total=4,
    )
    result = await CoverageImprovement(metric="branch", max_improvement=50)(
        ctx_for(ws, baseline_coverage=baseline)
    )
    assert result.status is Status.PASS
    assert result.metadata["baseline_coverage"] == 25.0
    assert result.metadata["current_coverage"] == 50.0
    assert result.score == pytest.approx(0.5)


def test_coverage_judge_validation() -> None:
    """Bad thresholds, max_improvement <= 0, minimum out of range, unknown metric: ValueError."""
    with pytest.raises(ValueError):
        CoverageImprovement(max_improvement=0)
    with pytest.raises(ValueError):
        CoverageImprovement(minimum=101)
    with pytest.raises(ValueError):
        CoveragePreservation(threshold=-1)
    with pytest.raises(ValueError):
        CoveragePreservation(threshold=float("nan"))
    with pytest.raises(ValueError):
        CoveragePreservation(metric="lines")  # type: ignore[arg-type]

"""The text report prints a confusion matrix (human label x judge) for every labelled judge."""

from __future__ import annotations

from pathlib import Path

from agentjudge.harness._agreement import AgreementSummary
from agentjudge.harness._agreement_report import CONFUSION_MAX, confusion_lines
from agentjudge.harness._report import render_report, table
from tests.harness.html_support import build_labelled_run, build_runs


def test_report_prints_each_labelled_judges_confusion_matrix(tmp_path: Path) -> None:
    """Rows are human labels, columns what the judge said, with row totals; the verdict too."""
    text = render_report(build_labelled_run(tmp_path))
    start = text.index("confusion (rows: human label")
    block = text[start : text.index("agreement among jury members", start)].splitlines()
    assert block[1:6] == [
        "  exact (n 9):",
        "    human \\ judge  fail  pass  total",
        "    -------------  ----  ----  -----",
        "    fail              2     1      3",
        "    pass              1     5      6",
    ]
    assert "  length (n 9):" in block and "  (verdict) (n 9):" in block


def test_report_without_human_labels_prints_no_confusion(tmp_path: Path) -> None:
    """An unlabelled run has no agreement section and so no matrix."""
    _, run = build_runs(tmp_path)
    assert "confusion (rows" not in render_report(run)


def test_a_matrix_too_wide_to_read_is_named_not_printed() -> None:
    """Numeric labels against fractional scores: one line pointing at summary.json."""
    values = [f"0.{i:02d}" for i in range(CONFUSION_MAX + 1)]
    a = AgreementSummary(
        n=len(values),
        accuracy=None,
        accuracy_ci95=None,
        cohen_kappa=None,
        krippendorff_alpha=None,
        confusion={v: {v: 1} for v in values},
    )
    assert confusion_lines("score", a, table) == [
        f"  score: {CONFUSION_MAX + 1} human labels x {CONFUSION_MAX + 1} judge values, too many "
        "to print (agreement.confusion in summary.json)"
    ]

"""The shipped examples run end to end (offline) through the real entry points.

`make run`'s commands run verbatim, as a shell starts them, in tests/test_readme.py; here the
rag_qa and trust examples' steps run the same entry point forked from the preloaded interpreter
of `cli_support` (what they test is the examples' workflow and results, not the start-up). The
LLM jury example is a script: it runs as one (its clients must close before the interpreter's
exit, where an unclosed one would warn).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_support import cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_rag_qa_example_passes_its_gates_and_reports(tmp_path: Path) -> None:
    """`make run`: the rag_qa suite passes its gates, twice in a row, and the report prints.

    Re-running into the same folder works with --overwrite.
    """
    suite = str(ROOT / "examples" / "rag_qa" / "agentjudge.toml")
    out = str(tmp_path / "rag_qa")
    for _ in range(2):
        proc = cli(tmp_path, "run", suite, "--out", out, "--overwrite")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "rag_qa" / "summary.json").read_text())
    assert summary["cases"] == {"total": 30, "errors": 1, "error_rate": 1 / 30}
    assert set(summary["judges"]) >= {
        "citation_precision",
        "citation_recall",
        "route_accuracy",
        "refusal_correctness",
    }
    assert all(gate["passed"] for gate in summary["gates"])
    report = cli(tmp_path, "report", out)
    assert report.returncode == 0
    assert "citation_precision" in report.stdout and "by tag:" in report.stdout


def test_llm_jury_example_runs_against_the_fake_server(tmp_path: Path) -> None:
    """The LLM jury example runs offline, passes its gates and leaves no warnings."""
    proc = run(str(ROOT / "examples" / "llm_jury" / "run.py"), str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "juror_a" in proc.stdout and "result: PASSED" in proc.stdout
    assert "Unclosed" not in proc.stderr
    rows = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert len(rows) == 6


def test_trust_example_calibrates_and_keeps_its_guarantee_on_held_out_cases(
    tmp_path: Path,
) -> None:
    """examples/trust: calibration run, calibrate, thresholded run on the test split."""
    suite = str(ROOT / "examples" / "trust" / "agentjudge.toml")
    steps = [
        ("run", suite, "--calibration", "--out", "calib"),
        ("calibrate", "calib", "--alpha", "0.15", "--delta", "0.1"),
        ("run", suite, "--thresholds", "calib/thresholds.json", "--out", "trusted",
         "--dataset", str(ROOT / "examples" / "trust" / "test.jsonl")),
    ]  # fmt: skip
    for step in steps:
        proc = cli(tmp_path, *step)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    written = json.loads((tmp_path / "calib" / "thresholds.json").read_text())
    assert {t["basis"] for t in written["statistics"]["by_tier"].values()} == {"tested"}
    summary = json.loads((tmp_path / "trusted" / "summary.json").read_text())
    block = summary["cascade"]
    assert 0.0 < block["coverage"] < 1.0  # some held-out cases abstain rather than guess
    _, high = block["selective_agreement_ci95"]
    assert high >= 0.85  # 1 - alpha lies within (or below) the held-out interval
    assert summary["judges"]["cheap"]["agreement"]["n"] == 400
    # The block is tallied live; folding the results file gives the same (resume, reports).
    from agentjudge.harness._results import iter_rows
    from agentjudge.harness._summary import RunAggregate

    folded = RunAggregate(list(summary["judges"]))
    for row in iter_rows(tmp_path / "trusted" / "results.jsonl"):
        folded.add_row(row)
    calibration = block.pop("calibration")  # read from the thresholds file, not tallied
    assert folded.cascade.block() == block
    assert calibration["guarantee"]["holds"] is True and calibration["untested"] == "escalate"
    test_split = str(ROOT / "examples" / "trust" / "test.jsonl")
    proc = cli(
        tmp_path, "run", suite, "--thresholds", "calib/thresholds.json",
        "--out", "parallel", "--dataset", test_split, "--workers", "2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parallel = json.loads((tmp_path / "parallel" / "summary.json").read_text())["cascade"]
    assert parallel == {**block, "calibration": calibration}

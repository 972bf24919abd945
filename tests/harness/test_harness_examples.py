"""The shipped examples run end to end (offline) through the real entry points."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_rag_qa_example_passes_its_gates_and_reports(tmp_path: Path) -> None:
    """`make run`: the rag_qa suite passes its gates, twice in a row, and the report prints."""
    suite = str(ROOT / "examples" / "rag_qa" / "agentjudge.toml")
    out = str(tmp_path / "rag_qa")
    for _ in range(2):  # re-running into the same folder works with --overwrite
        proc = run("-m", "agentjudge", "run", suite, "--out", out, "--overwrite", cwd=tmp_path)
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
    report = run("-m", "agentjudge", "report", out, cwd=tmp_path)
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

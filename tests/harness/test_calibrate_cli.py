"""Calibrating a cascade end to end: run --calibration, calibrate, run --thresholds, report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentjudge.calibration import calibrate_thresholds, evaluate_thresholds
from agentjudge.harness import iter_rows
from agentjudge.harness._cli import main

# Case i of the dataset: the cheap tier is sure and right on cases 0-59, unsure (0.3) on
# 60-99 and wrong on half of those; the strong tier is sure (0.9) and right on 60-95, unsure
# (0.2) and wrong on 96-99. Every human label is "pass" on even cases, "fail" on odd ones.
N = 100
JUDGES = """
from agentjudge.core import Judgment
from agentjudge import Cascade, Tier, TierPolicy


def _say(ctx, confidence, right, usd):
    truth = ctx.output["truth"]
    said = truth if right else not truth
    make = Judgment.passed if said else Judgment.failed
    meta = {"model": "fake:m", "cost_usd": usd}
    return make("scripted", confidence=confidence, metadata=meta)


def cheap(ctx):
    i = ctx.output["i"]
    return _say(ctx, 0.95 if i < 60 else 0.3, i < 60 or i % 4 < 2, 0.0001)


def strong(ctx):
    i = ctx.output["i"]
    return _say(ctx, 0.9 if i < 96 else 0.2, i < 96, 0.01)


def plain(ctx):
    return Judgment.passed("no confidence")


cascade = Cascade(
    [Tier("cheap", cheap, TierPolicy.ACCEPT_ON_ALL_PASS), Tier("strong", strong)], name="grader"
)
unsure = Cascade([Tier("cheap", cheap, TierPolicy.ACCEPT_ON_ALL_PASS), Tier("plain", plain)])
not_a_cascade = [cheap, strong]
"""
TASK = """
def answer(case):
    return {"i": case.input, "truth": case.input % 2 == 0}
"""
# File references (not module names): the harness imports them under a name made from their
# path, so these modules never shadow another test's `task` or `judges` in sys.modules.
SUITE = """
dataset = "data.jsonl"
task = "calib_task.py:answer"
judges = "calib_judges.py:cascade"
concurrency = 8
"""


def cheap_pair(i: int) -> tuple[float, bool]:
    return (0.95 if i < 60 else 0.3, i < 60 or i % 4 < 2)


def strong_pair(i: int) -> tuple[float, bool]:
    return (0.9 if i < 96 else 0.2, i < 96)


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_project(folder: Path) -> Path:
    (folder / "calib_judges.py").write_text(JUDGES, encoding="utf-8")
    (folder / "calib_task.py").write_text(TASK, encoding="utf-8")
    (folder / "agentjudge.toml").write_text(SUITE, encoding="utf-8")
    labelled = [{"id": f"c{i}", "input": i, "human": i % 2 == 0} for i in range(N)]
    write_rows(folder / "data.jsonl", labelled)
    write_rows(folder / "unlabelled.jsonl", [{"id": f"u{i}", "input": i} for i in range(5)])
    return folder


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_project(tmp_path)


def run(*args: str) -> int:
    return main(["run", "--progress", "off", *args])


@pytest.fixture(scope="module")
def calibration_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `run --calibration` of the project, shared by the tests that calibrate it.

    Its judges are deterministic, so every test's own run wrote the same rows;
    `test_calibration_run_records_every_tier_with_its_confidence` checks a run of its own.
    """
    folder = write_project(tmp_path_factory.mktemp("calibration"))
    suite, out = str(folder / "agentjudge.toml"), str(folder / "calib")
    assert run(suite, "--calibration", "--out", out) == 0
    return folder / "calib"


@pytest.fixture
def calibration_copy(project: Path, calibration_run: Path) -> None:
    """The shared calibration run as ``calib`` in ``project`` (each test writes in its copy)."""
    shutil.copytree(calibration_run, project / "calib")


uses_the_calibration_run = pytest.mark.usefixtures("calibration_copy")


def calibrated(project: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    settings = ["--alpha", "0.1", "--delta", "0.1", "--min-support", "10", "--grid", "21"]
    code = main(["calibrate", "calib", *settings])
    assert code == 0, capsys.readouterr().err
    return dict(json.loads((project / "calib" / "thresholds.json").read_text("utf-8")))


def test_calibration_run_records_every_tier_with_its_confidence(project: Path) -> None:
    """`run --calibration` judges every case with every tier, even where a tier would stop."""
    assert run("--calibration", "--out", "calib") == 0
    rows = list(iter_rows(project / "calib" / "results.jsonl"))
    assert len(rows) == N
    for row in rows:
        i = row["input"]
        tiers = {t["name"]: t for t in row["tiers"]}
        assert list(tiers) == ["cheap", "strong"]
        assert (tiers["cheap"]["confidence"], tiers["strong"]["confidence"]) == (
            cheap_pair(i)[0],
            strong_pair(i)[0],
        )
    summary = json.loads((project / "calib" / "summary.json").read_text("utf-8"))
    assert summary["config"]["calibration"] is True


@uses_the_calibration_run
def test_calibrate_writes_the_thresholds_of_fixed_sequence_testing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The thresholds file holds calibrate_thresholds' result per tier and its statistics."""
    written = calibrated(project, capsys)
    pairs = [[cheap_pair(i) for i in range(N)], [strong_pair(i) for i in range(N)]]
    expected = calibrate_thresholds(pairs, alpha=0.1, delta=0.1, min_support=10, grid=21)
    assert written["thresholds"] == dict(zip(["cheap", "strong"], expected, strict=True))
    assert 0.3 < written["thresholds"]["cheap"] <= 0.95  # the unsure cheap cases escalate
    report = evaluate_thresholds(pairs, expected)
    assert (report.per_tier, report.abstained) == ((60, 36), 4)
    stats = written["statistics"]
    assert stats["by_tier"]["cheap"]["decided"] == 60 and stats["abstained"] == 4
    cheap = stats["by_tier"]["cheap"]
    assert (cheap["basis"], cheap["calibrated_on"], cheap["errors"]) == ("tested", N, 0)
    assert cheap["risk_bound"] is not None and cheap["risk_bound"] <= 0.1
    assert stats["by_tier"]["strong"]["calibrated_on"] == N - 60
    assert stats["coverage"] == 0.96 and stats["selective_agreement"] == 1.0
    assert stats["selective_agreement_n"] == 96 and len(stats["selective_agreement_ci95"]) == 2
    assert (written["alpha"], written["delta"], written["n"]) == (0.1, 0.1, N)
    assert written["method"].startswith("fixed-sequence testing")
    cost = written["cost"]  # every case pays cheap; the 40 escalated ones pay strong too
    assert cost["thresholded_usd_per_case"] == pytest.approx(0.0001 + 0.4 * 0.01)
    assert cost["last_tier_only_usd_per_case"] == pytest.approx(0.01)
    out = capsys.readouterr().out
    assert "cheap" in out and "coverage 96.0%" in out and "n=96" in out


@uses_the_calibration_run
def test_thresholded_run_reports_coverage_agreement_and_tier_shares(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run --thresholds` stops on confidence, abstains below the last threshold, reports it."""
    calibrated(project, capsys)
    assert run("--thresholds", "calib/thresholds.json", "--out", "applied") == 0
    rows = {r["id"]: r for r in iter_rows(project / "applied" / "results.jsonl")}
    assert [t["name"] for t in rows["c0"]["tiers"]] == ["cheap"]  # sure: no escalation
    assert [t["policy"] for t in rows["c70"]["tiers"]] == ["stop_on_confidence", "final"]
    assert rows["c97"]["verdict"]["status"] == "abstain"
    block = json.loads((project / "applied" / "summary.json").read_text("utf-8"))["cascade"]
    assert block["by_tier"] == {
        "cheap": {"decided": 60, "share": 0.6},
        "strong": {"decided": 36, "share": 0.36},
    }
    assert (block["n"], block["abstained"], block["coverage"]) == (N, 4, 0.96)
    assert (block["selective_agreement"], block["selective_agreement_n"]) == (1.0, 96)
    capsys.readouterr()
    assert main(["report", "applied"]) == 0
    report = capsys.readouterr().out
    assert "thresholded cascade" in report and "coverage 96.0%" in report
    assert "tier strong: 36 cases (36.0%)" in report and "(n=96)" in report


@uses_the_calibration_run
def test_the_output_and_thresholds_file_say_the_guarantee_holds(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every deciding tier tested and delta split (the defaults): the guarantee holds."""
    written = calibrated(project, capsys)
    assert (written["untested"], written["split_delta"]) == ("escalate", True)
    assert written["guarantee"]["holds"] is True and written["guarantee"]["untested"] == []
    assert written["guarantee"]["statement"].startswith("holds: with probability >= 0.9")
    for tier in written["statistics"]["by_tier"].values():
        assert (tier["tested"], tier["decides"], tier["delta"]) == (True, True, 0.05)
    assert "guarantee holds: with probability >= 0.9" in capsys.readouterr().out


def calibrate_untested(project: Path, *rule: str) -> dict[str, Any]:
    """Calibrate with min_support 70: the cheap tier's highest candidate (0.3) fails its test."""
    settings = ["--alpha", "0.1", "--delta", "0.1", "--min-support", "70", "--grid", "21"]
    assert main(["calibrate", "calib", *settings, *rule]) == 0
    return dict(json.loads((project / "calib" / "thresholds.json").read_text("utf-8")))


@uses_the_calibration_run
def test_an_untested_tier_never_decides_and_every_output_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--untested escalate: null threshold, marked in the table, the file and the run report."""
    written = calibrate_untested(project)
    out = capsys.readouterr().out
    assert written["thresholds"]["cheap"] is None
    cheap = written["statistics"]["by_tier"]["cheap"]
    assert (cheap["basis"], cheap["tested"], cheap["decides"]) == ("highest_untested", False, False)
    assert written["guarantee"]["holds"] is True and written["guarantee"]["untested"] == ["cheap"]
    assert "cheap never decides (untested)" in written["guarantee"]["statement"]
    assert "never" in out and "(UNTESTED)" in out and "never decides; it only adds cost" in out
    assert run("--thresholds", "calib/thresholds.json", "--out", "applied") == 0
    block = json.loads((project / "applied" / "summary.json").read_text("utf-8"))["cascade"]
    assert block["by_tier"]["cheap"]["decided"] == 0  # every case went on to strong
    assert block["calibration"]["guarantee"]["holds"] is True
    assert block["calibration"]["tiers"]["cheap"] == {
        "threshold": None,
        "basis": "highest_untested",
        "tested": False,
    }
    capsys.readouterr()
    assert main(["report", "applied"]) == 0
    report = capsys.readouterr().out
    assert "tier cheap: 0 cases (0.0%) - no tested threshold (highest_untested)" in report
    assert "guarantee holds: with probability >= 0.9" in report


@uses_the_calibration_run
def test_the_papers_rule_applies_the_untested_threshold_and_says_nothing_holds(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--untested paper --no-split-delta: the fallback decides; no guarantee, said everywhere."""
    written = calibrate_untested(project, "--untested", "paper", "--no-split-delta")
    out = capsys.readouterr().out
    assert 0.2 < written["thresholds"]["cheap"] <= 0.3  # applied: every case is at or above
    assert (written["untested"], written["split_delta"]) == ("paper", False)
    guarantee = written["guarantee"]
    # cheap accepts every case at its fallback: none remains, so strong reuses it (untested)
    assert (guarantee["holds"], guarantee["deciding_untested"]) == (False, ["cheap", "strong"])
    assert "does not hold: cheap (highest_untested), strong (reused_previous) decide" in out
    assert "applied anyway (the paper's fallback)" in out
    assert run("--thresholds", "calib/thresholds.json", "--out", "applied") == 0
    capsys.readouterr()
    assert main(["report", "applied"]) == 0
    report = capsys.readouterr().out
    assert "- UNTESTED threshold (highest_untested): decides on no evidence" in report
    assert "guarantee does not hold: cheap" in report


def test_a_hand_written_thresholds_file_carries_no_guarantee(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Thresholds without calibration evidence: the report says nothing is known to hold."""
    (project / "t.json").write_text('{"thresholds": {"cheap": 0.5, "strong": null}}', "utf-8")
    assert run("--thresholds", "t.json", "--out", "hand") == 0
    capsys.readouterr()
    assert main(["report", "hand"]) == 0
    report = capsys.readouterr().out
    assert "guarantee unknown: the thresholds file carries no 'guarantee'" in report
    rows = {r["id"]: r for r in iter_rows(project / "hand" / "results.jsonl")}
    assert rows["c70"]["verdict"]["status"] == "abstain"  # strong: null, never decides
    # A file from before the guarantee block: its bases still mark the untested tier.
    older = {"thresholds": {"cheap": 0.5, "strong": 0.1}, "statistics": {"by_tier": {
        "cheap": {"basis": "highest_untested"}, "strong": "garbled"}}}  # fmt: skip
    (project / "t.json").write_text(json.dumps(older), "utf-8")
    assert run("--thresholds", "t.json", "--out", "older") == 0
    capsys.readouterr()
    assert main(["report", "older"]) == 0
    report = capsys.readouterr().out
    assert "- UNTESTED threshold (highest_untested): decides on no evidence" in report
    assert "guarantee unknown" in report


@uses_the_calibration_run
def test_suite_thresholds_key_resolves_against_the_suite_file(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`thresholds = "..."` in the suite file applies the thresholds like the flag."""
    calibrated(project, capsys)
    suite = project / "agentjudge.toml"
    suite.write_text(SUITE + 'thresholds = "calib/thresholds.json"\n', encoding="utf-8")
    elsewhere = project / "sub"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the path is relative to the suite file, not the cwd
    assert main(["run", str(suite), "--progress", "off", "--out", str(project / "keyed")]) == 0
    block = json.loads((project / "keyed" / "summary.json").read_text("utf-8"))["cascade"]
    assert block["by_tier"]["cheap"]["decided"] == 60


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_calibration_refuses_judges_that_are_not_a_cascade(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--calibration with a list of judges exits 2 with one line saying a Cascade is needed."""
    assert run("--calibration", "--judges", "calib_judges.py:not_a_cascade", "--out", "x") == 2
    assert "needs the suite's judges to be a single Cascade" in error_line(capsys)


def test_calibration_refuses_a_dataset_without_human_labels(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--calibration on a dataset with no `human` exits 2 naming the file."""
    assert run("--calibration", "--dataset", "unlabelled.jsonl", "--out", "x") == 2
    line = error_line(capsys)
    assert "human" in line and "unlabelled.jsonl" in line
    assert not (project / "x").exists()


def test_calibrate_refuses_a_run_that_short_circuited(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain run (tiers stopped early) is refused: summary.json says it was no calibration."""
    assert run("--out", "plain") == 0
    assert main(["calibrate", "plain", "--alpha", "0.1", "--delta", "0.1"]) == 2
    assert "not a calibration run" in error_line(capsys)
    (project / "plain" / "summary.json").unlink()  # the rows alone say so too, with the row
    assert main(["calibrate", "plain", "--alpha", "0.1", "--delta", "0.1"]) == 2
    line = error_line(capsys)
    assert "results.jsonl: row" in line and "'tiers'" in line and "--calibration" in line


def test_calibrate_refuses_a_tier_without_confidence(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tier whose judges never give a confidence cannot be calibrated: named, exit 2."""
    assert run("--calibration", "--judges", "calib_judges.py:unsure", "--out", "u") == 0
    assert main(["calibrate", "u", "--alpha", "0.1", "--delta", "0.1"]) == 2
    line = error_line(capsys)
    assert "tier 'plain' has no confidence" in line and "cannot be calibrated" in line


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"thresholds": {"cheap": 0.5}}', "missing from the file ['strong']"),
        ('{"thresholds": {"cheap": 0.5, "strong": 0.5, "x": 1}}', "not in the cascade ['x']"),
        ('{"thresholds": {"cheap": 1.5, "strong": 0.5}}', "'thresholds.cheap'"),
        ('{"thresholds": {"cheap": true, "strong": 0.5}}', "'thresholds.cheap'"),
        ('{"thresholds": [0.5]}', "field 'thresholds'"),
        ("{oops", "line 1: not JSON"),
        ('{"thresholds": {"cheap": 0.5, "strong": 0.5, "cheap": 0.9}}', "'cheap' appears twice"),
    ],
)
def test_a_bad_thresholds_file_is_a_clear_error(
    project: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    """Mismatched tier names, out-of-range values and broken JSON exit 2 naming the file."""
    (project / "t.json").write_text(content, encoding="utf-8")
    assert run("--thresholds", "t.json", "--out", "x") == 2
    line = error_line(capsys)
    assert expected in line and "t.json" in line


@uses_the_calibration_run
def test_calibrate_rejects_bad_alpha_and_a_missing_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """alpha outside (0, 1) and a folder without results exit 2 with one line each."""
    assert main(["calibrate", "calib", "--alpha", "1.5", "--delta", "0.1"]) == 2
    assert "alpha" in error_line(capsys)
    assert main(["calibrate", "nowhere", "--alpha", "0.1", "--delta", "0.1"]) == 2
    assert "no results file" in error_line(capsys)


@uses_the_calibration_run
def test_calibrate_command_as_a_program(project: Path) -> None:
    """`python -m agentjudge calibrate` writes --out and exits 0 (the real entry point); it
    imports no engine (a run's switches need it, calibrating does not: ~0.18 s of CPU)."""
    settings = ["--alpha", "0.1", "--delta", "0.1", "--min-support", "10", "--out", "th.json"]
    proc = subprocess.run(
        [sys.executable, "-m", "agentjudge", "calibrate", "calib", *settings],
        cwd=project,
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"},  # what it imports, on stderr
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "agentjudge.harness._calibrate" in imported
    assert "agentjudge.engine" not in imported
    assert set(json.loads((project / "th.json").read_text("utf-8"))["thresholds"]) == {
        "cheap",
        "strong",
    }


@pytest.mark.parametrize(
    ("human", "status", "label", "score", "agrees"),
    [
        (True, "pass", "A", None, True),
        (False, "pass", None, None, False),
        ("fail", "fail", "B", None, True),
        ("B", "fail", "B", None, True),
        ("B", "pass", "A", None, False),
        ("pass", "pass", None, None, True),
        ("relevant", "pass", None, None, False),
        (1, "pass", None, None, True),
        (0, "pass", None, None, False),
        (0.5, "pass", None, 0.5, True),
    ],
)
def test_agreement_rule_follows_the_summary_rule(
    human: object, status: str, label: str | None, score: float | None, agrees: bool
) -> None:
    """Bools and status words compare statuses, other strings labels, numbers scores."""
    from agentjudge.harness._agreement import agrees_with_human

    assert agrees_with_human(human, status, label, score) is agrees


def test_calibration_flag_ignores_the_suites_thresholds_and_the_keys_exclude(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--calibration runs despite a thresholds key; both keys in one suite is exit 2."""
    suite = project / "agentjudge.toml"
    suite.write_text(SUITE + 'thresholds = "missing.json"\n', encoding="utf-8")
    assert run("--calibration", "--out", "calib") == 0
    assert (
        json.loads((project / "calib" / "summary.json").read_text("utf-8"))["config"]["thresholds"]
        is None
    )
    suite.write_text(SUITE + 'calibration = true\nthresholds = "t.json"\n', encoding="utf-8")
    assert run("--out", "x") == 2
    assert "a calibration run takes no thresholds" in error_line(capsys)

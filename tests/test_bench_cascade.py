"""The cascade benchmark's machinery: replay logs, engine vs pure Python, the guarantee rate."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentjudge.calibration import NEVER, calibrate_thresholds, evaluate_thresholds
from agentjudge.harness import Dataset
from agentjudge.judges import ReplayJudge

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_cascade.py"


def _load() -> ModuleType:
    """benchmarks/ is not a package: import the script by path."""
    spec = importlib.util.spec_from_file_location("bench_cascade", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


bench = _load()

SEPARATED = (
    bench.TierSpec("cheap", 0.0001, low=0.3, high=1.0, shape=1.0, knee=0.8),
    bench.TierSpec("mid", 0.001, low=0.3, high=1.0, shape=1.0, knee=0.8),
    bench.TierSpec("expensive", 0.01, low=0.3, high=1.0, shape=1.0, knee=0.8),
)
"""Tiers that are right when sure and wrong when unsure: thresholds separate them cleanly."""


def test_on_a_well_separated_set_the_guarantee_holds_on_every_draw(tmp_path: Path) -> None:
    """Every draw's true agreement reaches 1 - alpha; shares add up; the cascade saves cost."""
    summary = bench.run_benchmark(
        cases=300, draws=4, engine_draws=2, alpha=0.2, delta=0.1, folder=tmp_path,
        specs=SEPARATED,
    )  # fmt: skip
    assert (summary["draws"], summary["engine_draws"], summary["rule"]) == (4, 2, "escalate+split")
    assert summary["check"]["failures"] == 0 and summary["check"]["verdict"] == "PASS"
    assert summary["true_guarantee_rate"] == 1.0 and summary["mean_true_agreement"] >= 0.8
    assert summary["data"].startswith("synthetic data")
    total = sum(summary["tier_shares"].values()) + summary["abstained_share"]
    assert total == pytest.approx(1.0)
    assert 0.0 < summary["cost_saving"] < 1.0


def test_each_draw_calibrates_on_a_fresh_sample() -> None:
    """Draws use fresh calibration and test sets (not re-splits of one), reproducibly."""
    calibrate = bench.calibrator_for("paper")
    options = {"specs": bench.TIERS, "cases": 300, "seed": 0, "alpha": 0.15, "delta": 0.1}
    first, second = (bench.run_draw(k, calibrate, **options) for k in (0, 1))
    assert first.thresholds != second.thresholds
    assert bench.run_draw(0, calibrate, **options).thresholds == first.thresholds
    assert bench.generate(50, "0/calibration/0") != bench.generate(50, "0/test/0")


def test_the_check_is_an_exact_one_sided_binomial_test() -> None:
    """At 200 draws and delta 0.1 a failure rate of 22.5% FAILs; 10% (the promise) passes."""
    assert bench.guarantee_check(45, 200, delta=0.1)["verdict"] == "FAIL"
    passing = bench.guarantee_check(20, 200, delta=0.1)
    assert passing["verdict"] == "PASS" and passing["fail_from"] == 28
    assert bench.guarantee_check(27, 200, delta=0.1)["verdict"] == "PASS"
    assert bench.guarantee_check(28, 200, delta=0.1)["verdict"] == "FAIL"
    assert bench.guarantee_check(0, 200, delta=0.1)["p_value"] == 1.0


TIGHT = (bench.TierSpec("judge", 0.01, low=0.5, high=1.0, shape=1.0),)
"""One calibrated judge (agreement = confidence, uniform in [0.5, 1]): agreement above a
threshold t is (1 + t) / 2, so 1 - alpha = 0.85 needs t >= 0.7 and 0.03 too low is visible."""


def test_a_calibrator_off_by_three_hundredths_fails_and_the_real_one_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Thresholds lowered by 0.03 break the guarantee in most draws: the check says FAIL."""
    options = {"cases": 1000, "draws": 40, "alpha": 0.15, "delta": 0.1, "specs": TIGHT,
               "grid": 501}  # fmt: skip
    # The broken run draws the very sets the honest run drew (the same seeds) and lowers what
    # the honest calibrator finds on them: both are computed once, in the honest run, and
    # handed out again (the sets are frozen tuples, kept alive by the cache, so their ids key
    # the thresholds), instead of generating and calibrating every set twice.
    monkeypatch.setattr(bench, "generate", functools.cache(bench.generate))
    found: dict[tuple[Any, ...], tuple[float, ...]] = {}

    def calibrate_once(tiers: list[Any], **kwargs: Any) -> tuple[float, ...]:
        key = (*map(id, tiers), *sorted(kwargs.items()))
        if key not in found:
            found[key] = calibrate_thresholds(tiers, **kwargs)
        return found[key]

    monkeypatch.setattr(bench, "calibrate_thresholds", calibrate_once)
    honest = bench.run_benchmark(**options)
    assert honest["check"]["verdict"] == "PASS"
    computed = len(found)
    broken = bench.lowered(bench.calibrator_for("escalate+split"), 0.03)
    summary = bench.run_benchmark(calibrator=broken, **options)
    assert len(found) == computed == 40  # the broken run lowered the honest run's thresholds
    assert summary["rule"] == "custom" and summary["check"]["verdict"] == "FAIL"
    assert summary["check"]["failure_rate"] > 0.2


def test_escalate_keeps_the_guarantee_where_the_papers_rule_never_does() -> None:
    """The confidently-wrong cheap tier decides every case under the paper's rule."""
    options = {"cases": 300, "draws": 10, "alpha": 0.15, "delta": 0.1}
    paper = bench.run_benchmark(rule="paper", specs=bench.CONFIDENTLY_WRONG, **options)
    rigorous = bench.run_benchmark(specs=bench.CONFIDENTLY_WRONG, **options)
    assert paper["true_guarantee_rate"] == 0.0 and paper["check"]["verdict"] == "FAIL"
    assert rigorous["true_guarantee_rate"] >= 0.8 and rigorous["check"]["verdict"] == "PASS"
    assert rigorous["never_deciding_share"][0] == 1.0  # the cheap tier never decides


async def test_the_engine_decides_what_evaluate_thresholds_computes(tmp_path: Path) -> None:
    """An Evaluator over a Cascade of ReplayJudges gives evaluate_thresholds' counts and cost."""
    data = bench.generate(150, seed=3)
    judges = [ReplayJudge(path) for path in bench.write_logs(data, tmp_path)]
    for thresholds in ((0.9, 0.8, 0.7), (NEVER, 0.8, 0.7)):
        engine = await bench.run_engine(data, judges, thresholds)
        report = evaluate_thresholds(data.tiers, thresholds)
        assert engine["per_tier"] == list(report.per_tier)
        assert (engine["agreed"], engine["abstained"]) == (report.agreed, report.abstained)
        assert engine["cost"] == pytest.approx(bench._cost(data, thresholds))
        assert report.abstained > 0 and all(report.per_tier[1:])  # every path was exercised


def test_a_mismatch_between_engine_and_pure_python_is_reported() -> None:
    """_check_engine raises when the engine's counts differ from evaluate_thresholds'."""
    report = evaluate_thresholds([[(0.9, True)], [(0.9, True)]], (0.5, 0.5))
    bench._check_engine({"per_tier": [1, 0], "agreed": 1, "abstained": 0, "cost": 1.0}, report, 1.0)
    with pytest.raises(AssertionError, match="engine"):
        bench._check_engine(
            {"per_tier": [0, 1], "agreed": 1, "abstained": 0, "cost": 1.0}, report, 1.0
        )


def test_the_exact_outcome_matches_a_large_sample() -> None:
    """exact_outcome's closed form matches the coverage and agreement measured on 40,000 cases."""
    generate = functools.cache(bench.generate)  # one set per curve: two thresholds share one
    for specs, thresholds in (
        (bench.TIERS, (0.93, 0.85, 0.7)),  # the linear curve
        (SEPARATED, (0.93, 0.85, 0.7)),  # the step curve
        (bench.CONFIDENTLY_WRONG, (1.0, 0.7)),  # a fixed confidence
        (bench.CONFIDENTLY_WRONG, (NEVER, 0.7)),  # a tier that never decides
    ):
        data = generate(40_000, seed=11, specs=specs)
        coverage, agreement = bench.exact_outcome(data.specs, thresholds)
        report = evaluate_thresholds(data.tiers, thresholds)
        assert report.coverage == pytest.approx(coverage, abs=0.01)
        assert report.selective_agreement == pytest.approx(agreement, abs=0.01)


def test_the_written_files_are_a_replay_log_and_a_labelled_dataset(tmp_path: Path) -> None:
    """write_logs writes ReplayJudge logs and a harness dataset carrying the human labels."""
    data = bench.generate(50, seed=5)
    paths = bench.write_logs(data, tmp_path)
    assert [p.name for p in paths] == ["cheap.jsonl", "mid.jsonl", "expensive.jsonl"]
    judge = ReplayJudge(paths[0])
    assert len(judge) == 50
    confidence, agrees = data.tiers[0][7]
    row = json.loads(paths[0].read_text().splitlines()[7])
    assert (row["confidence"], row["label"] == data.human[7]) == (confidence, agrees)
    dataset = Dataset.open(tmp_path / "cases.jsonl")
    assert (dataset.rows, dataset.labelled) == (50, 50)


def test_main_prints_a_table_and_one_json_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The entry point prints the table headed SYNTHETIC DATA, then one JSON line."""
    argv = ["--cases", "200", "--draws", "2", "--engine-draws", "1", "--out", str(tmp_path)]
    code = bench.main(argv)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("SYNTHETIC DATA")
    summary = json.loads(lines[-1])
    assert summary["draws"] == 2 and summary["data"].startswith("synthetic")
    assert code == (0 if summary["check"]["verdict"] == "PASS" else 1)
    assert (tmp_path / "draw0" / "expensive.jsonl").exists()


def test_main_exits_1_for_a_broken_calibrator(capsys: pytest.CaptureFixture[str]) -> None:
    """--lower 0.2 breaks the calibrator: the check FAILs and main exits 1."""
    argv = ["--cases", "300", "--draws", "10", "--engine-draws", "0", "--lower", "0.2"]
    assert bench.main(argv) == 1
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["check"]["verdict"] == "FAIL" and "lowered by 0.2" in summary["rule"]


def test_exact_pairs_are_taken_as_they_are_and_anything_else_is_checked() -> None:
    """The tables are validated with a fast path for ``(float, bool)`` tuples (the benchmark's
    hundreds of thousands of cases); other pairs are converted or named, as before."""
    exact = [(0.9, True), (0.8, False), (1.0, True), (0.7, True)]
    mixed = [(0.9, True), [0.8, False], (1, True), (0.7, True)]
    assert evaluate_thresholds([mixed], (0.75,)) == evaluate_thresholds([exact], (0.75,))
    for bad, fragment in (
        ((1.5, True), "confidence must be within"),
        ((float("nan"), True), "confidence must be within"),
        ((0.5, 1), "must be a bool"),
        ((0.5, True, 0), "must be a pair"),
    ):
        with pytest.raises(ValueError, match=fragment) as raised:
            evaluate_thresholds([[(0.5, True), bad]], (0.5,))
        assert str(raised.value).startswith("tiers[0][1]")

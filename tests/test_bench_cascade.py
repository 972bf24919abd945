"""The cascade benchmark's machinery: replay logs, engine vs pure Python, the guarantee rate."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agentjudge.calibration import evaluate_thresholds
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


def test_on_a_well_separated_set_the_guarantee_holds_on_every_split(tmp_path: Path) -> None:
    """Every split's test agreement reaches 1 - alpha; shares add up; the cascade saves cost."""
    summary = bench.run_benchmark(
        cases=600, splits=4, engine_splits=2, alpha=0.2, delta=0.1, folder=tmp_path,
        specs=SEPARATED,
    )  # fmt: skip
    assert (summary["splits"], summary["engine_splits"]) == (4, 2)
    assert summary["guarantee_rate"] == 1.0 and summary["exact_guarantee_rate"] == 1.0
    assert summary["guarantee"] == "PASS"
    assert summary["mean_test_agreement"] >= 0.8
    total = sum(summary["tier_shares"].values()) + summary["abstained_share"]
    assert total == pytest.approx(1.0)
    assert 0.0 < summary["cost_saving"] < 1.0
    assert summary["reference"]["n"] == 600


async def test_the_engine_decides_what_evaluate_thresholds_computes(tmp_path: Path) -> None:
    """An Evaluator over a Cascade of ReplayJudges gives evaluate_thresholds' counts and cost."""
    data = bench.generate(300, seed=3)
    judges = [ReplayJudge(path) for path in bench.write_logs(data, tmp_path)]
    thresholds = (0.9, 0.8, 0.7)
    test = list(range(0, 300, 2))
    engine = await bench.run_engine(data, judges, test, thresholds)
    report = evaluate_thresholds([[tier[i] for i in test] for tier in data.tiers], thresholds)
    assert engine["per_tier"] == list(report.per_tier)
    assert (engine["agreed"], engine["abstained"]) == (report.agreed, report.abstained)
    assert engine["cost"] == pytest.approx(bench._cost(data, test, thresholds))
    assert report.abstained > 0 and all(report.per_tier)  # every path was exercised


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
    thresholds = (0.93, 0.85, 0.7)
    for specs in (bench.TIERS, SEPARATED):  # the linear and the step curve
        data = bench.generate(40_000, seed=11, specs=specs)
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
    """The entry point prints the table, then one JSON line; it exits 1 only on FAIL."""
    argv = ["--cases", "400", "--splits", "2", "--engine-splits", "1", "--out", str(tmp_path)]
    code = bench.main(argv)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("splits (through the engine)")
    summary = json.loads(lines[-1])
    assert summary["splits"] == 2
    assert code == (0 if summary["guarantee"] == "PASS" else 1)
    assert (tmp_path / "expensive.jsonl").exists()


def test_splits_are_reproducible() -> None:
    """The same seed gives the same thresholds (the benchmark's figures can be re-run)."""
    data = bench.generate(400, seed=2)
    first = bench.run_split(data, None, random.Random(9), alpha=0.15, delta=0.1)
    again = bench.run_split(data, None, random.Random(9), alpha=0.15, delta=0.1)
    assert first.thresholds == again.thresholds

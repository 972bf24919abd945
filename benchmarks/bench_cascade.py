"""Cascade benchmark: calibrated confidence thresholds on replayed judges, checked over splits.

Run: ``uv run python benchmarks/bench_cascade.py [--splits 200] [--cases 2000] [--alpha 0.15]
[--delta 0.1] [--engine-splits N] [--seed 0] [--out DIR]`` (no network; about a minute on a
busy 2-core machine).

What it does (issue 15, "Benchmark"):

1. Generates a synthetic three-tier calibration set (`TIERS`): each tier's confidence ``c`` is
   drawn as ``0.5 + 0.5 * U ** shape`` (U uniform in [0, 1]) and the tier agrees with the
   human label with probability ``acc(c) = low + (high - low) * (c - 0.5) / 0.5`` (a known,
   linear accuracy/confidence curve; `TierSpec` also has a step curve; tiers err independently
   of each other). The cheap tier
   is over-confident (it says 0.8 when it is right 73% of the time), the expensive one is
   calibrated and right 81% of the time overall (below ``1 - alpha`` = 0.85: alone it needs
   abstentions to reach it).
2. Writes one replay log per tier (the `agentjudge.judges.ReplayJudge` format, with per-call
   prices 1 : 10 : 100) and a dataset with the human labels, and loads the logs back as
   `ReplayJudge` s.
3. For each random half/half calibration/test split: `calibrate_thresholds(alpha, delta)` on
   the calibration half, then the test half through the real engine (an `Evaluator` over a
   `Cascade` of the replay judges, STOP_ON_CONFIDENCE tiers and a FINAL threshold), checked
   equal to the pure-Python `evaluate_thresholds` of the same split (cases per tier, agreement,
   abstentions and cost). ``--engine-splits N`` sends only the first N splits through the
   engine (the rest are evaluated in pure Python); by default every split goes through it.
4. Reports the guarantee rate (share of splits whose test agreement >= 1 - alpha, with its
   Wilson interval, PASS when the interval reaches 1 - delta), mean coverage, the share of
   cases each tier decided, the cost saving against calling the last tier on every case, and
   the last tier alone as the reference. Because the curves are known it also reports the
   *exact* rate: how often the thresholds' true (population) agreement >= 1 - alpha, which
   is what the theorem bounds (the test half adds sampling noise of its own).

Prints a short table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from agentjudge import Cascade, Context, Evaluator, Status, Tier, TierPolicy
from agentjudge.agreement import wilson_interval
from agentjudge.calibration import CalibrationReport, calibrate_thresholds, evaluate_thresholds
from agentjudge.judges import ReplayJudge

Case = tuple[float, bool]


@dataclass(frozen=True)
class TierSpec:
    """One synthetic tier: its price and its known confidence and accuracy curves."""

    name: str
    price_usd: float
    low: float
    """Chance of agreeing with the human at confidence 0.5."""
    high: float
    """Chance of agreeing with the human at confidence 1.0."""
    shape: float
    """Confidence is ``0.5 + 0.5 * U ** shape``: below 1, confidences crowd towards 1.0."""
    knee: float | None = None
    """None: agreement is linear in the confidence. A confidence: agreement is ``low`` below
    it and ``high`` at or above it (a well-separated tier)."""

    def accuracy(self, confidence: float) -> float:
        """The chance of agreeing with the human at ``confidence``."""
        if self.knee is not None:
            return self.high if confidence >= self.knee else self.low
        return self.low + (self.high - self.low) * (confidence - 0.5) / 0.5

    def draw(self, rng: random.Random) -> Case:
        """One case: (confidence, agrees with the human)."""
        confidence = 0.5 + 0.5 * rng.random() ** self.shape
        return confidence, rng.random() < self.accuracy(confidence)

    def mass_below(self, threshold: float) -> float:
        """P(confidence < threshold)."""
        return _u_below(threshold, self.shape)

    def agree_above(self, threshold: float) -> float:
        """P(confidence >= threshold and agrees), in closed form."""
        u0, s = _u_below(threshold, self.shape), self.shape
        if self.knee is not None:
            knee = _u_below(self.knee, s)
            return self.low * max(0.0, knee - u0) + self.high * (1 - max(u0, knee))
        # the integral over U from u0 to 1 of low + (high - low) * U ** s
        return self.low * (1 - u0) + (self.high - self.low) * (1 - u0 ** (s + 1)) / (s + 1)


def _u_below(threshold: float, shape: float) -> float:
    if threshold <= 0.5:
        return 0.0
    return min(1.0, (2 * (threshold - 0.5)) ** (1 / shape))


TIERS = (
    TierSpec("cheap", 0.0001, low=0.40, high=0.95, shape=1.0),
    TierSpec("mid", 0.001, low=0.50, high=0.98, shape=0.8),
    TierSpec("expensive", 0.01, low=0.50, high=1.00, shape=0.6),
)
"""Prices 1 : 10 : 100. Mean agreement 0.675, 0.77 and 0.81; the cheap tier is over-confident
(right 73% of the time when it says 0.8), the expensive one calibrated (``acc(c) = c``)."""


@dataclass(frozen=True)
class Synthetic:
    """A generated calibration set: case ids, human labels and every tier's cases."""

    ids: tuple[str, ...]
    human: tuple[str, ...]
    tiers: tuple[tuple[Case, ...], ...]
    specs: tuple[TierSpec, ...]


def generate(n: int, seed: int, specs: Sequence[TierSpec] = TIERS) -> Synthetic:
    """``n`` cases judged by every tier (the calibration set's shape)."""
    rng = random.Random(seed)
    human = tuple(rng.choice(("pass", "fail")) for _ in range(n))
    tiers = tuple(tuple(spec.draw(rng) for _ in range(n)) for spec in specs)
    return Synthetic(tuple(f"c{i:05d}" for i in range(n)), human, tiers, tuple(specs))


def write_logs(data: Synthetic, folder: Path) -> list[Path]:
    """One replay log per tier (plus ``cases.jsonl`` with the human labels); the log paths."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as out:
        for case_id, label in zip(data.ids, data.human, strict=True):
            out.write(json.dumps({"id": case_id, "input": case_id, "human": label}) + "\n")
    paths = []
    for spec, cases in zip(data.specs, data.tiers, strict=True):
        path = folder / f"{spec.name}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for case_id, human, (confidence, agrees) in zip(
                data.ids, data.human, cases, strict=True
            ):
                label = human if agrees else ("fail" if human == "pass" else "pass")
                row = {"id": case_id, "status": label, "label": label, "confidence": confidence,
                       "cost_usd": spec.price_usd, "model": spec.name,
                       "usage": {"input_tokens": 500, "output_tokens": 1}}  # fmt: skip
                out.write(json.dumps(row) + "\n")
        paths.append(path)
    return paths


def exact_outcome(specs: Sequence[TierSpec], thresholds: Sequence[float]) -> tuple[float, float]:
    """The thresholds' true (population) coverage and selective agreement, from the curves."""
    reach, covered, agreed = 1.0, 0.0, 0.0
    for spec, threshold in zip(specs, thresholds, strict=True):
        covered += reach * (1 - spec.mass_below(threshold))
        agreed += reach * spec.agree_above(threshold)
        reach *= spec.mass_below(threshold)
    return covered, (agreed / covered if covered else 1.0)  # nothing decided: vacuously met


@dataclass(frozen=True)
class SplitResult:
    """One calibration/test split."""

    thresholds: tuple[float, ...]
    test: CalibrationReport
    cost_usd: float
    true_coverage: float
    true_agreement: float
    engine_checked: bool


def _cost(data: Synthetic, test: Sequence[int], thresholds: Sequence[float]) -> float:
    """Dollars the cascade spends on the test cases: every tier entered is called."""
    total = 0.0
    for i in test:
        for spec, cases, threshold in zip(data.specs, data.tiers, thresholds, strict=True):
            total += spec.price_usd
            if cases[i][0] >= threshold:
                break
    return total


def cascade_of(judges: Sequence[ReplayJudge], thresholds: Sequence[float]) -> Cascade:
    """STOP_ON_CONFIDENCE tiers and a FINAL tier that abstains below its threshold."""
    tiers = [
        Tier(judge.name, judge, TierPolicy.STOP_ON_CONFIDENCE, threshold=threshold)
        for judge, threshold in zip(judges[:-1], thresholds[:-1], strict=True)
    ]
    tiers.append(Tier(judges[-1].name, judges[-1], TierPolicy.FINAL, threshold=thresholds[-1]))
    return Cascade(tiers)


async def run_engine(
    data: Synthetic, judges: Sequence[ReplayJudge], test: Sequence[int], thresholds: Sequence[float]
) -> dict[str, Any]:
    """The test cases through an `Evaluator`: cases per tier, agreed, abstained and cost."""
    human = dict(zip(data.ids, data.human, strict=True))
    names = [judge.name for judge in judges]
    per_tier, agreed, abstained, cost = [0] * len(judges), 0, 0, 0.0
    contexts = [Context(input=data.ids[i], metadata={"case_id": data.ids[i]}) for i in test]
    async for case in Evaluator(cascade_of(judges, thresholds)).run(contexts, concurrency=32):
        verdict = case.verdict
        assert verdict is not None
        cost += sum(r.judgment.metadata.get("cost_usd", 0.0) for r in verdict.results if r.judgment)
        status = verdict.judgment.status
        if status is Status.ERROR:
            raise RuntimeError(f"the engine returned ERROR: {verdict.judgment.reasoning}")
        if status is Status.ABSTAIN:
            abstained += 1
            continue
        per_tier[names.index(verdict.tiers[-1].name)] += 1
        agreed += verdict.judgment.label == human[case.context.metadata["case_id"]]
    return {"per_tier": per_tier, "agreed": agreed, "abstained": abstained, "cost": cost}


def _check_engine(engine: dict[str, Any], report: CalibrationReport, cost: float) -> None:
    expected = (list(report.per_tier), report.agreed, report.abstained)
    got = (engine["per_tier"], engine["agreed"], engine["abstained"])
    if got != expected or not math.isclose(engine["cost"], cost, rel_tol=1e-9):
        raise AssertionError(
            f"engine {got} cost {engine['cost']} != evaluate_thresholds {expected} cost {cost}"
        )


def run_split(
    data: Synthetic,
    judges: Sequence[ReplayJudge] | None,
    rng: random.Random,
    *,
    alpha: float,
    delta: float,
) -> SplitResult:
    """Calibrate on a random half, evaluate on the other (through the engine when given)."""
    order = list(range(len(data.ids)))
    rng.shuffle(order)
    half = len(order) // 2
    calibration, test = order[:half], order[half:]
    table = [[tier[i] for i in calibration] for tier in data.tiers]
    thresholds = calibrate_thresholds(table, alpha=alpha, delta=delta)
    report = evaluate_thresholds([[tier[i] for i in test] for tier in data.tiers], thresholds)
    cost = _cost(data, test, thresholds)
    if judges is not None:
        _check_engine(anyio.run(run_engine, data, judges, test, thresholds), report, cost)
    coverage, agreement = exact_outcome(data.specs, thresholds)
    return SplitResult(thresholds, report, cost, coverage, agreement, judges is not None)


def _reference(data: Synthetic) -> dict[str, Any]:
    """The last tier alone on every case: its agreement (with n and interval) and cost."""
    last = data.tiers[-1]
    agreed = sum(agrees for _, agrees in last)
    return {
        "tier": data.specs[-1].name,
        "n": len(last),
        "agreement": agreed / len(last),
        "agreement_ci95": wilson_interval(agreed, len(last)),
        "cost_usd_per_case": data.specs[-1].price_usd,
    }


def summarise(
    data: Synthetic, results: Sequence[SplitResult], *, alpha: float, delta: float
) -> dict[str, Any]:
    """The benchmark's figures over every split."""
    n = len(results)
    held = sum(
        r.test.selective_agreement is not None and r.test.selective_agreement >= 1 - alpha
        for r in results
    )
    truly = sum(r.true_agreement >= 1 - alpha for r in results)
    interval = wilson_interval(held, n)
    test_n = results[0].test.n
    always_last = test_n * data.specs[-1].price_usd
    shares = [
        statistics.fmean(r.test.tier_shares[k] for r in results) for k in range(len(data.specs))
    ]
    return {
        "benchmark": "cascade",
        "alpha": alpha,
        "delta": delta,
        "cases": len(data.ids),
        "test_cases_per_split": test_n,
        "splits": n,
        "engine_splits": sum(r.engine_checked for r in results),
        "guarantee_rate": held / n,
        "guarantee_rate_ci95": interval,
        "guarantee": "PASS" if interval[1] >= 1 - delta else "FAIL",
        "exact_guarantee_rate": truly / n,
        "mean_test_agreement": statistics.fmean(r.test.selective_agreement or 0.0 for r in results),
        "mean_true_agreement": statistics.fmean(r.true_agreement for r in results),
        "mean_coverage": statistics.fmean(r.test.coverage for r in results),
        "tier_shares": dict(zip((s.name for s in data.specs), shares, strict=True)),
        "abstained_share": statistics.fmean(r.test.abstained / r.test.n for r in results),
        "cost_saving": 1 - statistics.fmean(r.cost_usd for r in results) / always_last,
        "mean_thresholds": [
            statistics.fmean(r.thresholds[k] for r in results) for k in range(len(data.specs))
        ],
        "reference": _reference(data),
    }


def run_benchmark(
    *,
    cases: int = 2000,
    splits: int = 200,
    alpha: float = 0.15,
    delta: float = 0.1,
    engine_splits: int | None = None,
    seed: int = 0,
    folder: Path,
    specs: Sequence[TierSpec] = TIERS,
) -> dict[str, Any]:
    """Generate, write and replay the set, run every split and summarise (see the module doc)."""
    data = generate(cases, seed, specs)
    judges = [ReplayJudge(path) for path in write_logs(data, folder)]
    rng = random.Random(seed + 1)
    engine_splits = splits if engine_splits is None else engine_splits
    results = [
        run_split(data, judges if k < engine_splits else None, rng, alpha=alpha, delta=delta)
        for k in range(splits)
    ]
    return summarise(data, results, alpha=alpha, delta=delta)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def table(summary: dict[str, Any]) -> str:
    """The figures as a short text table."""
    low, high = summary["guarantee_rate_ci95"]
    ref = summary["reference"]
    shares = ", ".join(f"{k} {v:.1%}" for k, v in summary["tier_shares"].items())
    rows = [
        ("splits (through the engine)", f"{summary['splits']} ({summary['engine_splits']})"),
        ("test cases per split", f"{summary['test_cases_per_split']}"),
        (
            f"guarantee rate (test agreement >= {1 - summary['alpha']:.2f})",
            f"{summary['guarantee_rate']:.3f} [{low:.3f}, {high:.3f}] vs {1 - summary['delta']:.2f}"
            f": {summary['guarantee']}",
        ),
        ("exact guarantee rate (true agreement)", f"{summary['exact_guarantee_rate']:.3f}"),
        (
            "mean test agreement (true)",
            f"{summary['mean_test_agreement']:.3f} ({summary['mean_true_agreement']:.3f})",
        ),
        ("mean coverage", f"{summary['mean_coverage']:.1%}"),
        ("decided per tier", f"{shares}, abstained {summary['abstained_share']:.1%}"),
        ("cost saving vs the last tier on every case", f"{summary['cost_saving']:.1%}"),
        (
            f"reference: {ref['tier']} alone (n={ref['n']})",
            f"agreement {ref['agreement']:.3f} [{ref['agreement_ci95'][0]:.3f}, "
            f"{ref['agreement_ci95'][1]:.3f}], coverage 100%, cost 100%",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit status 1 when the guarantee check FAILs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--alpha", type=float, default=0.15)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--engine-splits", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="keep the replay logs here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        summary = run_benchmark(
            cases=args.cases,
            splits=args.splits,
            alpha=args.alpha,
            delta=args.delta,
            engine_splits=args.engine_splits,
            seed=args.seed,
            folder=args.out or Path(scratch),
        )
    summary["seconds"] = time.perf_counter() - started
    print(table(summary))
    print(json.dumps(_rounded(summary)))
    return 0 if summary["guarantee"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

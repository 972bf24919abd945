"""Cascade benchmark: calibrated confidence thresholds on SYNTHETIC judges, over fresh draws.

Run: ``uv run python benchmarks/bench_cascade.py [--draws 200] [--cases 2000] [--alpha 0.15]
[--delta 0.1] [--rule escalate+split] [--engine-draws N] [--seed 0] [--compare] [--lower X]``
(no network; about 2.5 minutes on a busy 2-core machine, ``--compare`` a few).

**Synthetic data.** Every figure here comes from generated tiers with known curves (below),
which err independently of each other. Coverage, tier shares and cost savings do not transfer
to real judges (an independent check found 62.8% coverage on the Trust-or-Escalate paper's
ChatArena judge outputs where this synthetic set gave 87.6% with the same rule): calibrate on
your own labelled logs (docs/how-to/trust.md, "Replay your judge logs").

What it does:

1. Each synthetic tier (`TierSpec`) draws a confidence ``c = 0.5 + 0.5 * U ** shape`` (U
   uniform in [0, 1]; or a fixed ``c``) and agrees with the human label with probability
   ``acc(c)`` (linear between ``low`` and ``high``, or a step at ``knee``). `TIERS`: a cheap
   over-confident tier, a mid tier, an expensive calibrated one (prices 1 : 10 : 100).
   `CONFIDENTLY_WRONG`: a cheap tier that always says 1.0 and is right half the time.
2. For each of ``draws`` draws, a **fresh calibration set** of ``cases`` cases and a fresh
   test set of as many are drawn from the generator (not re-splits of one sample, so the
   failure rate estimates the theorem's probability over calibration sets); the calibrator
   (`calibrate_thresholds` with the rule of ``--rule``) runs on the calibration set.
3. The thresholds' **true** (population) coverage and selective agreement come from the
   curves in closed form (`exact_outcome`); a draw **fails** when its true agreement is below
   ``1 - alpha``. The test set is judged too (the first ``--engine-draws`` through the real
   engine: an `Evaluator` over a `Cascade` of `ReplayJudge` s, checked equal to
   `evaluate_thresholds`, cases per tier, agreements, abstentions and cost).
4. **The check** (`guarantee_check`): an exact one-sided binomial test of "failure rate <=
   delta" at ``--significance`` (default 0.05). FAIL when the observed failures would be that
   unlikely under a calibrator that keeps its promise. With 200 draws at delta 0.1 it fails
   from 28 failures (14%) on; a calibrator whose thresholds are 0.03 too low (``--lower
   0.03``) fails in 18% of draws here (36 of 200) and is caught (p = 0.0004).

``--compare`` runs the three rules side by side on the same draws of both tier sets: the
paper's (``untested="paper", split_delta=False``), ``escalate`` alone and ``escalate+split``
(the default of `calibrate_thresholds`). Prints a short table and one JSON line.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from agentjudge import Cascade, Context, Evaluator, Status, Tier, TierPolicy
from agentjudge.agreement import wilson_interval
from agentjudge.calibration import (
    NEVER,
    CalibrationReport,
    binomial_cdf,
    calibrate_thresholds,
    evaluate_thresholds,
)
from agentjudge.judges import ReplayJudge

Case = tuple[float, bool]
Calibrator = Callable[..., tuple[float, ...]]
"""``calibrator(tiers, alpha=..., delta=...) -> thresholds``, like `calibrate_thresholds`."""

RULES: dict[str, dict[str, Any]] = {
    "paper": {"untested": "paper", "split_delta": False},
    "escalate": {"untested": "escalate", "split_delta": False},
    "escalate+split": {"untested": "escalate", "split_delta": True},
}
"""The calibration rules compared: the paper's, escalate alone, escalate with delta / K."""
DEFAULT_RULE = "escalate+split"
SYNTHETIC = (
    "synthetic data: generated tiers with known curves that err independently; coverage, "
    "shares and cost do not transfer to real judges"
)


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
    fixed: float | None = None
    """A confidence the tier always gives (then ``shape`` is unused)."""

    def accuracy(self, confidence: float) -> float:
        """The chance of agreeing with the human at ``confidence``."""
        if self.knee is not None:
            return self.high if confidence >= self.knee else self.low
        return self.low + (self.high - self.low) * (confidence - 0.5) / 0.5

    def draws(self, rng: random.Random, n: int) -> tuple[Case, ...]:
        """``n`` cases, each (confidence, agrees with the human), two numbers from ``rng`` each
        (the benchmark draws millions: the lookups are made once per call, not per case)."""
        random_, accuracy = rng.random, self.accuracy
        if self.fixed is not None:
            confidence, chance = self.fixed, accuracy(self.fixed)
            return tuple((confidence, random_() < chance) for _ in range(n))
        shape, cases = self.shape, []
        for _ in range(n):
            confidence = 0.5 + 0.5 * random_() ** shape
            cases.append((confidence, random_() < accuracy(confidence)))
        return tuple(cases)

    def mass_below(self, threshold: float) -> float:
        """P(confidence < threshold)."""
        if self.fixed is not None:
            return 1.0 if self.fixed < threshold else 0.0
        return _u_below(threshold, self.shape)

    def agree_above(self, threshold: float) -> float:
        """P(confidence >= threshold and agrees), in closed form."""
        if self.fixed is not None:
            return 0.0 if self.fixed < threshold else self.accuracy(self.fixed)
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

CONFIDENTLY_WRONG = (
    TierSpec("cheap", 0.0001, low=0.5, high=0.5, shape=1.0, fixed=1.0),
    TierSpec("expensive", 0.01, low=0.50, high=1.00, shape=0.6),
)
"""A cheap tier that always says 1.0 and is right half the time, then a calibrated one."""

SCENARIOS = {"three tiers": TIERS, "confidently wrong cheap tier": CONFIDENTLY_WRONG}


@dataclass(frozen=True)
class Synthetic:
    """A generated set: case ids, human labels and every tier's cases."""

    ids: tuple[str, ...]
    human: tuple[str, ...]
    tiers: tuple[tuple[Case, ...], ...]
    specs: tuple[TierSpec, ...]


def generate(n: int, seed: int | str, specs: Sequence[TierSpec] = TIERS) -> Synthetic:
    """``n`` fresh cases judged by every tier (the calibration set's shape)."""
    rng = random.Random(seed)
    choice, labels = rng.choice, ("pass", "fail")
    human = tuple(choice(labels) for _ in range(n))
    tiers = tuple(spec.draws(rng, n) for spec in specs)
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


def calibrator_for(rule: str) -> Calibrator:
    """`calibrate_thresholds` with one of `RULES`."""
    options = RULES[rule]

    def calibrate(tiers: Sequence[Sequence[Case]], **kwargs: Any) -> tuple[float, ...]:
        return calibrate_thresholds(tiers, **kwargs, **options)

    return calibrate


def lowered(calibrator: Calibrator, by: float) -> Calibrator:
    """A broken calibrator: ``calibrator``'s thresholds lowered by ``by`` (to test the check)."""

    def broken(tiers: Sequence[Sequence[Case]], **kwargs: Any) -> tuple[float, ...]:
        found = calibrator(tiers, **kwargs)
        return tuple(t if t == NEVER else max(0.0, t - by) for t in found)

    return broken


@dataclass(frozen=True)
class DrawResult:
    """One draw: thresholds from a fresh calibration set, measured truly and on a test set."""

    thresholds: tuple[float, ...]
    test: CalibrationReport
    cost_usd: float
    true_coverage: float
    true_agreement: float
    engine_checked: bool


def _cost(data: Synthetic, thresholds: Sequence[float]) -> float:
    """Dollars the cascade spends on the set's cases: every tier entered is called."""
    total = 0.0
    for i in range(len(data.ids)):
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
    data: Synthetic, judges: Sequence[ReplayJudge], thresholds: Sequence[float]
) -> dict[str, Any]:
    """The set's cases through an `Evaluator`: cases per tier, agreed, abstained and cost."""
    human = dict(zip(data.ids, data.human, strict=True))
    names = [judge.name for judge in judges]
    per_tier, agreed, abstained, cost = [0] * len(judges), 0, 0, 0.0
    contexts = [Context(input=case_id, metadata={"case_id": case_id}) for case_id in data.ids]
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


def run_draw(
    draw: int,
    calibrator: Calibrator,
    *,
    specs: Sequence[TierSpec],
    cases: int,
    seed: int,
    alpha: float,
    delta: float,
    grid: int = 5000,
    folder: Path | None = None,
) -> DrawResult:
    """Calibrate on a fresh set, judge a fresh test set (through the engine with a folder)."""
    calibration = generate(cases, f"{seed}/calibration/{draw}", specs)
    test = generate(cases, f"{seed}/test/{draw}", specs)
    thresholds = calibrator(list(calibration.tiers), alpha=alpha, delta=delta, grid=grid)
    report = evaluate_thresholds(test.tiers, thresholds)
    cost = _cost(test, thresholds)
    if folder is not None:
        judges = [ReplayJudge(path) for path in write_logs(test, folder / f"draw{draw}")]
        _check_engine(anyio.run(run_engine, test, judges, thresholds), report, cost)
    coverage, agreement = exact_outcome(specs, thresholds)
    return DrawResult(tuple(thresholds), report, cost, coverage, agreement, folder is not None)


def guarantee_check(
    failures: int, draws: int, *, delta: float, significance: float = 0.05
) -> dict[str, Any]:
    """Exact one-sided binomial test of "the failure rate is at most delta".

    The p-value is ``P(X >= failures)`` for ``X ~ Binomial(draws, delta)``: how likely this
    many failures are from a calibrator that keeps its promise. FAIL below ``significance``.
    ``fail_from`` is the fewest failures that FAIL at this size.
    """
    p_value = 1.0 - binomial_cdf(failures - 1, draws, delta)
    fail_from = next(
        k
        for k in range(draws + 2)
        if k > draws or 1.0 - binomial_cdf(k - 1, draws, delta) < significance
    )
    return {
        "failures": failures,
        "failure_rate": failures / draws,
        "failure_rate_ci95": wilson_interval(failures, draws),
        "p_value": p_value,
        "significance": significance,
        "fail_from": fail_from,
        "verdict": "FAIL" if p_value < significance else "PASS",
    }


def summarise(
    specs: Sequence[TierSpec],
    results: Sequence[DrawResult],
    *,
    alpha: float,
    delta: float,
    significance: float = 0.05,
) -> dict[str, Any]:
    """The benchmark's figures over every draw."""
    n = len(results)
    failures = sum(r.true_agreement < 1 - alpha for r in results)
    tested = sum(
        r.test.selective_agreement is None or r.test.selective_agreement >= 1 - alpha
        for r in results
    )
    always_last = results[0].test.n * specs[-1].price_usd
    shares = [statistics.fmean(r.test.tier_shares[k] for r in results) for k in range(len(specs))]
    return {
        "benchmark": "cascade",
        "data": SYNTHETIC,
        "alpha": alpha,
        "delta": delta,
        "cases_per_set": results[0].test.n,
        "draws": n,
        "engine_draws": sum(r.engine_checked for r in results),
        "check": guarantee_check(failures, n, delta=delta, significance=significance),
        "true_guarantee_rate": 1 - failures / n,
        "test_guarantee_rate": tested / n,
        "mean_true_agreement": statistics.fmean(r.true_agreement for r in results),
        "mean_test_agreement": statistics.fmean(r.test.selective_agreement or 1.0 for r in results),
        "mean_true_coverage": statistics.fmean(r.true_coverage for r in results),
        "mean_test_coverage": statistics.fmean(r.test.coverage for r in results),
        "tier_shares": dict(zip((s.name for s in specs), shares, strict=True)),
        "abstained_share": statistics.fmean(r.test.abstained / r.test.n for r in results),
        "cost_saving": 1 - statistics.fmean(r.cost_usd for r in results) / always_last,
        "never_deciding_share": [
            statistics.fmean(r.thresholds[k] == NEVER for r in results) for k in range(len(specs))
        ],
    }


def run_benchmark(
    *,
    cases: int = 2000,
    draws: int = 200,
    alpha: float = 0.15,
    delta: float = 0.1,
    rule: str = DEFAULT_RULE,
    calibrator: Calibrator | None = None,
    engine_draws: int = 0,
    seed: int = 0,
    significance: float = 0.05,
    grid: int = 5000,
    folder: Path | None = None,
    specs: Sequence[TierSpec] = TIERS,
) -> dict[str, Any]:
    """Run every draw with ``calibrator`` (default: ``rule``'s) and summarise (see the doc)."""
    calibrate = calibrator if calibrator is not None else calibrator_for(rule)
    if engine_draws and folder is None:
        raise ValueError("engine draws write replay logs: give a folder")
    results = [
        run_draw(
            k, calibrate, specs=specs, cases=cases, seed=seed, alpha=alpha, delta=delta,
            grid=grid, folder=folder if k < engine_draws else None,
        )
        for k in range(draws)
    ]  # fmt: skip
    summary = summarise(specs, results, alpha=alpha, delta=delta, significance=significance)
    summary["rule"] = rule if calibrator is None else "custom"
    return summary


def compare_rules(**options: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Every rule of `RULES` on the same draws of every scenario: figures per scenario, rule."""
    return {
        scenario: {rule: run_benchmark(rule=rule, specs=specs, **options) for rule in RULES}
        for scenario, specs in SCENARIOS.items()
    }


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def table(summary: dict[str, Any]) -> str:
    """The figures of one run as a short text table, headed by the synthetic-data label."""
    check = summary["check"]
    low, high = check["failure_rate_ci95"]
    shares = ", ".join(f"{k} {v:.1%}" for k, v in summary["tier_shares"].items())
    rows = [
        ("rule", summary["rule"]),
        ("draws (through the engine)", f"{summary['draws']} ({summary['engine_draws']})"),
        ("cases per calibration / test set", f"{summary['cases_per_set']} (fresh each draw)"),
        (
            f"guarantee failures (true agreement < {1 - summary['alpha']:.2f})",
            f"{check['failures']} = {check['failure_rate']:.3f} [{low:.3f}, {high:.3f}] vs "
            f"delta {summary['delta']}: p = {check['p_value']:.3g}, {check['verdict']} "
            f"(FAIL from {check['fail_from']})",
        ),
        ("test sets meeting 1 - alpha", f"{summary['test_guarantee_rate']:.3f}"),
        (
            "mean true agreement (test)",
            f"{summary['mean_true_agreement']:.3f} ({summary['mean_test_agreement']:.3f})",
        ),
        ("mean true coverage (test)", f"{summary['mean_true_coverage']:.1%} "
                                      f"({summary['mean_test_coverage']:.1%})"),
        ("decided per tier", f"{shares}, abstained {summary['abstained_share']:.1%}"),
        ("cost saving vs the last tier on every case", f"{summary['cost_saving']:.1%}"),
    ]  # fmt: skip
    width = max(len(name) for name, _ in rows)
    lines = [f"SYNTHETIC DATA ({SYNTHETIC})"]
    return "\n".join(lines + [f"{name:<{width}}  {value}" for name, value in rows])


def comparison_table(compared: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The side-by-side figures of `compare_rules` as a text table."""
    lines = [f"SYNTHETIC DATA ({SYNTHETIC})"]
    lines.append(f"{'scenario':<30} {'rule':<16} {'guarantee':>9} {'coverage':>9} {'saving':>7}")
    for scenario, by_rule in compared.items():
        for rule, summary in by_rule.items():
            lines.append(
                f"{scenario:<30} {rule:<16} {summary['true_guarantee_rate']:>9.3f} "
                f"{summary['mean_true_coverage']:>9.1%} {summary['cost_saving']:>7.1%}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit status 1 when the guarantee check FAILs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=2000, help="per calibration / test set")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--alpha", type=float, default=0.15)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--rule", choices=list(RULES), default=DEFAULT_RULE)
    parser.add_argument("--lower", type=float, default=0.0, help="break the calibrator: "
                        "lower every threshold by this much (the check must FAIL)")  # fmt: skip
    parser.add_argument("--engine-draws", type=int, default=20)
    parser.add_argument("--significance", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare", action="store_true", help="every rule, both scenarios")
    parser.add_argument("--out", type=Path, default=None, help="keep the replay logs here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    options = {
        "cases": args.cases,
        "draws": args.draws,
        "alpha": args.alpha,
        "delta": args.delta,
        "seed": args.seed,
        "significance": args.significance,
    }
    if args.compare:
        compared = compare_rules(**options)
        print(comparison_table(compared))
        print(json.dumps(_rounded({"data": SYNTHETIC, "compare": compared})))
        return 0
    calibrator = calibrator_for(args.rule)
    with tempfile.TemporaryDirectory() as scratch:
        summary = run_benchmark(
            **options,
            rule=args.rule,
            calibrator=lowered(calibrator, args.lower) if args.lower else None,
            engine_draws=args.engine_draws,
            folder=args.out or Path(scratch),
        )
    if args.lower:
        summary["rule"] = f"{args.rule}, every threshold lowered by {args.lower} (broken)"
    summary["seconds"] = time.perf_counter() - started
    print(table(summary))
    print(json.dumps(_rounded(summary)))
    return 0 if summary["check"]["verdict"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

"""Calibrating a confidence cascade from a labelled run, and applying the thresholds.

Three steps (see docs/how-to/offline-evaluation.md, "Calibrate a cascade"):

1. ``agentjudge run SUITE --calibration`` (suite key ``calibration = true``) runs the suite's
   cascade with ``short_circuit=False`` (`cascade_settings`): every tier judges every case
   and each tier's judgment (its ``confidence`` and ``label``) is in the row's ``tiers``.
2. ``agentjudge calibrate RUN_DIR --alpha A --delta D`` (`calibrate_run`) turns each labelled
   row into one ``(confidence, agrees_with_human)`` pair per tier, calls
   `agentjudge.calibration.calibrate_tiers` and writes ``thresholds.json`` with the
   statistics of `agentjudge.calibration.evaluate_thresholds` on the same cases, each tier's
   evidence (``statistics.by_tier``: ``tested``, ``basis``) and the cascade-level
   ``guarantee`` (`agentjudge.calibration.cascade_guarantee`: does it hold, and if not why).
   A tier without a tested threshold under ``--untested escalate`` (the default) never decides:
   its threshold is written as ``null`` (``math.inf`` in Python).
3. ``agentjudge run SUITE --thresholds FILE`` (suite key ``thresholds``) rebuilds the cascade:
   every tier but the last becomes ``TierPolicy.STOP_ON_CONFIDENCE`` with its threshold, the last
   ``FINAL`` with its threshold (abstain rather than guess); the run's ``summary.json``
   ``cascade.calibration`` block repeats the file's guarantee and untested tiers
   (`thresholds_provenance`) so the report can say what holds.

Decisions, for a reader of the numbers:

* **Missing confidence.** At run time a tier judgment without a confidence (None, ERROR, a
  failed tier) never stops the cascade, nor does an ABSTAIN however confident (a non-final
  tier escalates it), so it can never be an accepted verdict that agrees with a human.
  Calibration counts such a judgment as ``(0.0, False)``: never accepted by a threshold above
  0, and a disagreement if a tier's threshold comes out as exactly 0.0 - pessimistic for that
  tier, never flattering. A tier with no confidence on any labelled case (deterministic
  judges usually leave it None) **cannot be calibrated**: ``calibrate`` refuses it by name.
* **Agreement with the human label** follows the harness rule of ``summary.json``'s
  ``agreement`` blocks (`agrees_with_human`): a bool or the words ``"pass"``/``"fail"`` are
  compared with the tier judgment's status, any other string with its label (else its status),
  a number with 1.0 for PASS and 0.0 for FAIL (the ``tiers`` records carry no score).
* **Which runs qualify.** Every labelled row must carry a record of every tier with the same
  names in the same order; a run whose ``summary.json`` says it was not a calibration run is
  refused before any row is read. A row's ``human`` must be a usable label (as the dataset
  checks it): ``null`` or another value is refused naming the file, row and field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentjudge.calibration import (
    NEVER,
    CalibrationReport,
    TierCalibration,
    calibrate_tiers,
    cascade_guarantee,
    evaluate_thresholds,
)
from agentjudge.core import TierPolicy
from agentjudge.exceptions import AgentJudgeError
from agentjudge.harness._agreement import agrees_with_human
from agentjudge.harness._cascade_summary import CascadeCalibration, CascadeSummary
from agentjudge.harness._case import human_label_problem
from agentjudge.harness._dataset import Dataset
from agentjudge.harness._results import ResultsError, iter_rows
from agentjudge.harness._suite import RunConfigError, Suite

if TYPE_CHECKING:  # the engine loads with a run's switches, not with `agentjudge calibrate`
    from agentjudge.engine import Cascade

__all__ = [
    "METHOD",
    "CalibrationError",
    "calibrate_run",
    "cascade_settings",
    "check_labelled",
    "format_calibration",
    "load_thresholds",
    "single_cascade",
    "thresholds_provenance",
    "with_provenance",
]

METHOD = "fixed-sequence testing (Jung et al., 2024)"
"""The calibration method named in ``thresholds.json``."""
_RERUN = "run the suite with `agentjudge run SUITE --calibration`"


class CalibrationError(AgentJudgeError, ValueError):
    """A run folder or thresholds file cannot be used for calibration (what and where named)."""


# ----------------------------------------------------------------------------- the rule
# ----------------------------------------------------------------------------- run switch
def single_cascade(judges: Any, setting: str) -> Cascade:
    """The one `Cascade` the suite's judges are (alone, or the only entry of a list / dict).

    Raises:
        RunConfigError: the judges are not a single Cascade (``setting`` names the switch).
    """
    from agentjudge.engine import Cascade

    found = judges
    if isinstance(judges, list | tuple) and len(judges) == 1:
        found = judges[0]
    elif isinstance(judges, dict) and len(judges) == 1:
        found = next(iter(judges.values()))
    if not isinstance(found, Cascade):
        raise RunConfigError(
            f"{setting} needs the suite's judges to be a single Cascade, got "
            f"{type(judges).__name__} {_short(judges)}"
        )
    return found


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def cascade_settings(suite: Suite, judges: Any) -> Any:
    """``judges`` as the suite's ``calibration`` / ``thresholds`` settings want them.

    ``calibration``: the cascade with ``short_circuit=False``. ``thresholds``: the cascade
    rebuilt with the file's thresholds. Neither: ``judges`` unchanged.

    Raises:
        RunConfigError: the judges are not a single Cascade, or the thresholds file is
            unusable or its tier names differ from the cascade's.
    """
    if suite.calibration:
        from agentjudge.engine import Cascade

        cascade = single_cascade(judges, "--calibration")
        return Cascade(cascade.tiers, name=cascade.name, short_circuit=False)
    if suite.thresholds is None:
        return judges
    cascade = single_cascade(judges, "thresholds")
    path = suite.path(suite.thresholds)
    try:
        thresholds = load_thresholds(path)
    except CalibrationError as exc:
        raise RunConfigError(str(exc)) from None
    return _thresholded(cascade, thresholds, path)


def _thresholded(cascade: Cascade, thresholds: Mapping[str, float], path: Path) -> Cascade:
    from agentjudge.engine import Cascade, Tier

    names = [t.name for t in cascade.tiers]
    if sorted(names) != sorted(thresholds):
        missing = [n for n in names if n not in thresholds]
        extra = [n for n in thresholds if n not in names]
        raise RunConfigError(
            f"{path}: tier names do not match cascade {cascade.name!r} (tiers {names}): "
            f"missing from the file {missing}, not in the cascade {extra}"
        )
    last = len(names) - 1
    tiers = [
        Tier(
            t.name,
            t.judge,
            TierPolicy.FINAL if k == last else TierPolicy.STOP_ON_CONFIDENCE,
            threshold=thresholds[t.name],
        )
        for k, t in enumerate(cascade.tiers)
    ]
    return Cascade(tiers, name=cascade.name)


class _DuplicateKey(ValueError):
    """A JSON object names a key twice (json.loads would keep the last one silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def load_thresholds(path: Path) -> dict[str, float]:
    """The ``thresholds`` object of a thresholds file: tier name -> threshold in [0, 1].

    A ``null`` threshold is a tier without a tested threshold that never decides: it becomes
    ``math.inf`` (`agentjudge.calibration.NEVER`).

    Raises:
        CalibrationError: the file is missing, not JSON, or has no such object (file and
            field named).
    """
    data = _read_json(path)
    table = data.get("thresholds") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not table:
        raise CalibrationError(
            f"{path}: field 'thresholds': expected an object of tier name -> threshold in "
            f"[0, 1] (or null: never decides), got {_short(table)}"
        )
    for name, value in table.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise CalibrationError(
                f"{path}: field 'thresholds.{name}': expected a number in [0, 1] or null "
                f"(never decides), got {value!r}"
            )
    return {name: NEVER if value is None else float(value) for name, value in table.items()}


def _read_json(path: Path) -> Any:
    """The JSON of a thresholds file (CalibrationError naming the file when unusable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_unique_keys)
    except FileNotFoundError:
        raise CalibrationError(f"thresholds file not found: {path}") from None
    except _DuplicateKey as exc:
        raise CalibrationError(f"{path}: key {exc.args[0]!r} appears twice") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"cannot read thresholds file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(
            f"{path}: line {exc.lineno}: not JSON ({exc.msg}); expected the file "
            "`agentjudge calibrate` writes"
        ) from None
    return data


_NO_EVIDENCE = (
    "unknown: the thresholds file carries no 'guarantee' (written by hand or by an older "
    "`agentjudge calibrate`); recalibrate to know what holds"
)


def thresholds_provenance(path: Path) -> CascadeCalibration:
    """What a thresholded run's thresholds file says about itself, for ``summary.json``.

    ``{"file", "untested", "split_delta", "alpha", "delta", "guarantee", "tiers"}``: the
    calibration's settings, its ``guarantee`` block (``holds`` False with a statement saying
    why when the file has none) and per tier ``{"threshold", "basis", "tested"}`` (None where
    the file does not say).

    A file that cannot be read (any more) gives a guarantee block saying why.
    """
    try:
        data = _read_json(path)
    except CalibrationError as exc:
        data = {"guarantee": {"holds": False, "probability": None, "statement": f"unknown: {exc}"}}
    data = _mapping(data)
    by_tier = _mapping(_mapping(data.get("statistics")).get("by_tier"))
    guarantee = data.get("guarantee")
    if not isinstance(guarantee, dict):
        guarantee = {"holds": False, "probability": None, "statement": _NO_EVIDENCE}
    tiers = {}
    for name, threshold in _mapping(data.get("thresholds")).items():
        basis = _mapping(by_tier.get(name)).get("basis")
        tiers[name] = {
            "threshold": threshold,
            "basis": basis,
            "tested": None if basis is None else basis == "tested",
        }
    return CascadeCalibration.model_validate(
        {
            "file": str(path),
            **{key: data.get(key) for key in ("untested", "split_delta", "alpha", "delta")},
            "guarantee": guarantee,
            "tiers": tiers,
        }
    )


def with_provenance(block: CascadeSummary | None, path: Path) -> CascadeSummary | None:
    """The ``cascade`` block with ``calibration``: what the thresholds file says holds."""
    if block is None:
        return None
    return block.model_copy(update={"calibration": thresholds_provenance(path)})


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a hand-edited file)."""
    return value if isinstance(value, dict) else {}


def check_labelled(suite: Suite, dataset: Dataset) -> None:
    """Refuse a calibration run on a dataset without any ``human`` label (file named).

    Raises:
        RunConfigError: ``suite.calibration`` is set and no row of ``dataset`` carries ``human``.
    """
    if suite.calibration and dataset.labelled == 0:
        raise RunConfigError(
            f"--calibration needs human labels: no row of {dataset.path} carries 'human' "
            f"({dataset.rows} rows)"
        )


# ----------------------------------------------------------------------------- reading a run
class _Table:
    """Per tier, one (confidence, agrees) pair and one cost per labelled row."""

    def __init__(self) -> None:
        self.names: list[str] | None = None
        self.pairs: list[list[tuple[float, bool]]] = []
        self.confident: list[int] = []
        self.costs: list[list[float | None]] = []
        self.unlabelled = 0
        self.task_errors = 0

    def add(self, row: Mapping[str, Any], where: str) -> None:
        if row.get("error") is not None or row.get("verdict") is None:
            self.task_errors += 1
            return
        if "human" not in row:
            self.unlabelled += 1
            return
        _check_human(row["human"], where)
        records = row.get("tiers")
        if not isinstance(records, list) or not records:
            raise CalibrationError(
                f"{where}: no 'tiers' record: the suite's judges were not a Cascade; {_RERUN}"
            )
        names = [str(r.get("name")) for r in records]
        if self.names is None:
            self.names = names
            self.pairs = [[] for _ in names]
            self.confident = [0] * len(names)
            self.costs = [[] for _ in names]
        if names != self.names:
            raise CalibrationError(
                f"{where}: field 'tiers': tiers {names} ran, expected every tier "
                f"{self.names}: this run short-circuited (it was not a calibration run); {_RERUN}"
            )
        for k, record in enumerate(records):
            self.pairs[k].append(self._pair(row["human"], record))
            self.confident[k] += record.get("confidence") is not None
            self.costs[k].append(_tier_cost(row, names[k]))

    @staticmethod
    def _pair(human: Any, record: Mapping[str, Any]) -> tuple[float, bool]:
        status, confidence = record.get("status"), record.get("confidence")
        if status not in ("pass", "fail") or confidence is None:
            return (0.0, False)
        return (float(confidence), agrees_with_human(human, status, record.get("label")))


def _check_human(human: Any, where: str) -> None:
    """Refuse a ``human`` value no agreement can be computed with (null included).

    Raises:
        CalibrationError: naming the file, the row and the field.
    """
    problem = "human is null" if human is None else human_label_problem(human)
    if problem is not None:
        raise CalibrationError(
            f"{where}: field 'human': {problem}; expected a non-blank label string, a status "
            "word, true/false (pass/fail) or a finite number (leave 'human' out of an "
            "unlabelled row)"
        )


def _tier_cost(row: Mapping[str, Any], tier: str) -> float | None:
    """Dollars of the tier's judge calls on this row; None when a model call had no price."""
    total = 0.0
    for result in row.get("results") or ():
        if result.get("tier") != tier and not str(result.get("tier")).startswith(tier + "/"):
            continue
        judgment = result.get("judgment")
        metadata = judgment.get("metadata") if isinstance(judgment, Mapping) else None
        if not isinstance(metadata, Mapping) or "model" not in metadata:
            continue
        usd = metadata.get("cost_usd")
        if isinstance(usd, bool) or not isinstance(usd, int | float) or not math.isfinite(usd):
            return None
        total += usd
    return total


def _check_summary(run_dir: Path) -> None:
    summary = run_dir / "summary.json"
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no usable summary: the rows decide
    config = data.get("config") if isinstance(data, dict) else None
    if isinstance(config, dict) and config.get("calibration") is not True:
        raise CalibrationError(
            f"{summary}: field 'config.calibration' is {config.get('calibration')!r}: this run "
            f"was not a calibration run (its cascade short-circuited); {_RERUN}"
        )


def _read_run(run_dir: Path) -> _Table:
    results = run_dir / "results.jsonl"
    if not results.is_file():
        raise CalibrationError(f"no results file: {results}")
    _check_summary(run_dir)
    table = _Table()
    try:
        for number, row in enumerate(iter_rows(results), 1):
            table.add(row, f"{results}: row {number} (id {row.get('id')!r})")
    except ResultsError as exc:
        raise CalibrationError(str(exc)) from None
    if table.names is None:
        raise CalibrationError(
            f"{results}: no row carries a 'human' label and tier judgments "
            f"({table.unlabelled} unlabelled, {table.task_errors} task errors); "
            "calibration needs a labelled dataset"
        )
    for name, count in zip(table.names, table.confident, strict=True):
        if count == 0:
            raise CalibrationError(
                f"{results}: tier {name!r} has no confidence on any of the "
                f"{len(table.pairs[0])} labelled cases: a tier without confidence cannot be "
                "calibrated (give its judges a confidence, e.g. logprobs or self-consistency)"
            )
    return table


# ----------------------------------------------------------------------------- calibrate
def calibrate_run(
    run_dir: str | Path,
    *,
    alpha: float,
    delta: float,
    min_support: int = 30,
    grid: int = 5000,
    untested: str = "escalate",
    split_delta: bool = True,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Calibrate the thresholds of a calibration run and write them (``agentjudge calibrate``).

    Args:
        run_dir: The folder of an ``agentjudge run --calibration`` on labelled data.
        alpha: Tolerated disagreement rate with the human labels, in (0, 1).
        delta: Tolerated probability that the guarantee fails, in (0, 1).
        min_support: Fewest cases a candidate threshold must keep.
        grid: Number of evenly spaced candidate thresholds in [0, 1].
        untested: What a tier without a tested threshold does: ``"escalate"`` (never decides;
            written as a ``null`` threshold) or ``"paper"`` (the paper's untested fallback).
        split_delta: Test each of the K tiers at ``delta / K`` (the union bound).
        out: Where to write the JSON (default ``RUN_DIR/thresholds.json``).

    Returns:
        What was written: thresholds per tier name (None: never decides), the settings, ``n``,
        the statistics with each tier's evidence, and the cascade-level ``guarantee``.

    Raises:
        CalibrationError: the folder is not a usable calibration run (file, row and field
            named), or a setting is out of range.
    """
    folder = Path(run_dir)
    table = _read_run(folder)
    names = table.names or []
    try:
        chosen = calibrate_tiers(
            table.pairs,
            alpha=alpha,
            delta=delta,
            min_support=min_support,
            grid=grid,
            untested=untested,
            split_delta=split_delta,
        )
    except ValueError as exc:
        raise CalibrationError(str(exc)) from None
    thresholds = [t.threshold for t in chosen]
    report = evaluate_thresholds(table.pairs, thresholds)
    guarantee = cascade_guarantee(chosen, alpha=alpha, delta=delta, names=names).as_dict()
    for key in ("untested", "deciding_untested"):  # tier names, not indexes
        guarantee[key] = [names[k] for k in guarantee[key]]
    written = {
        "method": METHOD,
        "alpha": alpha,
        "delta": delta,
        "untested": untested,
        "split_delta": split_delta,
        "min_support": min_support,
        "grid": grid,
        "n": report.n,
        "tiers": names,
        "thresholds": {name: _json_threshold(t) for name, t in zip(names, thresholds, strict=True)},
        "guarantee": guarantee,
        "statistics": _statistics(report, names, chosen),
        "cost": _cost(table, report.thresholds),
        "skipped": {"unlabelled": table.unlabelled, "task_errors": table.task_errors},
        "source": str(folder / "results.jsonl"),
    }
    target = Path(out) if out is not None else folder / "thresholds.json"
    try:
        target.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise CalibrationError(f"cannot write {target}: {exc.strerror or exc}") from None
    written["out"] = str(target)
    return written


def _statistics(
    report: CalibrationReport, names: Sequence[str], chosen: Sequence[TierCalibration]
) -> dict[str, Any]:
    """`evaluate_thresholds` on the calibration cases, with per-tier entries by name.

    Each tier also says how its threshold was chosen (``basis``, see
    `agentjudge.calibration.TierCalibration`) and the evidence behind it.
    """
    stats = report.as_dict()
    stats["thresholds"] = [_json_threshold(t) for t in report.thresholds]
    stats["selective_agreement_n"] = report.accepted
    stats["by_tier"] = {
        name: {
            "threshold": _json_threshold(how.threshold),
            "decided": count,
            "share": share,
            "basis": how.basis,
            "tested": how.tested,
            "decides": how.decides,
            "delta": how.delta,
            "calibrated_on": how.remaining,
            "support": how.support,
            "errors": how.errors,
            "risk_bound": how.risk_bound,
        }
        for name, how, count, share in zip(
            names, chosen, report.per_tier, report.tier_shares, strict=True
        )
    }
    return stats


def _json_threshold(threshold: float) -> float | None:
    """A threshold as JSON: `NEVER` (a tier that never decides) is null (JSON has no inf)."""
    return None if threshold == NEVER else threshold


def _cost(table: _Table, thresholds: Sequence[float]) -> dict[str, Any] | None:
    """Mean dollars per case of each tier, of the thresholded cascade and of the last tier."""
    names = table.names or []
    if any(c is None for tier in table.costs for c in tier):
        return None  # some model call had no price: no estimate rather than a wrong one
    costs: list[list[float]] = [[c or 0.0 for c in tier] for tier in table.costs]
    if not any(any(tier) for tier in costs):
        return None  # no judge reported a cost
    n = len(costs[0])
    spent = 0.0
    for i in range(n):
        for k, threshold in enumerate(thresholds):
            spent += costs[k][i]
            if table.pairs[k][i][0] >= threshold:
                break
    last = sum(costs[-1]) / n
    cascade = spent / n
    return {
        "estimated_from": "the calibration run's recorded cost_usd of each tier on each case",
        "usd_per_case_by_tier": {name: sum(c) / n for name, c in zip(names, costs, strict=True)},
        "thresholded_usd_per_case": cascade,
        "last_tier_only_usd_per_case": last,
        "saving_vs_last_tier": None if last == 0 else 1.0 - cascade / last,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def format_calibration(written: Mapping[str, Any]) -> str:
    """The short table ``agentjudge calibrate`` prints."""
    stats = written["statistics"]
    ci = stats["selective_agreement_ci95"]
    lines = [
        f"{written['method']}: alpha={written['alpha']} delta={written['delta']} "
        f"n={written['n']} (min_support={written['min_support']}, grid={written['grid']}, "
        f"untested={written['untested']}, split_delta={written['split_delta']})",
        f"{'tier':<20} {'threshold':>9} {'decided':>8} {'share':>7}  basis",
    ]
    for name, tier in stats["by_tier"].items():
        threshold = "never" if tier["threshold"] is None else f"{tier['threshold']:.4f}"
        mark = "" if tier["tested"] else " (UNTESTED)"
        lines.append(
            f"{name:<20} {threshold:>9} {tier['decided']:>8} "
            f"{_pct(tier['share']):>7}  {tier['basis']}{mark}"
        )
    lines += _untested_warnings(stats["by_tier"])
    lines.append(f"{'abstained':<20} {'':>9} {stats['abstained']:>8} ")
    agreement = stats["selective_agreement"]
    interval = "" if ci is None else f" [{_pct(ci[0])}, {_pct(ci[1])}]"
    lines.append(
        f"coverage {_pct(stats['coverage'])} ({stats['accepted']}/{stats['n']}); selective "
        f"agreement {_pct(agreement)}{interval} (n={stats['accepted']}) on these cases"
    )
    cost = written["cost"]
    if cost is not None:
        lines.append(
            f"est. cost per case ${cost['thresholded_usd_per_case']:.6f} vs "
            f"${cost['last_tier_only_usd_per_case']:.6f} for the last tier alone"
        )
    lines.append(f"guarantee {written['guarantee']['statement']}")
    lines.append(f"thresholds: {written['out']}")
    return "\n".join(lines)


def _untested_warnings(by_tier: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One warning per kind of untested tier: never deciding, or deciding on no evidence."""
    never = [name for name, tier in by_tier.items() if not tier["tested"] and not tier["decides"]]
    applied = [name for name, tier in by_tier.items() if not tier["tested"] and tier["decides"]]
    lines = []
    if never:
        lines.append(
            f"warning: {', '.join(never)}: no tested threshold (too few confident cases or none "
            "passed its test): never decides; it only adds cost - label more cases or drop it"
        )
    if applied:
        lines.append(
            f"warning: {', '.join(applied)}: no tested threshold, applied anyway (the paper's "
            "fallback): it decides on no evidence of agreement"
        )
    return lines

"""The ``cascade`` block of ``summary.json`` for a thresholded cascade, and its report lines.

For a run with ``thresholds`` (see ``agentjudge.harness._calibrate``) the summary gets::

    "cascade": {
      "n": 200,                       # cases the cascade judged (task errors left out)
      "decided": 150, "abstained": 48, "errors": 2,
      "coverage": 0.75, "coverage_ci95": [0.69, 0.80],
      "by_tier": {"cheap": {"decided": 120, "share": 0.6}, "strong": {...}},
      "labelled": 150,                # decided cases with a human label
      "selective_agreement": 0.9, "selective_agreement_ci95": [0.84, 0.94],
      "selective_agreement_n": 150,
      "calibration": {                # what the thresholds file says (thresholds_provenance)
        "file": "calib/thresholds.json", "untested": "escalate", "split_delta": true,
        "alpha": 0.15, "delta": 0.1,
        "guarantee": {"holds": true, "statement": "holds: with probability >= 0.9 ..."},
        "tiers": {"cheap": {"threshold": null, "basis": "highest_untested", "tested": false}}
      }
    }

A case is decided by the tier that stopped the cascade (its record has ``stopped``), or by the
final tier when the verdict is PASS or FAIL; an ABSTAIN verdict (no tier confident enough) is an
abstention and an ERROR verdict an error. Coverage is ``decided / n``. Selective agreement is the
share of decided labelled cases whose verdict agrees with the human label (the rule of
`agentjudge.harness._agreement.agrees_with_human`). Intervals are Wilson 95%. `CascadeTally` is
folded by `RunAggregate` like its other counts (live cases, resumed rows, worker shares), so
the block needs no second read of ``results.jsonl``.

The block is typed (`CascadeSummary`, a declared field of `RunSummary` left out of
``summary.json`` when the run had no thresholds); what comes from the thresholds file
(``calibration``) keeps the file's JSON values as they are.

The report prints the calibration's guarantee statement and marks each tier whose threshold
is untested: ``never decides`` (``null``, ``untested="escalate"``) or ``UNTESTED threshold``
(the paper's fallback, deciding on no evidence).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agentjudge.agreement import wilson_interval
from agentjudge.harness._agreement import agrees_with_human
from agentjudge.harness._fold import FoldCase
from agentjudge.harness._text import plural

__all__ = [
    "CalibratedTier",
    "CascadeCalibration",
    "CascadeSummary",
    "CascadeTally",
    "TierShare",
    "cascade_lines",
]


class TierShare(BaseModel):
    """The cases one tier decided."""

    model_config = ConfigDict(extra="allow")

    decided: int
    """Cases this tier decided (it stopped the cascade, or was last with a PASS or FAIL)."""
    share: float | None
    """``decided / n``."""


class CalibratedTier(BaseModel):
    """What the thresholds file says of one tier."""

    model_config = ConfigDict(extra="allow")

    threshold: JsonValue
    """The tier's threshold as written (``null``: never decides)."""
    basis: JsonValue
    """How it was chosen (``"tested"``, ``"highest_untested"``, ...); None when not said."""
    tested: bool | None
    """Whether the threshold passed its test; None when the file does not say."""


class CascadeCalibration(BaseModel):
    """What a thresholded run's thresholds file says about itself (`thresholds_provenance`)."""

    model_config = ConfigDict(extra="allow")

    file: str
    """The thresholds file."""
    untested: JsonValue = None
    """The calibration's ``untested`` setting (``"escalate"`` or ``"paper"``)."""
    split_delta: JsonValue = None
    """Whether ``delta`` was split across the tiers."""
    alpha: JsonValue = None
    """The calibration's ``alpha``."""
    delta: JsonValue = None
    """The calibration's ``delta``."""
    guarantee: dict[str, JsonValue] | None = None
    """``{"holds", "probability", "statement"}``: what holds (the statement says why not)."""
    tiers: dict[str, CalibratedTier] = Field(default_factory=dict)
    """Per tier: threshold, basis, tested."""


class CascadeSummary(BaseModel):
    """The ``cascade`` block of ``summary.json`` (see the module docstring)."""

    model_config = ConfigDict(extra="allow")

    n: int
    """Cases the cascade judged (task errors left out)."""
    decided: int
    """Cases a tier decided."""
    abstained: int
    """Cases no tier was confident enough to decide (ABSTAIN verdicts)."""
    errors: int
    """ERROR verdicts."""
    coverage: float | None
    """``decided / n``."""
    coverage_ci95: tuple[float, float] | None
    """Wilson 95% interval of ``coverage``."""
    by_tier: dict[str, TierShare]
    """Per tier (in cascade order), the cases it decided."""
    labelled: int
    """Decided cases with a human label."""
    selective_agreement: float | None
    """Share of the labelled decided cases whose verdict agrees with the label."""
    selective_agreement_ci95: tuple[float, float] | None
    """Wilson 95% interval of ``selective_agreement``."""
    selective_agreement_n: int
    """The number ``selective_agreement`` is over (``labelled``)."""
    calibration: CascadeCalibration | None = None
    """What the thresholds file says (added by the run; not tallied)."""


class CascadeTally:
    """The counts behind the ``cascade`` block (cases whose verdict went through a cascade)."""

    def __init__(self) -> None:
        self.n = self.abstained = self.errors = self.labelled = self.agreed = 0
        self.by_tier: dict[str, int] = {}

    def add(self, case: FoldCase) -> None:
        """Fold in one case (cases that went through no cascade tier are not counted)."""
        verdict = case.verdict
        if verdict is None or not case.tiers:
            return
        self._add(
            case.tiers,
            case.stopped,
            str(verdict.status),
            case.human,
            verdict.label,
            verdict.score,
        )

    def _add(
        self,
        tiers: Sequence[str],
        stopped: str | None,
        status: str,
        human: Any,
        label: str | None,
        score: float | None,
    ) -> None:
        self.n += 1
        for name in tiers:
            self.by_tier.setdefault(name, 0)
        if status in ("abstain", "error"):
            self.abstained += status == "abstain"
            self.errors += status == "error"
            return
        self.by_tier[stopped if stopped is not None else tiers[-1]] += 1
        if human is not None:
            self.labelled += 1
            self.agreed += agrees_with_human(human, status, label, score)

    def merge(self, other: CascadeTally) -> None:
        """Fold in another tally (of other cases)."""
        self.n += other.n
        self.abstained += other.abstained
        self.errors += other.errors
        self.labelled += other.labelled
        self.agreed += other.agreed
        for name, count in other.by_tier.items():
            self.by_tier[name] = self.by_tier.get(name, 0) + count

    def summary(self) -> CascadeSummary | None:
        """The ``cascade`` block; None when no case went through a cascade."""
        if not self.n:
            return None
        decided = self.n - self.abstained - self.errors
        n, labelled = self.n, self.labelled
        return CascadeSummary(
            n=n,
            decided=decided,
            abstained=self.abstained,
            errors=self.errors,
            coverage=decided / n,
            coverage_ci95=wilson_interval(decided, n),
            by_tier={
                name: TierShare(decided=count, share=count / n)
                for name, count in self.by_tier.items()
            },
            labelled=labelled,
            selective_agreement=self.agreed / labelled if labelled else None,
            selective_agreement_ci95=(wilson_interval(self.agreed, labelled) if labelled else None),
            selective_agreement_n=labelled,
        )

    def block(self) -> dict[str, Any] | None:
        """`summary` as JSON values (what ``summary.json`` holds, without ``calibration``)."""
        summary = self.summary()
        return None if summary is None else summary.model_dump(mode="json", exclude={"calibration"})


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def cascade_lines(block: CascadeSummary | None) -> list[str]:
    """The report's "thresholded cascade" section (empty without a block)."""
    if block is None:
        return []
    ci = block.coverage_ci95 or (None, None)
    sa = block.selective_agreement_ci95 or (None, None)
    lines = [
        "thresholded cascade:",
        f"  coverage {_pct(block.coverage)} [{_pct(ci[0])}, {_pct(ci[1])}] "
        f"({block.decided}/{block.n}); abstained {block.abstained}, errors {block.errors}",
        f"  selective agreement with humans {_pct(block.selective_agreement)} "
        f"[{_pct(sa[0])}, {_pct(sa[1])}] (n={block.selective_agreement_n})",
    ]
    calibration = block.calibration
    tiers = {} if calibration is None else calibration.tiers
    lines += [
        f"  tier {name}: {plural(tier.decided, 'case')} ({_pct(tier.share)})"
        + _untested_mark(tiers.get(name))
        for name, tier in block.by_tier.items()
    ]
    if calibration is not None and calibration.guarantee is not None:
        statement = calibration.guarantee.get("statement")
        lines.append(f"  guarantee {statement} ({calibration.file})")
    return ["\n".join(lines)]


def _untested_mark(tier: CalibratedTier | None) -> str:
    """What the report says after a tier whose threshold is untested (nothing when tested)."""
    if tier is None or tier.tested is not False:
        return ""
    if tier.threshold is None:
        return f" - no tested threshold ({tier.basis}): never decides"
    return f" - UNTESTED threshold ({tier.basis}): decides on no evidence"

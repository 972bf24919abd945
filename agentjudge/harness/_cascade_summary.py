"""The ``cascade`` block of ``summary.json`` for a thresholded cascade, and its report lines.

For a run with ``thresholds`` (see ``agentjudge.harness._calibrate``) the summary gets::

    "cascade": {
      "n": 200,                       # cases the cascade judged (task errors left out)
      "decided": 150, "abstained": 48, "errors": 2,
      "coverage": 0.75, "coverage_ci95": [0.69, 0.80],
      "by_tier": {"cheap": {"decided": 120, "share": 0.6}, "strong": {...}},
      "labelled": 150,                # decided cases with a human label
      "selective_agreement": 0.9, "selective_agreement_ci95": [0.84, 0.94],
      "selective_agreement_n": 150
    }

A case is decided by the tier that stopped the cascade (its record has ``stopped``), or by the
final tier when the verdict is PASS or FAIL; an ABSTAIN verdict (no tier confident enough) is an
abstention and an ERROR verdict an error. Coverage is ``decided / n``. Selective agreement is the
share of decided labelled cases whose verdict agrees with the human label (the rule of
`agentjudge.harness._agreement.agrees_with_human`). Intervals are Wilson 95%. It is computed
from ``results.jsonl`` once the run ends (one more read of the file, only for such runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentjudge.agreement import wilson_interval
from agentjudge.harness._agreement import agrees_with_human
from agentjudge.harness._results import iter_rows

__all__ = ["cascade_block", "cascade_lines"]


class _Counts:
    def __init__(self) -> None:
        self.n = self.abstained = self.errors = self.labelled = self.agreed = 0
        self.by_tier: dict[str, int] = {}

    def add(self, row: Mapping[str, Any]) -> None:
        verdict, records = row.get("verdict"), row.get("tiers")
        if row.get("error") is not None or not isinstance(verdict, Mapping) or not records:
            return
        self.n += 1
        for record in records:
            self.by_tier.setdefault(record["name"], 0)
        status = str(verdict.get("status"))
        if status in ("abstain", "error"):
            self.abstained += status == "abstain"
            self.errors += status == "error"
            return
        stopped = [r["name"] for r in records if r.get("stopped")]
        tier = stopped[0] if stopped else records[-1]["name"]
        self.by_tier[tier] += 1
        if "human" in row:
            self.labelled += 1
            human, label, score = row["human"], verdict.get("label"), verdict.get("score")
            self.agreed += agrees_with_human(human, status, label, score)

    def block(self) -> dict[str, Any]:
        decided = self.n - self.abstained - self.errors
        n, labelled = self.n, self.labelled
        return {
            "n": n,
            "decided": decided,
            "abstained": self.abstained,
            "errors": self.errors,
            "coverage": decided / n if n else None,
            "coverage_ci95": list(wilson_interval(decided, n)) if n else None,
            "by_tier": {
                name: {"decided": count, "share": count / n if n else None}
                for name, count in self.by_tier.items()
            },
            "labelled": labelled,
            "selective_agreement": self.agreed / labelled if labelled else None,
            "selective_agreement_ci95": (
                list(wilson_interval(self.agreed, labelled)) if labelled else None
            ),
            "selective_agreement_n": labelled,
        }


def cascade_block(results: Path) -> dict[str, Any] | None:
    """The ``cascade`` block of a thresholded cascade run (None when no row went through one).

    Raises:
        ResultsError: a line other than the last of ``results`` is not a JSON row.
    """
    counts = _Counts()
    if results.is_file():
        for row in iter_rows(results):
            counts.add(row)
    return counts.block() if counts.n else None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def cascade_lines(summary: Any) -> list[str]:
    """The report's "thresholded cascade" section (empty when the summary has no block)."""
    extra = getattr(summary, "model_extra", None) or {}
    block = extra.get("cascade")
    if not isinstance(block, Mapping):
        return []
    ci = block.get("coverage_ci95") or (None, None)
    sa = block.get("selective_agreement_ci95") or (None, None)
    lines = [
        "thresholded cascade:",
        f"  coverage {_pct(block['coverage'])} [{_pct(ci[0])}, {_pct(ci[1])}] "
        f"({block['decided']}/{block['n']}); abstained {block['abstained']}, "
        f"errors {block['errors']}",
        f"  selective agreement with humans {_pct(block['selective_agreement'])} "
        f"[{_pct(sa[0])}, {_pct(sa[1])}] (n={block['selective_agreement_n']})",
    ]
    lines += [
        f"  tier {name}: {tier['decided']} cases ({_pct(tier['share'])})"
        for name, tier in block["by_tier"].items()
    ]
    return ["\n".join(lines)]

"""The ``cost`` block of ``summary.json``: tokens and dollars of the judges' model calls.

Read from each judgment's metadata (what the model-backed judges record: ``model``, ``client``,
``usage``, ``cost_usd``, ``cached``, ``calls``), so a live run, a resumed results file and the
rows of worker processes all add up the same way.

* A judgment counts as model calls when its metadata has a ``model`` (``calls`` of them, 1 when
  not given). Judgments without one (deterministic judges, a call that raised or timed out)
  cost nothing known and are not counted.
* ``input_tokens`` / ``output_tokens`` / ``cached_tokens`` sum ``usage`` (``cached_tokens`` is
  ``cache_read_tokens``: prompt tokens served from the provider's cache).
* ``usd`` is the sum of ``cost_usd`` when every counted call has a price, and **None** when
  some call has none (its model is not in the price table): ``unpriced_calls`` says how many,
  ``priced_usd`` holds the known part, so a total is never silently low. A gate on
  ``cost.usd`` then fails (a gate never passes on missing data).
* Cache hits (``cached: true``) cost 0 and are counted in ``cached_calls``.
* ``by_judge`` (judge name), ``by_model`` (the client name, e.g. ``openai:gpt-4o-mini``, else
  the model the API reported) and ``by_tier`` (cascade tier; judges outside a cascade are not
  listed there) break the same numbers down.
* ``budget_refused`` counts judgments a budget refused (``error_type`` ``BudgetExhausted``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.harness._fold import Judged
from agentjudge.harness._text import plural

__all__ = [
    "BUDGET_ERROR",
    "COST_STATS",
    "BudgetOutcome",
    "CostLine",
    "CostSummary",
    "CostTally",
    "budget_outcome",
    "rerun_for_budget",
]

BUDGET_ERROR = "BudgetExhausted"
"""``error_type`` of a judgment a budget refused."""


class CostLine(BaseModel):
    """Tokens and dollars of some model calls (the whole run, or one judge, model or tier)."""

    model_config = ConfigDict(extra="allow")

    calls: int = 0
    """Model calls counted."""
    cached_calls: int = 0
    """Calls answered from the cache (they cost nothing)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens read from the provider's prompt cache (``cache_read_tokens``)."""
    usd: float | None = 0.0
    """US dollars; None when some call had no price (see ``unpriced_calls``)."""
    priced_usd: float = 0.0
    """Dollars of the calls that had a price (a lower bound when ``usd`` is None)."""
    unpriced_calls: int = 0
    """Calls whose model has no price."""


class CostSummary(CostLine):
    """The ``cost`` block of ``summary.json`` (see the module docs)."""

    by_judge: dict[str, CostLine] = Field(default_factory=dict)
    by_model: dict[str, CostLine] = Field(default_factory=dict)
    by_tier: dict[str, CostLine] = Field(default_factory=dict)
    budget_refused: int = 0
    """Judgments a budget refused (ERROR, ``error_type`` ``BudgetExhausted``)."""


class BudgetOutcome(BaseModel):
    """How a run with ``max_cost`` went against its budget."""

    model_config = ConfigDict(extra="allow")

    max_cost_usd: float
    """The limit of this invocation (split evenly across worker processes, see ``workers``)."""
    spent_usd: float
    """Dollars spent by this invocation's finished model calls."""
    exhausted: bool
    """True when some judgment was refused (the run then ends "aborted", exit 3)."""
    refused: int
    """Judgments refused (ERROR, ``error_type`` ``BudgetExhausted``) in the results file."""
    workers: int = 1
    """Processes that split the limit (each got ``max_cost_usd / workers``); 1 on Ray, whose
    actors share one budget through leases."""
    message: str = ""
    """One line saying what happened and how far the run got."""


def budget_outcome(
    max_cost: float, workers: int, tally: CostTally, cost_before: float, cases: int
) -> BudgetOutcome:
    """How a run went against ``max_cost``.

    Args:
        max_cost: The limit (US dollars) of this invocation.
        workers: Processes that shared it.
        tally: The cost sums of the results file.
        cost_before: Dollars of the rows kept from an earlier invocation (resume).
        cases: Cases in the results file.
    """
    refused = tally.refused
    spent = max(tally.total.usd - cost_before, 0.0)
    message = f"spent ${spent:.4f} of the ${max_cost:.4f} budget"
    if refused:
        message = (
            f"budget exhausted: {message}; {plural(refused, 'judgment')} refused "
            f"(ERROR BudgetExhausted) across the {plural(cases, 'case')} in the results file; "
            "run again with --resume and a larger --max-cost to judge them"
        )
    return BudgetOutcome(
        max_cost_usd=max_cost,
        spent_usd=round(spent, 10),
        exhausted=bool(refused),
        refused=refused,
        workers=workers,
        message=message,
    )


def rerun_for_budget(row: Mapping[str, Any]) -> bool:
    """Whether a results row holds a judgment a budget refused (``--resume`` runs it again)."""
    return any(r.get("error_type") == BUDGET_ERROR for r in row.get("results") or ())


COST_STATS: dict[str, Callable[[CostSummary], float | None]] = {
    "usd": lambda c: c.usd,
    "priced_usd": lambda c: c.priced_usd,
    "input_tokens": lambda c: c.input_tokens,
    "output_tokens": lambda c: c.output_tokens,
    "cached_tokens": lambda c: c.cached_tokens,
    "tokens": lambda c: c.input_tokens + c.output_tokens,
    "calls": lambda c: c.calls,
    "unpriced_calls": lambda c: c.unpriced_calls,
    "budget_refused": lambda c: c.budget_refused,
}
"""Gate stats of the ``cost`` subject (``cost.usd<=5``)."""


def _count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


def _dollars(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number >= 0:
            return number
    return None


class _Line:
    """Running sums behind one `CostLine` (plain slots: cheap, and picklable for workers)."""

    __slots__ = ("cached", "cached_calls", "calls", "inp", "out", "unpriced", "usd")

    def __init__(self) -> None:
        self.calls = self.cached_calls = self.inp = self.out = self.cached = self.unpriced = 0
        self.usd = 0.0

    def add(self, calls: int, cached: bool, usage: Mapping[str, Any], usd: float | None) -> None:
        self.calls += calls
        self.cached_calls += calls if cached else 0
        self.inp += _count(usage.get("input_tokens"))
        self.out += _count(usage.get("output_tokens"))
        self.cached += _count(usage.get("cache_read_tokens"))
        if usd is None:
            self.unpriced += calls
        else:
            self.usd += usd

    def merge(self, other: _Line) -> None:
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.inp += other.inp
        self.out += other.out
        self.cached += other.cached
        self.unpriced += other.unpriced
        self.usd += other.usd

    def line(self) -> dict[str, Any]:
        priced = round(self.usd, 10)
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "input_tokens": self.inp,
            "output_tokens": self.out,
            "cached_tokens": self.cached,
            "usd": None if self.unpriced else priced,
            "priced_usd": priced,
            "unpriced_calls": self.unpriced,
        }


class CostTally:
    """Streaming cost sums of a run (part of `RunAggregate`)."""

    __slots__ = ("by_judge", "by_model", "by_tier", "refused", "total")

    def __init__(self) -> None:
        self.total = _Line()
        self.by_judge: dict[str, _Line] = {}
        self.by_model: dict[str, _Line] = {}
        self.by_tier: dict[str, _Line] = {}
        self.refused = 0

    def add(self, result: Judged) -> None:
        """Fold in one judge result (model calls are read from its judgment's metadata)."""
        if result.error_type == BUDGET_ERROR:
            self.refused += 1
        metadata = result.metadata
        if not metadata or "model" not in metadata:
            return
        calls = _count(metadata.get("calls")) or 1
        usage = metadata.get("usage")
        usage = usage if isinstance(usage, Mapping) else {}
        usd = _dollars(metadata.get("cost_usd"))
        cached = metadata.get("cached") is True
        model = str(metadata.get("client") or metadata["model"])
        lines = [self.total, _line(self.by_judge, result.name), _line(self.by_model, model)]
        if result.tier is not None:
            lines.append(_line(self.by_tier, result.tier))
        for line in lines:
            line.add(calls, cached, usage, usd)

    def merge(self, other: CostTally) -> None:
        """Fold in the sums of other cases."""
        self.total.merge(other.total)
        for mine, theirs in (
            (self.by_judge, other.by_judge),
            (self.by_model, other.by_model),
            (self.by_tier, other.by_tier),
        ):
            for key, line in theirs.items():
                _line(mine, key).merge(line)
        self.refused += other.refused

    def summary(self) -> CostSummary:
        """The ``cost`` block."""
        return CostSummary(
            **self.total.line(),
            by_judge={k: CostLine(**v.line()) for k, v in self.by_judge.items()},
            by_model={k: CostLine(**v.line()) for k, v in sorted(self.by_model.items())},
            by_tier={k: CostLine(**v.line()) for k, v in self.by_tier.items()},
            budget_refused=self.refused,
        )


def _line(lines: dict[str, _Line], key: str) -> _Line:
    line = lines.get(key)
    if line is None:
        line = lines[key] = _Line()
    return line

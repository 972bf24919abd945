"""`Budget`: a spending limit (US dollars and/or tokens) on the model calls of an Evaluator.

The rule, per attempt of a model-backed judge (``kind`` LLM, or a judge with a ``client``):

* The judge's *estimate* is its mean cost per finished call so far (dollars from
  ``metadata["cost_usd"]``, tokens from ``metadata["usage"]``: input + output).
* An attempt starts only if ``spent + reserved + estimate <= limit`` for every limit set (and
  ``spent < limit``), where ``reserved`` is the estimate of every attempt still running. The
  attempt then reserves its estimate until it finishes, when its actual cost replaces it.
* Until a judge has a finished call with a known cost there is no estimate: one call of that
  judge runs at a time (a probe); its other attempts wait for it (as queueing).
* An attempt that may not start raises `BudgetExhausted`; the Evaluator records an ERROR
  result with ``error_type="BudgetExhausted"`` and ``attempts=0`` (never a missing result).
  Running calls always finish.
* A dollar limit needs prices: once a judge's answer carries no ``cost_usd`` (its model has
  no price), that judge's later attempts are refused, naming the model. A token limit likewise
  needs the provider to report usage.

A call that raises or times out leaves no known cost (the tokens it may have used are not
counted); a cached answer costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import anyio

from agentjudge.core import Judgment
from agentjudge.core._results import judgment_cost_usd, judgment_tokens

__all__ = ["Budget", "BudgetExhausted"]


class BudgetExhausted(Exception):
    """An attempt of a model-backed judge was refused because the budget would be exceeded."""


@dataclass(slots=True)
class _Meter:
    """One limit (dollars or tokens) and what was spent against it."""

    unit: str
    limit: float
    spent: float = 0.0
    reserved: float = 0.0
    samples: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Judge name -> (finished calls with a known amount, their total)."""
    unknown: dict[str, str] = field(default_factory=dict)
    """Judge name -> why its amounts cannot be known (its later attempts are refused)."""

    def estimate(self, judge: str) -> float | None:
        count, total = self.samples.get(judge, (0, 0.0))
        return total / count if count else None

    def show(self, value: float) -> str:
        return f"${value:.4f}" if self.unit == "usd" else f"{int(value)} tokens"

    def refusal(self, judge: str, estimate: float) -> str | None:
        """Why an attempt of ``judge`` costing ``estimate`` may not start (None: it may)."""
        if judge in self.unknown:
            return self.unknown[judge]
        if self.spent >= self.limit or self.spent + self.reserved + estimate > self.limit:
            running = f" + {self.show(self.reserved)} for running calls" if self.reserved else ""
            return (
                f"budget exhausted: {self.show(self.spent)} spent{running} of the "
                f"{self.show(self.limit)} limit; the next call of {judge!r} "
                f"(about {self.show(estimate)}) would exceed it"
            )
        return None

    def record(self, judge: str, amount: float | None, answered: bool, model: str) -> None:
        if amount is None:
            if answered and judge not in self.unknown:
                what = "has no price" if self.unit == "usd" else "reported no token usage"
                self.unknown[judge] = (
                    f"budget cannot be kept: the model {model!r} of judge {judge!r} {what}, "
                    "so its calls cannot be counted"
                    + (
                        " (add a price with agentjudge.models.prices.set)"
                        if self.unit == "usd"
                        else ""
                    )
                )
            return
        self.spent += amount
        count, total = self.samples.get(judge, (0, 0.0))
        self.samples[judge] = (count + 1, total + amount)


@dataclass(slots=True)
class Ticket:
    """One admitted attempt: what it reserved."""

    judge: str
    reserved: tuple[float, ...]
    probe: bool


def _limit(name: str, value: object, *, integer: bool) -> float | None:
    if value is None:
        return None
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        expected = "an integer" if integer else "a number"
        raise ValueError(f"Budget {name} must be {expected} >= 0 or None, got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"Budget {name} must be finite and >= 0, got {value!r}")
    return number


class Budget:
    """A spending limit on the model calls of one `Evaluator` (see the module docs for the rule).

    Args:
        usd: The most to spend, in US dollars (None: no dollar limit).
        tokens: The most input + output tokens to use (None: no token limit).

    Raises:
        ValueError: A limit that is not a finite number >= 0.

    Examples:
        >>> budget = Budget(usd=5.0)
        >>> budget.spent_usd
        0.0
    """

    def __init__(self, usd: float | None = None, tokens: int | None = None) -> None:
        usd_limit = _limit("usd", usd, integer=False)
        token_limit = _limit("tokens", tokens, integer=True)
        self.usd = usd_limit
        self.tokens = None if token_limit is None else int(token_limit)
        self._meters: list[_Meter] = []
        if usd_limit is not None:
            self._meters.append(_Meter("usd", usd_limit))
        if token_limit is not None:
            self._meters.append(_Meter("tokens", token_limit))
        self._probing: dict[str, anyio.Event] = {}
        self.refused = 0
        """Attempts refused so far."""

    def __repr__(self) -> str:
        return (
            f"Budget(usd={self.usd!r}, tokens={self.tokens!r}, spent_usd={self.spent_usd:.4f}, "
            f"spent_tokens={self.spent_tokens}, refused={self.refused})"
        )

    def _meter(self, unit: str) -> _Meter | None:
        return next((m for m in self._meters if m.unit == unit), None)

    @property
    def spent_usd(self) -> float:
        """Dollars spent by finished calls (0 without a dollar limit)."""
        meter = self._meter("usd")
        return 0.0 if meter is None else meter.spent

    @property
    def spent_tokens(self) -> int:
        """Tokens used by finished calls (0 without a token limit)."""
        meter = self._meter("tokens")
        return 0 if meter is None else int(meter.spent)

    @property
    def exhausted(self) -> bool:
        """True once any attempt was refused."""
        return self.refused > 0

    async def admit(self, judge: str) -> Ticket:
        """Let one attempt of ``judge`` start, or raise `BudgetExhausted` saying why.

        Waits (without reserving anything) while another call of ``judge`` probes its cost.
        """
        while True:
            estimates = [m.estimate(judge) for m in self._meters]
            probe = any(e is None for e in estimates)
            if probe and judge in self._probing:
                await self._probing[judge].wait()
                continue
            amounts = tuple(0.0 if e is None else e for e in estimates)
            for meter, amount in zip(self._meters, amounts, strict=True):
                why = meter.refusal(judge, amount)
                if why is not None:
                    self.refused += 1
                    raise BudgetExhausted(why)
            for meter, amount in zip(self._meters, amounts, strict=True):
                meter.reserved += amount
            if probe:
                self._probing[judge] = anyio.Event()
            return Ticket(judge, amounts, probe)

    def settle(self, ticket: Ticket, judgment: Judgment | None) -> None:
        """Release ``ticket``'s reservation and count what its attempt spent (None: unknown)."""
        answered = judgment is not None and "model" in judgment.metadata
        model = str(judgment.metadata.get("model", "")) if judgment is not None else ""
        for meter, amount in zip(self._meters, ticket.reserved, strict=True):
            meter.reserved = max(meter.reserved - amount, 0.0)
            usd = meter.unit == "usd"
            spent = judgment_cost_usd(judgment) if usd else judgment_tokens(judgment)
            meter.record(ticket.judge, spent, answered, model)
        if ticket.probe:
            event = self._probing.pop(ticket.judge, None)
            if event is not None:
                event.set()

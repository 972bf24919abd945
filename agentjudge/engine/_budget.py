"""`Budget`: a spending limit (US dollars and/or tokens) on the model calls of an Evaluator.

The rule, per model request of a metered judge (``kind`` LLM, or a judge with a ``client``):

* **Before a request is sent it reserves an upper bound of its cost**: its estimated input
  tokens plus its ``max_tokens``, at the model's price (the model client prices it, see
  `agentjudge.models._spend`; the engine hands the client this budget through
  `agentjudge.judging.spend_gate` around each attempt).
* It is sent only if ``spent + reserved + bound <= limit`` for every limit set. While requests
  in flight hold the room it needs, it waits for them (reported as queueing); when even
  ``spent + bound`` passes the limit it is refused with `BudgetExhausted`, and from then on the
  budget is *exhausted*: every later request and attempt is refused at once.
* When the answer arrives its real cost replaces the reservation (the whole bound counts when
  the answer reports no usage). A request that fails or is cancelled gives its reservation
  back (its cost is unknown and not counted).
* A dollar limit needs prices: a request whose model has no price is refused before it is
  sent, naming the model.
* A refused attempt is an ERROR result with ``error_type="BudgetExhausted"`` (never a missing
  result): ``attempts=0`` when the budget was already exhausted before it started; a judge
  refused in the middle of its attempt (e.g. a later sample) has its earlier requests counted.

**The bound.** Spending passes a limit only by what requests in flight when it ran out cost
beyond their reservation. A request costs more than its reservation only when its input has
more tokens than estimated (outputs are capped by ``max_tokens``) or it sets no
``max_tokens``; estimates are scaled up by the worst ratio of real to estimated input tokens
the client's answers have shown. A cached answer costs nothing and reserves nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import anyio

from agentjudge.judging import SpendGate

__all__ = ["Budget", "BudgetExhausted"]


class BudgetExhausted(Exception):
    """A model request (or a judge attempt) was refused because the budget would be exceeded."""


@dataclass(slots=True)
class _Meter:
    """One limit (dollars or tokens) and what was spent and reserved against it."""

    unit: str
    limit: float
    spent: float = 0.0
    reserved: float = 0.0

    def show(self, value: float) -> str:
        return f"${value:.4f}" if self.unit == "usd" else f"{math.ceil(value)} tokens"

    def fits(self, amount: float) -> bool:
        return self.spent + self.reserved + amount <= self.limit


class _Hold:
    """What one request reserved; settled or released exactly once."""

    __slots__ = ("_amounts", "_budget", "_open")

    def __init__(self, budget: Budget, amounts: tuple[float, ...]) -> None:
        self._budget = budget
        self._amounts = amounts
        self._open = True

    def settle(self, usd: float | None, tokens: int | None) -> None:
        """Count what the answer used (an unknown amount counts the reserved bound)."""
        self._close((usd, tokens))

    def release(self) -> None:
        """The request got no answer: its reservation goes back."""
        self._close(None)

    def _close(self, used: tuple[float | None, int | None] | None) -> None:
        if self._open:
            self._open = False
            self._budget._settle(self._amounts, used)


class _Gate:
    """The budget as one judge attempt's model calls see it (names the judge in refusals)."""

    __slots__ = ("_budget", "_judge")

    def __init__(self, budget: Budget, judge: str) -> None:
        self._budget = budget
        self._judge = judge

    async def reserve(self, client: str, usd: float | None, tokens: int) -> _Hold:
        return await self._budget._reserve(self._judge, client, usd, tokens)


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
        self._out: str | None = None
        self._changed: anyio.Event | None = None
        self.refused = 0
        """Requests and attempts refused so far."""

    def __repr__(self) -> str:
        return (
            f"Budget(usd={self.usd!r}, tokens={self.tokens!r}, spent_usd={self.spent_usd:.4f}, "
            f"spent_tokens={self.spent_tokens}, refused={self.refused})"
        )

    def _meter(self, unit: str) -> _Meter | None:
        return next((m for m in self._meters if m.unit == unit), None)

    @property
    def spent_usd(self) -> float:
        """Dollars spent by answered requests (0 without a dollar limit)."""
        meter = self._meter("usd")
        return 0.0 if meter is None else meter.spent

    @property
    def spent_tokens(self) -> int:
        """Tokens used by answered requests (0 without a token limit)."""
        meter = self._meter("tokens")
        return 0 if meter is None else math.ceil(meter.spent)

    @property
    def exhausted(self) -> bool:
        """True once anything was refused."""
        return self.refused > 0

    def admit(self, judge: str) -> None:
        """Let one attempt of ``judge`` start, or raise `BudgetExhausted` once the budget is."""
        if self._out is not None:
            self.refused += 1
            raise BudgetExhausted(self._out)

    def gate(self, judge: str) -> SpendGate:
        """The gate the model requests of one attempt of ``judge`` reserve their bounds at."""
        return _Gate(self, judge)

    async def _reserve(self, judge: str, client: str, usd: float | None, tokens: int) -> _Hold:
        amounts = tuple(usd if m.unit == "usd" else float(tokens) for m in self._meters)
        while True:
            why = self._refusal(judge, client, amounts)
            if why is not None:
                self.refused += 1
                raise BudgetExhausted(why)
            if all(m.fits(a or 0.0) for m, a in zip(self._meters, amounts, strict=True)):
                held = tuple(a or 0.0 for a in amounts)
                for meter, amount in zip(self._meters, held, strict=True):
                    meter.reserved += amount
                return _Hold(self, held)
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()  # requests in flight hold the room: wait for one

    def _refusal(self, judge: str, client: str, amounts: tuple[float | None, ...]) -> str | None:
        """Why a request of ``client`` reserving ``amounts`` can never be sent (None: it can)."""
        if self._out is not None:
            return self._out
        for meter, amount in zip(self._meters, amounts, strict=True):
            if amount is None:
                return (
                    f"budget cannot be kept: the model {client!r} of judge {judge!r} has no "
                    "price, so its calls cannot be counted (add a price with "
                    "agentjudge.models.prices.set)"
                )
            if meter.spent + amount > meter.limit:
                self._out = _exhausted(meter, judge, amount)
                return self._out
        return None

    def _wake(self) -> None:
        """Let the requests waiting for room look again (something they wait on changed)."""
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def _settle(
        self, amounts: tuple[float, ...], used: tuple[float | None, int | None] | None
    ) -> None:
        for meter, amount in zip(self._meters, amounts, strict=True):
            meter.reserved = max(meter.reserved - amount, 0.0)
            if used is not None:
                real = used[0] if meter.unit == "usd" else used[1]
                meter.spent += amount if real is None else real
        self._wake()


def _exhausted(meter: _Meter, judge: str, amount: float) -> str:
    """Why the next request of ``judge`` (``amount``) is refused: ``meter`` has no room left."""
    running = f" + {meter.show(meter.reserved)} held by running calls"
    return (
        f"budget exhausted: {meter.show(meter.spent)} spent"
        f"{running if meter.reserved else ''} of the {meter.show(meter.limit)} "
        f"limit; the next call of {judge!r} (up to {meter.show(amount)}) would exceed it"
    )

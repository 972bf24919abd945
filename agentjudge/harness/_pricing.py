"""A run's prices and budget, read from its suite.

The price table applied while the judges run, and each process's share of ``max_cost``.

The ``cost`` block these prices end up in is tallied by `agentjudge.harness._cost`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentjudge.engine import Budget
from agentjudge.harness._suite import Suite

if TYPE_CHECKING:
    from agentjudge.models import PriceTable

__all__ = ["prices_applied", "run_budget", "suite_price_table", "suite_prices"]


def run_budget(suite: Suite) -> Budget | None:
    """The `Budget` of one process of the run: ``max_cost`` split evenly across the workers.

    Each worker process keeps its own share and reserves every model call's upper bound in it
    before sending (see `Budget`), so the processes together keep the guarantee of one budget
    of ``max_cost``; one worker can run out while another still has some left (documented).
    """
    if suite.max_cost is None:
        return None
    return Budget(usd=suite.max_cost / suite.workers)


def suite_price_table(suite: Suite) -> PriceTable | None:
    """The `PriceTable` of the suite's ``prices`` setting (None without one).

    Raises:
        ValueError: the price file or table is invalid (file and field named).
    """
    value = suite.prices
    if isinstance(value, Path):
        value = suite.path(value)
    where = "command line" if suite.source is None else str(suite.source)
    return suite_prices(value, where)


def suite_prices(
    value: Path | Mapping[str, Mapping[str, Any]] | None, where: str
) -> PriceTable | None:
    """The price table a suite's ``prices`` setting names (a file, or a table of models).

    Args:
        value: The setting (a path already resolved against the suite's folder).
        where: The suite file (or "command line"), for error messages.

    Raises:
        ValueError: the file cannot be read or a price is invalid; names the file and field.
    """
    if value is None:
        return None
    # The price tables load only for a suite that sets prices (not every CLI run).
    from agentjudge.models._prices import PriceTable, price_problem

    if isinstance(value, Path):
        try:
            return PriceTable.load(value)
        except ValueError as exc:
            raise ValueError(f"{where}: setting 'prices': {exc}") from None
    table = PriceTable()
    for name, fields in value.items():
        try:
            table.set(name, fields)
        except ValidationError as exc:
            problem = "; ".join(price_problem(e) for e in exc.errors())
            raise ValueError(
                f"{where}: setting 'prices.{name}': {problem}; expected a table "
                "{input = USD, output = USD, cached_input = ..., batch_input = ..., "
                "batch_output = ...} per million tokens"
            ) from None
        except ValueError as exc:
            raise ValueError(f"{where}: setting 'prices.{name}': {exc}") from None
    return table


@contextlib.contextmanager
def prices_applied(table: PriceTable | None) -> Iterator[None]:
    """Override the process-wide `agentjudge.models.prices` with ``table`` while inside.

    The judges price their calls with the process-wide table; the names ``table`` sets are
    put back as they were on exit (so a run's ``prices`` do not leak into the next one).
    """
    if table is None:
        yield
        return
    from agentjudge.models._prices import prices

    previous = {name: prices.get(name) for name in table.names}
    as_of = prices.as_of
    prices.update(table)
    try:
        yield
    finally:
        for name, price in previous.items():
            prices.set(name, price)
        prices.as_of = as_of

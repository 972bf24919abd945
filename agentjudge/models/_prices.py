"""Model prices: `ModelPrice`, `PriceTable` and the process-wide table `prices`.

Prices are US dollars per million tokens. The package ships a dated table
(``agentjudge/models/prices.json``: `PriceTable.as_of`, and per provider the date its prices
were read, `PriceTable.read_on`; a provider or model that is not in it has an unknown price);
a user overrides or extends it from a file (`PriceTable.load`, same shape as the shipped file,
JSON or TOML) or from code (``prices.set("openai:gpt-4o-mini", input=0.15, output=0.60)``). A
model that is not in the table has no price: its cost is None, never a guessed number.

How a `Usage` becomes a cost (`ModelPrice.cost`):

* Most providers (OpenAI, Gemini) count cached prompt tokens inside ``input_tokens``: the
  uncached part is billed at ``input``, the cached part (``cache_read_tokens``) at
  ``cached_input``.
* A provider whose client class sets ``cache_tokens_apart`` (Anthropic; the registry answers,
  see `agentjudge.models._registry.counts_cache_apart`) counts them apart: ``input_tokens`` at
  ``input``, ``cache_read_tokens`` at ``cached_input`` and ``cache_creation_tokens`` at
  ``cache_write_input``.
* ``output_tokens`` (reasoning included, as both providers report it) at ``output``.
* A missing ``cached_input`` bills cached tokens at ``input``; missing batch prices bill a batch
  call at the regular prices (both upper bounds). A usage without input or output counts, or
  with cache writes but no ``cache_write_input``, has no cost (None).

A provider that reports each call's charge in its answer (``reports_cost``: OpenRouter's
``usage.cost``, in US dollars) is priced by that charge, not by the table (`reported_cost`):
OpenRouter bills a model at the price of whichever provider served the call.
"""

from __future__ import annotations

import json
import math
import threading
import tomllib
from collections.abc import Mapping
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError

from agentjudge.models._types import ModelResponse, Usage

__all__ = [
    "ModelPrice",
    "PriceTable",
    "cache_apart",
    "price_problem",
    "prices",
    "reported_cost",
    "response_cost",
]

_PER_TOKEN = 1e-6


def cache_apart(client: str) -> bool:
    """The provider of the client name ``client`` counts cache tokens apart from input ones.

    Asked of the provider registry only when it matters (the caller has cache tokens), so
    pricing a usage without them imports no client module.
    """
    from agentjudge.models._registry import counts_cache_apart

    return counts_cache_apart(client.partition(":")[0])


def reported_cost(client: str, usage: Usage, raw: Mapping[str, Any] | None) -> float | None:
    """The charge in USD the provider reported in the answer body ``raw``, else None.

    Read from ``raw["usage"]["cost"]`` (a number >= 0) when the provider of the client name
    ``client`` reports one (the registry's ``reports_cost``: OpenRouter), and only when the
    body's own token counts are ``usage``'s: an answer re-asked for its schema sums the usage
    of several requests, of which ``raw`` is the last, so its reported cost would be short
    (such an answer is priced from the table instead).
    """
    body_usage = raw.get("usage") if raw is not None else None
    if not isinstance(body_usage, dict) or "cost" not in body_usage:  # the usual case: no cost
        return None
    cost = body_usage["cost"]
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return None
    if not math.isfinite(cost) or cost < 0:
        return None
    if (
        body_usage.get("prompt_tokens") != usage.input_tokens
        or body_usage.get("completion_tokens") != usage.output_tokens
    ):
        return None
    from agentjudge.models._registry import reports_cost

    return float(cost) if reports_cost(client.partition(":")[0]) else None


def _price(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"a price must be a finite number of USD >= 0, got {value}")
    return value


def _number(value: object) -> object:
    """Strict numbers only: ``"0.15"`` and ``true`` are no price (an int is fine)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        message = f"a price must be a number of USD, got {_as_written(value)}"
        if isinstance(value, str) and _is_number(value):
            message += " (a string: write the number without quotes)"
        raise ValueError(message)
    return value


def _as_written(value: object) -> str:
    """``value`` as a price file writes it (``true``, ``"0.15"``), else its repr."""
    try:
        return json.dumps(value)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


Price = Annotated[float, BeforeValidator(_number), AfterValidator(_price)]
"""A price field: a JSON/TOML number (an int is fine); ``"0.15"`` and ``true`` are refused."""


class ModelPrice(BaseModel):
    """What one model costs, in US dollars per million tokens.

    Every price is a number >= 0 (an int or a float): a string such as ``"0.15"`` or a
    boolean is refused, never read as a price.

    Attributes:
        input: Uncached input tokens.
        output: Output tokens (reasoning tokens included).
        cached_input: Input tokens read from the provider's prompt cache (None: ``input``).
        cache_write_input: Input tokens written to the prompt cache (Anthropic).
        batch_input: Input tokens of a batch-API call (None: ``input``).
        batch_output: Output tokens of a batch-API call (None: ``output``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: Price
    output: Price
    cached_input: Price | None = None
    cache_write_input: Price | None = None
    batch_input: Price | None = None
    batch_output: Price | None = None

    def cost(self, usage: Usage, *, provider: str = "", batch: bool = False) -> float | None:
        """The cost of ``usage`` in USD, None when the usage is too incomplete to price.

        Args:
            usage: The token counts of one call (or a sum of calls).
            provider: The provider prefix: one whose client class sets
                ``cache_tokens_apart`` (``"anthropic"``) counts cache tokens apart from
                ``input_tokens``; any other counts them inside (OpenAI style).
            batch: Price the call at the batch prices.
        """
        if usage.input_tokens is None or usage.output_tokens is None:
            return None
        cache_read = usage.cache_read_tokens or 0
        cache_write = usage.cache_creation_tokens or 0
        if cache_write and self.cache_write_input is None:
            return None
        input_price = self.batch_input if batch and self.batch_input is not None else self.input
        output_price = self.batch_output if batch and self.batch_output is not None else self.output
        cached_price = self.cached_input if self.cached_input is not None else input_price
        if (cache_read or cache_write) and cache_apart(provider):
            uncached = usage.input_tokens
        else:
            uncached = max(usage.input_tokens - cache_read, 0)
        dollars = (
            uncached * input_price
            + cache_read * cached_price
            + cache_write * (self.cache_write_input or 0.0)
            + usage.output_tokens * output_price
        )
        return dollars * _PER_TOKEN


def price_problem(error: Mapping[str, Any]) -> str:
    """One pydantic error of a price file or table, naming the model and the field.

    ``models.<name>.<field>`` locations become ``model '<name>' field '<field>'`` (a model
    name may itself hold dots).
    """
    loc = [str(part) for part in error["loc"]]
    if len(loc) >= 3 and loc[0] == "models":
        where = f"model {loc[1]!r} field {'.'.join(loc[2:])!r}"
    elif len(loc) == 1 and loc[0] in ModelPrice.model_fields:
        where = f"field {loc[0]!r}"
    else:
        where = ".".join(loc) or "(top level)"
    return f"{where}: {str(error['msg']).removeprefix('Value error, ')}"


class _TableFile(BaseModel):
    """The shape of a price file (the shipped one included)."""

    model_config = ConfigDict(extra="forbid")

    as_of: str | None = None
    read: dict[str, str] = {}
    currency: str = "USD"
    unit: str = "per million tokens"
    sources: list[str] = []
    models: dict[str, ModelPrice] = {}
    aliases: dict[str, str] = {}


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a model name must be a non-blank string, got {name!r}")
    return name


_FOUND_MAX = 256
"""`PriceTable.lookup` answers kept per table (client and model name pairs)."""


class PriceTable:
    """Prices by model name (``"<provider>:<model>"``), with aliases and a date.

    Args:
        models: Name -> `ModelPrice` (or a mapping of its fields).
        aliases: Name -> the name whose price it uses (e.g. a dated snapshot -> its family).
        as_of: The date the prices were checked (ISO ``YYYY-MM-DD``), when known.
        read: Provider prefix -> the date its prices were read, where it differs from
            ``as_of`` (see `read_on`).

    Raises:
        ValueError: A blank name, an invalid price, or an alias to an unknown name.
    """

    def __init__(
        self,
        models: Mapping[str, ModelPrice | Mapping[str, Any]] | None = None,
        *,
        aliases: Mapping[str, str] | None = None,
        as_of: str | None = None,
        read: Mapping[str, str] | None = None,
    ) -> None:
        self.as_of = as_of
        self.read = {str(k).lower(): str(v) for k, v in (read or {}).items()}
        """Provider prefix -> the date its prices were read."""
        self._models: dict[str, ModelPrice] = {}
        self._aliases: dict[str, str] = {}
        self._found: dict[tuple[str, str | None], ModelPrice | None] = {}
        """`lookup`'s answers since the last edit (a judged call looks its price up each time)."""
        self._lock = threading.Lock()
        for name, price in (models or {}).items():
            self.set(name, price)
        for alias, target in (aliases or {}).items():
            self.alias(alias, target)

    @classmethod
    def default(cls) -> PriceTable:
        """A fresh copy of the table shipped with agentjudge (see `as_of`)."""
        source = resources.files("agentjudge.models").joinpath("prices.json")
        return cls._parse(source.read_text(encoding="utf-8"), "agentjudge/models/prices.json")

    @classmethod
    def load(cls, path: str | PathLike[str]) -> PriceTable:
        """Read a price file shaped like the shipped ``prices.json`` (``.json`` or ``.toml``).

        Raises:
            ValueError: The file cannot be read or parsed, or a field is invalid; the message
                names the file, the line (syntax errors) or the field, and what was expected.
        """
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{file}: cannot read the price file ({exc})") from None
        return cls._parse(text, str(file), toml=file.suffix.lower() == ".toml")

    @classmethod
    def _parse(cls, text: str, where: str, *, toml: bool = False) -> PriceTable:
        try:
            data = tomllib.loads(text) if toml else json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{where}: not valid TOML ({exc})") from None
        try:
            shape = _TableFile.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(price_problem(e) for e in exc.errors()[:5])
            raise ValueError(
                f"{where}: invalid price file ({problems}); expected "
                '{"as_of": "YYYY-MM-DD", "models": {"provider:model": {"input": USD, '
                '"output": USD, ...}}, "aliases": {...}}'
            ) from None
        try:
            return cls(shape.models, aliases=shape.aliases, as_of=shape.as_of, read=shape.read)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    # -- editing ------------------------------------------------------------------------------

    def set(
        self, name: str, price: ModelPrice | Mapping[str, Any] | None = None, **fields: float
    ) -> None:
        """Set (or with ``price=None`` and no fields, remove) the price of ``name``.

        Examples:
            >>> table = PriceTable()
            >>> table.set("openai:my-model", input=1.0, output=2.0)
            >>> table.get("openai:my-model").output
            2.0
        """
        name = _check_name(name)
        if price is not None and fields:
            raise ValueError("give a price or price fields, not both")
        if price is None and not fields:
            with self._lock:
                self._models.pop(name, None)
                self._aliases.pop(name, None)
                self._found = {}  # after the edit: a lookup racing it stores into the old one
            return
        value = (
            price
            if isinstance(price, ModelPrice)
            else ModelPrice.model_validate(dict(price) if price is not None else fields)
        )
        with self._lock:
            self._models[name] = value
            self._aliases.pop(name, None)
            self._found = {}

    def alias(self, alias: str, target: str) -> None:
        """Make ``alias`` use the price of ``target`` (which must be in the table)."""
        alias, target = _check_name(alias), _check_name(target)
        if target not in self._models:
            raise ValueError(f"alias {alias!r} points to {target!r}, which has no price")
        with self._lock:
            self._aliases[alias] = target
            self._found = {}

    def update(self, other: PriceTable) -> None:
        """Copy every price and alias of ``other`` into this table (``other`` wins)."""
        for name in other.names:
            price = other._models.get(name)
            if price is not None:
                self.set(name, price)
        for alias, target in other._aliases.items():
            self.alias(alias, target)
        if other.as_of is not None:
            self.as_of = other.as_of
        self.read.update(other.read)

    # -- reading ------------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """Every priced name (aliases included), sorted."""
        return tuple(sorted({*self._models, *self._aliases}))

    def get(self, name: str) -> ModelPrice | None:
        """The price of ``name`` (aliases followed), None when it has none."""
        price = self._models.get(name)
        if price is None and name in self._aliases:
            price = self._models.get(self._aliases[name])
        return price

    def read_on(self, name: str) -> str | None:
        """The date the prices of ``name``'s provider were read (``"gemini:..."``), else `as_of`.

        Examples:
            >>> table = PriceTable(as_of="2025-10-15", read={"gemini": "2026-11-26"})
            >>> table.read_on("gemini:gemini-2.5-flash"), table.read_on("openai:gpt-4o")
            ('2026-11-26', '2025-10-15')
        """
        return self.read.get(name.partition(":")[0].lower(), self.as_of)

    def lookup(self, client: str, model: str | None = None) -> ModelPrice | None:
        """The price for a call of the client ``client`` answered by ``model``.

        The client name (what the user chose, e.g. ``"openai:gpt-4o"``) is looked up first,
        then ``"<provider>:<model>"`` with the model the API reported (e.g. a dated snapshot).
        Answers are kept until the table is next edited (a few pairs per process; at most
        `_FOUND_MAX`).
        """
        key = (client, model)
        found = self._found  # an edit replaces it: what is stored here was read before that
        try:
            return found[key]
        except KeyError:
            pass
        price = self.get(client)
        if price is None and model:
            provider = client.partition(":")[0]
            price = self.get(f"{provider}:{model}") or self.get(model)
        if len(found) < _FOUND_MAX:
            found[key] = price
        return price

    def cost(
        self, client: str, usage: Usage, *, model: str | None = None, batch: bool = False
    ) -> float | None:
        """The cost in USD of ``usage`` spent by ``client``; None without a price or counts."""
        price = self.lookup(client, model)
        if price is None:
            return None
        return price.cost(usage, provider=client.partition(":")[0].lower(), batch=batch)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"PriceTable({len(self._models)} models, as_of={self.as_of!r})"


prices = PriceTable.default()
"""The process-wide price table the LLM judges use (the shipped prices; edit it in place)."""


def response_cost(
    client: str,
    response: ModelResponse,
    *,
    table: PriceTable | None = None,
    batch: bool | None = None,
) -> float | None:
    """The cost in USD of one response: 0 for a cached answer, None when it has no price.

    An answer whose provider reported its charge (`reported_cost`: OpenRouter) costs that
    charge; any other is priced from the table.

    Args:
        client: The client's name (``"openai:gpt-4o-mini"``).
        response: The answer.
        table: The prices (None: the process-wide `prices`).
        batch: The call went through a batch API (batch prices apply); None: as the response
            says (``response.batch``, set by `BatchCollector`).
    """
    if response.cached:
        return 0.0
    charged = reported_cost(client, response.usage, response.raw)
    if charged is not None:
        return charged
    if batch is None:
        batch = response.batch
    return (table or prices).cost(client, response.usage, model=response.model, batch=batch)

"""Pricing a model request before it is sent: token estimates and the bound a budget reserves.

Two users: ``agentjudge run --dry-run`` (what a run would cost) and a spending limit (the
engine's `Budget`, reached through `agentjudge.judging.spend_gate`), which reserves an upper
bound of each request before it is sent and settles it with the answer's real usage.

* **Input tokens** (`estimate_input_tokens`): ``ceil(characters / 4)`` of the message texts
  and the response schema (`CHARS_PER_TOKEN`), or the exact count with ``tiktoken`` when it is
  installed (the model's encoding, else ``o200k_base``).
* **The bound a budget reserves** (`price_request`): the input estimate, scaled by the largest
  ratio of real to estimated input tokens that the same client's answers have shown so far
  (at most `MAX_INPUT_RATIO`), plus the output allowance: the request's ``max_tokens`` (or the
  client's own default, e.g. Anthropic's), else the largest output seen from the client, at
  least `DEFAULT_OUTPUT_TOKENS`. Priced at the model's price, the higher of its input and
  cache-write prices (batch prices for a batch call). A model with no price has no dollar
  bound (None): a dollar budget refuses it before it is sent.
* **Settling**: the answer's real cost (the charge its provider reported, e.g. OpenRouter's
  ``usage.cost``, else its usage at the model's price) and tokens (input + output); when the
  answer reports no usage the reserved bound is counted.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from weakref import WeakKeyDictionary

from agentjudge._compat import loop_time
from agentjudge.core import Message
from agentjudge.judging import SpendGate, SpendHold, add_queued
from agentjudge.models._json import sorted_text
from agentjudge.models._prices import _PER_TOKEN, cache_apart, prices, reported_cost
from agentjudge.models._types import Usage

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_OUTPUT_TOKENS",
    "MAX_INPUT_RATIO",
    "Pricing",
    "Reservation",
    "Seen",
    "TokenCounter",
    "estimate_input_tokens",
    "metered",
    "price_request",
    "reserve",
    "seen_by",
]

CHARS_PER_TOKEN = 4
"""The estimator without a tokenizer: one token per 4 characters (rounded up)."""
DEFAULT_OUTPUT_TOKENS = 256
"""Output tokens assumed per call when the request sets no ``max_tokens``."""
KEPT_COUNTS = 256
"""The most (model, text) token counts a `TokenCounter` keeps (`TokenCounter.count_kept`)."""
MAX_INPUT_RATIO = 8.0
"""The most a budget scales an input estimate by after answers showed it was low."""


R = TypeVar("R")
_log = logging.getLogger("agentjudge.models")


def _tokenizer() -> tuple[str, Any]:
    """``("tiktoken", module)`` when importable, else ``("chars/4", None)``."""
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return "chars/4", None
    return "tiktoken", tiktoken


class TokenCounter:
    """Counts the tokens of a text for a model: tiktoken when installed, else characters / 4."""

    def __init__(self) -> None:
        self.kind, self._module = _tokenizer()
        """``"tiktoken"`` or ``"chars/4"``."""
        self._encodings: dict[str, Any] = {}
        self._kept: dict[tuple[str, str], int] = {}
        """`count_kept`'s counts by (model, text)."""

    def count(self, model: str, text: str) -> int:
        """Tokens of ``text`` for ``model`` (a client name such as ``"openai:gpt-4o"``)."""
        if self._module is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        encoding = self._encodings.get(model)
        if encoding is None:
            try:
                encoding = self._encoding(model)
            except Exception as exc:  # not cached (see tiktoken_has_locally), or a broken file
                _log.warning(
                    "tiktoken could not load an encoding (%s: %s); token estimates use "
                    "characters / %s from now on",
                    type(exc).__name__,
                    exc,
                    CHARS_PER_TOKEN,
                )
                self.kind, self._module = "chars/4", None
                return math.ceil(len(text) / CHARS_PER_TOKEN)
            self._encodings[model] = encoding
        return len(encoding.encode(text, disallowed_special=()))

    def count_kept(self, model: str, text: str) -> int:
        """`count`, kept per (model, text): for a text counted again and again (a schema).

        Counted by tiktoken once per pair (at most `KEPT_COUNTS` kept); characters / 4 is
        counted every time (it costs less than the lookup).
        """
        if self._module is None:
            return self.count(model, text)
        key = (model, text)
        tokens = self._kept.get(key)
        if tokens is None:
            tokens = self.count(model, text)
            if self._module is not None:  # not fallen back to characters / 4 just now
                if len(self._kept) >= KEPT_COUNTS:
                    self._kept.clear()
                self._kept[key] = tokens
        return tokens

    def _encoding(self, model: str) -> Any:
        try:
            name = self._module.encoding_name_for_model(model.partition(":")[2] or model)
        except (KeyError, ValueError):
            name = "o200k_base"
        if not tiktoken_has_locally(name):
            raise FileNotFoundError(
                f"the {name} encoding is not in tiktoken's cache and agentjudge never downloads "
                f"it (fetch it once: python -c "
                f"\"import tiktoken; tiktoken.get_encoding('{name}')\")"
            )
        return self._module.get_encoding(name)


_TIKTOKEN_FILES = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


def tiktoken_has_locally(encoding: str) -> bool:
    """True if tiktoken can load ``encoding`` from its cache, without the network.

    tiktoken downloads an encoding's file on first use, with no timeout: on a blackholed
    network that blocks for minutes, and budgets count tokens inside model calls, on the event
    loop. So agentjudge uses tiktoken only for an encoding already cached, where tiktoken looks
    (``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``; the
    file is named by the SHA-1 of its URL), and counts characters / 4 otherwise.
    """
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not folder:  # tiktoken's "no cache": every load would download
        return False
    key = hashlib.sha1(_TIKTOKEN_FILES.format(encoding).encode()).hexdigest()
    return os.path.exists(os.path.join(folder, key))


_counter: TokenCounter | None = None


def _shared_counter() -> TokenCounter:
    global _counter
    if _counter is None:
        _counter = TokenCounter()
    return _counter


def estimate_input_tokens(
    client: str,
    messages: Sequence[Message],
    schema: Mapping[str, Any] | None = None,
    counter: TokenCounter | None = None,
) -> int:
    """Estimated input tokens of a request: its message texts and its response schema."""
    counter = counter or _shared_counter()
    tokens = sum(counter.count(client, m.content) for m in messages)
    if schema is not None:
        # the same schema on every call of a judge: its text written and counted once
        tokens += counter.count_kept(client, sorted_text(schema))
    return tokens


@dataclass(slots=True)
class Seen:
    """What the answers of one client showed about its estimates (kept per client object)."""

    input_ratio: float = 1.0
    """The largest real / estimated input tokens so far (at most `MAX_INPUT_RATIO`)."""
    output: int = 0
    """The most output tokens of one answer so far."""


_seen: WeakKeyDictionary[object, Seen] = WeakKeyDictionary()


def seen_by(client: object) -> Seen:
    """What the answers of ``client`` showed so far (a fresh record for a new client)."""
    seen = _seen.get(client)
    if seen is None:
        seen = _seen[client] = Seen()
    return seen


@dataclass(frozen=True, slots=True)
class Pricing:
    """What a budget needs to price one request of a client."""

    client: str
    """The client's name (``"openai:gpt-4o-mini"``)."""
    model: str
    """The model asked for (looked up when the client name has no price)."""
    messages: Sequence[Message]
    schema: Mapping[str, Any] | None
    output_cap: int | None
    """The request's ``max_tokens`` (or the client's default); None: no cap is sent."""
    seen: Seen
    """The client's record (`seen_by`), updated as answers are settled."""
    batch: bool = False


@dataclass(frozen=True, slots=True)
class _Bound:
    usd: float | None
    tokens: int
    estimate: int


def price_request(pricing: Pricing) -> _Bound:
    """The upper bound a budget reserves for one request (see the module docs)."""
    seen = pricing.seen
    estimate = estimate_input_tokens(pricing.client, pricing.messages, pricing.schema)
    inp = math.ceil(estimate * seen.input_ratio)
    out = pricing.output_cap
    if out is None:
        out = max(DEFAULT_OUTPUT_TOKENS, seen.output)
    price = prices.lookup(pricing.client, pricing.model)
    usd: float | None = None
    if price is not None:
        in_price = price.batch_input if pricing.batch and price.batch_input else price.input
        out_price = price.batch_output if pricing.batch and price.batch_output else price.output
        in_price = max(in_price, price.cache_write_input or 0.0)
        usd = (inp * in_price + out * out_price) * _PER_TOKEN
    return _Bound(usd, inp + out, estimate)


class _Answer(Protocol):
    @property
    def usage(self) -> Usage: ...

    @property
    def model(self) -> str | None: ...

    @property
    def raw(self) -> Mapping[str, Any] | None: ...


def _input_total(client: str, usage: Usage) -> int | None:
    if usage.input_tokens is None:
        return None
    cached = (usage.cache_read_tokens or 0) + (usage.cache_creation_tokens or 0)
    if cached and cache_apart(client):
        return usage.input_tokens + cached
    return usage.input_tokens


class Reservation:
    """One request's hold on a budget: `settle` it with the answer, or `release` it."""

    def __init__(self, pricing: Pricing, bound: _Bound, hold: SpendHold) -> None:
        self._pricing = pricing
        self._bound = bound
        self._hold = hold

    def release(self) -> None:
        """No answer came: give the reservation back."""
        self._hold.release()

    def settle(self, answer: _Answer) -> None:
        """Count what ``answer`` really used and learn how far the estimates were off."""
        pricing, usage = self._pricing, answer.usage
        usd = reported_cost(pricing.client, usage, answer.raw)
        if usd is None:
            usd = prices.cost(pricing.client, usage, model=answer.model, batch=pricing.batch)
        inp = _input_total(pricing.client, usage)
        tokens = None if inp is None or usage.output_tokens is None else inp + usage.output_tokens
        seen = pricing.seen
        if inp is not None and self._bound.estimate > 0:
            ratio = min(inp / self._bound.estimate, MAX_INPUT_RATIO)
            seen.input_ratio = max(seen.input_ratio, ratio)
        if usage.output_tokens is not None:
            seen.output = max(seen.output, usage.output_tokens)
        self._hold.settle(usd, tokens)


async def reserve(gate: SpendGate, pricing: Pricing) -> Reservation:
    """Reserve the bound of one request (the wait for room is reported as queueing)."""
    bound = price_request(pricing)
    started = loop_time()  # anyio.current_time(), without its backend lookup
    hold = await gate.reserve(pricing.client, bound.usd, bound.tokens)
    add_queued(loop_time() - started)
    return Reservation(pricing, bound, hold)


async def metered(
    gate: SpendGate,
    pricing: Pricing,
    send: Callable[[], Awaitable[R]],
    answer: Callable[[R], _Answer],
) -> R:
    """``await send()`` under a reservation: settled with ``answer(result)``, else released."""
    reservation = await reserve(gate, pricing)
    try:
        result = await send()
    except BaseException:
        reservation.release()
        raise
    reservation.settle(answer(result))
    return result

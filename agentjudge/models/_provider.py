"""The provider protocol: what one provider module implements, and the pieces providers share.

A provider is one module holding one `HTTPModelClient` subclass, registered under its prefix in
`agentjudge.models._registry.PROVIDERS` (built-in) or the ``agentjudge.providers`` entry-point
group (third-party). The registry is the only list of providers: batch mode, prices and the
adaptive rate control ask the client (or its class) through the hooks below, never by name.

What a provider defines (class attributes and methods of its `HTTPModelClient` subclass; the
default, where there is one, is in brackets):

- **Where and who**: ``provider`` (the prefix), ``path`` (appended to ``base_url``; or override
  the ``url`` property), ``default_base_url``, ``base_url_env``, ``api_key_env``,
  ``api_key_header`` (the header the key goes in).
- ``auth_headers()``: the authentication headers [the key in ``api_key_header``, as
  ``Bearer <key>`` when that header is ``authorization``].
- ``request_body(request, messages, schema)``: the JSON body of one request, structured output
  asked for in the provider's native mode (``schema`` is the plain JSON schema or None).
- ``parse_reply(data)``: a 2xx JSON body as a `Reply` (text, model, finish reason, usage); build
  it with `reply_from` and read the usage with `agentjudge.models._usage.read_usage`. Raise
  KeyError / TypeError / ValueError for a body that is not an answer (it becomes a
  `ModelResponseError` and is retried).
- ``structured_answer(reply, schema)``: the structured answer, checked against ``schema``
  (raise `SchemaViolation` to re-ask) [the text decoded as a JSON object, then checked].
- ``supports_logprobs`` and ``finish_response(request, response)``: token logprobs, read from
  ``response.raw`` on online and batch answers alike [False; the response unchanged].
- ``capacity_signals(status, headers, body)``: the rate-limit and retry hints an answer carries,
  from its headers or its body, as `CapacitySignals` (the client bounds a requested wait by
  ``max_retry_after``; the adaptive controller and the retries both read it) [``Retry-After`` /
  ``retry-after-ms`` and the ``x-ratelimit-*``, ``anthropic-ratelimit-*``, ``ratelimit-*``
  headers].
- ``batch_api()``: the provider's batch adapter (a `agentjudge.models._batch_api.BatchAPI`),
  which `BatchCollector` and ``--batch`` drive; None when the provider has none [None], and
  then ``no_batch_reason()`` says why (the refusal of `BatchCollector`, the warning of
  ``--batch``) [the provider has no batch API].
- ``cache_tokens_apart``: a price key: True when the provider's ``input_tokens`` exclude prompt
  cache reads and writes (Anthropic), so costs and budgets add them [False: counted inside, as
  OpenAI and Gemini do]. Prices are looked up as ``"<prefix>:<model>"`` in the price table.
- ``reports_cost``: a price key: True when each answer's ``usage.cost`` is what the call was
  charged, in US dollars, so costs and budgets take it instead of the price table [False]. An
  OpenAI-compatible preset sets it in its `OpenAIPreset` (OpenRouter does).

Everything else (transport, retries, rate limits, the adaptive controller, the cache, budgets,
schema re-asks, secrets redaction) is the base class's and needs no code in the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agentjudge.core import Message
from agentjudge.models._headers import CapacitySignals, header_signals
from agentjudge.models._schema import SchemaViolation, decode_json_object, schema_errors
from agentjudge.models._types import ModelRequest, ModelResponse, Usage

if TYPE_CHECKING:
    from agentjudge.models._batch_api import BatchAPI

__all__ = ["ProviderHooks", "Reply", "check_against_schema", "reply_from"]

_OLD_HOOKS = {
    "_auth_headers": "auth_headers",
    "_body": "request_body",
    "_finish": "finish_response",
    "_parse": "parse_reply",
    "_retry_after": "capacity_signals",
    "_structured": "structured_answer",
}
"""Hook names before the provider protocol was public: defining one is a TypeError."""


@dataclass
class Reply:
    """One decoded completion, before structured-output checks."""

    text: str
    structured: Any
    """A structured answer the provider returns apart from the text (Anthropic's tool input),
    else None (the structured answer is decoded from the text)."""
    model: str | None
    finish_reason: str | None
    usage: Usage
    raw: dict[str, Any]
    billed_tokens: int | None
    """The tokens the rate limit settles the request at (None: the estimate)."""
    warnings: tuple[str, ...] = ()
    """Problems that did not stop the answer being used (e.g. a dropped usage count)."""


def reply_from(
    raw: dict[str, Any],
    text: str,
    usage: tuple[Usage, tuple[str, ...]],
    *,
    model: Any,
    finish: Any,
    structured: Any = None,
) -> Reply:
    """A `Reply` of the body ``raw``: non-string ``model`` / ``finish`` become None.

    The billed tokens are ``total_tokens``, else input + output + cache writes (when input or
    output is known), else None.

    Args:
        raw: The provider's JSON body.
        text: The answer's text.
        usage: The usage and the warnings of reading it (`read_usage`).
        model: The model the provider reported.
        finish: The finish reason, in OpenAI's words where the provider has its own.
        structured: A structured answer given apart from the text.
    """
    counts, warnings = usage
    billed = counts.total_tokens
    if billed is None and (counts.input_tokens is not None or counts.output_tokens is not None):
        billed = (
            (counts.input_tokens or 0)
            + (counts.output_tokens or 0)
            + (counts.cache_creation_tokens or 0)
        )
    return Reply(
        text=text,
        structured=structured,
        model=model if isinstance(model, str) else None,
        finish_reason=finish if isinstance(finish, str) else None,
        usage=counts,
        raw=raw,
        billed_tokens=billed,
        warnings=warnings,
    )


def check_against_schema(value: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` when it is an object that follows ``schema``.

    Raises:
        SchemaViolation: Listing what is wrong.
    """
    if not isinstance(value, dict):
        raise SchemaViolation("the answer must be a JSON object")
    errors = schema_errors(value, schema)
    if errors:
        raise SchemaViolation("the answer does not follow the schema: " + "; ".join(errors))
    return value


class ProviderHooks:
    """The provider protocol with its defaults: the base of `HTTPModelClient`.

    A provider overrides what differs (see the module docstring); defining a hook under its
    old private name (``_body``, ``_parse``...) is a TypeError naming the new one.
    """

    provider: ClassVar[str]
    path: ClassVar[str]
    base_url_env: ClassVar[str]
    api_key_env: ClassVar[str]
    api_key_header: ClassVar[str]
    """The header (lower case) the API key is sent in."""
    default_base_url: ClassVar[str]
    supports_logprobs: ClassVar[bool] = False
    """The client can return token log-probabilities (`ModelRequest.logprobs`)."""
    cache_tokens_apart: ClassVar[bool] = False
    """Price key: the provider's ``input_tokens`` exclude prompt-cache reads and writes (True
    for Anthropic), so costs and budgets add them; False: they are counted inside."""
    reports_cost: ClassVar[bool] = False
    """Price key: each answer's ``usage.cost`` is the call's charge in US dollars (OpenRouter's
    usage accounting), taken instead of the price table; False: the table prices answers."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        old = sorted(name for name in _OLD_HOOKS if name in vars(cls))
        if old:
            renamed = ", ".join(f"{name} -> {_OLD_HOOKS[name]}" for name in old)
            raise TypeError(
                f"{cls.__qualname__} defines the old provider hooks ({renamed}); "
                "see agentjudge.models._provider for the provider protocol"
            )

    api_key: str | None
    """The API key in use (set by `HTTPModelClient`)."""

    def auth_headers(self) -> dict[str, str]:
        """The authentication headers: the API key in ``api_key_header`` (none without a key).

        The key is sent as ``Bearer <key>`` when that header is ``authorization``.
        """
        if not self.api_key:
            return {}
        if self.api_key_header == "authorization":
            return {"authorization": f"Bearer {self.api_key}"}
        return {self.api_key_header: self.api_key}

    def request_body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The JSON body of one request (structured output in the provider's native mode).

        Args:
            request: The request (temperature, max_tokens, logprobs...).
            messages: The conversation to send (the request's, plus any schema re-asks).
            schema: The plain JSON schema of the answer, or None.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define request_body")

    def parse_reply(self, data: dict[str, Any]) -> Reply:
        """A 2xx JSON body as a `Reply` (see `reply_from`).

        Raises:
            KeyError: (or TypeError, ValueError) The body is not a completion.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define parse_reply")

    def structured_answer(self, reply: Reply, schema: dict[str, Any]) -> dict[str, Any]:
        """The structured answer of ``reply``: its text decoded as a JSON object, checked.

        Raises:
            SchemaViolation: Not a JSON object, or not following ``schema`` (re-asked).
        """
        return check_against_schema(decode_json_object(reply.text), schema)

    def finish_response(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """Provider touches on an answer, online or from a batch (e.g. its logprobs): none here."""
        return response

    def capacity_signals(
        self, status: int, headers: Mapping[str, str], body: bytes
    ) -> CapacitySignals:
        """What an answer says about capacity: the wait asked for and the rate-limit budget.

        Read for throttled and retryable answers, and for every answer of an adaptive client.
        Here: ``Retry-After`` / ``retry-after-ms`` and the rate-limit headers
        (`header_signals`); a provider that puts them elsewhere (Gemini: the error body)
        overrides it. Parse strictly: a value not in the provider's format is None.
        """
        return header_signals(headers)

    def batch_api(self) -> BatchAPI | None:
        """The provider's batch adapter for `BatchCollector` / ``--batch``; None: no batch API."""
        return None

    def no_batch_reason(self) -> str:
        """Why `batch_api` is None (a provider whose batch API needs configuration says what)."""
        return "this provider has no batch API agentjudge can use"

    @property
    def supports_batch(self) -> bool:
        """The provider has a batch API agentjudge can drive (`batch_api` is not None)."""
        return self.batch_api() is not None

"""The model-client seam: `ModelClient`, `ModelRequest`, `ModelResponse`, `Usage`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from agentjudge._compat import build_model, check_buildable
from agentjudge.core import Message

__all__ = [
    "MAX_LOGPROBS",
    "MAX_TOKEN_COUNT",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "TokenLogprob",
    "Usage",
    "answer_response",
]

MAX_LOGPROBS = 20
"""The most top alternatives per token a `ModelRequest` may ask for (OpenAI's limit)."""

MAX_TOKEN_COUNT = 2**53 - 1
"""The largest token count `Usage` holds: the largest integer JSON keeps exactly (judgment
metadata, ``results.jsonl`` and JavaScript readers all need that)."""


def _token_count(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= MAX_TOKEN_COUNT:
        raise ValueError(
            f"a token count must be an integer within 0..2**53-1 (JSON-portable), got {value}"
        )
    return value


TokenCount = Annotated[int | None, AfterValidator(_token_count)]


class Usage(BaseModel):
    """Token quantities reported by a model API; all optional, never a price.

    Every count is an integer within ``0..2**53-1`` (`MAX_TOKEN_COUNT`); anything else is a
    `pydantic.ValidationError` (a `ValueError`) naming the field. The model clients never build
    an invalid `Usage` from a provider's answer: they drop the bad count and record a warning
    in `ModelResponse.warnings` instead (the answer itself is kept).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: TokenCount = None
    output_tokens: TokenCount = None
    reasoning_tokens: TokenCount = None
    cache_creation_tokens: TokenCount = None
    cache_read_tokens: TokenCount = None
    total_tokens: TokenCount = None

    def to_portable(self) -> dict[str, int]:
        """The set quantities as a plain dict (for judgment metadata).

        Every judgment of a model call holds it, so a `Usage` of exact ints (or None) is read
        from the instance; pydantic's dump (`_dumped`), which builds a dict it copies again
        (~2 us per answer), stays for anything else: a subclass, a value built without
        validation. Both give the same dict (`tests/models/test_models_usage_fast.py`).
        """
        if type(self) is not Usage:
            return self._dumped()
        counts = {}
        for key, value in self.__dict__.items():
            if type(value) is int:
                counts[key] = value
            elif value is not None:
                return self._dumped()
        return counts

    def _dumped(self) -> dict[str, int]:
        """The set quantities through pydantic's dump (`to_portable`'s general way)."""
        return {k: v for k, v in self.model_dump(exclude_none=True).items()}


class TokenLogprob(BaseModel):
    """One generated token with its log-probability and the top alternatives at its position.

    Attributes:
        token: The token text as the API returned it (leading spaces included).
        logprob: Its natural-log probability (finite, <= 0).
        top: The most likely tokens at this position, ``(token, logprob)`` pairs, most likely
            first as the API listed them (usually including ``token`` itself); empty when
            no alternatives were asked for.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    token: str
    logprob: float = Field(le=0.0, allow_inf_nan=False)
    top: tuple[tuple[str, Annotated[float, Field(le=0.0, allow_inf_nan=False)]], ...] = ()


class ModelRequest(BaseModel):
    """One chat request to a model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...]
    """The conversation; system messages first."""
    temperature: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    max_tokens: int | None = Field(default=None, ge=1)
    response_schema: Mapping[str, Any] | None = None
    """JSON schema the response must follow (structured output)."""
    sample_index: int = Field(default=0, ge=0)
    """Distinguishes repeated samples of the same request (part of the cache key)."""
    logprobs: int | None = Field(default=None, ge=0, le=MAX_LOGPROBS)
    """Ask for token log-probabilities with this many top alternatives per token (0-20);
    None (the default) asks for none. Part of the cache key when set. Only OpenAI-compatible
    clients support it: `AnthropicMessages` refuses a request that sets it (ValueError)."""


class ModelResponse(BaseModel):
    """What a model answered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    """The assistant text (for structured output: the JSON text)."""
    parsed: dict[str, Any] | None = None
    """The structured output, when a schema was requested and the text parsed."""
    model: str | None = None
    """The model name the API reported."""
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    raw: dict[str, Any] | None = None
    """The decoded response body."""
    cached: bool = False
    """True when served from a cache."""
    queued_s: float = Field(default=0.0, ge=0.0)
    """Time spent waiting for the client's rate limits and concurrency slots."""
    attempts: int = Field(default=1, ge=1)
    """HTTP requests made for this response (retries and schema re-asks included)."""
    schema_error: str | None = None
    """Why ``parsed`` is None although a ``response_schema`` was requested."""
    warnings: tuple[str, ...] = ()
    """Problems found in the answer that did not stop it being used, e.g. a usage count out
    of range that was dropped (the LLM judges copy them into ``metadata["warnings"]``)."""
    batch: bool = False
    """True when answered through a provider batch API (`BatchCollector`): batch prices apply."""
    logprobs: tuple[TokenLogprob, ...] | None = None
    """The per-token log-probabilities of ``text``, when the request asked for them and the
    API returned them (None otherwise; kept by the response cache)."""


@runtime_checkable
class ModelClient(Protocol):
    """Anything that can complete a chat request.

    Attributes:
        name: ``"<provider>:<model>"``, also the Evaluator resource name of judges using it.
    """

    name: str

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request and return the response (retries included)."""
        ...


check_buildable(ModelResponse)
_ANSWER_FIELDS_SET = {
    *("text", "parsed", "model", "finish_reason", "usage", "raw", "queued_s", "attempts"),
    *("schema_error", "warnings"),
}
"""What every `answer_response` instance reports as ``model_fields_set``: one set shared by
all of them (`build_model` allows it: the model is frozen and pydantic copies it before a
change), not a new tracked object per call."""


_STR = frozenset((str,))


def _plain_object(value: object) -> bool:
    return value is None or (type(value) is dict and {*map(type, value)} <= _STR)


def answer_response(
    *,
    text: str,
    parsed: dict[str, Any] | None,
    model: str | None,
    finish_reason: str | None,
    usage: Usage,
    raw: dict[str, Any] | None,
    queued_s: float,
    attempts: int,
    schema_error: str | None,
    warnings: tuple[str, ...],
) -> ModelResponse:
    """The `ModelResponse` of one online call: ``ModelResponse(...)`` of these values.

    Built once per model call, so values of exactly the types validation keeps (str, dicts with
    str keys, a `Usage`, a float >= 0, an int >= 1, a tuple of str) skip validation (equal to
    it, pinned by a property test); anything else is validated as always.
    """
    # the common values (None, no warnings) checked inline: no call or set per check
    if (
        type(text) is str
        and (parsed is None or _plain_object(parsed))
        and (model is None or type(model) is str)
        and (finish_reason is None or type(finish_reason) is str)
        and type(usage) is Usage
        and _plain_object(raw)
        and type(queued_s) is float
        and queued_s >= 0.0
        and type(attempts) is int
        and attempts >= 1
        and (schema_error is None or type(schema_error) is str)
        and type(warnings) is tuple
        and (not warnings or {*map(type, warnings)} <= _STR)
    ):
        values = {
            "text": text,
            "parsed": None if parsed is None else dict(parsed),
            "model": model,
            "finish_reason": finish_reason,
            "usage": usage,
            "raw": None if raw is None else dict(raw),
            "cached": False,
            "queued_s": queued_s,
            "attempts": attempts,
            "schema_error": schema_error,
            "warnings": warnings,
            "batch": False,
            "logprobs": None,
        }
        return build_model(ModelResponse, values, _ANSWER_FIELDS_SET)
    return ModelResponse(
        text=text,
        parsed=parsed,
        model=model,
        finish_reason=finish_reason,
        usage=usage,
        raw=raw,
        queued_s=queued_s,
        attempts=attempts,
        schema_error=schema_error,
        warnings=warnings,
    )

"""The model-client seam: `ModelClient`, `ModelRequest`, `ModelResponse`, `Usage`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.core import Message

__all__ = ["ModelClient", "ModelRequest", "ModelResponse", "Usage"]


class Usage(BaseModel):
    """Token quantities reported by a model API; all optional, never a price."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)
    cache_creation_tokens: int | None = Field(default=None, ge=0)
    cache_read_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)

    def to_portable(self) -> dict[str, int]:
        """The set quantities as a plain dict (for judgment metadata)."""
        return {k: v for k, v in self.model_dump(exclude_none=True).items()}


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

"""The exceptions agentjudge raises, rooted at one class.

```text
AgentJudgeError
├── EvaluationCancelled          awaiting a handle whose evaluation was cancelled
├── RetryableError              raise from a judge to ask for another attempt
├── TemplateError (ValueError)  a prompt template could not be rendered
├── DatasetError (ValueError)   a dataset file is malformed (file, line, field named)
└── ModelError
    ├── ModelHTTPError          a model API answered with a non-retryable status
    └── ModelResponseError      a model API answered with a body we cannot use
```

Configuration mistakes (bad knobs, unknown names) raise plain `ValueError` before anything
starts; invalid values raise `pydantic.ValidationError`, which is a `ValueError` too.
"""

from __future__ import annotations

__all__ = [
    "AgentJudgeError",
    "DatasetError",
    "EvaluationCancelled",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "RetryableError",
    "TemplateError",
]


class AgentJudgeError(Exception):
    """Root of every exception agentjudge defines."""


class EvaluationCancelled(AgentJudgeError):
    """Raised when awaiting an evaluation handle that was cancelled."""


class RetryableError(AgentJudgeError):
    """Raised by a judge (or a model client) to ask the engine for another attempt.

    Args:
        message: What went wrong.
        retry_after: Seconds to wait before the next attempt; overrides the backoff and is not
            capped by `RetryPolicy.max_delay`.
    """

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        if retry_after is not None and not (retry_after >= 0 and retry_after != float("inf")):
            raise ValueError(f"retry_after must be a finite number >= 0, got {retry_after!r}")
        self.retry_after = retry_after


class TemplateError(AgentJudgeError, ValueError):
    """A prompt template referenced a variable the context does not provide."""


class DatasetError(AgentJudgeError, ValueError):
    """A dataset is malformed; the message names the file, the 1-based line and the field."""


class ModelError(AgentJudgeError):
    """A model client could not produce a response."""


class ModelHTTPError(ModelError):
    """A model API answered with a status that retrying cannot fix (400, 401, 403, 404, 422...).

    Attributes:
        status_code: The HTTP status.
        model: The client name, e.g. ``"openai:gpt-4o-mini"``.
        body_excerpt: The first few hundred characters of the response body.
    """

    def __init__(self, status_code: int, model: str, body_excerpt: str, hint: str = "") -> None:
        self.status_code = status_code
        self.model = model
        self.body_excerpt = body_excerpt
        self.hint = hint
        text = f"{model}: HTTP {status_code}"
        if hint:
            text += f" ({hint})"
        if body_excerpt:
            text += f": {body_excerpt}"
        super().__init__(text)


class ModelResponseError(ModelError):
    """A model API answered 2xx with a body that is not a usable completion."""

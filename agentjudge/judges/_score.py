"""The LaunchDarkly-style structured judge: `Runner`, `RunnerResult`, `ModelRunner`, `ScoreJudge`.

A `ScoreJudge` hands one string to a runner together with a fixed JSON schema and reads back
``{"score": <0..1>, "reasoning": "..."}``::

    MESSAGE HISTORY:
    <input>

    RESPONSE TO EVALUATE:
    <output>

Differences from the upstream SDKs, on purpose: the sampling gate is ``rng.random() >= rate``
(rate 0 never runs, rate 1 never draws), the metric key is checked at construction, booleans and
non-finite scores are rejected, ``reasoning`` is required, and every failure is an ERROR
judgment inside the returned `JudgeResult` (``success`` False) rather than a log line.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Annotated, Any, Protocol, runtime_checkable

import anyio
from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator

from agentjudge.core import Context, JudgeResult, Judgment, Message, thaw
from agentjudge.judges._template import render_value
from agentjudge.judges._verdict import excerpt, parse_json_object
from agentjudge.judging import JudgeKind, short_traceback
from agentjudge.models._prices import response_cost
from agentjudge.models._types import ModelClient, ModelRequest, ModelResponse, Usage

__all__ = [
    "SCORE_SCHEMA",
    "ModelRunner",
    "Runner",
    "RunnerResult",
    "ScoreJudge",
    "evaluation_input",
    "format_messages",
]

SCORE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string"},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}
"""The output schema every `ScoreJudge` sends (each runner call receives a fresh deep copy)."""


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, set | frozenset):
        return frozenset(_freeze(item) for item in value)
    return copy.deepcopy(value)


def _freeze_parsed(value: object) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"parsed must be a mapping or None, got {type(value).__name__}")
    frozen = _freeze(value)
    assert isinstance(frozen, Mapping)
    return frozen


ReadOnlyParsed = Annotated[
    Mapping[str, Any] | None,
    PlainValidator(_freeze_parsed),
    PlainSerializer(lambda v: None if v is None else thaw(v)),
]


def _content(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"content must be a str or None, got {type(value).__name__}")
    return value


class RunnerResult(BaseModel):
    """What a `Runner` returns.

    ``RunnerResult(content, success=True, usage=None, raw=None, parsed=None)``; ``content`` may
    be given positionally. ``parsed`` is deep-copied and read-only (mappings become read-only
    mappings, lists become tuples).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    content: Annotated[str, PlainValidator(_content)] = ""
    """The response text (None is stored as ``""``)."""
    success: bool = Field(default=True, strict=True)
    """False when the runner itself reports a failed call."""
    usage: Usage | None = None
    """Token counts, when known."""
    raw: Any = None
    """The runner's native response object (`ModelRunner` puts the `ModelResponse` here)."""
    parsed: ReadOnlyParsed = None
    """The structured output, when the runner parsed it; else the judge parses ``content``."""

    def __init__(self, content: str | None = None, /, **data: Any) -> None:
        if content is not None:
            if "content" in data:
                raise TypeError("content given both positionally and by keyword")
            data["content"] = content
        super().__init__(**data)


@runtime_checkable
class Runner(Protocol):
    """Runs one evaluation prompt and returns the model's answer."""

    async def run(self, input: str, output_schema: dict[str, Any] | None) -> RunnerResult:
        """Send ``input`` (asking for ``output_schema`` when given) and return the result."""
        ...


class ModelRunner:
    """A `Runner` over a `ModelClient`: system message = instructions, user message = input.

    Args:
        model: The model client.
        instructions: The system message (omitted when blank).
        temperature: Sampling temperature (None: the server default).
        max_tokens: Response token cap (None: the server default).
    """

    def __init__(
        self,
        model: ModelClient,
        *,
        instructions: str = "",
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if not callable(getattr(model, "complete", None)):
            raise TypeError(f"model must be a ModelClient, got {type(model).__name__}")
        self.model = model
        self.instructions = instructions
        self.temperature = temperature
        self.max_tokens = max_tokens
        ModelRequest(  # validate the knobs now rather than on the first call
            messages=(Message(role="user", content=""),),
            temperature=temperature,
            max_tokens=max_tokens,
        )

    @property
    def name(self) -> str:
        """The client's name."""
        return self.model.name

    async def run(self, input: str, output_schema: dict[str, Any] | None = None) -> RunnerResult:
        """Ask the model once; exceptions from the client propagate."""
        messages: list[Message] = []
        if self.instructions.strip():
            messages.append(Message(role="system", content=self.instructions))
        messages.append(Message(role="user", content=input))
        response = await self.model.complete(
            ModelRequest(
                messages=tuple(messages),
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                response_schema=output_schema,
            )
        )
        return RunnerResult(
            response.text,
            usage=response.usage,
            raw=response,
            parsed=response.parsed,
        )


def evaluation_input(input: Any, output: Any) -> str:
    """The string a `ScoreJudge` sends: message history, then the response to evaluate.

    Non-string values are rendered like template values (None as ``""``, containers as JSON).
    """
    return (
        "MESSAGE HISTORY:\n"
        + render_value(input)
        + "\n\nRESPONSE TO EVALUATE:\n"
        + render_value(output)
    )


def format_messages(messages: Sequence[Any] | None) -> str:
    """``"role: content"`` lines joined by newlines.

    Accepts `Message` objects, mappings with ``role`` and ``content`` keys, or objects with
    those attributes; None gives ``""``.
    """
    if not messages:
        return ""
    lines = []
    for index, message in enumerate(messages):
        if isinstance(message, Mapping):
            role, content = message.get("role"), message.get("content")
        else:
            role, content = getattr(message, "role", None), getattr(message, "content", None)
        if role is None:
            raise ValueError(f"messages[{index}] has no role: {message!r}")
        lines.append(f"{render_value(role)}: {render_value(content)}")
    return "\n".join(lines)


def _check_rate(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number in [0, 1], got {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{what} must be a finite number in [0, 1], got {value}")
    return float(value)


class ScoreJudge:
    """A judge that asks for ``{"score", "reasoning"}`` under a fixed schema.

    ``runner_or_model`` is a `Runner` (anything with ``async run(input, output_schema)``) or a
    `ModelClient`. A model client is wrapped in a `ModelRunner` whose system message is
    ``instructions``; a plain runner owns its own prompt, receives exactly the evaluation input
    string (see `evaluation_input`) and ``instructions`` is only recorded on the judge.

    Two ways to use it:

    * ``await judge.evaluate(input, output)`` / ``evaluate_messages(messages, response)``: the
      LaunchDarkly call shape. Sampling comes first (rate 0 never runs, rate 1 never draws,
      otherwise the call is skipped iff ``rng.random() >= rate``); a skipped call returns
      ``sampled=False``, ``judgment=None`` without calling the runner. Every failure -- the
      runner raising (``error_type`` = its class name), ``success=False``, unparseable content,
      an invalid score or reasoning -- is an ERROR judgment in the returned `JudgeResult`.
      Only cancellation propagates.
    * ``await judge(ctx)``: a judge for Evaluators, Juries and Cascades. The Evaluator does the
      sampling (``sampling_rate`` is exposed for it), so the call never samples. The message
      history is ``ctx.messages`` as ``"role: content"`` lines when present, else ``ctx.input``;
      the response is ``ctx.output``. Runner exceptions propagate to the Evaluator, which
      retries and records them with ``error_type``; bad answers are ERROR judgments.

    The score must be a real number (not a bool), finite and within [0, 1]; PASS iff
    ``score >= threshold``. ``reasoning`` must be a string.

    Args:
        name: Judge name.
        runner_or_model: A `Runner` or a `ModelClient` (an object with ``run`` is a runner).
        instructions: The system message for a model client (required non-blank then).
        metric_key: The metric the results report under (non-blank).
        sampling_rate: Default fraction of ``evaluate`` calls that run, in [0, 1].
        rng: Random source for sampling (default: a fresh ``random.Random()``).
        threshold: PASS iff score >= threshold.
        resource: Evaluator limit name (default: the client's name for a model client, else
            the runner's ``name`` attribute if it has one).
        description: One line for reports.
        timeout: Seconds allowed for the runner call in ``evaluate`` / ``evaluate_messages``
            (an overrun is an ERROR result with ``error_type="TimeoutError"``); None = no
            limit. As a judge under an Evaluator, the Evaluator's ``timeout`` applies instead.

    Raises:
        ValueError: a blank name or metric key, blank instructions for a model client, a
            rate / threshold outside [0, 1], or a timeout that is not a positive number.
        TypeError: ``runner_or_model`` is neither a runner nor a model client.
    """

    kind: JudgeKind = JudgeKind.LLM

    def __init__(
        self,
        name: str,
        runner_or_model: Runner | ModelClient,
        *,
        instructions: str,
        metric_key: str,
        sampling_rate: float = 1.0,
        rng: random.Random | None = None,
        threshold: float = 0.5,
        resource: str | None = None,
        description: str = "",
        timeout: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"judge name must be a non-blank string, got {name!r}")
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValueError(f"timeout must be a finite number > 0 or None, got {timeout!r}")
        self.timeout = timeout
        if not isinstance(metric_key, str) or not metric_key.strip():
            raise ValueError(f"metric_key must be a non-blank string, got {metric_key!r}")
        if not isinstance(instructions, str):
            raise TypeError(f"instructions must be a str, got {type(instructions).__name__}")
        self.name = name
        self.metric_key: str | None = metric_key
        self.instructions = instructions
        self.sampling_rate: float | None = _check_rate(sampling_rate, "sampling_rate")
        self.threshold = _check_rate(threshold, "threshold")
        self.rng = random.Random() if rng is None else rng
        self.description = description
        runner: Runner
        if callable(getattr(runner_or_model, "run", None)):
            runner = runner_or_model  # type: ignore[assignment]
            default_resource = getattr(runner_or_model, "name", None)
        elif callable(getattr(runner_or_model, "complete", None)):
            if not instructions.strip():
                raise ValueError(
                    "instructions must be non-blank when ScoreJudge drives a model client: "
                    "they are the system message telling the model what to score"
                )
            client: ModelClient = runner_or_model  # type: ignore[assignment]
            runner = ModelRunner(client, instructions=instructions)
            default_resource = client.name
        else:
            raise TypeError(
                "runner_or_model must be a Runner (async run(input, output_schema)) or a "
                f"ModelClient (async complete(request)), got {type(runner_or_model).__name__}"
            )
        self.runner = runner
        if resource is None and isinstance(default_resource, str) and default_resource.strip():
            resource = default_resource
        self.resource = resource

    # ------------------------------------------------------------------ LaunchDarkly shape
    async def evaluate(
        self, input: Any, output: Any, sampling_rate: float | None = None
    ) -> JudgeResult:
        """Score ``output`` as a response to ``input``.

        Args:
            input: The message history (rendered as text; None as ``""``).
            output: The response to evaluate.
            sampling_rate: Overrides the judge's ``sampling_rate`` for this call.

        Returns:
            A `JudgeResult`; never raises except on cancellation (and a ValueError for an
            invalid ``sampling_rate`` argument, before anything runs).
        """
        return await self._evaluate(lambda: evaluation_input(input, output), sampling_rate)

    async def evaluate_messages(
        self,
        messages: Sequence[Any] | None,
        response: RunnerResult | None,
        sampling_rate: float | None = None,
    ) -> JudgeResult:
        """Score ``response.content`` as the reply to a conversation.

        The history is ``"role: content"`` lines joined by newlines (see `format_messages`).
        """
        output = "" if response is None else response.content
        return await self._evaluate(
            lambda: evaluation_input(format_messages(messages), output), sampling_rate
        )

    def should_sample(self, sampling_rate: float | None = None) -> bool:
        """Draw whether one call runs (no draw for rates 0 and 1)."""
        rate = (
            self.sampling_rate
            if sampling_rate is None
            else _check_rate(sampling_rate, "sampling_rate")
        )
        if rate is None or rate >= 1.0:
            return True
        if rate <= 0.0:
            return False
        return self.rng.random() < rate

    async def _evaluate(
        self, make_input: Callable[[], str], sampling_rate: float | None
    ) -> JudgeResult:
        if not self.should_sample(sampling_rate):
            return JudgeResult(
                name=self.name,
                judgment=None,
                sampled=False,
                metric_key=self.metric_key,
                attempts=0,
            )
        started = time.perf_counter()
        error_type: str | None = None
        frames: tuple[str, ...] | None = None
        try:
            with anyio.fail_after(self.timeout):
                result = await self.runner.run(make_input(), copy.deepcopy(dict(SCORE_SCHEMA)))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            error_type = type(exc).__name__
            frames = short_traceback(exc)
            message = str(exc).strip() or "(no message)"
            judgment = Judgment.errored(
                f"runner raised {error_type}: {message}", metadata=self._base_metadata()
            )
        else:
            judgment = self._read_safely(result)
        return JudgeResult(
            name=self.name,
            judgment=judgment,
            metric_key=self.metric_key,
            attempts=1,
            duration_s=time.perf_counter() - started,
            error_type=error_type,
            traceback=frames,
        )

    # ------------------------------------------------------------------ judge shape
    async def __call__(self, ctx: Context, /) -> Judgment:
        """Judge one context (no sampling here: the Evaluator samples).

        Raises:
            Exception: whatever the runner raises (the Evaluator records it as ERROR).
        """
        history = format_messages(ctx.messages) if ctx.messages else ctx.input
        result = await self.runner.run(
            evaluation_input(history, ctx.output), copy.deepcopy(dict(SCORE_SCHEMA))
        )
        return self.read(result)

    # ------------------------------------------------------------------ reading
    def _client_name(self, response: ModelResponse) -> str:
        """The name prices are looked up by: the runner's client, else the reported model."""
        name = getattr(self.runner, "name", None)
        if isinstance(name, str) and name.strip():
            return name
        return response.model or ""

    def _base_metadata(self) -> dict[str, Any]:
        return {"metric_key": self.metric_key} if self.metric_key else {}

    def _read_safely(self, result: object) -> Judgment:
        """`read`, with any failure while reading turned into an ERROR judgment."""
        try:
            return self.read(result)
        except Exception as exc:
            return Judgment.errored(
                f"could not read the runner result ({type(exc).__name__}: {exc})",
                metadata=self._base_metadata(),
            )

    def read(self, result: object) -> Judgment:
        """Turn a runner's result into a judgment (ERROR for anything invalid)."""
        metadata = self._base_metadata()
        if not isinstance(result, RunnerResult):
            return Judgment.errored(
                f"runner returned {type(result).__name__}; expected a RunnerResult",
                metadata=metadata,
            )
        if result.usage is not None and result.usage.to_portable():
            metadata["usage"] = result.usage.to_portable()
        if isinstance(result.raw, ModelResponse):
            if result.raw.model:
                metadata["model"] = result.raw.model
            metadata["cached"] = result.raw.cached
            cost = response_cost(self._client_name(result.raw), result.raw)
            if cost is not None:
                metadata["cost_usd"] = cost
            if result.raw.warnings:
                metadata["warnings"] = list(result.raw.warnings)
        if result.content:
            metadata["raw_output"] = result.content
        if not result.success:
            shown = f": {excerpt(result.content.strip())}" if result.content.strip() else ""
            return Judgment.errored(
                f"runner reported an unsuccessful call{shown}", metadata=metadata
            )
        if result.parsed is not None:
            data: Mapping[str, Any] = result.parsed
        else:
            parsed, why = parse_json_object(result.content)
            if parsed is None:
                return Judgment.errored(
                    f"could not parse the runner output as JSON: {why}", metadata=metadata
                )
            data = parsed
        if "score" not in data:
            return Judgment.errored(
                "invalid score: the output has no 'score' field", metadata=metadata
            )
        score = data["score"]
        if isinstance(score, bool) or not isinstance(score, int | float):
            return Judgment.errored(
                f"invalid score {score!r}: expected a number in [0, 1], got {type(score).__name__}",
                metadata=metadata,
            )
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            return Judgment.errored(
                f"invalid score {score!r}: expected a finite number in [0, 1]", metadata=metadata
            )
        reasoning = data.get("reasoning")
        if not isinstance(reasoning, str):
            return Judgment.errored(
                f"invalid reasoning {reasoning!r}: expected a string", metadata=metadata
            )
        return Judgment.from_score(
            float(score), threshold=self.threshold, reasoning=reasoning, metadata=metadata
        )

    def __repr__(self) -> str:
        return f"<ScoreJudge {self.name!r} metric_key={self.metric_key!r}>"

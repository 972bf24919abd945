"""`LLMJudge`: one prompt, one model call, one judgment.

Failure policy (shared by every model-backed judge in this package):

* Problems the judge can see in its own inputs or in the model's answer are data: a prompt that
  cannot be rendered is an ERROR judgment naming the variable; an answer that cannot be parsed is
  an ABSTAIN judgment with the raw text in ``metadata["raw_output"]`` (never a made-up 0 or NaN).
* Exceptions from the model client (HTTP errors, timeouts, transport failures) **propagate**.
  The Evaluator's single failure boundary turns them into an ERROR result with ``error_type``
  set to the exception class, after applying its retry policy (so a `RetryableError` or a
  timeout is retried there, once, instead of being swallowed here). Call the judge through an
  Evaluator, a Jury or a Cascade to get that behaviour; called directly, it raises.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from pydantic import BaseModel, ValidationError

from agentjudge._compat import build_model
from agentjudge.core import Context, Judgment, Message, Status
from agentjudge.exceptions import TemplateError
from agentjudge.judges._classifier import LabelClassifier
from agentjudge.judges._confidence import (
    ConfidenceMethod,
    VerdictPosition,
    check_confidence,
    label_matcher,
    run_confidence,
)
from agentjudge.judges._template import PromptTemplate
from agentjudge.judges._verdict import _ANSWER as ANSWER_LINE  # the line parse_verdict reads
from agentjudge.judges._verdict import (
    Verdict,
    excerpt,
    parse_json_object,
    read_verdict,
    response_metadata,
    verdict_judgment,
    verdict_with_metadata,
    with_metadata,
)
from agentjudge.judging import JudgeKind
from agentjudge.models._json import dumps as json_dumps
from agentjudge.models._prices import response_cost
from agentjudge.models._types import ModelClient, ModelRequest, ModelResponse
from agentjudge.models._usage import add_usage

__all__ = ["LLMJudge", "ModelJudgeBase", "calls_metadata", "request_at_once"]


def calls_metadata(client: str, responses: Sequence[ModelResponse]) -> dict[str, Any]:
    """Judgment metadata for the model calls behind one judgment (at least one).

    The keys of `response_metadata` for the last response, with ``usage`` summed over every
    call and ``cost_usd`` (US dollars, see `agentjudge.models.prices`) their summed cost. A
    cached answer costs 0. ``cost_usd`` is omitted when any call has no price (never guessed).
    Several calls also give ``calls`` (how many) and ``cached`` true only when all were cached.
    """
    if not responses:
        raise ValueError("calls_metadata needs at least one response")
    metadata = response_metadata(client, responses[-1])
    if len(responses) > 1:
        warnings: list[str] = list(metadata.get("warnings", ()))
        total = None
        for response in responses:
            total = add_usage(total, response.usage, warnings)
        usage = total.to_portable() if total is not None else {}
        if usage:
            metadata["usage"] = usage
        if warnings:
            metadata["warnings"] = warnings
        metadata["cached"] = all(r.cached for r in responses)
        metadata["calls"] = len(responses)
    spent: float = 0  # summed as sum() would: left to right, starting from 0
    priced = True
    for response in responses:
        cost = response_cost(client, response)
        if cost is None:
            priced = False  # never guessed
        else:
            spent += cost
    if priced:
        metadata["cost_usd"] = round(spent, 10)
    return metadata


_USER_FIELDS = {"role", "content"}
_REQUEST_FIELDS = {"messages", "temperature", "max_tokens", "response_schema"}
_STR = frozenset((str,))


def request_at_once(
    system: Message | None,
    prompt: object,
    temperature: object,
    max_tokens: object,
    schema: object,
) -> ModelRequest | None:
    """``build_request``'s `ModelRequest`, built without validation, or None to validate.

    Only values validation keeps unchanged take this way: an exact ``str`` prompt, a finite
    ``float`` temperature >= 0 or None, an ``int`` token cap >= 1 or None, and a ``dict``
    schema with ``str`` keys (copied, as validation copies it) or None. ``system`` is an
    already validated `Message`. Anything else returns None and is validated as always.
    """
    if not (
        type(prompt) is str
        and (temperature is None or (type(temperature) is float and 0.0 <= temperature < math.inf))
        and (max_tokens is None or (type(max_tokens) is int and max_tokens >= 1))
        and (schema is None or (type(schema) is dict and {*map(type, schema)} <= _STR))
    ):
        return None
    user = build_model(
        Message,
        {"role": "user", "content": prompt, "tool_calls": (), "tool_call_id": None},
        _USER_FIELDS,
    )
    values = {
        "messages": (user,) if system is None else (system, user),
        "temperature": temperature,
        "max_tokens": max_tokens,
        "response_schema": None if schema is None else dict(schema),
        "sample_index": 0,
        "logprobs": None,
    }
    return build_model(ModelRequest, values, _REQUEST_FIELDS)


def _check_client(model: object) -> ModelClient:
    name = getattr(model, "name", None)
    if not callable(getattr(model, "complete", None)):
        raise TypeError(
            f"model must be a ModelClient (an object with `name` and `async complete(request)`), "
            f"got {type(model).__name__}"
        )
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"model.name must be a non-blank string, got {name!r}")
    return model  # type: ignore[return-value]


def _check_real(name: str, value: object, *, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be a finite number {bound}, got {value}")
    return float(value)


def as_template(template: object, name: str) -> PromptTemplate:
    """``template`` as a `PromptTemplate` (a str is compiled under the judge's ``name``).

    Raises:
        TypeError: neither a PromptTemplate nor a str.
    """
    if isinstance(template, str):
        template = PromptTemplate(template, name=name)
    if not isinstance(template, PromptTemplate):
        raise TypeError(f"template must be a PromptTemplate or str, got {type(template)}")
    return template


class ModelJudgeBase:
    """Shared machinery of the model-backed judges: attributes, the request, the metadata.

    Subclasses build a prompt and turn the `ModelResponse` into a `Judgment`.

    Attributes:
        name: The judge name.
        model: The model client.
        kind: Always `JudgeKind.LLM`.
        resource: ``model.name``, so ``Evaluator(limits={client.name: n})`` caps this judge.
        metric_key: None (set it on the instance if results should report under a metric).
        sampling_rate: None (the Evaluator's default applies).
        description: One line for reports.
        confidence: How the judge measures `Judgment.confidence` (None: it does not);
            validated against the client (`check_confidence`).
    """

    kind: JudgeKind = JudgeKind.LLM

    def __init__(
        self,
        name: str,
        model: ModelClient,
        *,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        description: str = "",
        confidence: ConfidenceMethod | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"judge name must be a non-blank string, got {name!r}")
        self.name = name
        self.model = _check_client(model)
        self.resource: str | None = self.model.name
        self.metric_key: str | None = None
        self.sampling_rate: float | None = None
        self.description = description
        if system is not None and not isinstance(system, str):
            raise TypeError(f"system must be a str or None, got {type(system).__name__}")
        self.system = system
        self._system_cache: tuple[str, Message] | None = None
        self.temperature = (
            None if temperature is None else _check_real("temperature", temperature, low=0.0)
        )
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ValueError(f"max_tokens must be an int >= 1 or None, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.confidence = check_confidence(confidence, self.model)

    def build_request(self, prompt: str, schema: dict[str, Any] | None = None) -> ModelRequest:
        """The request for one judgment: an optional system message, then the prompt.

        Built once per call, so a prompt, temperature, token cap and schema of exactly the
        types validation keeps are assembled without validating them again (`request_at_once`,
        equal to the validated build: `tests/judges/test_judges_request_fast.py`); the system
        message is validated once per text.
        """
        system = self.system
        fast = request_at_once(
            self._system_message(system) if system else None,
            prompt,
            self.temperature,
            self.max_tokens,
            schema,
        )
        if fast is not None:
            return fast
        messages: list[Message] = []
        if self.system:
            messages.append(Message(role="system", content=self.system))
        messages.append(Message(role="user", content=prompt))
        return ModelRequest(
            messages=tuple(messages),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            response_schema=schema,
        )

    def _system_message(self, system: str) -> Message:
        """The system `Message` of ``system``, validated once per text (``system`` may change)."""
        cached = self._system_cache
        if cached is not None and cached[0] is system:
            return cached[1]
        message = Message(role="system", content=system)
        self._system_cache = (system, message)
        return message

    def finish(
        self,
        judgment: Judgment,
        response: ModelResponse,
        earlier: Sequence[ModelResponse] = (),
    ) -> Judgment:
        """Add the call metadata to a judgment (see `calls_metadata`).

        Args:
            judgment: What the judge concluded.
            response: The answer the judgment was read from.
            earlier: Answers of earlier calls behind the same judgment (their usage and cost
                are summed in).
        """
        if judgment.status is Status.ABSTAIN and response.finish_reason == "length":
            judgment = Judgment.abstained(
                judgment.reasoning + " (the response was cut off: finish_reason=length; "
                "raise max_tokens)",
                label=judgment.label,
                confidence=judgment.confidence,
                metadata=judgment.metadata,
            )
        return with_metadata(judgment, calls_metadata(self.model.name, [*earlier, response]))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} model={self.model.name!r}>"


class _OutputShape:
    """Which fields of a structured-output model carry the verdict."""

    def __init__(self, output_model: type[BaseModel]) -> None:
        if not (isinstance(output_model, type) and issubclass(output_model, BaseModel)):
            raise TypeError(f"output_model must be a pydantic model class, got {output_model!r}")
        self.model = output_model
        self.score: tuple[str, str] | None = None  # (attribute, key in the JSON)
        self.passed: tuple[str, str] | None = None
        self.reasoning: str | None = None
        for attr, info in output_model.model_fields.items():
            key = info.alias or attr
            if key == "score":
                self.score = (attr, key)
            elif key in ("passed", "pass"):
                self.passed = (attr, key)
            elif key == "reasoning":
                self.reasoning = attr
        if self.score is None and self.passed is None:
            raise ValueError(
                f"output_model {output_model.__name__} must declare a numeric `score` field "
                "or a bool `passed` (or `pass`) field"
            )
        self.schema = output_model.model_json_schema()
        self.flat = _flat_fields(output_model)
        exact = _exact_types(output_model) if self.flat else None
        # an answer's keys are the field names: with a non-ASCII one none is read as it is
        self.exact = exact if exact is not None and all(map(str.isascii, exact)) else None

    def validate(self, data: dict[str, Any]) -> BaseModel:
        """``model.model_validate_json(json.dumps(data))``: the same instance or the same error.

        The answer was decoded once already; serialising it to have pydantic read it again in
        JSON mode is skipped (``model_validate`` of the values instead) for a model of flat
        scalar fields (`_flat_fields`) and an answer of scalars read the same both ways
        (`_flat_answer`), where the two modes agree (`tests/judges/test_judges_structured_read.py`).

        Raises:
            ValidationError: (or ValueError, TypeError) as the JSON-mode reading raises it.
        """
        if self.flat and _flat_answer(data):
            return self.model.model_validate(data)
        return self.model.model_validate_json(json_dumps(data))

    def values(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """``data`` itself when `validate` would keep each of its values as it is, else None.

        For a flat model (`_flat_fields`), an answer holding exactly its fields, each of exactly
        the type its annotation names (``bool``, ``str``, ``int``, ``float``, or None where
        optional) and read alike in both modes (`_flat_answer`), validation converts nothing:
        the instance's field values are ``data``'s
        (`tests/judges/test_judges_structured_values.py`). Reading them from ``data`` builds
        no instance (nor its ``__dict__`` and fields set).
        """
        exact = self.exact
        if exact is None or type(data) is not dict or data.keys() != exact.keys():
            return None
        # `_flat_answer`'s checks in the same loop (an answer with a non-ASCII key never gets
        # here: `exact` is None for a model with a non-ASCII field name)
        for key, value in data.items():
            kind = type(value)
            if type(key) is not str or kind not in exact[key]:
                return None
            if kind is str:
                if not value.isascii():
                    return None
            elif kind is int and not -_INT_LIMIT < value < _INT_LIMIT:
                return None
        return data


class LLMJudge(ModelJudgeBase):
    """A judge that renders a prompt, asks a model once and reads the answer.

    How the answer is read:

    * ``output_model`` (a pydantic model class): structured output. The request carries
      ``output_model.model_json_schema()``; the structured answer (``response.parsed``, else the
      text parsed as JSON, code fences stripped) is validated against the model. A ``score``
      field gives ``Judgment.from_score(score, threshold=threshold)`` (``score_range`` rescales
      e.g. a 1-5 rubric); otherwise a bool ``passed`` / ``pass`` field gives PASS or FAIL. A
      ``reasoning`` string field becomes the reasoning.
    * ``classifier`` (a `LabelClassifier`): the whole answer must be one of its labels.
    * neither: the answer must contain a line ``Answer: YES`` or ``Answer: NO`` (see
      `parse_verdict`).

    Anything unreadable is ABSTAIN with the raw text in ``metadata["raw_output"]``. The
    metadata of every judgment also holds ``model``, ``client``, ``cached``, ``usage`` and
    ``cost_usd`` (omitted when the model has no price; see `agentjudge.models.prices`).
    A prompt that cannot be rendered (`TemplateError`) is an ERROR judgment naming the variable;
    exceptions from the model client propagate to the Evaluator, which retries them and records
    an ERROR with ``error_type`` (see the module docs).

    Args:
        name: Judge name.
        model: The model client; its ``name`` becomes the judge's ``resource``.
        template: A `PromptTemplate` or template text (STRICT).
        classifier: Read the answer with this label classifier.
        output_model: Ask for and read structured output of this pydantic model class.
        threshold: PASS iff the (normalised) structured score >= threshold.
        score_range: ``(low, high)`` of the structured score, normalised into [0, 1].
        system: Optional system message sent before the prompt.
        temperature: Sampling temperature (None: the server default).
        max_tokens: Response token cap (None: the server default).
        description: One line for reports.
        confidence: How to measure `Judgment.confidence`: `LogprobConfidence`,
            `SelfConsistency` or `SimulatedAnnotators` (see each). None (the default): no
            confidence, one call, and the request carries no extra fields.

    Raises:
        ValueError: a blank name, both ``classifier`` and ``output_model``, an ``output_model``
            without a score or pass field, a bad threshold, range, temperature or max_tokens,
            a template with an unknown variable, or a logprob-based confidence for a client
            that returns no logprobs (`AnthropicMessages`).
        TypeError: ``confidence`` is not one of the confidence methods.
    """

    def __init__(
        self,
        name: str,
        model: ModelClient,
        template: PromptTemplate | str,
        *,
        classifier: LabelClassifier | None = None,
        output_model: type[BaseModel] | None = None,
        threshold: float = 0.5,
        score_range: tuple[float, float] = (0.0, 1.0),
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        description: str = "",
        confidence: ConfidenceMethod | None = None,
    ) -> None:
        super().__init__(
            name,
            model,
            system=system,
            temperature=temperature,
            max_tokens=max_tokens,
            description=description,
            confidence=confidence,
        )
        self.template = as_template(template, name)
        if classifier is not None and output_model is not None:
            raise ValueError("give either classifier or output_model, not both")
        if classifier is not None and not isinstance(classifier, LabelClassifier):
            raise TypeError(f"classifier must be a LabelClassifier, got {type(classifier)}")
        self.classifier = classifier
        self._shape = None if output_model is None else _OutputShape(output_model)
        self.output_model = output_model
        self.threshold = _check_real("threshold", threshold, low=0.0, high=1.0)
        low, high = score_range
        low = _check_real("score_range low", low, low=-math.inf)
        high = _check_real("score_range high", high, low=-math.inf)
        if not high > low:
            raise ValueError(f"score_range must have high > low, got {score_range!r}")
        self.score_range = (low, high)

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Judge one context with one model call.

        Raises:
            Exception: whatever the model client raises (see the class docs).
        """
        try:
            prompt = self.template.render(ctx)
        except TemplateError as exc:
            return Judgment.errored(f"{self.name}: cannot build the prompt: {exc}")
        schema = None if self._shape is None else self._shape.schema
        request = self.build_request(prompt, schema)
        if self.confidence is not None:
            return await run_confidence(self.confidence, self, request)
        response = await self.model.complete(request)
        return self.read(response)

    def read(self, response: ModelResponse) -> Judgment:
        """Turn a model response into this judge's judgment (metadata included)."""
        found = self._read(response)
        if type(found) is not tuple:  # a Judgment
            return self.finish(found, response)  # type: ignore[arg-type]
        # a PASS/FAIL verdict: one judgment with the metadata, not a judgment and a copy
        return verdict_with_metadata(found, calls_metadata(self.model.name, [response]))

    def read_answer(self, response: ModelResponse) -> Judgment:
        """The judgment a model response gives, before the call metadata is added."""
        found = self._read(response)
        return found if isinstance(found, Judgment) else verdict_judgment(found)

    def _read(self, response: ModelResponse) -> Verdict | Judgment:
        """The verdict of a response, or the judgment it gives when it is not a plain verdict."""
        if self._shape is not None:
            return self._read_structured(self._shape, response)
        if self.classifier is not None:
            return self.classifier.classify(response.text)
        return read_verdict(response.text, response.parsed)

    def verdict_position(self, response: ModelResponse) -> VerdictPosition | str:
        """Where the verdict starts in ``response.text``, for logprob confidence (or why not).

        A label answer: its first non-space character. ``Answer: YES|NO``: the word. A JSON
        answer: the value of ``passed``/``pass``, ``score`` or ``answer`` (the first such key
        in the text).
        """
        text = response.text
        if self.classifier is not None:
            stripped = len(text) - len(text.lstrip())
            return VerdictPosition(stripped, label_matcher(list(self.classifier.labels)))
        if self._shape is not None:
            if self._shape.passed is not None:
                key, outcome = self._shape.passed[1], _bool_outcome
            elif self._shape.score is not None:
                key, outcome = self._shape.score[1], self._score_outcome
            else:  # pragma: no cover - _OutputShape requires one of them
                return "the output model has no verdict field"
            return _json_value_position(text, key, outcome)
        return yes_no_position(text)

    def _score_outcome(self, token: str) -> str | None:
        try:
            value = float(token.strip().strip('"'))
        except ValueError:
            return None
        low, high = self.score_range
        if not (math.isfinite(value) and low <= value <= high):
            return None
        return "pass" if (value - low) / (high - low) >= self.threshold else "fail"

    def _read_structured(self, shape: _OutputShape, response: ModelResponse) -> Verdict | Judgment:
        data: dict[str, Any] | None = response.parsed
        if data is None:
            if response.schema_error:
                return Judgment.abstained(
                    "Structured output does not match the requested schema: "
                    f"{response.schema_error}"
                )
            data, why = parse_json_object(response.text)
            if data is None:
                return Judgment.abstained(f"Could not parse structured output: {why}")
        fields = shape.values(data)
        if fields is not None:  # the answer's values are the instance's: none is built
            return self._judged(shape, data, fields.__getitem__)
        try:
            instance = shape.validate(data)
        except (ValidationError, ValueError, TypeError) as exc:
            return Judgment.abstained(
                f"Structured output does not match {shape.model.__name__}: "
                f"{_summarise(exc)}; got {excerpt(json.dumps(data, default=str))}"
            )
        return self._judged(shape, data, partial(getattr, instance))

    def _judged(
        self, shape: _OutputShape, data: dict[str, Any], field: Callable[[str], Any]
    ) -> Verdict | Judgment:
        """The verdict of a validated answer (``field``: its value of a field, by attribute)."""
        reasoning = ""
        if shape.reasoning is not None:
            value = field(shape.reasoning)
            if isinstance(value, str):
                reasoning = value.strip()
        if shape.score is not None and field(shape.score[0]) is not None:
            raw = data.get(shape.score[1])
            score = field(shape.score[0])
            low, high = self.score_range
            if (
                isinstance(raw, bool)
                or isinstance(score, bool)
                or not isinstance(score, int | float)
                or not math.isfinite(score)
                or not low <= score <= high
            ):
                return Judgment.abstained(
                    f"Structured output has an invalid score {raw!r}: expected a finite "
                    f"number within [{low:g}, {high:g}]"
                )
            return Judgment.from_score(
                float(score), threshold=self.threshold, low=low, high=high, reasoning=reasoning
            )
        if shape.passed is not None:
            raw = data.get(shape.passed[1])
            value = field(shape.passed[0])
            if isinstance(raw, bool) and isinstance(value, bool):
                return (Status.PASS if value else Status.FAIL), reasoning, None
            return Judgment.abstained(
                f"Structured output field {shape.passed[1]!r} must be true or false, got {raw!r}"
            )
        return Judgment.abstained("Structured output carries neither a score nor a verdict")


def yes_no_position(text: str) -> VerdictPosition | str:
    """Where a YES/NO verdict (what `parse_verdict` reads) starts in ``text``, or why not.

    A JSON answer: the value of ``answer``; else the word of the ``Answer: YES|NO`` line.
    """
    found = _json_value_position(text, "answer", label_matcher(["yes", "no"]))
    if not isinstance(found, str) and text.lstrip().startswith(("{", "```")):
        return found
    match = ANSWER_LINE.search(text)
    if match is None:
        return "no 'Answer: YES|NO' line in the answer"
    return VerdictPosition(match.start(1), label_matcher(["yes", "no"]))


def _bool_outcome(token: str) -> str | None:
    word = token.strip().casefold()
    if word and "true".startswith(word):
        return "pass"
    if word and "false".startswith(word):
        return "fail"
    return None


def _json_value_position(
    text: str, key: str, outcome: Callable[[str], str | None]
) -> VerdictPosition | str:
    match = re.search(rf'"{re.escape(key)}"\s*:\s*"?', text)
    if match is None:
        return f"no {key!r} value in the JSON answer"
    return VerdictPosition(match.end(), outcome)


_EXACT: dict[object, frozenset[type]] = {
    kind: frozenset({kind}) for kind in (bool, str, int, float)
} | {kind | None: frozenset({kind, type(None)}) for kind in (bool, str, int, float)}
"""The flat annotations (`_flat_fields`), each with the types validation keeps unchanged."""
_FLAT_TYPES = frozenset(_EXACT)
_FLAT_CONFIG = frozenset({"title", "extra"})
_DECORATOR_KINDS = (
    "validators",
    "field_validators",
    "root_validators",
    "field_serializers",
    "model_serializers",
    "model_validators",
    "computed_fields",
)


def _flat_fields(model: type[BaseModel]) -> bool:
    """Whether ``model`` reads JSON scalars the same in Python and in JSON mode.

    Only plain scalar fields (``bool``, ``str``, ``int``, ``float``, each optionally ``| None``)
    without constraints or aliases, no validators or serializers of any kind, no settings but
    ``title`` and ``extra``, and pydantic's own ``model_validate``/``model_validate_json``.
    """
    decorators = model.__pydantic_decorators__
    return (
        model.model_validate.__func__ is BaseModel.model_validate.__func__  # type: ignore[attr-defined]
        and model.model_validate_json.__func__ is BaseModel.model_validate_json.__func__  # type: ignore[attr-defined]
        and set(model.model_config) <= _FLAT_CONFIG
        and not any(getattr(decorators, kind) for kind in _DECORATOR_KINDS)
        and all(
            info.annotation in _FLAT_TYPES
            and not info.metadata
            and info.alias is None
            and info.validation_alias is None
            for info in model.model_fields.values()
        )
    )


def _exact_types(model: type[BaseModel]) -> dict[str, frozenset[type]]:
    """For a flat model: each field's name and the types validation keeps unchanged in it."""
    return {attr: _EXACT[info.annotation] for attr, info in model.model_fields.items()}


_INT_LIMIT = 2**63


def _flat_answer(data: object) -> bool:
    """Whether ``data`` is a dict of values ``json.dumps`` and pydantic's JSON reading keep.

    ASCII ``str`` keys; values exact ``bool``, ASCII ``str``, ``int`` within 64 bits, ``float``
    or None (a lone surrogate or a huge int reads otherwise; NaN and infinities read alike).
    """
    if type(data) is not dict:
        return False
    for key, value in data.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(value)
        if kind is str:
            if not value.isascii():
                return False
        elif kind is int:
            if not -_INT_LIMIT < value < _INT_LIMIT:
                return False
        elif kind is not float and kind is not bool and value is not None:
            return False
    return True


def _summarise(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for error in exc.errors()[:5]:
            where = ".".join(str(p) for p in error.get("loc", ())) or "(root)"
            parts.append(f"{where}: {error.get('msg', '')}")
        return "; ".join(parts)
    return str(exc)

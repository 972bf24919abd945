"""How an LLM judge measures its `Judgment.confidence`: three methods, chosen per judge.

* `LogprobConfidence`: one call asking for token log-probabilities; the confidence is the
  probability of the chosen label's token normalised over the allowed labels.
* `SelfConsistency`: N sampled calls; the confidence is the winning label's share.
* `SimulatedAnnotators` (Jung et al. 2024, "Trust or Escalate"): N prompt variants, each with K
  different few-shot examples; the confidence is the winning label's average probability.

A judge built without one leaves ``confidence`` None and sends exactly the request it always
sent. The methods are values (validated at construction); the judge runs them.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar

import anyio

from agentjudge.core import Judgment, Message, Status, thaw
from agentjudge.judges._verdict import excerpt
from agentjudge.models._types import MAX_LOGPROBS, ModelClient, ModelRequest, ModelResponse

__all__ = [
    "ConfidenceMethod",
    "ConfidenceReader",
    "LogprobConfidence",
    "SelfConsistency",
    "SimulatedAnnotators",
    "VerdictPosition",
    "check_confidence",
    "label_matcher",
    "outcome_distribution",
    "run_all",
]

_REASON_CHARS = 200
_ENUMERATE_LIMIT = 10_000


def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f"within {low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bound}, got {value}")
    return value


class LogprobConfidence:
    """Confidence from the token log-probabilities of one call.

    The request asks for ``top`` alternatives per token. At the token where the verdict
    starts (the first token of a label answer, the YES/NO word after ``Answer:``, or the
    start of the verdict value in a structured JSON answer: ``"passed"``/``"pass"``,
    ``"score"`` or ``"answer"``), each alternative is mapped to the label it would have
    given (compared after ``strip()``, quotes removed and ``casefold()``); the confidence is
    the summed probability of alternatives giving the chosen label over that of alternatives
    giving any allowed label. Only the verdict's FIRST token is read: an alternative matches a
    label equal to it or, for labels spanning several tokens, the only label starting with
    it (a prefix shared by two labels matches neither). For a structured score the
    alternatives are the numbers they start with, mapped to PASS or FAIL by the judge's
    threshold (meaningful for integer rubrics such as 1-5; use `SelfConsistency` for
    fractional scores).

    When the answer has no logprobs (a server that ignores the request) or the verdict
    token cannot be found, the judgment keeps its verdict with ``confidence`` None and says
    why in ``metadata["confidence_error"]``. Needs an OpenAI-compatible client: a client that
    declares ``supports_logprobs = False`` (`AnthropicMessages`) is refused by the judge.

    Args:
        top: Alternatives per token to ask for, 2..20.
    """

    def __init__(self, *, top: int = 5) -> None:
        self.top = _check_int("LogprobConfidence top", top, 2, MAX_LOGPROBS)

    def __repr__(self) -> str:
        return f"LogprobConfidence(top={self.top})"


class SelfConsistency:
    """Confidence as the agreement of N sampled answers.

    The judge sends ``samples`` separate requests at once (``sample_index`` 0..N-1, so a
    response cache stores each), all at ``temperature``. Each answer is read as usual; an
    unreadable one (ABSTAIN without a label) is counted in ``metadata["invalid_samples"]``
    with its reason in ``metadata["invalid_reasons"]``, never silently dropped. The label
    (or, without labels, the status) given by most valid samples wins; a tie goes to the
    tied label given by the lowest-numbered sample. The judgment is that sample's,
    with ``confidence`` = winning votes / valid samples, ``metadata["votes"]`` and the usage
    and cost of every call summed. No valid sample: ABSTAIN. Calls run concurrently under the
    client's own concurrency and rate limits; an exception from any call propagates (the
    others are cancelled).

    Args:
        samples: How many calls, 2..100.
        temperature: The sampling temperature of every call (finite, > 0).
    """

    def __init__(self, samples: int = 5, *, temperature: float = 1.0) -> None:
        self.samples = _check_int("SelfConsistency samples", samples, 2, 100)
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise ValueError(
                f"SelfConsistency temperature must be a number, got {type(temperature).__name__}"
            )
        if not math.isfinite(temperature) or temperature <= 0:
            raise ValueError(
                "SelfConsistency temperature must be a finite number > 0 (samples at "
                f"temperature 0 would all agree), got {temperature}"
            )
        self.temperature = float(temperature)

    def __repr__(self) -> str:
        return f"SelfConsistency(samples={self.samples}, temperature={self.temperature})"


class SimulatedAnnotators:
    """Confidence from N prompt variants with different few-shot examples (Jung et al. 2024).

    Each variant is the judge's request with ``shots`` examples inserted before the prompt, as
    a user message (the example's prompt) and an assistant message (its answer, written in
    the judge's answer format). The variants' example sets are distinct and chosen from
    ``examples`` by a `random.Random` seeded with ``seed`` (the same seed, the same
    variants). Every variant gives a probability to each label: from its token logprobs
    when the client returns them (as `LogprobConfidence` reads them), else 1.0 for the label
    it chose. The winner is the label, among those some variant chose, with the highest
    average probability over ALL variants (an unreadable variant adds 0 to every label and
    is counted in ``metadata["invalid_variants"]``); a tie goes to the label chosen by the
    lowest-numbered variant. The judgment is that variant's, with ``confidence`` = the
    average probability of the winning label and ``metadata["probabilities"]``.

    Args:
        examples: Labelled examples, ``(prompt, answer)`` pairs of non-blank strings.
        variants: How many prompt variants (calls), 2..100.
        shots: Examples per variant, >= 1.
        seed: Seeds the example selection.
        logprobs: Ask for logprobs: None (default) when the client declares
            ``supports_logprobs = True`` (`OpenAIChat`), True always (refused for a client that
            declares False), False never.
        top: Alternatives per token when logprobs are asked for, 2..20.

    Raises:
        ValueError: malformed examples, fewer examples than ``shots``, or fewer distinct
            example sets than ``variants``.
    """

    def __init__(
        self,
        examples: Sequence[tuple[str, str]],
        *,
        variants: int = 5,
        shots: int = 3,
        seed: int = 0,
        logprobs: bool | None = None,
        top: int = 5,
    ) -> None:
        self.variants = _check_int("SimulatedAnnotators variants", variants, 2, 100)
        self.shots = _check_int("SimulatedAnnotators shots", shots, 1)
        self.seed = _check_int("SimulatedAnnotators seed", seed, -(2**63))
        self.top = _check_int("SimulatedAnnotators top", top, 2, MAX_LOGPROBS)
        if logprobs is not None and not isinstance(logprobs, bool):
            raise ValueError(
                f"SimulatedAnnotators logprobs must be a bool or None, got {logprobs!r}"
            )
        self.logprobs = logprobs
        self.examples = _check_examples(examples)
        if len(self.examples) < self.shots:
            raise ValueError(
                f"SimulatedAnnotators needs at least shots={self.shots} examples, "
                f"got {len(self.examples)}"
            )
        if math.comb(len(self.examples), self.shots) < self.variants:
            raise ValueError(
                f"SimulatedAnnotators: {len(self.examples)} examples give fewer than "
                f"variants={self.variants} distinct sets of {self.shots}; add examples or "
                "lower variants/shots"
            )
        self.selection = _select(len(self.examples), self.shots, self.variants, self.seed)
        """The example indices of each variant, in prompt order."""

    def shots_for(self, variant: int) -> tuple[Message, ...]:
        """The few-shot messages of one variant (user prompt, assistant answer, ...)."""
        messages: list[Message] = []
        for index in self.selection[variant]:
            prompt, answer = self.examples[index]
            messages.append(Message(role="user", content=prompt))
            messages.append(Message(role="assistant", content=answer))
        return tuple(messages)

    def __repr__(self) -> str:
        return (
            f"SimulatedAnnotators({len(self.examples)} examples, variants={self.variants}, "
            f"shots={self.shots}, seed={self.seed})"
        )


ConfidenceMethod: TypeAlias = LogprobConfidence | SelfConsistency | SimulatedAnnotators
"""The confidence methods a model-backed judge accepts."""


def _check_examples(examples: object) -> tuple[tuple[str, str], ...]:
    if isinstance(examples, str | bytes) or not isinstance(examples, Sequence):
        raise ValueError("SimulatedAnnotators examples must be a sequence of (prompt, answer)")
    checked: list[tuple[str, str]] = []
    for i, pair in enumerate(examples):
        if (
            not isinstance(pair, tuple | list)
            or len(pair) != 2
            or not all(isinstance(part, str) and part.strip() for part in pair)
        ):
            raise ValueError(
                f"SimulatedAnnotators examples[{i}] must be a (prompt, answer) pair of "
                f"non-blank strings, got {excerpt(repr(pair), 120)}"
            )
        checked.append((pair[0], pair[1]))
    return tuple(checked)


def _select(count: int, shots: int, variants: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """``variants`` distinct sets of ``shots`` example indices, shuffled, from ``seed``."""
    rng = random.Random(seed)
    if math.comb(count, shots) <= _ENUMERATE_LIMIT:
        picks = [
            list(c) for c in rng.sample(list(itertools.combinations(range(count), shots)), variants)
        ]
    else:  # a large space: draw until distinct (collisions are rare)
        seen: set[tuple[int, ...]] = set()
        picks = []
        while len(picks) < variants:
            pick = rng.sample(range(count), shots)
            if tuple(sorted(pick)) not in seen:
                seen.add(tuple(sorted(pick)))
                picks.append(pick)
    for pick in picks:
        rng.shuffle(pick)
    return tuple(tuple(p) for p in picks)


def check_confidence(confidence: object, model: ModelClient) -> ConfidenceMethod | None:
    """Validate a judge's ``confidence`` argument against its client.

    Raises:
        TypeError: not a confidence method.
        ValueError: a logprob-based method for a client that returns no logprobs.
    """
    if confidence is None:
        return None
    if not isinstance(confidence, LogprobConfidence | SelfConsistency | SimulatedAnnotators):
        raise TypeError(
            "confidence must be LogprobConfidence, SelfConsistency, SimulatedAnnotators or "
            f"None, got {type(confidence).__name__}"
        )
    needs = isinstance(confidence, LogprobConfidence) or (
        isinstance(confidence, SimulatedAnnotators) and confidence.logprobs is True
    )
    if needs and getattr(model, "supports_logprobs", None) is False:
        provider = getattr(model, "provider", None) or model.name
        raise ValueError(
            f"{type(confidence).__name__} needs token log-probabilities, which the {provider} "
            f"API ({model.name}) does not return; use SelfConsistency(samples=...) (or "
            "SimulatedAnnotators without logprobs) for a confidence"
        )
    return confidence


# -- reading logprobs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictPosition:
    """Where the verdict starts in an answer and how an alternative token reads there.

    Attributes:
        offset: The character offset of the verdict's first character in the answer text.
        outcome: Maps an alternative token to the vote key it would give (None: no label).
    """

    offset: int
    outcome: Callable[[str], str | None]


def _clean(token: str) -> str:
    return token.strip().strip("\"'").strip().casefold()


def label_matcher(labels: Sequence[str]) -> Callable[[str], str | None]:
    """Map a token to the label it starts: equal to it, else the only label it prefixes."""
    normal = {_clean(label): label for label in labels}

    def outcome(token: str) -> str | None:
        text = _clean(token)
        if not text:
            return None
        if text in normal:
            return normal[text]
        starting = [label for key, label in normal.items() if key.startswith(text)]
        return starting[0] if len(starting) == 1 else None

    return outcome


def _token_at(
    response: ModelResponse, offset: int
) -> tuple[str, float, tuple[tuple[str, float], ...]] | str:
    tokens = response.logprobs
    if tokens is None:
        return "the answer carries no token logprobs"
    if "".join(t.token for t in tokens) != response.text:
        return "the logprob tokens do not spell the answer text"
    start = 0
    for token in tokens:
        end = start + len(token.token)
        if start <= offset < end:
            return token.token, token.logprob, token.top
        start = end
    return f"no token covers the verdict at character {offset}"


def outcome_distribution(
    response: ModelResponse, position: VerdictPosition
) -> dict[str, float] | str:
    """The probability of each vote key at the verdict token, normalised; or why not."""
    found = _token_at(response, position.offset)
    if isinstance(found, str):
        return found
    chosen, logprob, top = found
    alternatives = dict(top)
    alternatives.setdefault(chosen, logprob)
    if position.outcome(chosen) is None:
        return f"the verdict token {chosen!r} does not identify one label"
    mass: dict[str, float] = {}
    for token, value in alternatives.items():
        key = position.outcome(token)
        if key is not None:
            mass[key] = mass.get(key, 0.0) + math.exp(value)
    total = sum(mass.values())
    if not total > 0:
        return "the verdict token has zero probability"
    return {key: value / total for key, value in mass.items()}


# -- running a method -----------------------------------------------------------------------------


class ConfidenceReader(Protocol):
    """What a judge offers a confidence method (`LLMJudge` implements it)."""

    model: ModelClient

    def read_answer(self, response: ModelResponse) -> Judgment:
        """The judgment an answer gives, before call metadata."""
        ...

    def verdict_position(self, response: ModelResponse) -> VerdictPosition | str:
        """Where the verdict starts in ``response.text`` (or why it cannot be found)."""
        ...

    def finish(
        self, judgment: Judgment, response: ModelResponse, earlier: Sequence[ModelResponse] = ()
    ) -> Judgment:
        """Add the call metadata of ``response`` and ``earlier`` to ``judgment``."""
        ...


def vote_key(judgment: Judgment) -> str | None:
    """The label a judgment votes for (its status without a label); None when unreadable."""
    if judgment.label is not None:
        return judgment.label
    if judgment.status in (Status.PASS, Status.FAIL):
        return judgment.status.value
    return None


def _with(judgment: Judgment, confidence: float | None, **metadata: Any) -> Judgment:
    """A copy of ``judgment`` with ``confidence`` (clamped into [0, 1]) and more metadata."""
    if confidence is not None:
        confidence = float(min(1.0, max(0.0, confidence)))
    return Judgment(
        status=judgment.status,
        score=judgment.score,
        label=judgment.label,
        confidence=confidence,
        reasoning=judgment.reasoning,
        checks=judgment.checks,
        metadata={**thaw(judgment.metadata), **metadata},
    )


_T = TypeVar("_T")


async def run_all(calls: Sequence[Callable[[], Awaitable[_T]]]) -> list[_T]:
    """Run the calls at once, results in call order; the first failure (by index) is raised.

    A failing call cancels the others; the exception is raised as itself (not wrapped in an
    ExceptionGroup). Cancellation of the caller propagates. Calls must not return None.
    """
    results: list[_T | None] = [None] * len(calls)
    errors: list[Exception | None] = [None] * len(calls)

    async def run(index: int, scope: anyio.CancelScope) -> None:
        try:
            results[index] = await calls[index]()
        except Exception as exc:  # cancellation is not an Exception: it propagates
            errors[index] = exc
            scope.cancel()

    async with anyio.create_task_group() as group:
        for index in range(len(calls)):
            group.start_soon(run, index, group.cancel_scope)
    for error in errors:
        if error is not None:
            raise error
    return [r for r in results if r is not None]


async def run_confidence(
    method: ConfidenceMethod, reader: ConfidenceReader, request: ModelRequest
) -> Judgment:
    """Judge with ``method``: make its calls, read them and set the confidence."""
    if isinstance(method, LogprobConfidence):
        return await _by_logprobs(method, reader, request)
    if isinstance(method, SelfConsistency):
        return await _by_samples(method, reader, request)
    return await _by_annotators(method, reader, request)


async def _by_logprobs(
    method: LogprobConfidence, reader: ConfidenceReader, request: ModelRequest
) -> Judgment:
    response = await reader.model.complete(request.model_copy(update={"logprobs": method.top}))
    judgment = reader.read_answer(response)
    key = vote_key(judgment)
    if key is None:
        return reader.finish(judgment, response)
    distribution = _distribution(reader, response)
    if isinstance(distribution, str):
        judgment = _with(
            judgment, None, confidence_method="logprobs", confidence_error=distribution
        )
    else:
        judgment = _with(judgment, distribution.get(key, 0.0), confidence_method="logprobs")
    return reader.finish(judgment, response)


def _distribution(reader: ConfidenceReader, response: ModelResponse) -> dict[str, float] | str:
    position = reader.verdict_position(response)
    return position if isinstance(position, str) else outcome_distribution(response, position)


def _invalid_reasons(judgments: Sequence[Judgment]) -> list[str]:
    return [
        f"#{i}: {excerpt(j.reasoning, _REASON_CHARS)}"
        for i, j in enumerate(judgments)
        if vote_key(j) is None
    ]


async def _by_samples(
    method: SelfConsistency, reader: ConfidenceReader, request: ModelRequest
) -> Judgment:
    requests = [
        request.model_copy(update={"temperature": method.temperature, "sample_index": i})
        for i in range(method.samples)
    ]
    responses = await run_all([_caller(reader.model, r) for r in requests])
    judgments = [reader.read_answer(r) for r in responses]
    keys = [vote_key(j) for j in judgments]
    votes: dict[str, int] = {}
    for key in keys:
        if key is not None:
            votes[key] = votes.get(key, 0) + 1
    invalid = _invalid_reasons(judgments)
    details: dict[str, Any] = {
        "confidence_method": "self_consistency",
        "samples": method.samples,
        "votes": votes,
        "invalid_samples": len(invalid),
    }
    if invalid:
        details["invalid_reasons"] = invalid
    if not votes:
        judgment = Judgment.abstained(
            f"none of the {method.samples} samples gave a readable answer; first: {invalid[0]}"
        )
        return reader.finish(_with(judgment, None, **details), responses[-1], responses[:-1])
    winner = max(votes, key=lambda k: (votes[k], -keys.index(k)))
    chosen = keys.index(winner)
    judgment = _with(judgments[chosen], votes[winner] / sum(votes.values()), **details)
    others = [r for i, r in enumerate(responses) if i != chosen]
    return reader.finish(judgment, responses[chosen], others)


def _caller(model: ModelClient, request: ModelRequest) -> Callable[[], Awaitable[ModelResponse]]:
    return lambda: model.complete(request)


async def _by_annotators(
    method: SimulatedAnnotators, reader: ConfidenceReader, request: ModelRequest
) -> Judgment:
    asked = method.logprobs
    if asked is None:
        asked = getattr(reader.model, "supports_logprobs", False) is True
    system = tuple(m for m in request.messages if m.role == "system")
    rest = tuple(m for m in request.messages if m.role != "system")
    requests = [
        request.model_copy(
            update={
                "messages": (*system, *method.shots_for(v), *rest),
                "logprobs": method.top if asked else None,
            }
        )
        for v in range(method.variants)
    ]
    responses = await run_all([_caller(reader.model, r) for r in requests])
    judgments = [reader.read_answer(r) for r in responses]
    keys = [vote_key(j) for j in judgments]
    totals: dict[str, float] = {}
    sources: set[str] = set()
    for key, response in zip(keys, responses, strict=True):
        if key is None:
            continue
        distribution = _distribution(reader, response) if asked else "not asked"
        if isinstance(distribution, str):
            distribution, source = {key: 1.0}, "choices"
        else:
            source = "logprobs"
        sources.add(source)
        for label, p in distribution.items():
            totals[label] = totals.get(label, 0.0) + p
    invalid = _invalid_reasons(judgments)
    details: dict[str, Any] = {
        "confidence_method": "simulated_annotators",
        "variants": method.variants,
        "shots": method.shots,
        "votes": {k: keys.count(k) for k in dict.fromkeys(k for k in keys if k is not None)},
        "probabilities": {k: round(v / method.variants, 6) for k, v in totals.items()},
        "probability_source": "+".join(sorted(sources)) or "none",
        "invalid_variants": len(invalid),
    }
    if invalid:
        details["invalid_reasons"] = invalid
    chosen_keys = [k for k in keys if k is not None]
    if not chosen_keys:
        judgment = Judgment.abstained(
            f"none of the {method.variants} variants gave a readable answer; first: {invalid[0]}"
        )
        return reader.finish(_with(judgment, None, **details), responses[-1], responses[:-1])
    winner = max(dict.fromkeys(chosen_keys), key=lambda k: (totals.get(k, 0.0), -keys.index(k)))
    chosen = keys.index(winner)
    confidence = totals.get(winner, 0.0) / method.variants
    judgment = _with(judgments[chosen], confidence, **details)
    others = [r for i, r in enumerate(responses) if i != chosen]
    return reader.finish(judgment, responses[chosen], others)

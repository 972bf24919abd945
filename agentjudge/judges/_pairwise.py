"""`PairwiseJudge`: which of two candidate outputs is better, with the order swapped.

How a `Context` carries the candidates (``ctx.output``):

* a pair ``(a, b)`` (tuple or list of two): the systems are named ``"A"`` and ``"B"``;
* a mapping of exactly two named candidates ``{"model-x": a, "model-y": b}``: the systems are
  the keys, the first one is shown as A.

Anything else is an ERROR judgment saying what was expected.

The judgment: ``label`` is ``"A"`` (the first candidate won), ``"B"`` (the second) or ``"tie"``.
The status says whether the judge made a decision: PASS when it reached one (a win or a tie,
the same in both orders), ABSTAIN when it did not (an answer that could not be read, or an
inconsistent swapped pair). It never says whether a candidate is *good*.

Position bias: by default the judge asks twice, concurrently, the second time with the
candidates swapped. Consistent answers give that label (PASS); inconsistent ones are no
decision, so never a PASS (a judge that always prefers the first slot must not look like one
that judges every case): ABSTAIN with ``metadata["position_bias"] = true``, labelled ``"tie"``
under ``on_inconsistent="tie"`` (the win rates of a run count it as a tie) and unlabelled
under ``"abstain"`` (left out of the win rates).

Confidence (``confidence=``, the methods of `agentjudge.judges._confidence`), per asked order:

* None (default): one plain call per order. The judgment's confidence is 1.0 for a consistent
  swapped pair (both orders agree) and None otherwise (a single call, or an inconsistent pair:
  no evidence of how sure the judge is; a confidence cascade escalates None).
* `LogprobConfidence`: each call asks for logprobs (``ModelRequest.logprobs``); its
  probability is that of its answer token normalised over A, B and tie (`label_matcher`,
  `outcome_distribution`). `SelfConsistency`: each order is sampled N times; its answer is the
  majority and its probability the majority's share. `SimulatedAnnotators`: each order is
  asked in N few-shot variants (the examples' answers must be ``Answer: A|B|tie`` lines).
  The judgment's confidence is the mean of the orders' probabilities of the agreed label;
  None for an inconsistent pair, or when an order has no probability (its reason is in
  ``metadata["confidence_error"]``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from agentjudge.core import Context, Judgment, thaw
from agentjudge.exceptions import TemplateError
from agentjudge.judges._confidence import (
    ConfidenceMethod,
    VerdictPosition,
    label_matcher,
    run_all,
    run_confidence,
)
from agentjudge.judges._llm import ModelJudgeBase, as_template, calls_metadata
from agentjudge.judges._template import PromptTemplate
from agentjudge.judges._verdict import excerpt
from agentjudge.models._types import ModelClient, ModelRequest, ModelResponse

__all__ = ["DEFAULT_PAIRWISE_PROMPT", "LABELS", "PairwiseJudge", "candidates_of"]

LABELS: tuple[str, ...] = ("A", "B", "tie")
"""The labels a pairwise judgment carries."""

CANDIDATE_A = "candidate_a"
"""The metadata key a pairwise template reads the candidate shown first from."""
CANDIDATE_B = "candidate_b"
"""The metadata key a pairwise template reads the candidate shown second from."""

DEFAULT_PAIRWISE_PROMPT = """\
You are comparing two responses to the same request. Decide which response fulfils the \
request better: correct, complete, helpful and faithful to the request. The order in which \
the responses are shown and their length must not influence you.

[Request]
{{input}}

[Response A]
{{metadata.candidate_a}}

[Response B]
{{metadata.candidate_b}}

Explain your reasoning briefly, then end with exactly one line:
Answer: A    (Response A is better)
Answer: B    (Response B is better)
Answer: tie  (neither is better)
"""
"""The prompt `PairwiseJudge` uses unless given one."""

_ANSWER = re.compile(r"^\s*answer:\s*\**\s*(a|b|tie)\b", re.IGNORECASE | re.MULTILINE)
_SWAP = {"A": "B", "B": "A", "tie": "tie"}

Inconsistent = Literal["tie", "abstain"]


def candidates_of(output: object) -> tuple[tuple[str, str], tuple[Any, Any]] | str:
    """The system names and candidates a context's output carries, or why there are none.

    Returns:
        ``((name_a, name_b), (a, b))``, or a message saying what was expected.
    """
    if isinstance(output, tuple | list) and len(output) == 2:
        return ("A", "B"), (output[0], output[1])
    if isinstance(output, Mapping) and len(output) == 2:
        names = list(output)
        if all(isinstance(n, str) and n.strip() for n in names):
            return (names[0], names[1]), (output[names[0]], output[names[1]])
        return (
            "ctx.output must be a pair (a, b) or a mapping of exactly two named candidates, "
            f"whose names are non-blank strings; got the names {names!r}"
        )
    shown = f"{type(output).__name__}"
    if isinstance(output, Mapping | tuple | list):
        shown += f" of {len(output)}"
    return (
        "ctx.output must be a pair (a, b) or a mapping of exactly two named candidates "
        f'{{"system-x": a, "system-y": b}}, got {shown}'
    )


def read_answer(text: str) -> str | None:
    """The last ``Answer: A|B|tie`` line of a response, or a whole response that is one label.

    Returns:
        ``"A"``, ``"B"``, ``"tie"`` or None.
    """
    matches = _ANSWER.findall(text)
    word = matches[-1] if matches else text.strip().strip("*.").strip()
    return {"a": "A", "b": "B", "tie": "tie"}.get(word.casefold())


def answer_position(text: str) -> VerdictPosition | str:
    """Where the label `read_answer` reads starts in ``text`` (for logprob confidence)."""
    matches = list(_ANSWER.finditer(text))
    if matches:
        offset = matches[-1].start(1)
    else:
        offset = len(text) - len(text.lstrip().lstrip("*.").lstrip())
    if read_answer(text) is None:
        return "no 'Answer: A|B|tie' line in the answer"
    return VerdictPosition(offset, label_matcher(LABELS))


class _Order:
    """One asked order, as a `ConfidenceReader`: reads answers, keeps the responses behind it."""

    def __init__(self, model: ModelClient, order: tuple[str, str], swapped: bool) -> None:
        self.model = model
        self.order = order
        self.swapped = swapped
        self.responses: list[ModelResponse] = []  # every call behind this order's answer

    def read_answer(self, response: ModelResponse) -> Judgment:
        """The answer as a judgment whose label is A, B or tie in this order's terms."""
        answer = read_answer(response.text)
        if answer is None:
            return Judgment.abstained("expected a line 'Answer: A', 'Answer: B' or 'Answer: tie'")
        return Judgment.passed(label=answer)

    def verdict_position(self, response: ModelResponse) -> VerdictPosition | str:
        """Where the answer label starts in ``response.text``."""
        return answer_position(response.text)

    def finish(
        self, judgment: Judgment, response: ModelResponse, earlier: Sequence[ModelResponse] = ()
    ) -> Judgment:
        """Remember the calls (answered one last); their metadata is added for the pair."""
        self.responses = [*earlier, response]
        return judgment

    async def ask(self, method: ConfidenceMethod | None, request: ModelRequest) -> _Call:
        """Ask this order (with ``method``'s calls) and read its answer."""
        if method is not None:
            judgment = await run_confidence(method, self, request)
        else:
            response = await self.model.complete(request)
            judgment = self.finish(self.read_answer(response), response)
        return _Call(self, judgment)


class _Call:
    """One asked order's outcome: the answer in the order's terms and in the pair's."""

    def __init__(self, order: _Order, judgment: Judgment) -> None:
        self.order = order.order
        self.responses = order.responses
        self.response = order.responses[-1]  # the answer read (a sampled method's chosen one)
        self.answer = judgment.label
        label = self.answer
        if order.swapped and label is not None:
            label = _SWAP[label]
        self.label = label  # "A" = the first candidate of the pair
        self.confidence = judgment.confidence
        self.details = thaw(judgment.metadata)  # the confidence method's own metadata

    @property
    def winner(self) -> str | None:
        if self.answer in ("A", "B"):
            return self.order[0] if self.answer == "A" else self.order[1]
        return None

    def record(self) -> dict[str, Any]:
        """This call in the judgment metadata (metadata has no null: unknowns are left out)."""
        out: dict[str, Any] = {"order": list(self.order)}
        if self.answer is not None:
            out["answer"] = self.answer
        if self.winner is not None:
            out["winner"] = self.winner
        if self.confidence is not None:
            out["confidence"] = self.confidence
        out.update((k, v) for k, v in self.details.items() if k != "confidence_method")
        out["raw_output"] = self.response.text
        return out


class PairwiseJudge(ModelJudgeBase):
    """Compare two candidate outputs; by default twice, with the order swapped.

    See the module docs for how a `Context` carries the candidates and what the judgment
    means. The template is rendered on the context with ``metadata["candidate_a"]`` and
    ``metadata["candidate_b"]`` set to the candidates shown first and second in that call
    (they replace keys of those names in the context's own metadata); every other variable
    (``{{input}}``, ``{{expected}}``...) works as in `LLMJudge`. The model must end its answer
    with a line ``Answer: A``, ``Answer: B`` or ``Answer: tie`` (the last such line counts; a
    whole answer that is just one label is read too).

    Metadata: ``pairwise`` = {``systems`` (the two names), ``winner`` (the winning system's
    name; left out for a tie or no decision, as judgment metadata holds no null),
    ``swapped``, ``answers`` (per call: the order shown, its answer and winner, its
    confidence when known, and its raw text)}; ``position_bias`` (with
    ``swap`` and two readable answers: true when the two orders disagreed); and the usage and
    cost of both calls summed (``usage``, ``cost_usd``, ``calls``; see `calls_metadata`).
    With a ``confidence`` method: ``confidence_method`` (its name), each call record carries
    the method's details (``votes``, ``probabilities``...), and ``confidence_error`` says why
    the judgment has no confidence when an order gave no probability.
    Exceptions from the model client propagate (to the Evaluator, which records an ERROR);
    when one of the concurrent calls fails, the others are cancelled.

    Args:
        name: Judge name.
        model: The model client.
        template: A `PromptTemplate` or text; default `PairwiseJudge.DEFAULT_PROMPT`.
        swap: Ask a second time with the candidates swapped (default True).
        on_inconsistent: How a swapped pair whose two answers disagree enters the win rates:
            ``"tie"`` (ABSTAIN labelled tie: counted as a tie) or ``"abstain"`` (ABSTAIN
            without a label: left out). Either way the judgment is ABSTAIN, not a decision.
        system: Optional system message.
        temperature: Sampling temperature (None: the server default).
        max_tokens: Response token cap (None: the server default).
        description: One line for reports.
        confidence: How to measure `Judgment.confidence` (see the module docs):
            `LogprobConfidence`, `SelfConsistency`, `SimulatedAnnotators` or None (1.0 for a
            consistent swapped pair, else None; one plain call per order).

    Raises:
        ValueError: a bad ``on_inconsistent``, name, temperature or max_tokens, a template
            with an unknown variable, or a logprob-based confidence for a client that
            returns no logprobs (`AnthropicMessages`).
        TypeError: ``confidence`` is not one of the confidence methods.
    """

    DEFAULT_PROMPT: ClassVar[str] = DEFAULT_PAIRWISE_PROMPT
    """The prompt used when none is given (read it to write your own)."""

    def __init__(
        self,
        name: str,
        model: ModelClient,
        template: PromptTemplate | str | None = None,
        *,
        swap: bool = True,
        on_inconsistent: Inconsistent = "tie",
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
        self.template = as_template(DEFAULT_PAIRWISE_PROMPT if template is None else template, name)
        if not isinstance(swap, bool):
            raise TypeError(f"swap must be a bool, got {type(swap).__name__}")
        self.swap = swap
        if on_inconsistent not in ("tie", "abstain"):
            raise ValueError(f'on_inconsistent must be "tie" or "abstain", got {on_inconsistent!r}')
        self.on_inconsistent: Inconsistent = on_inconsistent

    def _prompt(self, ctx: Context, first: Any, second: Any) -> str:
        metadata = {**ctx.metadata, CANDIDATE_A: first, CANDIDATE_B: second}
        shown = ctx.model_copy(update={"metadata": MappingProxyType(metadata)})
        return self.template.render(shown)

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Judge the pair ``ctx.output`` (one call, or two concurrent ones with ``swap``).

        Raises:
            Exception: whatever the model client raises (see the module docs of `_llm`).
        """
        found = candidates_of(ctx.output)
        if isinstance(found, str):
            return Judgment.errored(f"{self.name}: {found}")
        systems, (a, b) = found
        orders = [(systems, (a, b))]
        if self.swap:
            orders.append(((systems[1], systems[0]), (b, a)))
        try:
            prompts = [self._prompt(ctx, *shown) for _, shown in orders]
        except TemplateError as exc:
            return Judgment.errored(f"{self.name}: cannot build the prompt: {exc}")
        asked = [_Order(self.model, order, index == 1) for index, (order, _) in enumerate(orders)]
        requests = [self.build_request(prompt) for prompt in prompts]
        calls = await run_all(
            [_asker(o, self.confidence, r) for o, r in zip(asked, requests, strict=True)]
        )
        return self._judge(systems, calls)

    def _judge(self, systems: tuple[str, str], calls: list[_Call]) -> Judgment:
        pair: dict[str, Any] = {
            "systems": list(systems),
            "swapped": self.swap,
            "answers": [call.record() for call in calls],
        }
        metadata: dict[str, Any] = {"pairwise": pair}
        metadata.update(calls_metadata(self.model.name, [r for c in calls for r in c.responses]))
        if self.confidence is not None:
            metadata["confidence_method"] = calls[0].details.get("confidence_method", "none")
        unread = [i for i, call in enumerate(calls) if call.label is None]
        if unread:
            call = calls[unread[0]]
            shown = excerpt(call.response.text.strip()) or "(empty response)"
            return Judgment.abstained(
                f"Could not read a verdict from call {unread[0] + 1} (order "
                f"{call.order[0]} then {call.order[1]}); expected a line 'Answer: A', "
                f"'Answer: B' or 'Answer: tie': {shown}",
                metadata=metadata,
            )
        labels = {call.label for call in calls}
        if self.swap:
            metadata["position_bias"] = len(labels) > 1
        if len(labels) > 1:
            return self._inconsistent(calls, metadata)
        label = calls[0].label or "tie"
        if label != "tie":
            pair["winner"] = systems[0] if label == "A" else systems[1]
        return Judgment.passed(
            self._reasoning(calls, label, systems),
            label=label,
            confidence=self._confidence(calls, metadata),
            metadata=metadata,
        )

    def _confidence(self, calls: list[_Call], metadata: dict[str, Any]) -> float | None:
        """The mean of the calls' probabilities with a method; without one, 1.0 for a swap."""
        if self.confidence is None:
            return 1.0 if self.swap else None
        missing = [i for i, c in enumerate(calls) if c.confidence is None]
        if missing:
            why = calls[missing[0]].details.get("confidence_error", "no probability")
            metadata["confidence_error"] = f"call {missing[0] + 1}: {why}"
            return None
        known = [c.confidence for c in calls if c.confidence is not None]
        return min(1.0, math.fsum(known) / len(known))

    def _inconsistent(self, calls: list[_Call], metadata: dict[str, Any]) -> Judgment:
        said = "; ".join(f"with {c.order[0]} first it chose {c.winner or 'a tie'}" for c in calls)
        reasoning = f"Position bias: the answer changed when the order was swapped ({said})"
        if self.on_inconsistent == "abstain":
            return Judgment.abstained(reasoning, metadata=metadata)
        return Judgment.abstained(
            reasoning + "; no decision, counted as a tie in the win rates",
            label="tie",
            metadata=metadata,
        )

    @staticmethod
    def _reasoning(calls: list[_Call], label: str, systems: tuple[str, str]) -> str:
        outcome = "a tie" if label == "tie" else systems[0] if label == "A" else systems[1]
        both = " in both orders" if len(calls) > 1 else ""
        return f"Chose {outcome}{both}: {excerpt(calls[0].response.text.strip())}"


def _asker(
    order: _Order, method: ConfidenceMethod | None, request: ModelRequest
) -> Callable[[], Awaitable[_Call]]:
    return lambda: order.ask(method, request)

"""Model-judged trajectories and multi-turn conversations: `TrajectoryJudge`, `ConversationJudge`.

`TrajectoryJudge` asks a model whether the agent's trajectory (messages and tool calls,
rendered by `render_messages`) meets a rubric, showing the reference trajectory when
``ctx.expected`` holds one. `ConversationJudge` splits a conversation into turns (a turn starts
at each user message) and runs any judge on each turn, and optionally another on the whole
conversation, attributing each result to its turn in ``metadata["turns"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio

from agentjudge.core import Check, Context, Judgment, Message, Status
from agentjudge.judges._confidence import ConfidenceMethod
from agentjudge.judges._rag import _DATA_NOTE, _reply_format, _section, _VerdictJudge
from agentjudge.judges._template import render_messages, render_value
from agentjudge.judges._trajectory import TrajectoryError, actual_trajectory, reference_trajectory
from agentjudge.judges._trajectory_diff import DIFF_KEY, exact_diff
from agentjudge.judges._verdict import with_metadata
from agentjudge.judging import JudgeKind, call_judge, judge_name
from agentjudge.models._types import ModelClient

__all__ = [
    "CONSISTENCY_RUBRIC",
    "GOAL_COMPLETION_RUBRIC",
    "TRAJECTORY_RUBRIC",
    "ConversationJudge",
    "TrajectoryJudge",
    "conversation_turns",
]

TRAJECTORY_RUBRIC = (
    "The agent makes logical progress toward the goal. Each tool call suits its step and has "
    "sensible arguments. The agent does not repeat calls or take needless steps, reads the tool "
    "results correctly, and its final answer is supported by them."
)
"""`TrajectoryJudge`'s default rubric."""
GOAL_COMPLETION_RUBRIC = (
    "By the end of the conversation the assistant has accomplished what the user asked for, "
    "including requests made in later turns, or has clearly explained why it cannot."
)
"""A rubric for judging a whole conversation: did the user get what they came for?"""
CONSISTENCY_RUBRIC = (
    "The assistant never contradicts itself or facts established earlier in the conversation, "
    "remembers what the user said before, and keeps any persona or constraints it was given."
)
"""A rubric for judging a whole conversation: is the assistant consistent across turns?"""


class TrajectoryJudge(_VerdictJudge):
    """Does the agent's trajectory meet a rubric? An LLM judge over the tool calls.

    Shows the model the goal (``ctx.input``, when set), the trajectory (``ctx.messages``, or the
    messages ``ctx.output`` holds; tool calls with their arguments, tool results), the final
    output when it is text, and the reference trajectory when ``ctx.expected`` holds one
    (presented as one good solution, not the only one), then the rubric. Reads a YES/NO
    verdict like the other verdict judges (`parse_verdict`). An empty trajectory ABSTAINs
    without calling the model; a malformed one is ERROR naming the message index.

    Args:
        model: The model client (positional).
        rubric: What a good trajectory does (default `TRAJECTORY_RUBRIC`).
        name: Judge name (default ``"Trajectory"``).
        structured: Ask for structured output (`VERDICT_SCHEMA`) instead of text.
        system: Optional system message.
        temperature: Sampling temperature.
        max_tokens: Response token cap.
        description: One line for reports.
        confidence: How to measure `Judgment.confidence` (see `LLMJudge`).

    Raises:
        ValueError: a blank rubric (and the base judges' checks).
    """

    default_name = "Trajectory"

    def __init__(
        self,
        model: ModelClient,
        *,
        rubric: str = TRAJECTORY_RUBRIC,
        name: str | None = None,
        structured: bool = False,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        description: str = "",
        confidence: ConfidenceMethod | None = None,
    ) -> None:
        super().__init__(
            model,
            name=name,
            structured=structured,
            system=system,
            temperature=temperature,
            max_tokens=max_tokens,
            description=description,
            confidence=confidence,
        )
        if not isinstance(rubric, str) or not rubric.strip():
            raise ValueError("rubric must be a non-blank string")
        self.rubric = rubric.strip()

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Judge the trajectory; a FAIL with a reference carries the tool-call diff.

        The diff (``metadata["tool_call_diff"]``, calls equal by name and arguments) is what
        reports show under the failing judgment; see `agentjudge.judges._trajectory_diff`.
        """
        judgment = await super().__call__(ctx)
        if judgment.status is not Status.FAIL:
            return judgment
        try:
            reference = reference_trajectory(ctx)
            diff = None if not reference else exact_diff(actual_trajectory(ctx), reference)
        except TrajectoryError:
            return judgment
        return judgment if diff is None else with_metadata(judgment, {DIFF_KEY: diff})

    def prompt(self, ctx: Context) -> str | Judgment:
        """The prompt, ABSTAIN for an empty trajectory, ERROR for a malformed one."""
        try:
            trajectory = actual_trajectory(ctx)
            reference = reference_trajectory(ctx)
        except TrajectoryError as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        if not trajectory:
            return Judgment.abstained(
                "No trajectory to judge (ctx.messages is empty and ctx.output holds no messages)"
            )
        parts = ["You are reviewing the trajectory of an AI agent: its messages and tool calls."]
        if ctx.input is not None and (goal := render_value(ctx.input).strip()):
            parts.append(_section("goal", goal))
        parts.append(_section("trajectory", render_messages(trajectory)))
        if isinstance(ctx.output, str) and ctx.output.strip() and ctx.messages:
            parts.append(_section("final_output", ctx.output.strip()))
        if reference:
            parts.append(
                "A reference trajectory follows: one good way to do the task. Another "
                "trajectory can be just as good."
            )
            parts.append(_section("reference_trajectory", render_messages(reference)))
        parts.append(_section("rubric", self.rubric))
        parts.append(_DATA_NOTE)
        parts.append(_reply_format(self.structured, "the trajectory meets the rubric"))
        return "\n\n".join(parts)


def conversation_turns(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """``(start, end)`` index ranges of the turns: each starts at a user message.

    Messages before the first user message (system prompts) belong to no turn; they are part
    of every turn's history.
    """
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    if not starts:
        return []
    return [(s, e) for s, e in zip(starts, [*starts[1:], len(messages)], strict=True)]


def _turn_context(
    ctx: Context, messages: Sequence[Message], span: tuple[int, int], n: int
) -> Context:
    start, end = span
    replies = [m.content for m in messages[start + 1 : end] if m.role == "assistant" and m.content]
    expected = None
    if isinstance(ctx.expected, Mapping) and isinstance(ctx.expected.get("turns"), list | tuple):
        turns = ctx.expected["turns"]
        expected = turns[n] if n < len(turns) else None
    metadata = dict(ctx.metadata)
    metadata["turn"] = n + 1
    return ctx.model_copy(
        update={
            "input": messages[start].content,
            "output": replies[-1] if replies else "",
            "expected": expected,
            "messages": tuple(messages[:end]),
            "metadata": MappingProxyType(metadata),
        }
    )


def _summary(judgment: Judgment) -> dict[str, Any]:
    row: dict[str, Any] = {"status": judgment.status.value, "reasoning": judgment.reasoning}
    if judgment.score is not None:
        row["score"] = judgment.score
    return row


JudgeLikeCallable = Callable[[Context], Any]


class ConversationJudge:
    """Judge a multi-turn conversation turn by turn, and as a whole.

    The conversation is ``ctx.messages`` (or the messages ``ctx.output`` holds); a turn starts
    at each user message and runs to the next (`conversation_turns`). ``per_turn`` (any judge:
    function, LLM judge, jury) sees one `Context` per turn: ``input`` the user message,
    ``output`` the last assistant reply of the turn, ``messages`` the conversation up to the
    end of the turn, ``expected`` ``ctx.expected["turns"][i]`` when given, and
    ``metadata["turn"]`` the 1-based turn number (other fields as in ``ctx``). ``whole`` sees
    the original context (e.g. a `TrajectoryJudge` with `GOAL_COMPLETION_RUBRIC`).

    The judgment: PASS iff the share of judged turns that PASS is >= ``threshold`` (ABSTAIN
    turns are not judged) and ``whole`` PASSes. The score is that share, or ``whole``'s score
    when lower. ``metadata["turns"]`` lists one ``{"turn", "status", "score", "reasoning"}``
    per turn, ``metadata["whole"]`` the whole-conversation result; ``checks`` holds one check
    per turn (``"turn 1"``...) plus ``"whole conversation"``. A turn judge or ``whole`` that
    errors (or raises) makes the judgment ERROR, naming the turn. No user turn: ABSTAIN.

    Args:
        per_turn: The judge run on each turn (None: only ``whole``).
        whole: The judge run on the whole conversation (None: only the turns).
        threshold: Share of judged turns that must pass (default 1.0: all).
        concurrency: Turns judged at once.
        name: Judge name (default ``"Conversation"``).

    Raises:
        ValueError: neither judge given, a threshold outside [0, 1], or concurrency < 1.
    """

    metric_key: str | None = None
    sampling_rate: float | None = None

    def __init__(
        self,
        per_turn: JudgeLikeCallable | None = None,
        *,
        whole: JudgeLikeCallable | None = None,
        threshold: float = 1.0,
        concurrency: int = 4,
        name: str = "Conversation",
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"name must be a non-blank string, got {name!r}")
        if per_turn is None and whole is None:
            raise ValueError("give a per_turn judge, a whole-conversation judge, or both")
        if isinstance(threshold, bool) or not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {threshold!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
        self.name = name
        self.per_turn = per_turn
        self.whole = whole
        self.threshold = float(threshold)
        self.concurrency = concurrency
        inner = [j for j in (per_turn, whole) if j is not None]
        kinds = {getattr(j, "kind", JudgeKind.DETERMINISTIC) for j in inner}
        self.kind = JudgeKind.LLM if JudgeKind.LLM in kinds else next(iter(kinds))
        resources = [r for j in inner if (r := getattr(j, "resource", None)) is not None]
        self.resource: str | None = resources[0] if resources else None
        self.description = "Judges a conversation per turn and as a whole"

    def __repr__(self) -> str:
        return f"<ConversationJudge {self.name!r}>"

    async def _run(self, judge: JudgeLikeCallable, ctx: Context) -> Judgment:
        name = judge_name(judge)
        try:
            return await call_judge(judge, ctx, name=name)
        except Exception as exc:
            return Judgment.errored(f"{name} raised {type(exc).__name__}: {exc}")

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Judge every turn (at most ``concurrency`` at once) and the whole conversation."""
        try:
            messages = actual_trajectory(ctx)
        except TrajectoryError as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        spans = conversation_turns(messages)
        if not spans:
            return Judgment.abstained(f"{self.name}: the conversation has no user turn")
        turns: list[Judgment | None] = [None] * len(spans)
        whole: list[Judgment] = []
        limiter = anyio.CapacityLimiter(self.concurrency)

        async def turn(n: int) -> None:
            async with limiter:
                assert self.per_turn is not None
                turns[n] = await self._run(self.per_turn, _turn_context(ctx, messages, spans[n], n))

        async def overall() -> None:
            assert self.whole is not None
            whole.append(await self._run(self.whole, ctx))

        async with anyio.create_task_group() as tg:
            if self.per_turn is not None:
                for n in range(len(spans)):
                    tg.start_soon(turn, n)
            if self.whole is not None:
                tg.start_soon(overall)
        return self._combine([t for t in turns if t is not None], whole[0] if whole else None)

    def _combine(self, turns: list[Judgment], whole: Judgment | None) -> Judgment:
        rows = [{"turn": n + 1, **_summary(j)} for n, j in enumerate(turns)]
        metadata: dict[str, Any] = {"turns": rows} if turns else {}
        if whole is not None:
            metadata["whole"] = _summary(whole)
        errored = [(f"turn {n + 1}", j) for n, j in enumerate(turns) if j.status is Status.ERROR]
        if whole is not None and whole.status is Status.ERROR:
            errored.append(("whole conversation", whole))
        if errored:
            where, judgment = errored[0]
            return Judgment.errored(f"{where}: {judgment.reasoning}", metadata=metadata)
        checks = [
            Check(name=f"turn {n + 1}", passed=j.is_pass, message=j.reasoning[:500])
            for n, j in enumerate(turns)
            if j.status is not Status.ABSTAIN
        ]
        if whole is not None and whole.status is not Status.ABSTAIN:
            checks.append(
                Check(
                    name="whole conversation", passed=whole.is_pass, message=whole.reasoning[:500]
                )
            )
        if not checks:
            return Judgment.abstained(f"{self.name}: every judge abstained", metadata=metadata)
        return self._verdict(turns, whole, checks, metadata)

    def _verdict(
        self,
        turns: list[Judgment],
        whole: Judgment | None,
        checks: list[Check],
        metadata: dict[str, Any],
    ) -> Judgment:
        judged = [j for j in turns if j.status is not Status.ABSTAIN]
        parts: list[str] = []
        score, ok = 1.0, True
        if judged:
            passed = sum(j.is_pass for j in judged)
            parts.append(f"{passed} of {len(judged)} turns passed")
            score = passed / len(judged)
            ok = score >= self.threshold
        if whole is not None and whole.status is not Status.ABSTAIN:
            parts.append(f"whole conversation: {whole.status.value}")
            ok = ok and whole.is_pass
            score = min(score, whole.effective_score or 0.0)
        failed = next((c for c in checks if not c.passed), None)
        if failed is not None:
            parts.append(f"first failure: {failed.name}: {failed.message[:300]}")
        reasoning = "; ".join(parts)
        if ok:
            return Judgment.passed(reasoning, score=score, checks=checks, metadata=metadata)
        return Judgment.failed(reasoning, score=score, checks=checks, metadata=metadata)

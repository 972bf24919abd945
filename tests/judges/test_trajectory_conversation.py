"""TrajectoryJudge (over loopback HTTP) and ConversationJudge (per turn and whole)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agentjudge import Context, Evaluator, Judgment, Status, judge
from agentjudge.judges import (
    GOAL_COMPLETION_RUBRIC,
    ConversationJudge,
    TrajectoryJudge,
)
from agentjudge.judges._template import PromptTemplate
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse


def call(name: str, id: str, **args: Any) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


TRAJECTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [call("get_weather", "c1", city="Paris")]},
    {"role": "tool", "content": "18C, sunny", "tool_call_id": "c1"},
    {"role": "assistant", "content": "It is 18C and sunny."},
]


def client(server: Any) -> OpenAIChat:
    return OpenAIChat("judge-model", base_url=server.base_url, api_key="test-key", retry=None)


async def test_trajectory_judge_renders_tool_calls_and_reference() -> None:
    """The prompt carries the goal, the tool calls with arguments and ids, and the reference."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(text="Answer: YES\nReasoning: direct and grounded"))
        async with client(server) as model:
            judgment = await TrajectoryJudge(model)(
                Context(input="Weather in Paris?", output=TRAJECTORY, expected=TRAJECTORY[:2])
            )
        assert judgment.status is Status.PASS
        assert judgment.reasoning == "direct and grounded"
        prompt = server.requests[0]["messages"][-1]["content"]
        assert '  -> get_weather({"city": "Paris"}) [c1]' in prompt
        assert "tool [c1]: 18C, sunny" in prompt
        assert "<reference_trajectory>" in prompt and "<goal>\nWeather in Paris?" in prompt
        assert "Each tool call suits its step" in prompt  # the default rubric


async def test_trajectory_judge_custom_rubric_and_fail() -> None:
    """A custom rubric reaches the prompt; NO is FAIL; no reference means no reference section."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(text="Answer: NO\nReasoning: never confirmed"))
        async with client(server) as model:
            judge_ = TrajectoryJudge(model, rubric="Confirm before booking.", name="confirm")
            judgment = await judge_(Context(messages=TRAJECTORY, output="It is 18C."))
        assert (judgment.status, judge_.name) == (Status.FAIL, "confirm")
        prompt = server.requests[0]["messages"][-1]["content"]
        assert "<rubric>\nConfirm before booking.\n</rubric>" in prompt
        assert "<reference_trajectory>" not in prompt
        assert "<final_output>\nIt is 18C.\n</final_output>" in prompt


async def test_trajectory_judge_empty_or_malformed_makes_no_call() -> None:
    """An empty trajectory ABSTAINs and a malformed one is ERROR, both without a model call."""
    async with FakeModelServer() as server:
        async with client(server) as model:
            judge_ = TrajectoryJudge(model)
            empty = await judge_(Context(output="just text"))
            bad = await judge_(Context(output=[{"role": "assistant", "tool_calls": [{}]}]))
        assert empty.status is Status.ABSTAIN
        assert bad.status is Status.ERROR and "messages[0]" in bad.reasoning
        assert server.requests == []
    with pytest.raises(ValueError, match="rubric"):
        TrajectoryJudge(model, rubric=" ")


def test_messages_template_variable_shows_tool_calls() -> None:
    """{{messages}} renders tool calls and tool results, plain messages as before."""
    ctx = Context(messages=TRAJECTORY)
    assert PromptTemplate("{{messages}}").render(ctx) == (
        "user: Weather in Paris?\n"
        "assistant: \n"
        '  -> get_weather({"city": "Paris"}) [c1]\n'
        "tool [c1]: 18C, sunny\n"
        "assistant: It is 18C and sunny."
    )


CONVERSATION = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "Find a hotel in Rome."},
    {"role": "assistant", "content": "Hotel Roma, 120 EUR."},
    {"role": "user", "content": "Cheaper?"},
    {"role": "assistant", "content": "", "tool_calls": [call("search", "s1", max=80)]},
    {"role": "tool", "content": "Ostello, 40 EUR", "tool_call_id": "s1"},
    {"role": "assistant", "content": "Ostello, 40 EUR."},
    {"role": "user", "content": "Book it."},
    {"role": "assistant", "content": "Done."},
]


def test_turns_get_their_own_context() -> None:
    """Each turn's context: the user message, the last reply, history so far, turn number."""
    seen: list[Context] = []

    @judge
    def record(ctx: Context) -> bool:
        seen.append(ctx)
        return True

    expected = {"turns": ["a hotel", "a cheaper hotel"]}
    judgment = anyio.run(
        ConversationJudge(record, concurrency=1),
        Context(messages=CONVERSATION, expected=expected, metadata={"case_id": "c"}),
    )
    assert judgment.status is Status.PASS and judgment.score == 1.0
    assert [(c.input, c.output, c.metadata["turn"]) for c in seen] == [
        ("Find a hotel in Rome.", "Hotel Roma, 120 EUR.", 1),
        ("Cheaper?", "Ostello, 40 EUR.", 2),
        ("Book it.", "Done.", 3),
    ]
    assert [len(c.messages) for c in seen] == [3, 7, 9]
    assert [c.expected for c in seen] == ["a hotel", "a cheaper hotel", None]
    assert seen[0].metadata["case_id"] == "c"
    assert [t["turn"] for t in judgment.metadata["turns"]] == [1, 2, 3]


def test_failing_turn_is_attributed() -> None:
    """A failing turn lowers the score, is named in the reasoning and in metadata["turns"]."""

    def cheap(ctx: Context) -> Judgment:
        if "120" in ctx.output:
            return Judgment.failed("too expensive")
        return Judgment.passed("fine")

    judgment = anyio.run(ConversationJudge(cheap), Context(messages=CONVERSATION))
    assert judgment.status is Status.FAIL
    assert judgment.score == pytest.approx(2 / 3)
    assert "first failure: turn 1: too expensive" in judgment.reasoning
    assert judgment.metadata["turns"][0]["status"] == "fail"
    lenient = ConversationJudge(cheap, threshold=0.6)
    assert anyio.run(lenient, Context(messages=CONVERSATION)).status is Status.PASS


def test_whole_conversation_and_errors() -> None:
    """whole runs on the full context; its FAIL fails the judgment; a raising turn is ERROR."""

    def whole(ctx: Context) -> Judgment:
        return Judgment.failed("forgot the budget", score=0.25)

    judgment = anyio.run(
        ConversationJudge(lambda ctx: True, whole=whole),
        Context(messages=CONVERSATION),
    )
    assert judgment.status is Status.FAIL and judgment.score == 0.25
    assert judgment.metadata["whole"]["reasoning"] == "forgot the budget"

    def broken(ctx: Context) -> bool:
        if ctx.metadata["turn"] == 2:
            raise RuntimeError("boom")
        return True

    judgment = anyio.run(ConversationJudge(broken), Context(messages=CONVERSATION))
    assert judgment.status is Status.ERROR
    assert judgment.reasoning.startswith("turn 2: ") and "RuntimeError: boom" in judgment.reasoning


def test_conversation_edge_cases() -> None:
    """No user turn ABSTAINs; all-abstaining judges ABSTAIN; bad settings are ValueErrors."""
    only_system = Context(messages=[{"role": "system", "content": "hi"}])
    assert anyio.run(ConversationJudge(lambda c: True), only_system).status is Status.ABSTAIN
    abstain = ConversationJudge(lambda c: Judgment.abstained("unsure"))
    assert anyio.run(abstain, Context(messages=CONVERSATION)).status is Status.ABSTAIN
    with pytest.raises(ValueError, match="per_turn"):
        ConversationJudge()
    with pytest.raises(ValueError, match="threshold"):
        ConversationJudge(lambda c: True, threshold=1.5)


async def test_conversation_with_llm_whole_judge_through_the_evaluator() -> None:
    """A TrajectoryJudge with the goal-completion rubric judges the whole conversation."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(text="Answer: YES\nReasoning: booked"))
        async with client(server) as model:
            conversation = ConversationJudge(
                whole=TrajectoryJudge(model, rubric=GOAL_COMPLETION_RUBRIC, name="goal")
            )
            assert conversation.resource == "openai:judge-model"
            verdict = await Evaluator(conversation).verdict(Context(messages=CONVERSATION))
        assert verdict.judgment.status is Status.PASS
        assert (
            "accomplished what the user asked for" in server.requests[0]["messages"][-1]["content"]
        )

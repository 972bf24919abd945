"""Bridges from framework results to Context."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import pytest

from agentjudge import ExecutionStatus, ToolCall
from agentjudge.bridges import (
    capture,
    finish_status,
    from_agent_run,
    from_anthropic_message,
    from_langchain_message,
    from_openai_chat,
    from_openai_response,
)

OPENAI = {
    "id": "chatcmpl-1",
    "model": "gpt-4o-mini",
    "choices": [{"message": {"role": "assistant", "content": "Paris"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 1},
}


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("stop", ExecutionStatus.SUCCESS),
        ("length", ExecutionStatus.SUCCESS),
        ("content_filter", ExecutionStatus.REFUSED),
        ("end_turn", ExecutionStatus.SUCCESS),
        ("refusal", ExecutionStatus.REFUSED),
        ("TIMEOUT", ExecutionStatus.TIMEOUT),
        ("weird", ExecutionStatus.UNKNOWN),
        (None, ExecutionStatus.UNKNOWN),
        ("  ", ExecutionStatus.UNKNOWN),
    ],
)
def test_finish_status_mapping(reason: str | None, status: ExecutionStatus) -> None:
    """Finish reasons of OpenAI, Anthropic and generic agents map to execution statuses."""
    assert finish_status(reason) is status


def test_openai_chat_dict_becomes_context() -> None:
    """An OpenAI chat completion dict gives output, status and usage metadata."""
    ctx = from_openai_chat(OPENAI, input="Capital of France?", metadata={"case": 1})
    assert ctx.output == "Paris"
    assert ctx.status is ExecutionStatus.SUCCESS
    assert ctx.metadata["openai.model"] == "gpt-4o-mini"
    assert ctx.metadata["openai.usage.input_tokens"] == 12
    assert ctx.metadata["case"] == 1


def test_native_facts_win_over_extras() -> None:
    """A caller extra with the same key as a native fact is overridden by the native fact."""
    ctx = from_openai_chat(OPENAI, metadata={"openai.model": "claimed"})
    assert ctx.metadata["openai.model"] == "gpt-4o-mini"


def test_anthropic_message_object_becomes_context() -> None:
    """An Anthropic message object joins text blocks and counts tool uses."""
    msg = SimpleNamespace(
        id="msg_1",
        model="claude-x",
        stop_reason="end_turn",
        content=[
            SimpleNamespace(type="text", text="Hello "),
            SimpleNamespace(type="tool_use", input={}),
            SimpleNamespace(type="text", text="world"),
        ],
        usage=SimpleNamespace(input_tokens=3, output_tokens=2),
    )
    ctx = from_anthropic_message(msg)
    assert ctx.output == "Hello world"
    assert ctx.status is ExecutionStatus.SUCCESS
    assert ctx.metadata["anthropic.tool_uses"] == 1
    assert ctx.metadata["anthropic.usage.output_tokens"] == 2


def test_langchain_and_agent_results() -> None:
    """LangChain messages and agent run results map output, status and usage."""
    lc = SimpleNamespace(
        content="ok",
        response_metadata={"finish_reason": "content_filter", "model_name": "m"},
        usage_metadata={"input_tokens": 1, "output_tokens": 2},
        tool_calls=[],
    )
    ctx = from_langchain_message(lc)
    assert (ctx.output, ctx.status) == ("ok", ExecutionStatus.REFUSED)
    run = SimpleNamespace(
        output="done", usage=lambda: SimpleNamespace(input_tokens=5, output_tokens=6)
    )
    ctx = from_agent_run(run, input="goal")
    assert (ctx.output, ctx.status, ctx.metadata["agent.usage.input_tokens"]) == (
        "done",
        ExecutionStatus.SUCCESS,
        5,
    )


async def test_capture_success_failure_and_timeout() -> None:
    """capture() times the call and turns errors and timeouts into statuses."""

    async def ok() -> dict[str, object]:
        return OPENAI

    async def boom() -> None:
        raise RuntimeError("backend down")

    async def slow() -> None:
        await anyio.sleep_forever()

    ctx = await capture(ok, input="q", convert=from_openai_chat)
    assert ctx.output == "Paris" and ctx.duration is not None and ctx.started_at is not None
    failed = await capture(boom, input="q")
    assert failed.status is ExecutionStatus.FAILED
    assert failed.error == "RuntimeError: backend down"
    timed_out = await capture(slow, timeout=0.01)
    assert timed_out.status is ExecutionStatus.TIMEOUT


async def test_capture_propagates_cancellation() -> None:
    """Cancelling the caller of capture() is never turned into a Context."""

    async def slow() -> None:
        await anyio.sleep_forever()

    with anyio.move_on_after(0.01) as scope:
        await capture(slow)
    assert scope.cancelled_caught


def test_langchain_graph_state_trajectory_duck_typed() -> None:
    """A LangGraph-style state's messages (LangChain's attributes) become the trajectory.

    Duck-typed (no SDK needed); tests/bridges/test_bridges_frameworks.py runs a real LangGraph
    agent with ChatOpenAI over loopback.
    """
    human = SimpleNamespace(type="human", content="Weather in Paris?")
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"}
    ai = SimpleNamespace(type="ai", content="", tool_calls=[call], response_metadata={})
    tool = SimpleNamespace(type="tool", content="sunny", tool_call_id="c1")
    final = SimpleNamespace(
        type="ai",
        content="Sunny.",
        tool_calls=[],
        response_metadata={"finish_reason": "stop", "model_name": "m"},
    )
    ctx = from_langchain_message({"messages": [human, ai, tool, final]})
    assert [m.role for m in ctx.messages] == ["user", "assistant", "tool", "assistant"]
    assert ctx.messages[1].tool_calls == (ToolCall("get_weather", {"city": "Paris"}, id="c1"),)
    assert ctx.messages[2].tool_call_id == "c1"
    assert (ctx.output, ctx.status, ctx.metadata["langchain.model"]) == (
        "Sunny.",
        ExecutionStatus.SUCCESS,
        "m",
    )


@pytest.mark.parametrize(
    ("response", "status", "error"),
    [
        (
            {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
            ExecutionStatus.FAILED,
            "server_error: boom",
        ),
        (
            {
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
                    }
                ],
            },
            ExecutionStatus.REFUSED,
            None,
        ),
    ],
)
def test_openai_response_failed_and_refused(
    response: dict[str, object], status: ExecutionStatus, error: str | None
) -> None:
    """A failed Response carries the API's error; a refusal part makes it REFUSED.

    Dicts: FakeModelServer scripts neither; the SDK path is in test_bridges_sdks.py.
    """
    ctx = from_openai_response(response)
    assert (ctx.status, ctx.error, ctx.output) == (status, error, None)

"""Messages with tool calls: `ToolCall`, `Message.tool_calls` / `tool_call_id`, the chat format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from agentjudge import Context, Message, ToolCall

OPENAI_ASSISTANT: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "refusal": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": null}'},
        }
    ],
}


def test_tool_call_fields_positional_and_read_only() -> None:
    """ToolCall(name, arguments, id): arguments are a read-only copy; the model is frozen."""
    given = {"city": "Paris", "days": [1, 2]}
    call = ToolCall("get_weather", given, id="c1")
    given["city"] = "Rome"
    assert (call.name, call.id) == ("get_weather", "c1")
    assert call.arguments["city"] == "Paris"
    assert call.arguments["days"] == (1, 2)
    with pytest.raises(TypeError):
        call.arguments["city"] = "x"  # type: ignore[index]
    with pytest.raises(ValidationError):
        call.name = "other"  # type: ignore[misc]
    assert ToolCall(name="ping").arguments == {}


def test_tool_call_rejects_blank_names_and_non_object_arguments() -> None:
    """A blank name, arguments that are not a JSON object, or bad JSON text are refused."""
    with pytest.raises(ValidationError, match="name"):
        ToolCall(" ")
    with pytest.raises(ValidationError, match="JSON object"):
        ToolCall("t", [1, 2])
    with pytest.raises(ValidationError, match="not valid JSON"):
        ToolCall("t", "{oops")
    with pytest.raises(ValidationError, match="finite"):
        ToolCall("t", {"x": float("nan")})
    assert ToolCall("t", '{"a": 1}').arguments == {"a": 1}
    assert ToolCall("t", "").arguments == {}


def test_message_validates_from_openai_chat_format() -> None:
    """An OpenAI assistant message: content None is "", arguments JSON text decoded, null kept."""
    message = Message.model_validate(OPENAI_ASSISTANT)
    assert message.content == ""
    assert message.tool_calls == (
        ToolCall("get_weather", {"city": "Paris", "unit": None}, id="call_1"),
    )
    tool = Message.model_validate({"role": "tool", "tool_call_id": "call_1", "content": "18C"})
    assert tool.tool_call_id == "call_1"
    parts = Message.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "!"}]}
    )
    assert parts.content == "hi\n!"


def test_message_validates_langchain_tool_call_dicts() -> None:
    """LangChain's {"name", "args", "id", "type": "tool_call"} calls validate too."""
    message = Message.model_validate(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"name": "search", "args": {"q": "x"}, "id": "1", "type": "tool_call"}],
        }
    )
    assert message.tool_calls[0] == ToolCall("search", {"q": "x"}, id="1")


def test_malformed_openai_tool_calls_name_the_field() -> None:
    """A call without a name or with unparseable arguments fails, naming the field."""
    bad = {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}
    with pytest.raises(ValidationError, match=r"tool_calls\.0\.name"):
        Message.model_validate(bad)
    bad = {"role": "assistant", "tool_calls": [{"function": {"name": "t", "arguments": "{"}}]}
    with pytest.raises(ValidationError, match="not valid JSON"):
        Message.model_validate(bad)


def test_unknown_message_keys_are_still_rejected() -> None:
    """Only the known OpenAI extras are dropped: a typo is still an error."""
    with pytest.raises(ValidationError, match="contnet"):
        Message.model_validate({"role": "user", "contnet": "hi"})


def test_plain_message_wire_format_is_unchanged() -> None:
    """A message without tool fields dumps as {role, content} exactly, as before."""
    message = Message(role="user", content="hi")
    assert message.model_dump() == {"role": "user", "content": "hi"}
    assert json.loads(message.model_dump_json()) == {"role": "user", "content": "hi"}


def test_message_with_tool_calls_round_trips_through_json() -> None:
    """Tool calls and tool_call_id survive a JSON round trip, inside a Context too."""
    message = Message.model_validate(OPENAI_ASSISTANT)
    dumped = json.loads(message.model_dump_json())
    assert dumped["tool_calls"][0]["arguments"] == {"city": "Paris", "unit": None}
    assert Message.model_validate_json(message.model_dump_json()) == message
    ctx = Context(messages=(message, Message(role="tool", content="18C", tool_call_id="call_1")))
    assert Context.model_validate_json(ctx.model_dump_json()).messages == ctx.messages


def test_context_accepts_openai_message_dicts() -> None:
    """Context(messages=[...]) takes OpenAI chat-format dicts as they come from the SDK."""
    ctx = Context(messages=[{"role": "user", "content": "weather?"}, OPENAI_ASSISTANT])
    assert ctx.messages[1].tool_calls[0].name == "get_weather"

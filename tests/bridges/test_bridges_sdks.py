"""Every bridge on the objects the real SDKs return, called over loopback against FakeModelServer.

No hand-made dicts here: each SDK client talks HTTP to the fake server and the bridge gets what
the SDK built. Each test checks the full trajectory (tool calls and tool results), the usage,
the model and the status.
"""

from __future__ import annotations

from typing import Any

import pytest
from sdk_support import import_sdk, sdk, sdk_http

from agentjudge import Context, ExecutionStatus, Message, ToolCall
from agentjudge.bridges import (
    from_agent_run,
    from_anthropic_message,
    from_langchain_message,
    from_openai_chat,
    from_openai_response,
)
from agentjudge.judges import TrajectoryMatch
from agentjudge.testing import FakeModelServer, FakeResponse

openai = sdk("openai")
anthropic = sdk("anthropic")
pytestmark = pytest.mark.xdist_group("sdk")

WEATHER = ToolCall("get_weather", {"city": "Paris"}, id="call_1")
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}}
CHAT_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}
]
EXPECTED = (
    Message(role="user", content="Weather in Paris?"),
    Message(role="assistant", tool_calls=(WEATHER,)),
    Message(role="tool", content="sunny", tool_call_id="call_1"),
    Message(role="assistant", content="It is sunny."),
)


def _openai(server: FakeModelServer) -> Any:
    """The SDK's AsyncOpenAI on the fake server (its default HTTP client, see `sdk_http`)."""
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, http_client=sdk_http(openai)
    )


def _script(server: FakeModelServer, *, text: str | None = None) -> None:
    server.enqueue(FakeResponse(text=text, tool_calls=[WEATHER]), FakeResponse(text="It is sunny."))


async def _matches_reference(ctx: Context) -> None:
    """The bridge's trajectory is judged by TrajectoryMatch like a dataset's would be."""
    judge = TrajectoryMatch("strict")
    judgment = await judge(ctx.model_copy(update={"expected": EXPECTED}))
    assert judgment.status == "pass", judgment.reasoning


async def test_openai_chat_completion_with_tool_calls() -> None:
    """A ChatCompletion after a tool round trip: the conversation sent plus the reply."""
    async with FakeModelServer() as server:
        _script(server)
        client = _openai(server)
        conversation: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        first = await client.chat.completions.create(
            model="gpt-4o-mini", messages=conversation, tools=CHAT_TOOLS
        )
        call = first.choices[0].message.tool_calls[0]
        conversation.append(first.choices[0].message)  # the SDK's own message object
        conversation.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
        final = await client.chat.completions.create(
            model="gpt-4o-mini", messages=conversation, tools=CHAT_TOOLS
        )
        await client.close()
    tool_ctx = from_openai_chat(first, messages=conversation[:1])
    assert tool_ctx.messages == EXPECTED[:2]
    assert tool_ctx.metadata["openai.finish_reason"] == "tool_calls"
    assert tool_ctx.metadata["openai.tool_calls"] == 1
    ctx = from_openai_chat(final, messages=conversation, input="Weather in Paris?")
    assert ctx.messages == EXPECTED
    assert (ctx.output, ctx.status) == ("It is sunny.", ExecutionStatus.SUCCESS)
    assert ctx.metadata["openai.model"] == "gpt-4o-mini"
    assert ctx.metadata["openai.usage.output_tokens"] == final.usage.completion_tokens > 0
    assert "openai.trajectory_error" not in ctx.metadata
    await _matches_reference(ctx)


async def test_openai_chat_invalid_arguments_are_named_not_raised() -> None:
    """A model's unparseable tool arguments leave no trajectory and name the message."""
    async with FakeModelServer() as server:
        client = _openai(server)
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        await client.close()
    completion.choices[0].message.tool_calls = [
        openai.types.chat.ChatCompletionMessageFunctionToolCall(
            id="c", type="function", function={"name": "f", "arguments": "{not json"}
        )
    ]
    ctx = from_openai_chat(completion)
    assert ctx.messages == ()
    assert "messages[0]" in ctx.metadata["openai.trajectory_error"]


async def test_openai_responses_api_with_function_calls() -> None:
    """A Responses API Response: instructions, input items, function calls and outputs."""
    tools: list[Any] = [{"type": "function", "name": "get_weather", "parameters": PARAMETERS}]
    async with FakeModelServer() as server:
        _script(server)
        client = _openai(server)
        first = await client.responses.create(
            model="gpt-4.1", instructions="Be brief.", input="Weather in Paris?", tools=tools
        )
        items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}, *first.output]
        items.append({"type": "function_call_output", "call_id": "call_1", "output": "sunny"})
        final = await client.responses.create(
            model="gpt-4.1", instructions="Be brief.", input=items, tools=tools
        )
        await client.close()
    assert server.received[0].path == "/v1/responses"
    ctx = from_openai_response(final, messages=items)
    assert ctx.messages == (Message(role="system", content="Be brief."), *EXPECTED)
    assert ctx.output == final.output_text == "It is sunny."
    assert ctx.status is ExecutionStatus.SUCCESS
    assert ctx.metadata["openai.usage.input_tokens"] == final.usage.input_tokens > 0
    assert ctx.metadata["openai.model"] == "gpt-4.1"
    first_ctx = from_openai_response(first, messages="Weather in Paris?")
    assert first_ctx.messages[1:] == EXPECTED[:2] and first_ctx.output is None
    assert first_ctx.metadata["openai.tool_calls"] == 1


@pytest.mark.parametrize(
    ("reason", "status"),
    [("max_output_tokens", ExecutionStatus.SUCCESS), ("content_filter", ExecutionStatus.REFUSED)],
)
async def test_openai_responses_incomplete(reason: str, status: ExecutionStatus) -> None:
    """An incomplete Response's status follows its incomplete reason."""
    async with FakeModelServer(FakeResponse(text="part", finish_reason=reason)) as server:
        client = _openai(server)
        response = await client.responses.create(model="m", input="hi")
        await client.close()
    ctx = from_openai_response(response)
    assert response.status == "incomplete"
    assert ctx.status is status
    assert ctx.metadata["openai.incomplete_reason"] == reason


async def test_anthropic_message_with_tool_use() -> None:
    """An Anthropic Message: tool_use blocks are calls, tool_result blocks are tool messages."""
    weather = WEATHER.model_copy(update={"id": "toolu_1"})
    async with FakeModelServer() as server:
        server.enqueue(
            FakeResponse(text="Let me check.", tool_calls=[weather]),
            FakeResponse(text="It is sunny."),
        )
        client = anthropic.AsyncAnthropic(
            base_url=server.url, api_key="test", max_retries=0, http_client=sdk_http(anthropic)
        )
        conversation: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        first = await client.messages.create(
            model="claude-x", max_tokens=100, messages=conversation
        )
        conversation.append({"role": "assistant", "content": first.content})
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
        conversation.append({"role": "user", "content": [result]})
        final = await client.messages.create(
            model="claude-x", max_tokens=100, messages=conversation
        )
        await client.close()
    assert first.stop_reason == "tool_use"
    ctx = from_anthropic_message(final, messages=conversation)
    assert ctx.messages == (
        EXPECTED[0],
        Message(role="assistant", content="Let me check.", tool_calls=(weather,)),
        Message(role="tool", content="sunny", tool_call_id="toolu_1"),
        EXPECTED[3],
    )
    assert (ctx.output, ctx.status) == ("It is sunny.", ExecutionStatus.SUCCESS)
    assert ctx.metadata["anthropic.usage.input_tokens"] == final.usage.input_tokens > 0
    assert ctx.metadata["anthropic.model"] == "claude-x"


async def test_langchain_chat_openai_tool_calls_and_graph_state() -> None:
    """ChatOpenAI's AIMessage with tool_calls, alone and inside a LangGraph-style state."""
    lc_openai = import_sdk("langchain_openai")
    lc_messages = import_sdk("langchain_core.messages")
    async with FakeModelServer() as server:
        _script(server)
        model = lc_openai.ChatOpenAI(
            model="gpt-4o-mini",
            base_url=server.base_url,
            api_key="test",
            max_retries=0,
            http_client=sdk_http(openai, sync=True),
            http_async_client=sdk_http(openai),
        ).bind_tools(CHAT_TOOLS)
        history: list[Any] = [lc_messages.HumanMessage("Weather in Paris?")]
        first = await model.ainvoke(history)
        history += [first, lc_messages.ToolMessage("sunny", tool_call_id="call_1")]
        final = await model.ainvoke(history)
        await model.bound.root_async_client.close()
    assert first.tool_calls[0]["name"] == "get_weather"
    ctx = from_langchain_message(final, messages=history)
    assert ctx.messages == EXPECTED
    assert (ctx.output, ctx.status) == ("It is sunny.", ExecutionStatus.SUCCESS)
    assert ctx.metadata["langchain.model"].startswith("gpt-4o-mini")
    assert ctx.metadata["langchain.usage.output_tokens"] > 0
    state = from_langchain_message({"messages": [*history, final]})
    assert state.messages == EXPECTED and state.output == "It is sunny."
    await _matches_reference(state)


async def test_pydantic_ai_agent_run_result() -> None:
    """A pydantic-ai Agent with an OpenAI model: the run's requests, tool calls and returns."""
    pai = import_sdk("pydantic_ai")
    pai_openai = import_sdk("pydantic_ai.models.openai")
    provider = import_sdk("pydantic_ai.providers.openai")

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    async with FakeModelServer() as server:
        _script(server)
        client = _openai(server)
        model = pai_openai.OpenAIChatModel(
            "gpt-4o-mini", provider=provider.OpenAIProvider(openai_client=client)
        )
        agent = pai.Agent(model, tools=[get_weather])
        result = await agent.run("Weather in Paris?")
        await client.close()
    ctx = from_agent_run(result, input="Weather in Paris?")
    assert ctx.messages == EXPECTED
    assert (ctx.output, ctx.status) == ("It is sunny.", ExecutionStatus.SUCCESS)
    assert ctx.metadata["agent.model"].startswith("gpt-4o-mini")
    assert ctx.metadata["agent.tool_calls"] == 1
    assert ctx.metadata["agent.usage.input_tokens"] == result.usage.input_tokens > 0
    await _matches_reference(ctx)


async def test_pydantic_ai_tool_retry_is_a_tool_message() -> None:
    """A tool asking the model to retry shows as the call's tool message, then the new call."""
    pai = import_sdk("pydantic_ai")
    pai_openai = import_sdk("pydantic_ai.models.openai")
    provider = import_sdk("pydantic_ai.providers.openai")
    attempts: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        attempts.append(city)
        if len(attempts) == 1:
            raise pai.ModelRetry("name the country too")
        return "sunny"

    async with FakeModelServer() as server:
        server.enqueue(
            FakeResponse(tool_calls=[WEATHER]),
            FakeResponse(tool_calls=[ToolCall("get_weather", {"city": "Paris, France"})]),
            FakeResponse(text="It is sunny."),
        )
        client = _openai(server)
        model = pai_openai.OpenAIChatModel(
            "gpt-4o-mini", provider=provider.OpenAIProvider(openai_client=client)
        )
        result = await pai.Agent(model, tools=[get_weather]).run("Weather in Paris?")
        await client.close()
    ctx = from_agent_run(result)
    roles = [m.role for m in ctx.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert "name the country too" in ctx.messages[2].content
    assert ctx.messages[2].tool_call_id == "call_1"
    assert ctx.messages[3].tool_calls[0].arguments == {"city": "Paris, France"}
    assert ctx.metadata["agent.tool_calls"] == 2


async def test_openai_agents_sdk_run_result() -> None:
    """An OpenAI Agents SDK run on the Responses API: its items are the trajectory."""
    agents = import_sdk("agents")

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    async with FakeModelServer() as server:
        _script(server)
        client = _openai(server)
        model = agents.OpenAIResponsesModel(model="gpt-4.1", openai_client=client)
        agent = agents.Agent(name="weather", model=model, tools=[get_weather])
        config = agents.RunConfig(tracing_disabled=True)
        result = await agents.Runner.run(agent, "Weather in Paris?", run_config=config)
        await client.close()
    assert {r.path for r in server.received} == {"/v1/responses"}
    ctx = from_agent_run(result)
    assert ctx.messages == EXPECTED
    assert (ctx.output, ctx.status) == ("It is sunny.", ExecutionStatus.SUCCESS)
    assert ctx.metadata["agent.tool_calls"] == 1
    assert ctx.metadata["agent.model"] == "gpt-4.1"  # the last agent's model
    usage = result.context_wrapper.usage
    assert ctx.metadata["agent.usage.input_tokens"] == usage.input_tokens > 0
    await _matches_reference(ctx)

"""Bridges on real LangGraph and LlamaIndex objects (the graph's model over loopback).

A LangGraph agent (a ``StateGraph`` of a ChatOpenAI model pointed at FakeModelServer and a
``ToolNode``) runs a tool round trip; its returned state goes through `from_langchain_message`.
A LlamaIndex query engine over a real ``VectorStoreIndex`` answers a question; its ``Response``
goes through `from_agent_run`. LlamaIndex's OpenAI LLM package cannot be installed next to
openai >= 3 (it pins openai < 3), so the query engine's LLM is LlamaIndex's own ``MockLLM``
and its embeddings ``MockEmbedding``: no network, real objects.
"""

from __future__ import annotations

from typing import Any

import pytest
from sdk_support import import_sdk, sdk_http

from agentjudge import Context, ExecutionStatus, Message, Status, ToolCall
from agentjudge.bridges import from_agent_run, from_langchain_message
from agentjudge.judges import StepEfficiency, TrajectoryMatch
from agentjudge.judges._rag import rag_context
from agentjudge.testing import FakeModelServer, FakeResponse

pytestmark = pytest.mark.xdist_group("sdk")  # the frameworks import in one worker (sdk_support)

WEATHER = ToolCall("get_weather", {"city": "Paris"}, id="call_1")
EXPECTED = (
    Message(role="user", content="Weather in Paris?"),
    Message(role="assistant", tool_calls=(WEATHER,)),
    Message(role="tool", content="sunny", tool_call_id="call_1"),
    Message(role="assistant", content="It is sunny."),
)


async def run_langgraph_agent(server: FakeModelServer) -> dict[str, Any]:
    """A two-node LangGraph agent (model, tools) run to its end; returns the final state."""
    lc_openai = import_sdk("langchain_openai")
    tools = import_sdk("langchain_core.tools")
    graph = import_sdk("langgraph.graph")
    prebuilt = import_sdk("langgraph.prebuilt")

    @tools.tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    openai = import_sdk("openai")
    model = lc_openai.ChatOpenAI(
        model="gpt-4o-mini",
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=sdk_http(openai, sync=True),  # their TLS context is shared (sdk_support)
        http_async_client=sdk_http(openai),
    )
    bound = model.bind_tools([get_weather])

    async def call_model(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = graph.StateGraph(graph.MessagesState)
    builder.add_node("agent", call_model)
    builder.add_node("tools", prebuilt.ToolNode([get_weather]))
    builder.add_edge(graph.START, "agent")
    builder.add_conditional_edges("agent", prebuilt.tools_condition)
    builder.add_edge("tools", "agent")
    try:
        state: dict[str, Any] = await builder.compile().ainvoke(
            {"messages": [("user", "Weather in Paris?")]}
        )
    finally:
        await model.root_async_client.close()
    return state


async def test_langgraph_agent_state_is_the_whole_trajectory() -> None:
    """The graph's state: every message, usage summed over both model calls, model, status."""
    async with FakeModelServer() as server:
        server.enqueue(FakeResponse(tool_calls=[WEATHER]), FakeResponse(text="It is sunny."))
        state = await run_langgraph_agent(server)
    ais = [m for m in state["messages"] if m.type == "ai"]
    assert [type(m).__name__ for m in state["messages"]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    ctx = from_langchain_message(state, expected=EXPECTED)
    assert ctx.messages == EXPECTED
    assert (ctx.output, ctx.status) == ("It is sunny.", ExecutionStatus.SUCCESS)
    assert ctx.metadata["langchain.model"].startswith("gpt-4o-mini")
    assert ctx.metadata["langchain.finish_reason"] == "stop"
    assert ctx.metadata["langchain.tool_calls"] == 1
    for key in ("input_tokens", "output_tokens"):
        total = sum(m.usage_metadata[key] for m in ais)
        assert ctx.metadata[f"langchain.usage.{key}"] == total
    last_call = ais[-1].usage_metadata["input_tokens"]
    assert ctx.metadata["langchain.usage.input_tokens"] > last_call  # not the last call alone
    assert (await TrajectoryMatch("strict")(ctx)).status is Status.PASS
    budget = await StepEfficiency(max_steps=1, max_tokens=10_000)(ctx)
    assert budget.status is Status.PASS, budget.reasoning


def llamaindex_response(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A real LlamaIndex ``Response``: a query engine over two documents, top 2 retrieved.

    Its splitters and prompt helper count tokens with a whitespace tokenizer: LlamaIndex's
    default loads tiktoken's cl100k encoding (~0.26 s of CPU), and two one-sentence documents
    never come near a chunk or context limit, so the count changes nothing here.
    """
    core = import_sdk("llama_index.core")
    embeddings = import_sdk("llama_index.core.embeddings")
    llms = import_sdk("llama_index.core.llms")
    parsers = import_sdk("llama_index.core.node_parser")
    monkeypatch.setattr(core, "global_tokenizer", str.split)  # read by get_tokenizer()
    documents = [
        core.Document(text="Paris is the capital of France.", id_="france"),
        core.Document(text="Berlin is the capital of Germany.", id_="germany"),
    ]
    index = core.VectorStoreIndex.from_documents(
        documents,
        embed_model=embeddings.MockEmbedding(embed_dim=8),
        # The default splitter, built here: Settings would keep it (and the tokenizer) for good.
        transformations=[parsers.SentenceSplitter()],
    )
    engine = index.as_query_engine(llm=llms.MockLLM(max_tokens=4), similarity_top_k=2)
    return engine.query("What is the capital of France?")


def test_llamaindex_response_source_nodes_become_the_rag_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """source_nodes' texts land in rag.context (what the RAG judges read), with ids and scores."""
    response = llamaindex_response(monkeypatch)
    assert type(response).__name__ == "Response" and len(response.source_nodes) == 2
    ctx = from_agent_run(response, input="What is the capital of France?")
    assert ctx.output == response.response and ctx.status is ExecutionStatus.SUCCESS
    texts = [node.get_content() for node in response.source_nodes]
    assert sorted(texts) == ["Berlin is the capital of Germany.", "Paris is the capital of France."]
    assert list(ctx.metadata["rag.context"]) == texts
    assert rag_context(ctx) == "\n".join(texts)
    sources = [dict(s) for s in ctx.metadata["rag.sources"]]
    assert [s["id"] for s in sources] == [n.node.node_id for n in response.source_nodes]
    assert all(isinstance(s["score"], float) for s in sources)
    assert ctx.messages == (Message(role="assistant", content=response.response),)


def test_llamaindex_response_as_a_dict_and_without_an_answer() -> None:
    """The JSON form works the same; a response with no answer has an UNKNOWN status."""
    ctx = from_agent_run(
        {"response": None, "source_nodes": [{"node": {"id_": "n1", "text": "a chunk"}}]},
        messages=[{"role": "user", "content": "q"}],
    )
    assert ctx.status is ExecutionStatus.UNKNOWN and ctx.output is None
    assert list(ctx.metadata["rag.context"]) == ["a chunk"]
    assert [dict(s) for s in ctx.metadata["rag.sources"]] == [{"id": "n1"}]
    assert ctx.messages == (Message(role="user", content="q"),)
    assert isinstance(ctx, Context)

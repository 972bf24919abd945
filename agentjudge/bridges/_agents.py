"""Bridges from agent frameworks (LangChain / LangGraph, pydantic-ai, OpenAI Agents) to `Context`.

Duck-typed like `_chat`: nothing here imports a framework.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentjudge.bridges._chat import _context
from agentjudge.bridges._trajectory import (
    Dicts,
    get,
    langchain_dicts,
    pydantic_ai_dicts,
    responses_dicts,
)
from agentjudge.core import Context

__all__ = ["from_agent_run", "from_langchain_message"]


def _langchain_run(message: Any) -> tuple[list[Any], Any]:
    """(the messages, the final AI message) of a message, a message list or a graph state."""
    if isinstance(message, Mapping) and "messages" in message:
        message = message["messages"]
    if isinstance(message, Sequence) and not isinstance(message, str):
        items = list(message)
        ais = [m for m in items if get(m, "type") == "ai"]
        return items, (ais[-1] if ais else items[-1] if items else None)
    return [message], message


def _token_sum(messages: Sequence[Any], key: str) -> int | None:
    """The tokens of every model call among ``messages`` (``usage_metadata``); None: unknown."""
    counts = [get(get(m, "usage_metadata"), key) for m in messages]
    known = [c for c in counts if isinstance(c, int) and not isinstance(c, bool)]
    return sum(known) if known else None


def from_langchain_message(
    message: Any,
    *,
    messages: Sequence[Any] = (),
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from a LangChain ``AIMessage``, a message list, or a LangGraph agent's state.

    ``message`` may be the ``AIMessage`` a chat model returned (``messages`` is then the
    conversation sent), a list of messages, or a state mapping with ``"messages"`` (what a
    LangGraph agent returns); the output, finish reason and model come from the last AI
    message, the trajectory is every message (``tool_calls`` of AI messages, ``ToolMessage``
    results). Metadata: ``langchain.finish_reason``, ``langchain.model``,
    ``langchain.usage.input_tokens`` / ``output_tokens`` and ``langchain.tool_calls``, summed
    over the AI messages of ``message`` (every model call of a graph run; not those of the
    ``messages`` sent).
    """
    items, final = _langchain_run(message)
    response_metadata = get(final, "response_metadata") or {}
    reason = get(response_metadata, "finish_reason") or get(response_metadata, "stop_reason")
    ais = [m for m in items if get(m, "type") == "ai"] or [final]
    native: dict[str, Any] = {
        "langchain.finish_reason": reason,
        "langchain.model": get(response_metadata, "model_name") or get(response_metadata, "model"),
        "langchain.usage.input_tokens": _token_sum(ais, "input_tokens"),
        "langchain.usage.output_tokens": _token_sum(ais, "output_tokens"),
        "langchain.tool_calls": sum(len(get(m, "tool_calls") or ()) for m in ais) or None,
    }
    return _context(
        get(final, "content"),
        reason,
        native,
        langchain_dicts([*messages, *items]),
        prefix="langchain",
        input=input,
        expected=expected,
        metadata=metadata,
        **fields,
    )


def _run_trajectory(result: Any) -> tuple[Dicts, Any]:
    """(the run's conversation, its last model response or None)."""
    all_messages = getattr(result, "all_messages", None)
    if callable(all_messages):  # pydantic-ai AgentRunResult
        history = list(all_messages())
        responses = [m for m in history if get(m, "kind") == "response"]
        return pydantic_ai_dicts(history), (responses[-1] if responses else None)
    to_input_list = getattr(result, "to_input_list", None)
    if callable(to_input_list):  # OpenAI Agents SDK RunResult: Responses API items
        return responses_dicts(to_input_list()), None
    return [], None


def _run_model(result: Any, last: Any) -> str | None:
    """The model of the last response (pydantic-ai), else of the run's last agent.

    An Agents SDK agent's ``model`` is a name or a model object with ``model``.
    """
    if last is not None:
        name = get(last, "model_name")
    else:
        model = get(get(result, "last_agent"), "model")
        name = model if isinstance(model, str) else get(model, "model")
    return name if isinstance(name, str) else None


def _run_usage(result: Any) -> tuple[Any, Any]:
    """(input tokens, output tokens) of a run (pydantic-ai ``usage()``, Agents SDK context)."""
    usage = getattr(result, "usage", None)
    if callable(usage) and not hasattr(usage, "input_tokens"):  # pydantic-ai < 2: a method
        usage = usage()
    if usage is None:
        usage = get(get(result, "context_wrapper"), "usage")
    if usage is None:
        return None, None
    return (
        get(usage, "input_tokens", get(usage, "request_tokens")),
        get(usage, "output_tokens", get(usage, "response_tokens")),
    )


def from_agent_run(
    result: Any,
    *,
    messages: Sequence[Any] = (),
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from an agent run result; a finished run is SUCCESS.

    Understands pydantic-ai ``AgentRunResult`` (``output``, ``all_messages()``, ``usage()``:
    the trajectory is every request and response, tool calls and tool returns included),
    the OpenAI Agents SDK ``RunResult`` (``final_output``, ``to_input_list()``) and a
    LlamaIndex query ``Response`` (``response``, ``source_nodes``: the retrieved chunks' texts
    become ``metadata["rag.context"]``, which the RAG judges read, and their ids and scores
    ``metadata["rag.sources"]``). ``messages`` goes before the run's own messages. The status
    follows the last model response's ``finish_reason`` when it has one. Metadata:
    ``agent.model`` (the last response's, or the run's last agent's), ``agent.finish_reason``,
    ``agent.usage.input_tokens`` / ``output_tokens``, ``agent.tool_calls``.
    """
    sources = get(result, "source_nodes")
    if sources is not None:  # LlamaIndex Response: the answer and its retrieved context
        return _retrieval_run(
            result, sources, messages, input=input, expected=expected, metadata=metadata, **fields
        )
    output = get(result, "output", get(result, "final_output"))
    conversation, last = _run_trajectory(result)
    reason = get(last, "finish_reason") if last is not None else None
    input_tokens, output_tokens = _run_usage(result)
    calls = sum(len(m.get("tool_calls", ())) for m in conversation)
    native: dict[str, Any] = {
        "agent.model": _run_model(result, last),
        "agent.finish_reason": reason,
        "agent.usage.input_tokens": input_tokens,
        "agent.usage.output_tokens": output_tokens,
        "agent.tool_calls": calls or None,
    }
    return _context(
        output,
        reason or "success",
        native,
        _plain(messages) + conversation,
        prefix="agent",
        input=input,
        expected=expected,
        metadata=metadata,
        **fields,
    )


def _plain(messages: Sequence[Any]) -> Dicts:
    """Caller-given messages (`Message` objects or chat-format dicts) as dicts."""
    return [m.model_dump() if hasattr(m, "model_dump") else dict(m) for m in messages]


def _node_text(node: Any) -> str:
    """A LlamaIndex ``NodeWithScore``'s text (``get_content()``, else ``text``)."""
    content = getattr(node, "get_content", None)
    value = content() if callable(content) else get(get(node, "node", node), "text")
    return "" if value is None else str(value)


def _node_source(node: Any) -> dict[str, Any]:
    inner = get(node, "node", node)
    found = {"id": get(inner, "node_id", get(inner, "id_")), "score": get(node, "score")}
    return {k: v for k, v in found.items() if isinstance(v, str | int | float)}


def _retrieval_run(
    result: Any,
    sources: Sequence[Any],
    messages: Sequence[Any],
    *,
    input: Any,
    expected: Any,
    metadata: Mapping[str, Any] | None,
    **fields: Any,
) -> Context:
    """A retrieval-augmented answer (LlamaIndex ``Response``) with its retrieved context."""
    answer = get(result, "response")
    native: dict[str, Any] = {
        "rag.context": [_node_text(node) for node in sources],
        "rag.sources": [_node_source(node) for node in sources],
    }
    conversation = _plain(messages)
    if answer is not None:
        conversation.append({"role": "assistant", "content": str(answer)})
    return _context(
        answer,
        "success" if answer is not None else None,
        native,
        conversation,
        prefix="agent",
        input=input,
        expected=expected,
        metadata=metadata,
        **fields,
    )

"""Bridges from model / agent framework results to `Context` (duck-typed, no imports).

Each bridge accepts the framework's object *or* its JSON dict, so nothing here imports an SDK.
Native facts win over caller extras on key collisions (they describe what actually happened).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio

from agentjudge.core import Context, ExecutionStatus, Message

__all__ = [
    "capture",
    "finish_status",
    "from_agent_run",
    "from_anthropic_message",
    "from_langchain_message",
    "from_openai_chat",
]

_FINISH: dict[str, ExecutionStatus] = {
    # OpenAI / OpenAI-compatible chat completions
    "stop": ExecutionStatus.SUCCESS,
    "tool_calls": ExecutionStatus.SUCCESS,
    "function_call": ExecutionStatus.SUCCESS,
    "length": ExecutionStatus.SUCCESS,  # truncated, but the model answered; judges may abstain
    "content_filter": ExecutionStatus.REFUSED,
    # Anthropic messages (upstream mapped these to UNKNOWN; we map them explicitly)
    "end_turn": ExecutionStatus.SUCCESS,
    "stop_sequence": ExecutionStatus.SUCCESS,
    "tool_use": ExecutionStatus.SUCCESS,
    "max_tokens": ExecutionStatus.SUCCESS,
    "pause_turn": ExecutionStatus.SUCCESS,
    "refusal": ExecutionStatus.REFUSED,
    # generic agent vocabularies
    "success": ExecutionStatus.SUCCESS,
    "complete": ExecutionStatus.SUCCESS,
    "error": ExecutionStatus.FAILED,
    "failed": ExecutionStatus.FAILED,
    "timeout": ExecutionStatus.TIMEOUT,
    "cancelled": ExecutionStatus.CANCELLED,
    "canceled": ExecutionStatus.CANCELLED,
    "refused": ExecutionStatus.REFUSED,
}


def finish_status(reason: str | None) -> ExecutionStatus:
    """Map a finish / stop reason (OpenAI, Anthropic, generic) to an `ExecutionStatus`."""
    if reason is None or not str(reason).strip():
        return ExecutionStatus.UNKNOWN
    return _FINISH.get(str(reason).strip().lower(), ExecutionStatus.UNKNOWN)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _context(
    output: Any,
    reason: str | None,
    native: dict[str, Any],
    *,
    input: Any,
    expected: Any,
    metadata: Mapping[str, Any] | None,
    messages: tuple[Message, ...] = (),
    **fields: Any,
) -> Context:
    merged = dict(metadata or {})
    merged.update({k: v for k, v in native.items() if v is not None})
    return Context(
        input=input,
        output=output,
        expected=expected,
        messages=messages,
        status=finish_status(reason),
        metadata=merged,
        **fields,
    )


def from_openai_chat(
    response: Any,
    *,
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from an OpenAI-compatible chat completion (object or JSON dict).

    Metadata keys: ``openai.finish_reason``, ``openai.model``, ``openai.id``,
    ``openai.usage.input_tokens`` / ``output_tokens``, ``openai.tool_calls`` (when present).
    """
    choices = _get(response, "choices") or []
    choice = choices[0] if choices else None
    message = _get(choice, "message") if choice is not None else None
    text = _get(message, "content") if message is not None else None
    reason = _get(choice, "finish_reason") if choice is not None else None
    usage = _get(response, "usage")
    tool_calls = _get(message, "tool_calls") if message is not None else None
    native: dict[str, Any] = {
        "openai.finish_reason": reason,
        "openai.model": _get(response, "model"),
        "openai.id": _get(response, "id"),
        "openai.usage.input_tokens": _get(usage, "prompt_tokens") if usage else None,
        "openai.usage.output_tokens": _get(usage, "completion_tokens") if usage else None,
        "openai.tool_calls": len(tool_calls) if tool_calls else None,
    }
    return _context(
        text, reason, native, input=input, expected=expected, metadata=metadata, **fields
    )


def from_anthropic_message(
    message: Any,
    *,
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from an Anthropic Messages API response (object or JSON dict).

    The output is the text blocks joined; tool_use blocks are counted in
    ``anthropic.tool_uses``. Metadata: ``anthropic.stop_reason``, ``anthropic.model``,
    ``anthropic.id``, ``anthropic.usage.input_tokens`` / ``output_tokens``.
    """
    blocks = _get(message, "content") or []
    texts = [str(_get(b, "text")) for b in blocks if _get(b, "type") == "text"]
    tool_uses = sum(1 for b in blocks if _get(b, "type") == "tool_use")
    reason = _get(message, "stop_reason")
    usage = _get(message, "usage")
    native: dict[str, Any] = {
        "anthropic.stop_reason": reason,
        "anthropic.model": _get(message, "model"),
        "anthropic.id": _get(message, "id"),
        "anthropic.usage.input_tokens": _get(usage, "input_tokens") if usage else None,
        "anthropic.usage.output_tokens": _get(usage, "output_tokens") if usage else None,
        "anthropic.tool_uses": tool_uses or None,
    }
    output = "".join(texts) if texts else None
    return _context(
        output, reason, native, input=input, expected=expected, metadata=metadata, **fields
    )


def from_langchain_message(
    message: Any,
    *,
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from a LangChain ``AIMessage`` (``content``, ``response_metadata``, ...)."""
    response_metadata = _get(message, "response_metadata") or {}
    reason = _get(response_metadata, "finish_reason") or _get(response_metadata, "stop_reason")
    usage = _get(message, "usage_metadata") or {}
    tool_calls = _get(message, "tool_calls") or []
    native: dict[str, Any] = {
        "langchain.finish_reason": reason,
        "langchain.model": _get(response_metadata, "model_name")
        or _get(response_metadata, "model"),
        "langchain.usage.input_tokens": _get(usage, "input_tokens"),
        "langchain.usage.output_tokens": _get(usage, "output_tokens"),
        "langchain.tool_calls": len(tool_calls) or None,
    }
    return _context(
        _get(message, "content"),
        reason,
        native,
        input=input,
        expected=expected,
        metadata=metadata,
        **fields,
    )


def from_agent_run(
    result: Any,
    *,
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from an agent run result; a finished run is SUCCESS.

    Understands pydantic-ai ``AgentRunResult`` (``output``, ``usage()``) and the OpenAI Agents
    SDK ``RunResult`` (``final_output``).
    """
    output = _get(result, "output", _get(result, "final_output"))
    usage_fn = getattr(result, "usage", None)
    usage = usage_fn() if callable(usage_fn) else usage_fn
    native: dict[str, Any] = {
        "agent.usage.input_tokens": _get(usage, "input_tokens") if usage else None,
        "agent.usage.output_tokens": _get(usage, "output_tokens") if usage else None,
    }
    return _context(
        output, "success", native, input=input, expected=expected, metadata=metadata, **fields
    )


async def capture(
    call: Callable[[], Awaitable[Any]],
    *,
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 - a deadline for the system under test
    convert: Callable[..., Context] | None = None,
) -> Context:
    """Run the system under test and describe what happened as a `Context`.

    Times the call (``started_at``, ``duration``). A call that raises gives status FAILED with
    ``error`` = ``"Type: message"``; one past ``timeout`` gives TIMEOUT. Cancellation of the
    caller propagates. ``convert`` (e.g. `from_openai_chat`) turns the raw result into a
    Context; without it the result is the output and the status SUCCESS.
    """
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    timing: dict[str, Any] = {"started_at": started}
    try:
        with anyio.fail_after(timeout):
            value = await call()
    except TimeoutError:
        return Context(
            input=input,
            expected=expected,
            status=ExecutionStatus.TIMEOUT,
            error=f"TimeoutError: no result within {timeout:g} s",
            duration=timedelta(seconds=time.perf_counter() - t0),
            metadata=dict(metadata or {}),
            **timing,
        )
    except Exception as exc:
        return Context(
            input=input,
            expected=expected,
            status=ExecutionStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            duration=timedelta(seconds=time.perf_counter() - t0),
            metadata=dict(metadata or {}),
            **timing,
        )
    timing["duration"] = timedelta(seconds=time.perf_counter() - t0)
    if convert is not None:
        return convert(value, input=input, expected=expected, metadata=metadata, **timing)
    return Context(
        input=input,
        output=value,
        expected=expected,
        status=ExecutionStatus.SUCCESS,
        metadata=dict(metadata or {}),
        **timing,
    )

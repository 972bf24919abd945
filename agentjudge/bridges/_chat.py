"""Bridges from model / agent framework results to `Context` (duck-typed, no imports).

Each bridge accepts the framework's object *or* its JSON dict, so nothing here imports an SDK.
Native facts win over caller extras on key collisions (they describe what actually happened).
``Context.messages`` is the trajectory: the conversation the caller sent (``messages=``) followed
by what the model answered, tool calls and tool results included (see `_trajectory`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio

from agentjudge.bridges._trajectory import (
    Dicts,
    anthropic_dicts,
    get,
    openai_chat_dicts,
    responses_dicts,
    trajectory,
)
from agentjudge.core import Context, ExecutionStatus

__all__ = [
    "capture",
    "finish_status",
    "from_anthropic_message",
    "from_openai_chat",
    "from_openai_response",
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
    "tool_call": ExecutionStatus.SUCCESS,  # pydantic-ai
    "max_tokens": ExecutionStatus.SUCCESS,
    "pause_turn": ExecutionStatus.SUCCESS,
    "refusal": ExecutionStatus.REFUSED,
    # OpenAI Responses API (status, or the incomplete reason)
    "completed": ExecutionStatus.SUCCESS,
    "max_output_tokens": ExecutionStatus.SUCCESS,
    "in_progress": ExecutionStatus.UNKNOWN,
    "queued": ExecutionStatus.UNKNOWN,
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


def _context(
    output: Any,
    reason: str | None,
    native: dict[str, Any],
    conversation: Dicts,
    *,
    prefix: str,
    input: Any,
    expected: Any,
    metadata: Mapping[str, Any] | None,
    **fields: Any,
) -> Context:
    """The Context of one bridge; a trajectory that cannot be read is named in the metadata."""
    messages, problem = trajectory(conversation, prefix)
    merged = dict(metadata or {})
    merged.update({k: v for k, v in native.items() if v is not None})
    if problem is not None:
        merged[f"{prefix}.trajectory_error"] = problem
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
    messages: Sequence[Any] = (),
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from an OpenAI-compatible chat completion (``ChatCompletion`` or its JSON dict).

    ``messages`` is the conversation sent (chat-format dicts or SDK messages, tool results
    included); the trajectory is it followed by the reply (with its tool calls).

    Metadata keys: ``openai.finish_reason``, ``openai.model``, ``openai.id``,
    ``openai.usage.input_tokens`` / ``output_tokens``, ``openai.tool_calls`` (when present).
    """
    choices = get(response, "choices") or []
    choice = choices[0] if choices else None
    message = get(choice, "message") if choice is not None else None
    reason = get(choice, "finish_reason") if choice is not None else None
    usage = get(response, "usage")
    tool_calls = get(message, "tool_calls") if message is not None else None
    native: dict[str, Any] = {
        "openai.finish_reason": reason,
        "openai.model": get(response, "model"),
        "openai.id": get(response, "id"),
        "openai.usage.input_tokens": get(usage, "prompt_tokens") if usage else None,
        "openai.usage.output_tokens": get(usage, "completion_tokens") if usage else None,
        "openai.tool_calls": len(tool_calls) if tool_calls else None,
    }
    reply = [message] if message is not None else []
    return _context(
        get(message, "content") if message is not None else None,
        reason,
        native,
        openai_chat_dicts([*messages, *reply]),
        prefix="openai",
        input=input,
        expected=expected,
        metadata=metadata,
        **fields,
    )


def _response_text(output: Sequence[Any]) -> tuple[str | None, bool]:
    """The output text of Responses API items (None without text) and whether one refused."""
    texts: list[str] = []
    refused = False
    for item in output:
        if get(item, "type") != "message":
            continue
        for part in get(item, "content") or ():
            if get(part, "type") == "output_text":
                texts.append(str(get(part, "text")))
            refused = refused or get(part, "type") == "refusal"
    return ("".join(texts) if texts else None), refused


def from_openai_response(
    response: Any,
    *,
    messages: Any = (),
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from an OpenAI Responses API ``Response`` (``client.responses.create``) or dict.

    ``messages`` is the request's ``input`` (a string or input items, ``function_call_output``
    items included); the trajectory is the response's ``instructions`` (a system message),
    that input, then the output items (``function_call`` items as the assistant's tool calls).
    The output is the output text. Status: ``completed`` is SUCCESS, ``incomplete`` follows
    its reason (``max_output_tokens`` SUCCESS, ``content_filter`` REFUSED), a refusal part is
    REFUSED, ``failed`` is FAILED with ``error`` = the API's ``code: message``.

    Metadata keys: ``openai.status``, ``openai.incomplete_reason``, ``openai.model``,
    ``openai.id``, ``openai.usage.input_tokens`` / ``output_tokens``, ``openai.tool_calls``.
    """
    output = get(response, "output") or []
    text, refused = _response_text(output)
    status = get(response, "status")
    incomplete = get(get(response, "incomplete_details"), "reason")
    reason = "refusal" if refused else incomplete or status
    error = get(response, "error")
    if error is not None and "error" not in fields:
        fields["error"] = f"{get(error, 'code')}: {get(error, 'message')}"
    usage = get(response, "usage")
    calls = sum(1 for item in output if get(item, "type") == "function_call")
    native: dict[str, Any] = {
        "openai.status": status,
        "openai.incomplete_reason": incomplete,
        "openai.model": get(response, "model"),
        "openai.id": get(response, "id"),
        "openai.usage.input_tokens": get(usage, "input_tokens") if usage else None,
        "openai.usage.output_tokens": get(usage, "output_tokens") if usage else None,
        "openai.tool_calls": calls or None,
    }
    instructions = get(response, "instructions")
    system = [{"role": "system", "content": instructions}] if isinstance(instructions, str) else []
    conversation = system + responses_dicts(messages) + responses_dicts(output)
    return _context(
        text,
        reason,
        native,
        conversation,
        prefix="openai",
        input=input,
        expected=expected,
        metadata=metadata,
        **fields,
    )


def from_anthropic_message(
    message: Any,
    *,
    messages: Sequence[Any] = (),
    input: Any = None,
    expected: Any = None,
    metadata: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Context:
    """Context from an Anthropic Messages API response (``Message`` or its JSON dict).

    ``messages`` is the conversation sent (its ``tool_result`` blocks become ``tool``
    messages); the trajectory is it followed by the reply, whose ``tool_use`` blocks are its
    tool calls. The output is the reply's text blocks joined. Metadata:
    ``anthropic.stop_reason``, ``anthropic.model``, ``anthropic.id``,
    ``anthropic.usage.input_tokens`` / ``output_tokens``, ``anthropic.tool_uses``.
    """
    blocks = get(message, "content") or []
    texts = [str(get(b, "text")) for b in blocks if get(b, "type") == "text"]
    tool_uses = sum(1 for b in blocks if get(b, "type") == "tool_use")
    reason = get(message, "stop_reason")
    usage = get(message, "usage")
    native: dict[str, Any] = {
        "anthropic.stop_reason": reason,
        "anthropic.model": get(message, "model"),
        "anthropic.id": get(message, "id"),
        "anthropic.usage.input_tokens": get(usage, "input_tokens") if usage else None,
        "anthropic.usage.output_tokens": get(usage, "output_tokens") if usage else None,
        "anthropic.tool_uses": tool_uses or None,
    }
    reply = {"role": get(message, "role") or "assistant", "content": blocks}
    return _context(
        "".join(texts) if texts else None,
        reason,
        native,
        anthropic_dicts([*messages, reply]),
        prefix="anthropic",
        input=input,
        expected=expected,
        metadata=metadata,
        **fields,
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

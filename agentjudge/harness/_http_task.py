"""Tasks served by a chat model over HTTP: ``task = "openai:<model>"`` (+ ``task_url``)."""

from __future__ import annotations

import json
from typing import Any

from agentjudge.core import Message
from agentjudge.harness._case import Case, TaskOutput
from agentjudge.models import ModelClient, ModelRequest, model_from_string

__all__ = ["ModelTask", "case_messages", "model_task"]


def case_messages(case: Case) -> tuple[Message, ...]:
    """The chat messages a case's input becomes.

    A string is one user message; an object with a ``messages`` list of ``{role, content}`` is
    that conversation; anything else is sent as its JSON text in one user message.
    """
    value = case.input
    if isinstance(value, str):
        return (Message(role="user", content=value),)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        try:
            return tuple(Message.model_validate(m) for m in value["messages"])
        except ValueError as exc:
            raise ValueError(
                f"case {case.id!r}: input.messages is not a list of "
                f"{{role, content}} objects: {exc}"
            ) from None
    return (Message(role="user", content=json.dumps(value, ensure_ascii=False)),)


class ModelTask:
    """A task that asks a chat model: the case input goes in, the reply text comes out.

    Args:
        model: The model client (e.g. ``OpenAIChat("gpt-4o-mini", base_url=...)``).
        system: An optional system prompt sent first.
    """

    def __init__(self, model: ModelClient, *, system: str | None = None) -> None:
        self.model = model
        self.system = system
        self.name = model.name

    async def __call__(self, case: Case) -> TaskOutput:
        """Ask the model; return its text and token usage."""
        messages = case_messages(case)
        if self.system:
            messages = (Message(role="system", content=self.system), *messages)
        response = await self.model.complete(ModelRequest(messages=messages))
        return TaskOutput(response.text, usage=response.usage)

    async def aclose(self) -> None:
        """Close the model client's connections."""
        close: Any = getattr(self.model, "aclose", None)
        if close is not None:
            await close()


def model_task(ref: str, *, base_url: str | None = None) -> ModelTask:
    """A `ModelTask` for ``"openai:<model>"`` / ``"anthropic:<model>"``.

    Raises:
        ValueError: the reference is not a model reference the clients know.
    """
    kwargs: dict[str, Any] = {}
    if base_url is not None:
        kwargs["base_url"] = base_url
    return ModelTask(model_from_string(ref, **kwargs))

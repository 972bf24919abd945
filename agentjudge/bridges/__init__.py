"""Adapters from model and agent frameworks' results to `Context` (no SDK imports)."""

from __future__ import annotations

from agentjudge.bridges._chat import (
    capture,
    finish_status,
    from_agent_run,
    from_anthropic_message,
    from_langchain_message,
    from_openai_chat,
)

__all__ = [
    "capture",
    "finish_status",
    "from_agent_run",
    "from_anthropic_message",
    "from_langchain_message",
    "from_openai_chat",
]

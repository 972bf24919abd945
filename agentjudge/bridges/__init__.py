"""Adapters from model, agent and web frameworks to agentjudge (no SDK imports)."""

from __future__ import annotations

from agentjudge.bridges._agents import from_agent_run, from_langchain_message
from agentjudge.bridges._asgi import Disconnect, cancel_on_disconnect
from agentjudge.bridges._chat import (
    capture,
    finish_status,
    from_anthropic_message,
    from_openai_chat,
    from_openai_response,
)
from agentjudge.bridges._cli import run_cli_agent, workspace_changes

__all__ = [
    "Disconnect",
    "cancel_on_disconnect",
    "capture",
    "finish_status",
    "from_agent_run",
    "from_anthropic_message",
    "from_langchain_message",
    "from_openai_chat",
    "from_openai_response",
    "run_cli_agent",
    "workspace_changes",
]

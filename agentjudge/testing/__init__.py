"""Test doubles for users: scripted judges and a fake OpenAI/Anthropic-compatible server."""

from __future__ import annotations

from agentjudge.testing._fake_server import FakeModelServer, FakeRateLimit, FakeResponse
from agentjudge.testing._scripted import ConcurrencyProbe, ScriptedJudge

__all__ = ["ConcurrencyProbe", "FakeModelServer", "FakeRateLimit", "FakeResponse", "ScriptedJudge"]

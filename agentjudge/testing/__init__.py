"""Test doubles for users: scripted judges and a fake OpenAI/Anthropic-compatible server.

From the command line, ``python -m agentjudge.testing serve --port 8765 --answer "Answer: YES"``
runs `FakeModelServer` until Ctrl-C, so an LLM-judge suite can run offline (see the how-to
"Run an LLM-judge suite offline").
"""

from __future__ import annotations

from agentjudge.testing._fake_server import FakeModelServer, FakeRateLimit, FakeResponse
from agentjudge.testing._scripted import ConcurrencyProbe, ScriptedJudge

__all__ = ["ConcurrencyProbe", "FakeModelServer", "FakeRateLimit", "FakeResponse", "ScriptedJudge"]

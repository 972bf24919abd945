"""Test doubles and assertions for users' tests.

Scripted judges, a fake OpenAI/Anthropic-compatible server, and `assert_passes` /
`assert_eval` for evals written as tests (see the pytest how-to page: the ``agentjudge``
pytest plugin adds fixtures, a dataset marker, a session summary and gates).

From the command line, ``python -m agentjudge.testing serve --port 8765 --answer "Answer: YES"``
runs `FakeModelServer` until Ctrl-C, so an LLM-judge suite can run offline (see the how-to
"Run an LLM-judge suite offline").
"""

from __future__ import annotations

from agentjudge.testing._assertions import assert_eval, assert_passes, describe_outcome
from agentjudge.testing._fake_server import FakeModelServer, FakeRateLimit, FakeResponse
from agentjudge.testing._scripted import ConcurrencyProbe, ScriptedJudge

__all__ = [
    "ConcurrencyProbe",
    "FakeModelServer",
    "FakeRateLimit",
    "FakeResponse",
    "ScriptedJudge",
    "assert_eval",
    "assert_passes",
    "describe_outcome",
]

"""Test doubles and assertions for users' tests.

Scripted judges, a fake OpenAI/Anthropic-compatible server, and `assert_passes` /
`assert_eval` for evals written as tests (see the pytest how-to page: the ``agentjudge``
pytest plugin adds fixtures, a dataset marker, a session summary and gates).

From the command line, ``python -m agentjudge.testing serve --port 8765 --answer "Answer: YES"``
runs `FakeModelServer` until Ctrl-C, so an LLM-judge suite can run offline (see the how-to
"Run an LLM-judge suite offline").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentjudge._lazy import lazy_attribute

if TYPE_CHECKING:
    from agentjudge.testing._assertions import assert_eval, assert_passes, describe_outcome
    from agentjudge.testing._fake_server import FakeModelServer, FakeRateLimit, FakeResponse
    from agentjudge.testing._scripted import ConcurrencyProbe, ScriptedJudge

# Loaded on first use (PEP 562): ``python -m agentjudge.testing serve`` needs the fake server
# only, not the assertions' evaluator (~0.3 s of CPU at every start of the server).
_LAZY: dict[str, str] = {
    "assert_eval": "agentjudge.testing._assertions",
    "assert_passes": "agentjudge.testing._assertions",
    "describe_outcome": "agentjudge.testing._assertions",
    "FakeModelServer": "agentjudge.testing._fake_server",
    "FakeRateLimit": "agentjudge.testing._fake_server",
    "FakeResponse": "agentjudge.testing._fake_server",
    "ConcurrencyProbe": "agentjudge.testing._scripted",
    "ScriptedJudge": "agentjudge.testing._scripted",
}

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


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

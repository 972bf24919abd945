"""Test doubles for users: scripted judges and helpers for deterministic tests."""

from __future__ import annotations

from agentjudge.testing._scripted import ConcurrencyProbe, ScriptedJudge

__all__ = ["ConcurrencyProbe", "ScriptedJudge"]

"""The curated public facade matches the API contract."""

from __future__ import annotations

import agentjudge

CONTRACT = {
    # 1. values
    "Status", "Check", "Judgment", "ExecutionStatus", "Message", "Context", "JudgeResult",
    # 2. judges
    "judge", "named", "JudgeKind", "all_of", "any_of", "judge_name", "Judge",
    # 3. voting
    "TiePolicy", "ErrorPolicy", "Majority", "Consensus", "Average", "Median", "WeightedAverage",
    # 4. juries and cascades
    "Jury", "TierPolicy", "Tier", "Cascade",
    # 5. the evaluator
    "Evaluator", "EvaluationHandle", "Verdict", "TierAttempt", "CaseResult", "RetryPolicy",
    "RetryableError", "EvaluationCancelled", "AgentJudgeError",
}  # fmt: skip


def test_all_is_unique() -> None:
    """__all__ has no duplicates (ruff's RUF022 keeps it sorted)."""
    names = list(agentjudge.__all__)
    assert len(names) == len(set(names))


def test_every_exported_name_resolves() -> None:
    """Every name in __all__ is an attribute of the package."""
    missing = [n for n in agentjudge.__all__ if not hasattr(agentjudge, n)]
    assert missing == []


def test_contract_names_are_exported() -> None:
    """Every name API.md lists for the top-level package is in __all__."""
    assert CONTRACT - set(agentjudge.__all__) == set()


def test_no_private_module_leaks() -> None:
    """No exported name is a module or private."""
    for name in agentjudge.__all__:
        assert not name.startswith("_") or name == "__version__"
        assert type(getattr(agentjudge, name)).__name__ != "module"


def test_import_stays_light() -> None:
    """`import agentjudge` loads no HTTP stack; lazy names load it on first access."""
    import subprocess
    import sys

    code = (
        "import sys, agentjudge\n"
        "assert 'httpx' not in sys.modules and 'aiohttp' not in sys.modules\n"
        "from agentjudge import LLMJudge, OpenAIChat, FileExists\n"
        "assert LLMJudge.__module__.startswith('agentjudge.judges')\n"
        "assert OpenAIChat.__module__.startswith('agentjudge.models')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_unknown_attribute_raises() -> None:
    """An unknown top-level name is an AttributeError, not a silent None."""
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agentjudge.Nope  # noqa: B018

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


def test_all_is_sorted_and_unique() -> None:
    """__all__ is sorted (case-sensitive) and has no duplicates."""
    names = list(agentjudge.__all__)
    assert names == sorted(names)
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

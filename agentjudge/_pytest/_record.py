"""What a session needs while its tests run: a checked outcome as a results-row line, the gates.

Every process of a session records outcomes, every pytest-xdist worker included, while the
summary and the report (`agentjudge._pytest._session`, which imports the harness's summary
folds and report tables) are needed only where the session ends: the controller, or the one
process of a session without xdist. A worker of a session without gates thus imports only the
row encoding (~0.09 s of CPU less per worker); the gate parser is imported when there are gates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from agentjudge.harness._results import encode_row, judge_result_dict, judgment_dict

if TYPE_CHECKING:
    from agentjudge.core import JudgeResult, Judgment
    from agentjudge.harness._gates import Gate

__all__ = ["encode_outcome", "parse_gates"]


def encode_outcome(results: Sequence[JudgeResult], aggregate: Judgment | None) -> str:
    """One checked outcome as a results-row JSON line (``verdict`` null for bare results)."""
    return encode_row(
        {
            "results": [judge_result_dict(r) for r in results],
            "verdict": None if aggregate is None else judgment_dict(aggregate),
            "error": None,
        }
    )


def parse_gates(exprs: Iterable[str]) -> list[Gate]:
    """Parse gate expressions (the ``agentjudge run`` syntax).

    Raises:
        ValueError: a malformed gate (the message names it and lists the valid stats).
    """
    from agentjudge.harness._gates import parse_gate

    return [parse_gate(expr) for expr in exprs]

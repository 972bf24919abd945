"""The example's cascade: a cheap judge first, a strong one when the cheap one is unsure.

Both replay logged judgments (`ReplayJudge`), so the example needs no network and no keys;
with LLM judges that give a confidence (`LLMJudge(..., confidence=LogprobConfidence())`) the
suite and the commands stay the same. The thresholds here are placeholders:
``agentjudge calibrate`` chooses them, and ``--thresholds`` applies them.
"""

from __future__ import annotations

from pathlib import Path

from agentjudge import Cascade, Tier, TierPolicy
from agentjudge.harness import Case
from agentjudge.judges import ReplayJudge

HERE = Path(__file__).resolve().parent


def claim(case: Case) -> str:
    """The task: the claim under review is the output the judges look at."""
    return str(case.input)


cascade = Cascade(
    [
        Tier(
            "cheap",
            ReplayJudge(HERE / "cheap.jsonl", name="cheap"),
            TierPolicy.STOP_ON_CONFIDENCE,
            threshold=1.0,
        ),
        Tier("strong", ReplayJudge(HERE / "strong.jsonl", name="strong")),
    ]
)

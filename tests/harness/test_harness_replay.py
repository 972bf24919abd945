"""A run over ReplayJudge tiers: the harness counts the logged costs per judge and per tier.

It was in tests/judges/test_replay.py and started ``python -m agentjudge run`` (~0.6 s of CPU
in the interpreter's start-up and imports); here the same program is forked from the harness
tests' preloaded forkserver (`cli_support`), whose docstring lists the tests that still start
the program as a shell does.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_support import cli_async

JUDGES = """
from agentjudge import Cascade, Tier, TierPolicy
from agentjudge.judges import ReplayJudge


def build():
    cheap = Tier("cheap", ReplayJudge("cheap.jsonl"), TierPolicy.STOP_ON_CONFIDENCE, threshold=0.8)
    return Cascade([cheap, Tier("big", ReplayJudge("big.jsonl"))])
"""


def _jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


async def test_the_harness_counts_replayed_costs_per_judge_and_tier(tmp_path: Path) -> None:
    """A run over replay judges sums the logged dollars and tokens, and a missing case errors."""
    _jsonl(tmp_path / "data.jsonl", [{"id": f"q{i}", "input": i} for i in range(4)])
    confidences = [0.9, 0.9, 0.5, 0.5]  # q0, q1 stop at the cheap tier; q2, q3 escalate
    _jsonl(
        tmp_path / "cheap.jsonl",
        [{"id": f"q{i}", "status": "pass", "confidence": c, "cost_usd": 0.001,
          "usage": {"input_tokens": 10, "output_tokens": 1}} for i, c in enumerate(confidences)],
    )  # fmt: skip
    _jsonl(tmp_path / "big.jsonl", [{"id": "q2", "status": "fail", "cost_usd": 0.1}])  # no q3
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES))
    (tmp_path / "task.py").write_text("def answer(case):\n    return 'x'\n")
    (tmp_path / "agentjudge.toml").write_text(
        'dataset = "data.jsonl"\ntask = "task:answer"\njudges = "judges:build"\n'
    )
    await cli_async(tmp_path, "run", "--out", "out", "--progress", "off")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    cost = summary["cost"]
    assert cost["usd"] == pytest.approx(4 * 0.001 + 0.1)
    assert cost["by_judge"]["cheap"]["usd"] == pytest.approx(0.004)
    assert cost["by_tier"]["big"]["usd"] == pytest.approx(0.1)
    assert (cost["input_tokens"], cost["output_tokens"]) == (40, 4)
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    results = [json.loads(line) for line in lines]
    by_id = {row["id"]: row for row in results}
    assert by_id["q3"]["verdict"]["status"] == "error"
    assert "'q3' is not in the replay log big.jsonl" in json.dumps(by_id["q3"])

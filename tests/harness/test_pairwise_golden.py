"""The typed ``pairwise`` block writes and reads the same ``summary.json`` as the dict it replaced.

``golden/pairwise_summary.json`` is the ``summary.json`` of the run below as written by the
version whose ``JudgeSummary.pairwise`` was an untyped ``dict[str, Any]`` (commit d4cd082),
with the run id, timestamps and the temporary folder normalised. A run today must write the
same text, and that old file must read back (``report`` / ``compare``) to the same text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentjudge.harness import Case, Suite, run_suite
from agentjudge.harness._baseline import load_summary
from agentjudge.harness._report import render_report
from agentjudge.harness._summary import JudgeSummary
from agentjudge.judges import PairwiseJudge
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse

GOLDEN = Path(__file__).parent / "golden" / "pairwise_summary.json"
QUALITY = {"excellent": 3, "decent": 2, "poor": 1}
ROWS = [
    {"x": "excellent", "y": "decent"},
    {"x": "excellent", "y": "decent"},
    {"y": "decent", "z": "poor"},
    {"z": "poor", "x": "excellent"},
    {"y": "decent", "z": "decent"},  # equal quality: always A, so the swapped pair disagrees
]


def _slot(prompt: str, name: str) -> str:
    return prompt.split(f"[Response {name}]\n", 1)[1].split("\n", 1)[0]


def grader(body: dict[str, Any]) -> FakeResponse:
    """Prefers the better-quality text whichever slot it is in; on equal quality, always A."""
    prompt = str(body["messages"][-1]["content"])
    a, b = QUALITY[_slot(prompt, "A")], QUALITY[_slot(prompt, "B")]
    return FakeResponse(text="Answer: B" if b > a else "Answer: A")


def candidates(case: Case) -> Any:
    """The task: the case's two candidates."""
    return case.metadata["candidates"]


def plain(ctx: Any) -> bool:
    """A judge that is not pairwise (its block is null)."""
    return True


def normalised(text: str, folder: Path) -> str:
    """``text`` with the run id, timestamps, task module and ``folder`` made constant."""
    text = text.replace(json.dumps(str(folder))[1:-1], "<tmp>")
    text = re.sub(r'"run_id": "[^"]*"', '"run_id": "<run_id>"', text)
    text = re.sub(r'"(started_at|completed_at)": "[^"]*"', r'"\1": "<time>"', text)
    return re.sub(r'"task_name": "[^"]*"', '"task_name": "<task>"', text)


async def _run(folder: Path) -> str:
    rows = [
        {"id": f"c{i}", "input": "Which answer is better?", "metadata": {"candidates": pair}}
        for i, pair in enumerate(ROWS)
    ]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    gates = ["pref.pairwise.position_consistency>=0.5", "pref.pairwise.inconsistent<=1"]
    suite = Suite(dataset=Path("data.jsonl"), task="unused:unused", base_dir=folder, gates=gates)
    async with FakeModelServer(default=grader) as server:
        model = OpenAIChat("grader", base_url=server.base_url, api_key="k", retry=None)
        async with model:
            judges = [PairwiseJudge("pref", model), plain]
            await run_suite(suite, out=folder / "out", task=candidates, judges=judges)
    return normalised((folder / "out" / "summary.json").read_text(), folder)


async def test_a_pairwise_run_writes_the_golden_summary(tmp_path: Path) -> None:
    """summary.json of a pairwise run is byte-identical (normalised) to the dict-era golden."""
    text = await _run(tmp_path)
    assert text == GOLDEN.read_text()


def test_the_golden_summary_reads_back_typed_and_dumps_unchanged(tmp_path: Path) -> None:
    """An old summary.json loads (as report/compare do) into typed blocks and dumps the same."""
    summary = load_summary(GOLDEN)
    assert summary.model_dump_json(indent=2) + "\n" == GOLDEN.read_text()
    (tmp_path / "summary.json").write_text(GOLDEN.read_text())
    assert "Bradley-Terry strengths" in render_report(tmp_path)


def test_a_block_written_before_inconsistent_was_counted_still_reads() -> None:
    """Summaries of the first pairwise version had no ``inconsistent`` count: read as 0."""
    block = json.loads(GOLDEN.read_text())["judges"]["pref"]
    del block["pairwise"]["inconsistent"]
    judge = JudgeSummary.model_validate(block)
    assert judge.pairwise is not None and judge.pairwise.n == 5

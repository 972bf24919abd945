"""A small run whose trajectory judges fail one case: for the tool-call diff in reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from agentjudge.harness import Suite, run_suite

JUDGES = """
from agentjudge import TrajectoryMatch
from agentjudge.judges import ToolSelection

judges = [TrajectoryMatch("strict"), ToolSelection()]
"""

TASK = """
def run(case):
    return case.metadata["agent"]
"""


def step(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant message calling ``calls`` (OpenAI chat format)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)
        ],
    }


def result(text: str) -> dict[str, Any]:
    return {"role": "tool", "content": text, "tool_call_id": "c0"}


ASK = {"role": "user", "content": "Weather in Paris, then book a table"}
REFERENCE = [
    ASK,
    step(("get_weather", {"city": "Paris", "unit": "C"})),
    result("18C"),
    step(("book_table", {"restaurant": "Chez Nous", "people": 2})),
    result("booked"),
    {"role": "assistant", "content": "Done."},
]
WRONG = [
    ASK,
    step(("get_weather", {"city": "Paris", "unit": "F"})),
    result("64F"),
    step(("delete_booking", {"id": 7})),
    result("deleted"),
    {"role": "assistant", "content": "Done."},
]


def build_trajectory_run(root: Path) -> Path:
    """The run folder: case ``good`` passes, case ``bad`` fails both trajectory judges.

    ``bad`` called get_weather with unit F (reference: C), then delete_booking where the
    reference books a table.
    """
    folder = root / "trajectory_suite"
    folder.mkdir()
    rows = [
        {"id": "good", "input": "plan", "expected": REFERENCE, "metadata": {"agent": REFERENCE}},
        {"id": "bad", "input": "plan", "expected": REFERENCE, "metadata": {"agent": WRONG}},
    ]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "task.py").write_text(TASK)
    (folder / "judges.py").write_text(JUDGES)
    suite = Suite(
        dataset=Path("data.jsonl"), task="task.py:run", judges="judges.py:judges", base_dir=folder
    )
    out = root / "trajectory_run"
    anyio.run(lambda: run_suite(suite, out=out, progress="off"))
    return out

"""The harness reads agent trajectories: a row's ``messages`` and a task's message-list output."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.exceptions import DatasetError
from agentjudge.harness import Dataset, Suite, iter_rows, run_suite


def call(name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


TRAJECTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [call("get_weather", city="Paris")]},
    {"role": "tool", "content": "18C", "tool_call_id": "c1"},
    {"role": "assistant", "content": "18C"},
]

JUDGES = """
from agentjudge import TrajectoryMatch

SEEN = []

def record(ctx):
    SEEN.append(ctx)
    return True

judges = [record, TrajectoryMatch("superset", args="ignore")]
"""


def make_suite(tmp_path: Path, rows: list[dict[str, Any]], task: str) -> Suite:
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    (tmp_path / "task.py").write_text(textwrap.dedent(task), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    return Suite(
        dataset=Path("data.jsonl"), task="task.py:run", judges="judges.py:judges", base_dir=tmp_path
    )


def seen_contexts(tmp_path: Path) -> dict[str, Any]:
    import sys

    module = next(
        m
        for name, m in sys.modules.items()
        if name.startswith("agentjudge_user_")
        and getattr(m, "__file__", "") == str(tmp_path / "judges.py")
    )
    return {ctx.metadata["case_id"]: ctx for ctx in module.SEEN}


def test_row_messages_become_ctx_messages(tmp_path: Path) -> None:
    """A row's OpenAI chat-format `messages` reach judges as Message objects with tool calls."""
    rows = [{"id": "a", "input": "q", "messages": TRAJECTORY, "expected": TRAJECTORY}]
    suite = make_suite(tmp_path, rows, "def run(case):\n    return 'done'\n")
    summary = anyio.run(lambda: run_suite(suite, out=tmp_path / "out"))
    ctx = seen_contexts(tmp_path)["a"]
    assert ctx.messages[1].tool_calls[0].name == "get_weather"
    assert ctx.output == "done"
    assert summary.judges["TrajectoryMatch"].counts["pass"] == 1


def test_task_returning_a_trajectory_wins_over_the_row(tmp_path: Path) -> None:
    """A task returning a message list (or TaskOutput(messages=...)) is the trajectory judged."""
    task = """
    from agentjudge.harness import TaskOutput

    def run(case):
        steps = [
            {"role": "user", "content": case.input},
            {"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        ]
        return TaskOutput("found", messages=steps) if case.id == "b" else steps
    """
    rows = [
        {"id": "a", "input": "q", "messages": TRAJECTORY, "expected": TRAJECTORY},
        {"id": "b", "input": "q", "expected": TRAJECTORY},
    ]
    suite = make_suite(tmp_path, rows, task)
    anyio.run(lambda: run_suite(suite, out=tmp_path / "out"))
    seen = seen_contexts(tmp_path)
    for case_id in ("a", "b"):
        assert [c.name for m in seen[case_id].messages for c in m.tool_calls] == ["search"]
    results = {r["id"]: r for r in iter_rows(tmp_path / "out" / "results.jsonl")}
    verdicts = {r["name"]: r["judgment"]["status"] for r in results["a"]["results"]}
    assert verdicts["TrajectoryMatch"] == "fail"  # search is no superset of get_weather
    assert results["b"]["output"]["messages"][1]["tool_calls"][0]["name"] == "search"


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ("hi", "field 'messages' must be a list of chat messages, got string"),
        (["hi"], "a list starting with string"),
        (
            [{"role": "assistant", "tool_calls": [{"function": {"name": "t", "arguments": "{"}}]}],
            "field messages[0]: tool_calls.0.arguments: arguments are not valid JSON",
        ),
    ],
)
def test_bad_row_messages_are_dataset_errors(tmp_path: Path, messages: Any, problem: str) -> None:
    """A malformed `messages` field fails the dataset check, naming the line and the message."""
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "q", "messages": messages}) + "\n")
    with pytest.raises(DatasetError) as info:
        Dataset.open(path)
    assert "line 1 (id 'a')" in str(info.value) and problem in str(info.value)


def test_null_row_messages_mean_none(tmp_path: Path) -> None:
    """`"messages": null` is accepted and means no trajectory."""
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "q", "messages": None}) + "\n")
    Dataset.open(path)

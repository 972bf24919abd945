"""Reports show a failing trajectory judgment's tool calls as expected vs actual, per step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentjudge.harness._cli import main
from agentjudge.harness._html import build_report_data
from tests.harness.trajectory_support import build_trajectory_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_trajectory_run(tmp_path_factory.mktemp("diff"))


def report(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["report", *args]) == 0
    return capsys.readouterr().out


def test_report_lists_the_diff_under_the_failing_judge(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The attention list shows wrong arguments, the extra call and the missing one."""
    text = report(capsys, str(run_dir))
    section = text[text.index("\nbad  FAIL") :]
    assert "tool calls, expected vs actual" in section
    assert "~ step 1: get_weather: arguments differ in unit:" in section
    assert '+ step 2: delete_booking({"id": 7}) extra' in section
    assert '- reference step 2: book_table({"people": 2, "restaurant": "Chez Nous"}) missing' in (
        section
    )
    assert "good" not in section  # a passing case shows no diff


def test_case_view_shows_the_whole_diff_once(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--case: every diff line in full; the metadata line no longer repeats the diff JSON."""
    text = report(capsys, str(run_dir), "--case", "bad")
    assert (
        '~ step 1: get_weather: arguments differ in unit: expected get_weather({"city": '
        '"Paris", "unit": "C"}), got get_weather({"city": "Paris", "unit": "F"})'
    ) in text
    assert text.count("tool calls, expected vs actual") == 2  # TrajectoryMatch, ToolSelection
    assert '"tool_call_diff"' not in text
    assert "= step 1: get_weather(" in text  # ToolSelection: the right tool, arguments ignored


def test_report_json_carries_the_structured_diff(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json: each listed judge has ``tool_call_diff`` with op, steps and both calls."""
    data = json.loads(report(capsys, str(run_dir), "--json"))
    (case,) = data["attention"]["cases"]
    judges = {j["name"]: j for j in case["judges"]}
    calls = judges["TrajectoryMatch"]["tool_call_diff"]["calls"]
    assert [c["op"] for c in calls] == ["arguments", "extra", "missing"]
    assert calls[0]["keys"] == ["unit"]
    assert calls[0]["expected"]["arguments"] == {"city": "Paris", "unit": "C"}
    assert calls[1] == {
        "op": "extra",
        "step": 2,
        "actual": {"name": "delete_booking", "arguments": {"id": 7}},
    }
    assert calls[2]["reference_step"] == 2 and "step" not in calls[2]


def test_html_data_packs_the_diff_with_the_judgment(run_dir: Path) -> None:
    """The browser report's data holds the diff rows (op code, steps, call texts)."""
    data = build_report_data(run_dir)
    strings, ops = data["strings"], data["diff_ops"]
    bad = next(c for c in data["cases"] if c[0] == "bad")
    judgments = bad[data["fields"].index("judgments")]
    diff = judgments[data["judges"].index("TrajectoryMatch")][11]
    assert diff[0] == 0  # nothing omitted
    rows = [(ops[r[0]], r[1], r[2]) for r in diff[1:]]
    assert rows == [("arguments", 1, 1), ("extra", 2, None), ("missing", None, 2)]
    assert strings[diff[2][4]] == 'delete_booking({"id": 7})'
    good = next(c for c in data["cases"] if c[0] == "good")
    assert all(len(j) < 12 for j in good[data["fields"].index("judgments")] if j)


def test_html_metadata_text_leaves_the_drawn_diff_out(run_dir: Path) -> None:
    """The judgment's metadata text keeps its other keys but not the diff the table shows."""
    data = build_report_data(run_dir)
    bad = next(c for c in data["cases"] if c[0] == "bad")
    judgment = bad[data["fields"].index("judgments")][data["judges"].index("TrajectoryMatch")]
    metadata = json.loads(data["strings"][judgment[6]])
    assert metadata["mode"] == "strict" and "tool_call_diff" not in metadata

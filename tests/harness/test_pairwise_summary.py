"""The pairwise block of summary.json and the report, end to end over loopback HTTP."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentjudge.agreement import wilson_interval
from agentjudge.harness import Case, Suite, iter_rows, run_suite
from agentjudge.harness._baseline import load_summary
from agentjudge.harness._gates import parse_gate
from agentjudge.harness._report import render_report
from agentjudge.harness._summary import JudgeSummary, RunAggregate
from agentjudge.judges import PairwiseJudge
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse

QUALITY = {"excellent": 3, "decent": 2, "poor": 1}
GOLDEN = Path(__file__).parent / "golden" / "pairwise_summary.json"
"""``summary.json`` of `test_a_pairwise_run_writes_the_golden_summary`'s run as written when
``JudgeSummary.pairwise`` was an untyped ``dict[str, Any]`` (commit d4cd082), with the run id,
timestamps, task name and temporary folder normalised (`_normalised`)."""


def _slot(prompt: str, name: str) -> str:
    return prompt.split(f"[Response {name}]\n", 1)[1].split("\n", 1)[0]


def grader(body: dict[str, Any]) -> FakeResponse:
    """Prefers the better-quality text whichever slot it is in; on equal quality, always A."""
    prompt = str(body["messages"][-1]["content"])
    a, b = QUALITY[_slot(prompt, "A")], QUALITY[_slot(prompt, "B")]
    return FakeResponse(text="Answer: B" if b > a else "Answer: A")


ROWS = [
    # x (excellent) beats y (decent) twice, y beats z (poor), x beats z
    {"x": "excellent", "y": "decent"},
    {"x": "excellent", "y": "decent"},
    {"y": "decent", "z": "poor"},
    {"z": "poor", "x": "excellent"},
    # equal quality: the grader always picks A, so the swapped pair is inconsistent -> a tie
    {"y": "decent", "z": "decent"},
]


def _project(folder: Path) -> Path:
    rows = [
        {"id": f"c{i}", "input": "Which answer is better?", "metadata": {"candidates": pair}}
        for i, pair in enumerate(ROWS)
    ]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _candidates(case: Case) -> Any:
    return case.metadata["candidates"]


def plain(ctx: Any) -> bool:
    """A judge that is not pairwise (its block is null)."""
    return True


async def test_suite_with_a_pairwise_judge_reports_win_rates_consistency_and_ranking(
    tmp_path: Path,
) -> None:
    """summary.json gets judges[name].pairwise and the report prints it (real HTTP, real files)."""
    project = _project(tmp_path)
    suite = Suite(dataset=Path("data.jsonl"), task="unused:unused", base_dir=project)
    async with FakeModelServer(default=grader) as server:
        model = OpenAIChat("grader", base_url=server.base_url, api_key="k", retry=None)
        async with model:
            judge = PairwiseJudge("pref", model)
            summary = await run_suite(suite, out=project / "out", task=_candidates, judges=judge)
        assert len(server.requests) == 10  # 5 cases x both orders
    assert summary.status == "completed"
    block = json.loads((project / "out" / "summary.json").read_text())["judges"]["pref"]["pairwise"]
    assert (block["n"], block["inconsistent"], block["undecided"]) == (5, 1, 0)
    x, y, z = (block["systems"][s] for s in "xyz")
    assert (x["wins"], x["losses"], x["ties"], x["n"]) == (3, 0, 0, 3)
    assert (y["wins"], y["losses"], y["ties"], y["n"]) == (1, 2, 1, 4)
    assert (z["wins"], z["losses"], z["ties"], z["n"]) == (0, 2, 1, 3)
    assert y["win_rate_decided"]["rate"] == 1 / 3 and y["win_rate_decided"]["n"] == 3
    assert y["win_rate_all"]["rate"] == 0.25 and y["win_rate_all"]["n"] == 4
    assert y["win_rate_all"]["ci95"] == list(wilson_interval(1, 4))
    consistency = block["position_consistency"]
    assert (consistency["successes"], consistency["n"], consistency["rate"]) == (4, 5, 0.8)
    strengths = block["bradley_terry"]["strengths"]
    assert list(strengths) == ["x", "y", "z"]  # three systems: a ranking, strongest first
    assert abs(sum(strengths.values()) - 1.0) < 1e-9

    report = render_report(project / "out")
    assert "pairwise pref: 5 comparisons, 1 inconsistent (no decision: position bias), " in report
    assert "position consistency: 0.800" in report
    assert "Bradley-Terry strengths" in report

    # the results file alone gives the same block (resume / report path: add_row)
    again = RunAggregate(["pref"])
    for row in iter_rows(project / "out" / "results.jsonl"):
        again.add_row(row)
    folded = again.judge_summaries()["pref"].model_dump(mode="json")
    assert json.loads(json.dumps(folded["pairwise"])) == block


async def test_two_systems_have_no_ranking_and_other_judges_no_block(tmp_path: Path) -> None:
    """With two systems there is no Bradley-Terry entry; a non-pairwise judge gets no block."""
    project = tmp_path
    row = {"id": "c0", "input": "q", "metadata": {"candidates": {"x": "excellent", "y": "poor"}}}
    (project / "data.jsonl").write_text(json.dumps(row) + "\n")
    suite = Suite(dataset=Path("data.jsonl"), task="unused:unused", base_dir=project)

    async with FakeModelServer(default=grader) as server:
        model = OpenAIChat("grader", base_url=server.base_url, api_key="k", retry=None)
        async with model:
            summary = await run_suite(
                suite,
                out=project / "out",
                task=_candidates,
                judges=[PairwiseJudge("pref", model), plain],
            )
    judges = json.loads((project / "out" / "summary.json").read_text())["judges"]
    assert "bradley_terry" not in judges["pref"]["pairwise"]
    assert judges["pref"]["pairwise"]["systems"]["x"]["wins"] == 1
    assert judges["plain"]["pairwise"] is None  # other judges get no block
    assert summary.status == "completed"


def always_first(body: dict[str, Any]) -> FakeResponse:
    """A grader that prefers whatever is shown first."""
    return FakeResponse(text="The first one reads better.\nAnswer: A")


async def test_a_judge_that_always_prefers_the_first_slot_judges_nothing(tmp_path: Path) -> None:
    """Position bias is no decision: no PASS, judged_cases fails, the report and checks warn."""
    project = _project(tmp_path)
    gate = "pref.pairwise.position_consistency>=0.8"
    suite = Suite(dataset=Path("data.jsonl"), task="unused:unused", base_dir=project, gates=[gate])
    async with FakeModelServer(default=always_first) as server:
        model = OpenAIChat("grader", base_url=server.base_url, api_key="k", retry=None)
        async with model:
            judge = PairwiseJudge("pref", model)
            summary = await run_suite(suite, out=project / "out", task=_candidates, judges=judge)
    pref = summary.judges["pref"]
    assert pref.counts["pass"] == 0 and pref.counts["abstain"] == 5
    assert pref.pass_rate is None  # was 1.000: every inconsistent pair read as a PASS tie
    assert pref.pairwise is not None
    assert (pref.pairwise.n, pref.pairwise.inconsistent) == (5, 5)  # ties in the rates
    assert pref.pairwise.position_consistency is not None
    assert pref.pairwise.position_consistency.rate == 0.0
    checks = {c.name: c for c in summary.checks}
    judged = checks["judged_cases"]
    assert (judged.passed, judged.enforced, judged.value) == (False, True, 0)
    assert "position bias" in judged.message
    position = checks["position_consistency"]
    assert (position.passed, position.enforced, position.warning) == (False, False, True)
    assert "judge 'pref': position consistency 0.000 (0 of 5 swapped pairs" in position.message
    assert [(g.expr, g.value, g.passed) for g in summary.gates] == [(gate, 0.0, False)]
    assert summary.passed is False
    report = render_report(project / "out")
    assert "  warning: judge 'pref': position consistency 0.000" in report
    assert "WARN  position_consistency: " in report
    assert "FAIL  judged_cases: " in report


async def test_position_consistency_gates_and_a_quiet_check_on_a_fair_judge(
    tmp_path: Path,
) -> None:
    """A fair judge (4 of 5 pairs consistent) passes the check; gates read the block."""
    project = _project(tmp_path)
    gates = [
        "pref.pairwise.position_consistency>=0.8",
        "pref.pairwise.position_consistency_ci95_low>=0.5",
        "pref.pairwise.inconsistent<=1",
        "plain.pairwise.position_consistency>=0.8",
    ]
    suite = Suite(dataset=Path("data.jsonl"), task="unused:unused", base_dir=project, gates=gates)

    async with FakeModelServer(default=grader) as server:
        model = OpenAIChat("grader", base_url=server.base_url, api_key="k", retry=None)
        async with model:
            judges = [PairwiseJudge("pref", model), plain]
            summary = await run_suite(suite, out=project / "out", task=_candidates, judges=judges)
    outcomes = {g.expr: g for g in summary.gates}
    assert (outcomes[gates[0]].value, outcomes[gates[0]].passed) == (0.8, True)
    low = outcomes[gates[1]]
    assert low.value == pytest.approx(wilson_interval(4, 5)[0]) and not low.passed
    assert (outcomes[gates[2]].value, outcomes[gates[2]].passed) == (1.0, True)
    assert outcomes[gates[3]].passed is False
    assert "not a pairwise judge" in (outcomes[gates[3]].model_extra or {})["reason"]
    position = next(c for c in summary.checks if c.name == "position_consistency")
    assert position.passed and position.value == 0


def test_unknown_pairwise_gate_stats_are_refused() -> None:
    """<judge>.pairwise.<stat> parses; an unknown stat lists the valid ones."""
    gate = parse_gate("pref.pairwise.position_consistency>=0.8")
    assert (gate.subject, gate.stat) == ("pref", "pairwise.position_consistency")
    with pytest.raises(ValueError, match="valid: position_consistency"):
        parse_gate("pref.pairwise.consistency>=0.8")


def _normalised(text: str, folder: Path) -> str:
    """``text`` with the run id, timestamps, task module and ``folder`` made constant."""
    text = text.replace(json.dumps(str(folder))[1:-1], "<tmp>")
    text = re.sub(r'"run_id": "[^"]*"', '"run_id": "<run_id>"', text)
    text = re.sub(r'"(started_at|completed_at)": "[^"]*"', r'"\1": "<time>"', text)
    return re.sub(r'"task_name": "[^"]*"', '"task_name": "<task>"', text)


async def _golden_run(folder: Path) -> str:
    project = _project(folder)
    gates = ["pref.pairwise.position_consistency>=0.5", "pref.pairwise.inconsistent<=1"]
    # one case at a time: the block follows the order cases finish in (systems, fit digits)
    suite = Suite(
        dataset=Path("data.jsonl"),
        task="unused:unused",
        base_dir=project,
        gates=gates,
        concurrency=1,
    )
    async with FakeModelServer(default=grader) as server:
        model = OpenAIChat("grader", base_url=server.base_url, api_key="k", retry=None)
        async with model:
            judges = [PairwiseJudge("pref", model), plain]
            await run_suite(suite, out=project / "out", task=_candidates, judges=judges)
    return _normalised((project / "out" / "summary.json").read_text(), folder)


async def test_a_pairwise_run_writes_the_golden_summary(tmp_path: Path) -> None:
    """summary.json of a pairwise run is byte-identical (normalised) to the dict-era golden."""
    text = await _golden_run(tmp_path)
    assert text == GOLDEN.read_text()


def test_the_golden_summary_reads_back_typed_and_dumps_unchanged(tmp_path: Path) -> None:
    """An old summary.json loads (as report/compare do) into typed blocks and dumps the same."""
    summary = load_summary(GOLDEN)
    assert summary.model_dump_json(indent=2) + "\n" == GOLDEN.read_text()
    block = summary.judges["pref"].pairwise
    assert block is not None and summary.judges["plain"].pairwise is None
    assert (block.n, block.inconsistent, block.systems["y"].win_rate_all.rate) == (5, 1, 0.25)
    assert block.bradley_terry is not None and list(block.bradley_terry.strengths) == list("xyz")
    (tmp_path / "summary.json").write_text(GOLDEN.read_text())
    assert "Bradley-Terry strengths" in render_report(tmp_path)


def test_a_block_written_before_inconsistent_was_counted_still_reads() -> None:
    """Summaries of the first pairwise version had no ``inconsistent`` count: read as 0."""
    block = json.loads(GOLDEN.read_text())["judges"]["pref"]
    del block["pairwise"]["inconsistent"]
    judge = JudgeSummary.model_validate(block)
    assert judge.pairwise is not None
    assert (judge.pairwise.n, judge.pairwise.inconsistent) == (5, 0)

"""summary.json agreement: judges and verdicts vs human labels, jury members among themselves."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.agreement import fleiss_kappa, krippendorff_alpha, wilson_interval
from agentjudge.harness import Suite, iter_rows, render_report, run_suite
from agentjudge.harness._summary import RunAggregate

# Each judge answers what the case's input tells it to: {"a": "pass", "b": "fail", ...}.
JUDGES = """
from agentjudge import Judgment
from agentjudge.engine import Cascade, Jury, Tier

def _answer(ctx, name):
    word = ctx.input[name]
    if word == "pass":
        return Judgment.passed("p")
    if word == "fail":
        return Judgment.failed("f")
    if word == "abstain":
        return Judgment.abstained("unsure")
    if word == "raise":
        raise RuntimeError("judge bug")
    if word == "no":  # an LLM judge's verdict: FAIL labelled "no" ("yes" is PASS, below)
        return Judgment.failed("n", label="no")
    if word == "irrelevant":  # a classifier's fail label
        return Judgment.failed("i", label="irrelevant")
    if isinstance(word, float):
        return Judgment.from_score(word)
    return Judgment.passed("labelled", label=word)

def a(ctx):
    return _answer(ctx, "a")

def b(ctx):
    return _answer(ctx, "b")

def c(ctx):
    return _answer(ctx, "c")

trio = [a, b, c]
duo = [a, b]
panel = Jury([a, b, c], name="panel")
one = [a]
cascade = Cascade([Tier("cheap", Jury([a, b])), Tier("final", c)])
"""

TASK = """
def echo(case):
    return "out"
"""


def run_rows(
    tmp_path: Path, rows: list[dict[str, Any]], judges: str = "trio", **settings: Any
) -> dict[str, Any]:
    """Run the rows through the named judges; the summary.json written, as JSON."""
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    (tmp_path / "task.py").write_text(textwrap.dedent(TASK), encoding="utf-8")
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES), encoding="utf-8")
    suite = Suite(
        dataset=Path("data.jsonl"),
        task="task.py:echo",
        judges=f"judges.py:{judges}",
        base_dir=tmp_path,
        allow_errors=True,
        **settings,
    )
    anyio.run(lambda: run_suite(suite, out=tmp_path / "out"))
    data: dict[str, Any] = json.loads((tmp_path / "out" / "summary.json").read_text())
    return data


def trio_rows() -> list[dict[str, Any]]:
    answers = [
        ("pass", "pass", "pass", True),
        ("pass", "fail", "pass", True),
        ("fail", "fail", "pass", False),
        ("pass", "fail", "pass", False),
        ("pass", "pass", "pass", True),
        ("abstain", "fail", "pass", False),
        ("raise", "fail", "pass", None),  # unlabelled: counts for the jury, not for agreement
    ]
    return [
        {"id": f"q{i}", "input": {"a": x, "b": y, "c": z}, **({} if h is None else {"human": h})}
        for i, (x, y, z, h) in enumerate(answers)
    ]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_judge_agreement_matches_hand_computed_values(tmp_path: Path) -> None:
    """n, accuracy (Wilson), Cohen's kappa, alpha, confusion and abstentions per judge."""
    data = run_rows(tmp_path, trio_rows())
    a = data["judges"]["a"]["agreement"]
    # a vs human on the 5 labelled cases it passed or failed: p/p p/p f/f p/f p/p.
    assert (a["n"], a["accuracy"], a["accuracy_ci95"]) == (5, 0.8, list(wilson_interval(4, 5)))
    assert a["cohen_kappa"] == pytest.approx(6 / 11)  # (0.8 - 0.56) / (1 - 0.56)
    human = ["pass", "pass", "fail", "fail", "pass"]
    judge = ["pass", "pass", "fail", "pass", "pass"]
    assert a["krippendorff_alpha"] == pytest.approx(krippendorff_alpha([human, judge]))
    assert a["confusion"] == {"fail": {"fail": 1, "pass": 1}, "pass": {"pass": 3}}
    assert a["abstained"] == {"abstain": 1, "error": 0}
    assert (a["labelled"], a["not_judged"], a["level"], a["undefined"]) == (6, 0, "nominal", {})
    b = data["judges"]["b"]["agreement"]
    assert (b["n"], b["accuracy"], b["cohen_kappa"]) == (6, 5 / 6, pytest.approx(2 / 3))
    human = ["pass", "pass", "fail", "fail", "pass", "fail"]
    judge = ["pass", "fail", "fail", "fail", "pass", "fail"]
    assert b["krippendorff_alpha"] == pytest.approx(krippendorff_alpha([human, judge]))
    c = data["judges"]["c"]["agreement"]
    assert (c["n"], c["accuracy"], c["cohen_kappa"]) == (6, 0.5, 0.0)
    assert data["judges"]["a"]["pass_rate_ci95"] == list(wilson_interval(4, 5))


def test_verdict_agreement_measures_the_final_verdicts(tmp_path: Path) -> None:
    """verdict.agreement compares each labelled case's verdict with its label."""
    data = run_rows(tmp_path, trio_rows())
    rows = list(iter_rows(tmp_path / "out" / "results.jsonl"))
    pairs = [
        ("pass" if r["human"] else "fail", r["verdict"]["status"]) for r in rows if "human" in r
    ]
    decided = [(h, v) for h, v in pairs if v in ("pass", "fail")]
    agreement = data["verdict"]["agreement"]
    assert agreement["n"] == len(decided) and agreement["labelled"] == 6
    assert agreement["accuracy"] == sum(h == v for h, v in decided) / len(decided)


def test_jury_inter_judge_agreement(tmp_path: Path) -> None:
    """Fleiss on complete cases, alpha with missing ratings, pairwise shares with n and CI."""
    data = run_rows(tmp_path, trio_rows())
    jury = data["juries"]["jury"]
    assert jury["members"] == ["a", "b", "c"] and jury["tier"] is None
    inter = jury["inter_judge"]
    ratings = [(r["input"]["a"], r["input"]["b"], r["input"]["c"]) for r in trio_rows()]
    complete = [list(r) for r in ratings if r[0] in ("pass", "fail")]
    assert inter["n"] == 5
    assert inter["fleiss_kappa"] == pytest.approx(fleiss_kappa(complete))
    by_rater = [[r[i] if r[i] in ("pass", "fail") else None for r in ratings] for i in range(3)]
    assert inter["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(by_rater))
    assert inter["alpha_n"] == 7
    pairwise = inter["pairwise"]
    assert pairwise["a"]["b"] == {
        "n": 5, "agreement": 3 / 5, "agreement_ci95": list(wilson_interval(3, 5))
    }  # fmt: skip
    assert (pairwise["a"]["c"]["n"], pairwise["a"]["c"]["agreement"]) == (5, 4 / 5)
    assert (pairwise["b"]["c"]["n"], pairwise["b"]["c"]["agreement"]) == (7, 2 / 7)


def test_a_root_jury_is_named_by_its_own_name(tmp_path: Path) -> None:
    """A root Jury(name="panel") appears as "panel" (a list of judges as "jury")."""
    data = run_rows(tmp_path, trio_rows(), judges="panel")
    assert list(data["juries"]) == ["panel"]
    assert data["juries"]["panel"]["members"] == ["a", "b", "c"]


def test_undefined_coefficients_are_null_with_a_reason(tmp_path: Path) -> None:
    """One label only, or nothing to compare: null plus the reason, never NaN or a crash."""
    rows = [
        {"id": "x", "input": {"a": "pass", "b": "abstain", "c": "pass"}, "human": "pass"},
        {"id": "y", "input": {"a": "pass", "b": "abstain", "c": "pass"}, "human": True},
    ]
    data = run_rows(tmp_path, rows)
    a = data["judges"]["a"]["agreement"]
    assert (a["n"], a["accuracy"], a["cohen_kappa"]) == (2, 1.0, None)
    assert a["krippendorff_alpha"] is None
    assert "single label" in a["undefined"]["cohen_kappa"]
    b = data["judges"]["b"]["agreement"]
    assert (b["n"], b["accuracy"], b["accuracy_ci95"], b["cohen_kappa"]) == (0, None, None, None)
    assert b["undefined"]["cohen_kappa"] == "no case to compare (n = 0)"
    assert b["abstained"] == {"abstain": 2, "error": 0}
    inter = data["juries"]["jury"]["inter_judge"]
    assert (inter["n"], inter["fleiss_kappa"], inter["krippendorff_alpha"]) == (0, None, None)
    assert set(inter["undefined"]) == {"fleiss_kappa", "krippendorff_alpha"}
    text = (tmp_path / "out" / "summary.json").read_text()
    assert "NaN" not in text and "Infinity" not in text


def test_string_labels_compare_with_judgment_labels(tmp_path: Path) -> None:
    """A non-status label is compared with judgment.label; status words with the status."""
    rows = [
        {"id": "x", "input": {"a": "relevant"}, "human": "relevant"},
        {"id": "y", "input": {"a": "relevant"}, "human": "irrelevant"},
        {"id": "z", "input": {"a": "fail"}, "human": "fail"},
        {"id": "w", "input": {"a": "spam"}, "human": "pass"},  # PASS with label 'spam'
    ]
    a = run_rows(tmp_path, rows, judges="one")["judges"]["a"]["agreement"]
    assert a["confusion"] == {
        "fail": {"fail": 1}, "irrelevant": {"relevant": 1}, "pass": {"pass": 1},
        "relevant": {"relevant": 1},
    }  # fmt: skip
    assert a["accuracy"] == 0.75


def test_numeric_labels_use_the_interval_level_against_scores(tmp_path: Path) -> None:
    """Numbers are compared with the judge's score; alpha is interval-level."""
    scores = [0.0, 0.5, 1.0, 0.75]
    humans = [0, 0.5, 1, 0.5]
    rows = [
        {"id": f"q{i}", "input": {"a": s}, "human": h}
        for i, (s, h) in enumerate(zip(scores, humans, strict=True))
    ]
    a = run_rows(tmp_path, rows, judges="one")["judges"]["a"]["agreement"]
    assert a["level"] == "interval"
    assert (a["n"], a["accuracy"]) == (4, 0.75)
    assert a["krippendorff_alpha"] == pytest.approx(
        krippendorff_alpha([humans, scores], level="interval")
    )
    assert a["confusion"] == {"0": {"0": 1}, "0.5": {"0.5": 1, "0.75": 1}, "1": {"1": 1}}


def test_no_labels_means_no_agreement_block(tmp_path: Path) -> None:
    """Without human labels agreement is null, but juries are still measured."""
    rows = [{k: v for k, v in r.items() if k != "human"} for r in trio_rows()]
    data = run_rows(tmp_path, rows)
    assert data["judges"]["a"]["agreement"] is None
    assert data["verdict"]["agreement"] is None
    assert data["juries"]["jury"]["inter_judge"]["n"] == 5


def test_cascade_tier_juries_are_measured_by_tier(tmp_path: Path) -> None:
    """A cascade tier's jury is named after the tier; single-judge tiers are no jury."""
    rows = [{"id": f"q{i}", "input": {"a": "pass", "b": "fail", "c": "pass"}} for i in range(3)]
    data = run_rows(tmp_path, rows, judges="cascade")
    assert list(data["juries"]) == ["cheap"]
    jury = data["juries"]["cheap"]
    assert (jury["members"], jury["tier"]) == (["a", "b"], "cheap")
    assert jury["inter_judge"]["pairwise"]["a"]["b"]["agreement"] == 0.0


@pytest.mark.parametrize("judges", ["trio", "panel", "cascade", "one"])
def test_juries_known_at_start_are_the_ones_the_summary_reports(
    tmp_path: Path, judges: str
) -> None:
    """The gate check's juries (from the plan) equal the summary's (from the results)."""
    from agentjudge.engine import Evaluator
    from agentjudge.harness._agreement import jury_groups
    from agentjudge.harness._loading import load_object
    from agentjudge.harness._resolve import root_jury_name

    rows = [{"id": f"q{i}", "input": {"a": "pass", "b": "fail", "c": "pass"}} for i in range(2)]
    data = run_rows(tmp_path, rows, judges=judges)
    configured = load_object(f"judges.py:{judges}", what="judges", base_dir=tmp_path)
    ev = Evaluator(configured)
    planned = jury_groups(
        zip(ev.judge_names, ev.judge_tiers, strict=True),
        ev.judge_names,
        root_jury_name(configured),
    )
    assert {name: list(members) for name, (members, _) in planned.items()} == {
        name: jury["members"] for name, jury in data["juries"].items()
    }


def test_resumed_and_parallel_runs_give_the_same_agreement(tmp_path: Path) -> None:
    """Rows read back from results.jsonl (resume) and worker processes aggregate alike."""
    (tmp_path / "live").mkdir()
    (tmp_path / "par").mkdir()
    live = run_rows(tmp_path / "live", trio_rows())
    parallel = run_rows(tmp_path / "par", trio_rows(), workers=2)
    replay = RunAggregate(["a", "b", "c"])
    for row in iter_rows(tmp_path / "live" / "out" / "results.jsonl"):
        replay.add_row(row)
    for name in ("a", "b", "c"):
        expected = live["judges"][name]["agreement"]
        assert parallel["judges"][name]["agreement"] == expected
        again = replay.judge_summaries()[name].agreement
        assert again is not None and json.loads(again.model_dump_json()) == expected
    assert parallel["juries"] == live["juries"]
    juries = {k: v.model_dump(mode="json") for k, v in replay.jury_summaries().items()}
    assert json.loads(json.dumps(juries)) == live["juries"]
    assert not math.isnan(live["juries"]["jury"]["inter_judge"]["fleiss_kappa"])


def _agreeing_27_of_30(a_words: tuple[str, str], b_words: tuple[str, str]) -> list[dict[str, Any]]:
    """30 cases, 15 PASS and 15 FAIL for judge b; judge a differs on cases 0, 10 and 20."""
    rows = []
    for i in range(30):
        passed = i % 2 == 0
        a_passed = not passed if i % 10 == 0 else passed
        a, b = a_words[not a_passed], b_words[not passed]
        rows.append({"id": f"q{i}", "input": {"a": a, "b": b, "c": "pass"}})
    return rows


def test_judges_with_different_vocabularies_are_compared_on_status(tmp_path: Path) -> None:
    """An LLM judge's yes/no and a plain judge's pass/fail agree where their statuses do."""
    rows = _agreeing_27_of_30(("yes", "no"), ("pass", "fail"))
    gate = "jury.inter_judge.krippendorff_alpha>=0.75"
    data = run_rows(tmp_path, rows, judges="duo", gates=[gate])
    inter = data["juries"]["jury"]["inter_judge"]
    assert (inter["pairwise"]["a"]["b"]["n"], inter["pairwise"]["a"]["b"]["agreement"]) == (30, 0.9)
    assert inter["scale"] == "status"
    assert "labels differ" in inter["scale_reason"] or "without a label" in inter["scale_reason"]
    statuses = [
        [("pass" if r["input"][k] in ("yes", "pass") else "fail") for r in rows] for k in "ab"
    ]
    assert inter["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(statuses))
    assert inter["fleiss_kappa"] == pytest.approx(fleiss_kappa(list(zip(*statuses, strict=True))))
    assert inter["krippendorff_alpha"] > 0.75 and inter["fleiss_kappa"] > 0.75
    assert data["gates"] == [{"expr": gate, "value": inter["krippendorff_alpha"], "passed": True}]
    report = render_report(tmp_path / "out")
    assert "jury compared on status: " in report
    assert "a ~ b: 0.900 (n 30)" in report


def test_a_shared_label_vocabulary_is_compared_on_labels(tmp_path: Path) -> None:
    """Members with one vocabulary (two PASS labels) keep the finer label scale."""
    rows = _agreeing_27_of_30(("relevant", "irrelevant"), ("relevant", "irrelevant"))
    rows[1]["input"]["a"] = rows[1]["input"]["b"] = "partial"  # a second PASS label, shared
    rows[2]["input"]["a"] = "partial"  # PASS for both, a different label
    inter = run_rows(tmp_path, rows, judges="duo")["juries"]["jury"]["inter_judge"]
    assert (inter["scale"], inter["scale_reason"]) == (
        "label",
        "the members share one label vocabulary",
    )
    assert inter["pairwise"]["a"]["b"]["agreement"] == pytest.approx(26 / 30)

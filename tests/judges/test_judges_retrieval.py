from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from agentjudge.core import Context, Status
from agentjudge.judges import (
    CitationPrecision,
    CitationRecall,
    RefusalCorrectness,
    RefusalPolicy,
    RouteAccuracy,
    citation_precision,
    citation_recall,
    refusal_correctness,
    route_accuracy,
)


@dataclass
class Answer:
    text: str = ""
    citations: tuple[str, ...] = ()
    route: str | None = None
    refused: bool = False
    extra: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------- functions
def test_citation_precision_semantics() -> None:
    """Case-insensitive sets; empty predicted scores 1.0 only when nothing was expected."""
    assert citation_precision(["A", "b", "B"], ["a", "c"]) == 0.5
    assert citation_precision([], []) == 1.0
    assert citation_precision([], ["a"]) == 0.0
    assert citation_precision(["x"], []) == 0.0
    assert citation_precision([" Doc-1 "], ["doc-1"]) == 1.0


def test_citation_recall_semantics() -> None:
    """Empty expected scores 1.0 whatever was predicted; otherwise |E & P| / |E|."""
    assert citation_recall(["x", "y"], []) == 1.0
    assert citation_recall([], []) == 1.0
    assert citation_recall(["A"], ["a", "b", "c", "d"]) == 0.25


def test_citation_functions_reject_bare_strings() -> None:
    """A bare string is not a collection of citations: TypeError, not per-character sets."""
    with pytest.raises(TypeError):
        citation_precision("abc", ["abc"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        citation_recall(["a"], [1])  # type: ignore[list-item]


def test_route_accuracy_trims_and_ignores_case() -> None:
    """Routes compare trimmed and case-insensitively."""
    assert route_accuracy(" Rules ", "rules") == 1.0
    assert route_accuracy("repair", "rules") == 0.0
    assert route_accuracy("", "") == 1.0
    with pytest.raises(TypeError):
        route_accuracy(None, "x")  # type: ignore[arg-type]


def test_refusal_correctness_three_policies() -> None:
    """REQUIRED and FORBIDDEN score 1.0 / 0.0; ACCEPTABLE is None; bools map to policies."""
    assert refusal_correctness(True, RefusalPolicy.REQUIRED) == 1.0
    assert refusal_correctness(False, RefusalPolicy.REQUIRED) == 0.0
    assert refusal_correctness(False, RefusalPolicy.FORBIDDEN) == 1.0
    assert refusal_correctness(True, "forbidden") == 0.0
    assert refusal_correctness(True, RefusalPolicy.ACCEPTABLE) is None
    assert refusal_correctness(False, "Acceptable") is None
    assert refusal_correctness(True, True) == 1.0
    assert refusal_correctness(True, False) == 0.0
    with pytest.raises(ValueError):
        refusal_correctness(True, "maybe")
    with pytest.raises(TypeError):
        refusal_correctness(1, RefusalPolicy.REQUIRED)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- judges
def test_judge_names_and_metric_keys() -> None:
    """The four judges are named after their metric and report under it."""
    for judge, key in (
        (CitationPrecision(), "citation_precision"),
        (CitationRecall(), "citation_recall"),
        (RouteAccuracy(), "route_accuracy"),
        (RefusalCorrectness(), "refusal_correctness"),
    ):
        assert judge.name == key and judge.metric_key == key
        assert judge.kind == "deterministic"
    assert CitationPrecision(name="p", metric_key="prec").metric_key == "prec"
    with pytest.raises(ValueError):
        CitationRecall(threshold=1.5)


async def test_citation_judges_read_attributes_and_keys() -> None:
    """Prediction from an attribute of ctx.output, truth from a key of ctx.expected."""
    ctx = Context(output=Answer(citations=("A", "b")), expected={"citations": ["a", "c", "d"]})
    precision = await CitationPrecision()(ctx)
    assert precision.status is Status.PASS and precision.score == 0.5
    assert precision.metadata["matched"] == 1
    recall = await CitationRecall()(ctx)
    assert recall.status is Status.FAIL and recall.score == pytest.approx(1 / 3)
    strict = await CitationPrecision(threshold=1.0)(ctx)
    assert strict.status is Status.FAIL


async def test_missing_fields_are_errors_naming_the_field() -> None:
    """Missing output / expected fields are ERROR, never a silent default score."""
    no_expected = await CitationRecall()(Context(output={"citations": []}))
    assert no_expected.status is Status.ERROR and "ctx.expected" in no_expected.reasoning
    no_key = await RouteAccuracy()(Context(output={"text": "x"}, expected={"route": "a"}))
    assert no_key.status is Status.ERROR and "'route'" in no_key.reasoning
    none_route = await RouteAccuracy()(Context(output=Answer(), expected={"route": "a"}))
    assert none_route.status is Status.ERROR and "ctx.output.route is None" in none_route.reasoning
    bad_type = await CitationPrecision()(
        Context(output={"citations": "doc-1"}, expected={"citations": []})
    )
    assert bad_type.status is Status.ERROR


async def test_route_accuracy_judge() -> None:
    """PASS with score 1.0 on a match, FAIL with 0.0 otherwise."""
    ok = await RouteAccuracy()(Context(output=Answer(route="Rules"), expected={"route": "rules"}))
    assert ok.status is Status.PASS and ok.score == 1.0
    bad = await RouteAccuracy()(Context(output=Answer(route="Repair"), expected={"route": "rules"}))
    assert bad.status is Status.FAIL and bad.score == 0.0
    assert "Repair" in bad.reasoning


async def test_refusal_correctness_judge() -> None:
    """REQUIRED/FORBIDDEN score; ACCEPTABLE abstains so it leaves the means; bools allowed."""
    judge = RefusalCorrectness()
    refused = Answer(refused=True)
    answered = Answer(refused=False)
    assert (await judge(Context(output=refused, expected={"refusal": "required"}))).score == 1.0
    wrong = await judge(Context(output=answered, expected={"refusal": RefusalPolicy.REQUIRED}))
    assert wrong.status is Status.FAIL and wrong.score == 0.0
    acceptable = await judge(Context(output=refused, expected={"refusal": "acceptable"}))
    assert acceptable.status is Status.ABSTAIN
    assert acceptable.effective_score is None
    assert (await judge(Context(output=answered, expected={"refusal": False}))).is_pass
    bad = await judge(Context(output=answered, expected={"refusal": "sometimes"}))
    assert bad.status is Status.ERROR and "refusal" in bad.reasoning
    not_bool = await judge(Context(output={"refused": "yes"}, expected={"refusal": True}))
    assert not_bool.status is Status.ERROR

"""`Judgment.confidence`: range, ERROR rule, wire format, and the unvalidated-judgment check."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from agentjudge import Judgment, Status
from agentjudge.core import judgment_problem
from agentjudge.harness._results import encode_row, judgment_dict


@pytest.mark.parametrize("value", [0, 0.0, 0.25, 1, 1.0])
def test_confidence_in_range_is_kept_as_float(value: float) -> None:
    j = Judgment.passed(confidence=value)
    assert j.confidence == float(value)
    assert type(j.confidence) is float


@pytest.mark.parametrize("value", [-0.01, 1.01, math.nan, math.inf, True, "0.5"])
def test_confidence_outside_range_or_not_a_number_is_refused(value: object) -> None:
    with pytest.raises(ValidationError, match="confidence"):
        Judgment.passed(confidence=value)


@pytest.mark.parametrize("status", [Status.PASS, Status.FAIL, Status.ABSTAIN])
def test_confidence_allowed_on_every_status_but_error(status: Status) -> None:
    assert Judgment(status=status, reasoning="r", confidence=0.5).confidence == 0.5


def test_confidence_forbidden_on_error() -> None:
    with pytest.raises(ValidationError, match="error judgment must not carry a confidence"):
        Judgment.errored("boom", confidence=0.5)


def test_default_is_none_and_left_out_of_results_rows() -> None:
    j = Judgment.passed()
    assert j.confidence is None
    assert "confidence" not in judgment_dict(j)


def test_wire_format_round_trips() -> None:
    j = Judgment.failed("no", confidence=0.75, label="bad")
    dumped = j.model_dump(mode="json")
    assert dumped["confidence"] == 0.75
    assert Judgment.model_validate(dumped) == j
    assert judgment_dict(j)["confidence"] == 0.75


def test_fast_constructor_carries_confidence() -> None:
    j = Judgment.fast(
        status=Status.PASS,
        score=None,
        label=None,
        confidence=0.5,
        reasoning="",
        checks=(),
        metadata={},
    )
    assert j.confidence == 0.5


@pytest.mark.parametrize(
    ("status", "confidence", "problem"),
    [
        (Status.PASS, 1.5, "confidence"),
        (Status.PASS, "high", "confidence"),
        (Status.ERROR, 0.5, "confidence"),
        (Status.PASS, 0.5, None),
    ],
)
def test_judgment_problem_checks_confidence(
    status: Status, confidence: object, problem: str | None
) -> None:
    j = Judgment.model_construct(status=status, reasoning="r", confidence=confidence)
    found = judgment_problem(j)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_encoded_case_row_carries_confidence() -> None:
    import json

    from agentjudge import JudgeResult, Verdict
    from agentjudge.harness._results import encode_case

    j = Judgment.passed("ok", confidence=0.125)
    verdict = Verdict(judgment=j, results=(JudgeResult(name="j", judgment=j),))
    text = encode_case("c1", {"input": "x"}, verdict, 0.0, None)
    row = json.loads(text)
    assert row["results"][0]["judgment"]["confidence"] == 0.125
    assert row["verdict"]["confidence"] == 0.125
    assert text == encode_row(row)

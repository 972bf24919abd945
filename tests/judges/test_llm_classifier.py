from __future__ import annotations

import math

import pytest

from agentjudge.core import Status
from agentjudge.judges._classifier import LabelClassifier
from agentjudge.models._types import ModelResponse, Usage


def test_whole_response_normalised_match() -> None:
    """Matching is on the whole response after strip().casefold()."""
    c = LabelClassifier.pass_fail("Correct", "Incorrect")
    j = c.classify("  CORRECT \n")
    assert j.status is Status.PASS
    assert j.label == "correct"
    assert j.reasoning == "  CORRECT \n"
    assert j.score is None
    assert c.classify("incorrect").status is Status.FAIL


@pytest.mark.parametrize("text", ["correct.", "It is correct", "incorrect!", "", "   "])
def test_no_substring_match(text: str) -> None:
    """Anything but an exact label abstains with the raw text."""
    j = LabelClassifier.pass_fail("correct", "incorrect").classify(text)
    assert j.status is Status.ABSTAIN
    assert j.metadata["raw_output"] == text
    assert j.label is None and j.score is None
    assert "did not match any label" in j.reasoning
    if text.strip():
        assert text.strip() in j.reasoning


def test_irrelevant_never_matches_relevant() -> None:
    """'irrelevant' is not 'relevant'."""
    c = LabelClassifier({"relevant": Status.PASS})
    assert c.classify("irrelevant").status is Status.ABSTAIN


def test_casefold_handles_unicode() -> None:
    """casefold() normalises e.g. German sharp s."""
    c = LabelClassifier({"STRASSE": Status.PASS})
    assert c.classify("straße").status is Status.PASS


def test_declared_scores() -> None:
    """A PASS/FAIL label carries its declared score."""
    c = LabelClassifier(
        {"good": Status.PASS, "meh": Status.FAIL, "bad": Status.FAIL},
        scores={"Good": 1.0, "meh": 0.4},
    )
    assert c.classify("good").score == 1.0
    assert c.classify("meh").score == 0.4
    assert c.classify("bad").score is None
    assert c.score_for(" GOOD ") == 1.0


def test_abstain_label() -> None:
    """An ABSTAIN mapping yields ABSTAIN with the label."""
    c = LabelClassifier({"yes": Status.PASS, "unsure": Status.ABSTAIN})
    j = c.classify("Unsure")
    assert j.status is Status.ABSTAIN
    assert j.label == "unsure"
    assert j.reasoning == "Unsure"


def test_status_given_as_string() -> None:
    """Statuses may be given by their wire value."""
    c = LabelClassifier({"ok": "pass"})  # type: ignore[dict-item]
    assert c.labels == {"ok": Status.PASS}


@pytest.mark.parametrize(
    ("mapping", "scores", "match"),
    [
        ({}, None, "at least one"),
        ({"  ": Status.PASS}, None, "non-blank"),
        ({"Yes": Status.PASS, " yes ": Status.FAIL}, None, "duplicates"),
        ({"x": Status.ERROR}, None, "ERROR"),
        ({"x": "maybe"}, None, "status must be"),
        ({"x": Status.PASS}, {"y": 0.5}, "not in the mapping"),
        ({"x": Status.PASS}, {"x": math.nan}, "finite"),
        ({"x": Status.PASS}, {"x": math.inf}, "finite"),
        ({"x": Status.PASS}, {"x": 1.5}, r"\[0, 1\]"),
        ({"x": Status.PASS}, {"x": -0.1}, r"\[0, 1\]"),
        ({"x": Status.PASS}, {"x": True}, "number"),
        ({"x": Status.ABSTAIN}, {"x": 0.5}, "ABSTAIN"),
    ],
)
def test_validation(mapping: dict, scores: dict | None, match: str) -> None:  # type: ignore[type-arg]
    """Bad mappings and scores are ValueErrors at construction."""
    with pytest.raises(ValueError, match=match):
        LabelClassifier(mapping, scores=scores)


def test_pass_fail_same_label_rejected() -> None:
    """pass_fail with labels equal after normalisation is a ValueError."""
    with pytest.raises(ValueError, match="duplicates"):
        LabelClassifier.pass_fail("Yes", "YES ")


def test_classify_response_adds_model_and_usage() -> None:
    """classify_response records model, client, usage and cached in the metadata."""
    c = LabelClassifier.pass_fail("yes", "no")
    resp = ModelResponse(text="Yes", model="gpt-x", usage=Usage(input_tokens=3, output_tokens=1))
    j = c.classify_response(resp, client="openai:gpt-x")
    assert j.status is Status.PASS
    assert j.metadata["model"] == "gpt-x"
    assert j.metadata["client"] == "openai:gpt-x"
    assert j.metadata["usage"] == {"input_tokens": 3, "output_tokens": 1}
    assert j.metadata["cached"] is False
    assert j.metadata["raw_output"] == "Yes"


def test_classify_response_without_usage() -> None:
    """Empty usage is omitted from the metadata."""
    j = LabelClassifier.pass_fail("yes", "no").classify_response(ModelResponse(text="maybe"))
    assert j.status is Status.ABSTAIN
    assert "usage" not in j.metadata
    assert "model" not in j.metadata

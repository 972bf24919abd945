"""Core values: every invariant of Check, Judgment, Message, Context and JudgeResult."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentjudge import (
    Check,
    Context,
    ExecutionStatus,
    JudgeResult,
    Judgment,
    Message,
    Status,
    Verdict,
)

# --------------------------------------------------------------------------- Status / enums


def test_status_wire_values_are_lower_case() -> None:
    """Status serialises to the four lower-case wire values."""
    assert [s.value for s in Status] == ["pass", "fail", "abstain", "error"]


def test_execution_status_values() -> None:
    """ExecutionStatus has the six outcomes of the system under test, lower case."""
    assert [s.value for s in ExecutionStatus] == [
        "success",
        "failed",
        "timeout",
        "cancelled",
        "refused",
        "unknown",
    ]


# --------------------------------------------------------------------------- Check


def test_check_defaults_message_to_empty() -> None:
    """A Check needs a name and a verdict; the message defaults to the empty string."""
    check = Check(name="compiles", passed=True)
    assert (check.name, check.passed, check.message) == ("compiles", True, "")


@pytest.mark.parametrize("name", ["", "   ", "\t\n"])
def test_check_rejects_blank_name(name: str) -> None:
    """A blank check name is rejected, naming the `name` field."""
    with pytest.raises(ValidationError, match=r"name[\s\S]*non-blank"):
        Check(name=name, passed=True)


@pytest.mark.parametrize("passed", ["yes", 1, None])
def test_check_passed_must_be_a_real_bool(passed: object) -> None:
    """`passed` accepts only a bool (no "yes", no 1), naming the field."""
    with pytest.raises(ValidationError, match="passed"):
        Check(name="c", passed=passed)  # type: ignore[arg-type]


def test_check_is_frozen() -> None:
    """Checks are immutable."""
    check = Check(name="c", passed=True)
    with pytest.raises(ValidationError):
        check.passed = False  # type: ignore[misc]


# --------------------------------------------------------------------------- Judgment invariants


@pytest.mark.parametrize("status", [Status.ABSTAIN, Status.ERROR])
@pytest.mark.parametrize("reasoning", ["", "  ", "\n\t"])
def test_abstain_and_error_need_non_blank_reasoning(status: Status, reasoning: str) -> None:
    """ABSTAIN and ERROR with blank reasoning are rejected, naming `reasoning`."""
    with pytest.raises(ValidationError, match="reasoning"):
        Judgment(status=status, reasoning=reasoning)


@pytest.mark.parametrize("status", [Status.PASS, Status.FAIL])
def test_pass_and_fail_allow_blank_reasoning(status: Status) -> None:
    """PASS and FAIL need no reasoning."""
    assert Judgment(status=status).reasoning == ""


@pytest.mark.parametrize("status", [Status.ABSTAIN, Status.ERROR])
@pytest.mark.parametrize("score", [0.0, 0.5, 1.0])
def test_score_forbidden_on_abstain_and_error(status: Status, score: float) -> None:
    """A score on ABSTAIN or ERROR is rejected, naming `score`."""
    with pytest.raises(ValidationError, match=r"score[\s\S]*must not carry a score"):
        Judgment(status=status, reasoning="why", score=score)


@pytest.mark.parametrize(
    ("score", "rule"),
    [
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        (-0.1, "between 0.0 and 1.0"),
        (1.0000001, "between 0.0 and 1.0"),
    ],
)
def test_score_must_be_finite_and_within_unit_interval(score: float, rule: str) -> None:
    """NaN, infinities, -0.1 and 1.0000001 are rejected, naming `score` and the rule."""
    with pytest.raises(ValidationError, match=rf"score[\s\S]*{rule}"):
        Judgment(status=Status.PASS, score=score)


@pytest.mark.parametrize("score", [True, False])
def test_bool_score_rejected(score: bool) -> None:
    """A bool is not a score (True is not 1.0)."""
    with pytest.raises(ValidationError, match=r"score[\s\S]*real number"):
        Judgment(status=Status.PASS, score=score)


@pytest.mark.parametrize("score", ["0.5", [0.5], object()])
def test_non_numeric_score_rejected(score: object) -> None:
    """Strings and other objects are not scores."""
    with pytest.raises(ValidationError, match="score"):
        Judgment(status=Status.PASS, score=score)  # type: ignore[arg-type]


@pytest.mark.parametrize("score", [0, 0.0, 0.25, 1, 1.0])
def test_score_bounds_inclusive_and_stored_as_float(score: float) -> None:
    """0 and 1 are valid scores (ints become floats)."""
    judgment = Judgment(status=Status.FAIL, score=score)
    assert judgment.score == float(score)
    assert type(judgment.score) is float


@pytest.mark.parametrize("label", ["", "   "])
def test_blank_label_rejected(label: str) -> None:
    """A label, when set, must be non-blank."""
    with pytest.raises(ValidationError, match=r"label[\s\S]*non-blank"):
        Judgment(status=Status.PASS, label=label)


def test_label_forbidden_on_error_but_allowed_on_abstain() -> None:
    """ERROR must not carry a label; ABSTAIN may."""
    with pytest.raises(ValidationError, match=r"label[\s\S]*error"):
        Judgment(status=Status.ERROR, reasoning="crashed", label="x")
    assert Judgment(status=Status.ABSTAIN, reasoning="unsure", label="maybe").label == "maybe"


def test_unknown_field_rejected() -> None:
    """Judgment forbids unknown fields (typos do not pass silently)."""
    with pytest.raises(ValidationError, match="scroe"):
        Judgment(status=Status.PASS, scroe=0.5)  # type: ignore[call-arg]


def test_judgment_is_frozen() -> None:
    """Judgments are immutable."""
    judgment = Judgment.passed("ok")
    with pytest.raises(ValidationError):
        judgment.status = Status.FAIL  # type: ignore[misc]


def test_checks_become_a_tuple() -> None:
    """Checks given as a list (or dicts) are stored as a tuple of Check."""
    judgment = Judgment(status=Status.PASS, checks=[{"name": "a", "passed": True}])  # type: ignore[list-item]
    assert judgment.checks == (Check(name="a", passed=True),)


@pytest.mark.parametrize("status", ["PASS", "Pass", "ok", ""])
def test_status_other_than_lower_case_wire_value_refused(status: str) -> None:
    """Only the lower-case wire values parse; the error names `status`."""
    with pytest.raises(ValidationError, match=r"status[\s\S]*lower case"):
        Judgment(status=status)  # type: ignore[arg-type]


def test_upper_case_status_refused_when_parsing_json() -> None:
    """`model_validate_json` refuses "ABSTAIN" (the wire is case-sensitive)."""
    with pytest.raises(ValidationError, match="status"):
        Judgment.model_validate_json('{"status": "ABSTAIN", "reasoning": "x"}')
    parsed = Judgment.model_validate_json('{"status": "abstain", "reasoning": "x"}')
    assert parsed.status is Status.ABSTAIN


# --------------------------------------------------------------------------- factories


def test_factories_set_status_and_pass_fields_through() -> None:
    """passed/failed/abstained/errored build the right status and pass fields through."""
    p = Judgment.passed("fine", score=0.9, label="good", checks=(Check(name="c", passed=True),))
    assert (p.status, p.reasoning, p.score, p.label) == (Status.PASS, "fine", 0.9, "good")
    assert Judgment.failed().status is Status.FAIL
    assert Judgment.failed().reasoning == ""
    a = Judgment.abstained("not applicable", label="n/a")
    assert (a.status, a.reasoning, a.label) == (Status.ABSTAIN, "not applicable", "n/a")
    e = Judgment.errored("judge crashed")
    assert (e.status, e.reasoning) == (Status.ERROR, "judge crashed")


def test_factories_enforce_the_invariants() -> None:
    """The factories cannot build an invalid judgment either."""
    with pytest.raises(ValidationError, match="reasoning"):
        Judgment.abstained("")
    with pytest.raises(ValidationError, match="reasoning"):
        Judgment.errored("  ")
    with pytest.raises(ValidationError, match="score"):
        Judgment.errored("boom", score=0.1)


@pytest.mark.parametrize(
    "factory",
    [
        Judgment.passed,
        Judgment.failed,
        lambda **kw: Judgment.abstained("why", **kw),
        lambda **kw: Judgment.errored("why", **kw),
    ],
)
def test_factories_refuse_reserved_aggregation_key(factory: Any) -> None:
    """Factories refuse metadata key "aggregation" (reserved for voting evidence)."""
    with pytest.raises(ValueError, match="aggregation"):
        factory(metadata={"aggregation": {"strategy": "fake"}})


def test_constructor_accepts_aggregation_key() -> None:
    """The plain constructor may carry the evidence (that is how voting stores it)."""
    judgment = Judgment(status=Status.PASS, metadata={"aggregation": {"strategy": "majority"}})
    assert judgment.metadata["aggregation"]["strategy"] == "majority"


def test_from_score_normalises_and_applies_threshold() -> None:
    """from_score(82, low=0, high=100, threshold=0.8) is PASS with score 0.82."""
    judgment = Judgment.from_score(82, low=0, high=100, threshold=0.8)
    assert judgment.status is Status.PASS
    assert judgment.score == pytest.approx(0.82)


@pytest.mark.parametrize(
    ("score", "threshold", "status", "stored"),
    [
        (0.5, 0.5, Status.PASS, 0.5),  # threshold is inclusive
        (0.49, 0.5, Status.FAIL, 0.49),
        (0.0, 0.0, Status.PASS, 0.0),
        (1.0, 1.0, Status.PASS, 1.0),
    ],
)
def test_from_score_threshold_inclusive(
    score: float, threshold: float, status: Status, stored: float
) -> None:
    """PASS iff the normalised score >= threshold; the normalised score is stored."""
    judgment = Judgment.from_score(score, threshold=threshold)
    assert judgment.status is status
    assert judgment.score == pytest.approx(stored)


def test_from_score_other_range_and_fields() -> None:
    """from_score maps [low, high] to [0, 1] and passes reasoning and fields through."""
    judgment = Judgment.from_score(3, low=1, high=5, reasoning="3 of 5", label="mid")
    assert judgment.score == pytest.approx(0.5)
    assert (judgment.status, judgment.reasoning, judgment.label) == (Status.PASS, "3 of 5", "mid")
    low_end = Judgment.from_score(-10, low=-10, high=10, threshold=0.1)
    assert (low_end.status, low_end.score) == (Status.FAIL, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"score": math.nan}, "score must be finite"),
        ({"score": math.inf}, "score must be finite"),
        ({"score": 0.5, "high": math.inf}, "high must be finite"),
        ({"score": 0.5, "low": -math.inf}, "low must be finite"),
        ({"score": 0.5, "threshold": math.nan}, "threshold must be finite"),
        ({"score": 0.5, "threshold": 1.5}, "threshold must be within"),
        ({"score": 0.5, "threshold": -0.1}, "threshold must be within"),
        ({"score": 5, "low": 5, "high": 5}, "high must be greater than low"),
        ({"score": 5, "low": 10, "high": 0}, "high must be greater than low"),
        ({"score": 101, "low": 0, "high": 100}, "outside"),
        ({"score": -1, "low": 0, "high": 100}, "outside"),
        ({"score": True}, "score must be a real number"),
        ({"score": "0.5"}, "score must be a real number"),
    ],
)
def test_from_score_rejects_bad_inputs(kwargs: dict[str, Any], message: str) -> None:
    """from_score refuses non-finite, bool, out-of-range inputs and high <= low, naming them."""
    score = kwargs.pop("score")
    with pytest.raises(ValueError, match=message):
        Judgment.from_score(score, **kwargs)


def test_from_score_refuses_reserved_aggregation_key() -> None:
    """from_score is a factory too: metadata "aggregation" is refused."""
    with pytest.raises(ValueError, match="aggregation"):
        Judgment.from_score(0.7, metadata={"aggregation": 1})


# --------------------------------------------------------------------------- derived


@pytest.mark.parametrize(
    ("judgment", "effective"),
    [
        (Judgment.passed(), 1.0),
        (Judgment.failed(), 0.0),
        (Judgment.passed(score=0.6), 0.6),
        (Judgment.failed(score=0.7), 0.7),
        (Judgment.abstained("n/a"), None),
        (Judgment.errored("boom"), None),
    ],
)
def test_effective_score(judgment: Judgment, effective: float | None) -> None:
    """effective_score: the score if set, else 1.0 PASS / 0.0 FAIL / None otherwise."""
    assert judgment.effective_score == effective


def test_is_pass_only_for_pass() -> None:
    """is_pass is true for PASS only."""
    assert Judgment.passed().is_pass
    assert not Judgment.failed().is_pass
    assert not Judgment.abstained("x").is_pass
    assert not Judgment.errored("x").is_pass


# --------------------------------------------------------------------------- serialisation


def _rich_judgment() -> Judgment:
    return Judgment(
        status=Status.FAIL,
        score=0.25,
        label="partial",
        reasoning="two of eight",
        checks=(Check(name="a", passed=True), Check(name="b", passed=False, message="missing")),
        metadata={
            "model": "m",
            "nested": {"list": [1, 2.5, "x", True, {"deep": []}], "empty": {}},
            "big": 2**53 - 1,
            "neg": -(2**53 - 1),
            "unicode": "héllo ✓",
        },
    )


@pytest.mark.parametrize(
    "judgment",
    [
        _rich_judgment(),
        Judgment.passed(),
        Judgment.abstained("not applicable", label="n/a"),
        Judgment.errored("crashed"),
        Judgment.from_score(0.3),
    ],
)
def test_json_round_trip_is_exact(judgment: Judgment) -> None:
    """model_dump_json -> model_validate_json gives an equal judgment (nested metadata too)."""
    text = judgment.model_dump_json()
    back = Judgment.model_validate_json(text)
    assert back == judgment
    assert back.model_dump_json() == text


def test_python_round_trip_is_exact() -> None:
    """model_dump(mode="json") -> model_validate gives an equal judgment."""
    judgment = _rich_judgment()
    assert Judgment.model_validate(judgment.model_dump(mode="json")) == judgment


def test_dump_key_order_and_lower_case_status() -> None:
    """The dump has keys status, score, label, reasoning, checks, metadata; status lower case."""
    dumped = _rich_judgment().model_dump(mode="json", exclude_none=True)
    assert list(dumped) == ["status", "score", "label", "reasoning", "checks", "metadata"]
    assert dumped["status"] == "fail"
    assert dumped["metadata"]["nested"]["list"] == [1, 2.5, "x", True, {"deep": []}]


def test_dump_exclude_none_omits_absent_optionals() -> None:
    """With exclude_none an absent score and label are omitted, the rest keeps its order."""
    dumped = Judgment.passed("All checks passed").model_dump(mode="json", exclude_none=True)
    assert dumped == {
        "status": "pass",
        "reasoning": "All checks passed",
        "checks": [],
        "metadata": {},
    }
    assert list(dumped) == ["status", "reasoning", "checks", "metadata"]


def test_round_tripped_metadata_is_still_read_only() -> None:
    """Metadata parsed from JSON is stored read-only like any other."""
    back = Judgment.model_validate_json(_rich_judgment().model_dump_json())
    with pytest.raises(TypeError):
        back.metadata["model"] = "other"  # type: ignore[index]


# --------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    ("metadata", "path"),
    [
        ({"a": {"b": [1, None]}}, r"metadata\.a\.b\[1\]"),
        ({"a": None}, r"metadata\.a"),
        ({"x": [[0, math.nan]]}, r"metadata\.x\[0\]\[1\]"),
        ({"x": {"y": math.inf}}, r"metadata\.x\.y"),
        ({"big": 2**53}, r"metadata\.big"),
        ({"small": -(2**53)}, r"metadata\.small"),
        ({"deep": {"n": [10**20]}}, r"metadata\.deep\.n\[0\]"),
        ({"s": {1, 2}}, r"metadata\.s"),
        ({"o": object()}, r"metadata\.o"),
        ({"b": b"bytes"}, r"metadata\.b"),
        ({"p": Path("x")}, r"metadata\.p"),
        ({"f": frozenset()}, r"metadata\.f"),
        ({"a": {"b": {2: "x"}}}, r"metadata\.a\.b"),
        ({"surrogate": "\ud800"}, r"metadata\.surrogate"),
    ],
)
def test_metadata_deep_validation_names_the_path(metadata: dict[str, Any], path: str) -> None:
    """Non-portable metadata anywhere is rejected with the offending path named."""
    with pytest.raises(ValidationError, match=rf"{path}: "):
        Judgment(status=Status.PASS, metadata=metadata)


def test_metadata_non_string_top_level_key_rejected() -> None:
    """A non-str key at the top level is rejected."""
    with pytest.raises(ValidationError, match=r"metadata[\s\S]*key 1 is not a string"):
        Judgment(status=Status.PASS, metadata={1: "x"})  # type: ignore[dict-item]


@pytest.mark.parametrize("metadata", [[("a", 1)], "text", 3])
def test_metadata_must_be_a_mapping(metadata: object) -> None:
    """Metadata that is not a mapping is rejected, naming the field."""
    with pytest.raises(ValidationError, match="metadata"):
        Judgment(status=Status.PASS, metadata=metadata)  # type: ignore[arg-type]


def test_metadata_portable_values_accepted() -> None:
    """str, bool, int within +-(2**53-1), finite float, list, dict with str keys are accepted."""
    value = {"s": "x", "b": False, "i": 2**53 - 1, "n": -(2**53 - 1), "f": -0.5, "l": [], "d": {}}
    judgment = Judgment(status=Status.PASS, metadata=value)
    assert judgment.metadata["i"] == 2**53 - 1
    assert judgment.metadata["b"] is False


def test_metadata_is_a_copy_of_the_callers_dict() -> None:
    """Mutating the caller's dict (or nested values) afterwards changes nothing."""
    inner = {"tags": ["a", "b"]}
    given: dict[str, Any] = {"inner": inner, "n": 1}
    judgment = Judgment(status=Status.PASS, metadata=given)
    given["n"] = 2
    given["new"] = True
    inner["tags"].append("c")
    inner["added"] = 1
    assert dict(judgment.metadata) == {"inner": judgment.metadata["inner"], "n": 1}
    assert list(judgment.metadata["inner"]["tags"]) == ["a", "b"]
    assert "added" not in judgment.metadata["inner"]


def test_metadata_stored_read_only_at_every_level() -> None:
    """The stored mapping refuses item assignment, nested dicts too; lists become tuples."""
    judgment = Judgment(status=Status.PASS, metadata={"a": {"b": [1, 2]}})
    assert isinstance(judgment.metadata, Mapping)
    with pytest.raises(TypeError):
        judgment.metadata["a"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        judgment.metadata["a"]["c"] = 1
    with pytest.raises(TypeError):
        del judgment.metadata["a"]  # type: ignore[attr-defined]
    assert judgment.metadata["a"]["b"] == (1, 2)


def test_metadata_keeps_insertion_order() -> None:
    """Metadata keeps the caller's key order (dumps are reproducible)."""
    judgment = Judgment(status=Status.PASS, metadata={"z": 1, "a": 2, "m": 3})
    assert list(judgment.metadata) == ["z", "a", "m"]
    assert list(judgment.model_dump(mode="json")["metadata"]) == ["z", "a", "m"]


# --------------------------------------------------------------------------- Message / Context


def test_message_fields_and_blank_role() -> None:
    """A Message has role and content (default ""); a blank role is rejected, naming `role`."""
    message = Message(role="user", content="hi")
    assert (message.role, message.content) == ("user", "hi")
    with pytest.raises(ValidationError, match="role"):
        Message(role=" ", content="hi")
    assert Message(role="user").content == ""


def test_context_defaults() -> None:
    """Every Context field has the documented default."""
    ctx = Context()
    assert ctx.input is None and ctx.output is None and ctx.expected is None
    assert ctx.messages == ()
    assert ctx.workspace is None
    assert ctx.status is ExecutionStatus.UNKNOWN
    assert ctx.started_at is None and ctx.duration is None and ctx.error is None
    assert dict(ctx.metadata) == {}


def test_context_accepts_all_fields() -> None:
    """Context stores any input/output/expected and the typed fields, coercing wire values."""
    started = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    ctx = Context(
        input={"q": 1},
        output=["x"],
        expected=object,
        messages=[{"role": "user", "content": "hi"}],  # type: ignore[list-item]
        workspace=Path("/tmp/ws"),
        status="success",  # type: ignore[arg-type]
        started_at=started,
        duration=timedelta(seconds=3),
        error="none",
        metadata={"k": object},
    )
    assert ctx.messages == (Message(role="user", content="hi"),)
    assert ctx.status is ExecutionStatus.SUCCESS
    assert ctx.expected is object and ctx.metadata["k"] is object


def test_context_rejects_unknown_fields_and_bad_status() -> None:
    """Unknown fields and non-wire statuses are rejected, naming the field."""
    with pytest.raises(ValidationError, match="outptu"):
        Context(outptu="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="status"):
        Context(status="SUCCESS")  # type: ignore[arg-type]


def test_context_metadata_is_a_read_only_copy() -> None:
    """Context metadata is copied: mutating the caller's dict changes nothing; no assignment."""
    given: dict[str, Any] = {"case_id": "c1"}
    ctx = Context(metadata=given)
    given["case_id"] = "c2"
    given["extra"] = 1
    assert dict(ctx.metadata) == {"case_id": "c1"}
    with pytest.raises(TypeError):
        ctx.metadata["case_id"] = "c3"  # type: ignore[index]


def test_context_metadata_needs_str_keys() -> None:
    """Context metadata keys must be strings and the value a mapping."""
    with pytest.raises(ValidationError, match=r"metadata[\s\S]*not a string"):
        Context(metadata={1: "x"})  # type: ignore[dict-item]
    with pytest.raises(ValidationError, match="metadata"):
        Context(metadata=["x"])  # type: ignore[arg-type]


def test_context_is_frozen() -> None:
    """Contexts are immutable."""
    ctx = Context(output="x")
    with pytest.raises(ValidationError):
        ctx.output = "y"  # type: ignore[misc]


def test_context_json_round_trip() -> None:
    """A Context of JSON values round-trips through JSON."""
    ctx = Context(
        input="q",
        output="a",
        expected="a",
        messages=(Message(role="user", content="q"),),
        status=ExecutionStatus.REFUSED,
        duration=timedelta(milliseconds=1500),
        metadata={"case_id": "c1", "n": [1, 2]},
    )
    back = Context.model_validate_json(ctx.model_dump_json())
    assert back.model_dump() == ctx.model_dump()


# --------------------------------------------------------------------------- JudgeResult


def test_judge_result_defaults_and_derived_fields() -> None:
    """JudgeResult defaults; status, score, reasoning and success derive from the judgment."""
    result = JudgeResult(name="j", judgment=Judgment.passed("fine"))
    assert (result.sampled, result.metric_key, result.tier, result.attempts) == (
        True,
        None,
        None,
        1,
    )
    assert (result.duration_s, result.queued_s, result.error_type) == (0.0, 0.0, None)
    assert result.status is Status.PASS
    assert result.score is None  # the judgment's own score, not effective_score
    assert result.reasoning == "fine"
    assert result.success


def test_judge_result_score_is_the_judgments_score() -> None:
    """JudgeResult.score is judgment.score (FAIL with 0.3 -> 0.3)."""
    assert JudgeResult(name="j", judgment=Judgment.failed(score=0.3)).score == 0.3


@pytest.mark.parametrize(
    ("judgment", "success"),
    [
        (Judgment.passed(), True),
        (Judgment.failed(), True),
        (Judgment.abstained("n/a"), False),
        (Judgment.errored("boom"), False),
    ],
)
def test_judge_result_success(judgment: Judgment, success: bool) -> None:
    """success is true for sampled PASS and FAIL only."""
    assert JudgeResult(name="j", judgment=judgment).success is success


def test_unsampled_judge_result() -> None:
    """An unsampled result has no judgment: status, score, reasoning None, success False."""
    result = JudgeResult(name="j", judgment=None, sampled=False, attempts=0)
    assert result.status is None and result.score is None and result.reasoning is None
    assert not result.success


def test_judge_result_sampled_iff_judgment() -> None:
    """A sampled result needs a judgment and an unsampled one must not carry one."""
    with pytest.raises(ValidationError, match="judgment"):
        JudgeResult(name="j", judgment=None)
    with pytest.raises(ValidationError, match="judgment"):
        JudgeResult(name="j", judgment=Judgment.passed(), sampled=False)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("attempts", -1),
        ("duration_s", -0.1),
        ("duration_s", math.nan),
        ("queued_s", -1.0),
        ("queued_s", math.inf),
    ],
)
def test_judge_result_numeric_fields_validated(field: str, value: float) -> None:
    """attempts >= 0 and finite, non-negative durations; the field is named."""
    with pytest.raises(ValidationError, match=field):
        JudgeResult(name="j", judgment=Judgment.passed(), **{field: value})


def test_judge_result_json_round_trip() -> None:
    """JudgeResult round-trips through JSON exactly."""
    result = JudgeResult(
        name="j",
        judgment=_rich_judgment(),
        metric_key="accuracy",
        tier="cheap",
        attempts=2,
        duration_s=0.5,
        queued_s=0.25,
        error_type=None,
    )
    assert JudgeResult.model_validate_json(result.model_dump_json()) == result
    unsampled = JudgeResult(name="u", judgment=None, sampled=False, attempts=0)
    assert JudgeResult.model_validate_json(unsampled.model_dump_json()) == unsampled


def test_verdict_by_name_is_read_only_and_ordered() -> None:
    """Verdict.by_name maps names to results in configured order and refuses assignment."""
    a = JudgeResult(name="a", judgment=Judgment.passed())
    b = JudgeResult(name="b", judgment=Judgment.failed())
    verdict = Verdict(judgment=Judgment.passed(), results=(a, b))
    assert list(verdict.by_name) == ["a", "b"]
    assert verdict.by_name["b"] is b
    with pytest.raises(TypeError):
        verdict.by_name["c"] = a  # type: ignore[index]

"""`judgment_problem`'s one-lookup acceptance is the field-by-field check's answer (issue 19.11).

The engine checks every judgment a judge returns; most are a PASS/FAIL verdict with nothing
but reasoning and frozen metadata, which `judgment_problem` accepts after reading all seven
fields in one call. For any ``__dict__`` (fields missing, of any type, valid or not) the
answer must be `_problem_of`'s, which checks each invariant in turn.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.core import Check, Judgment, Status, judgment_problem
from agentjudge.core._judgment import _problem_of

_FIELDS = ("status", "score", "label", "confidence", "reasoning", "checks", "metadata")

_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.sampled_from(list(Status)),
    st.sampled_from(["pass", "fail", (), (Check(name="c", passed=True),), ("x",)]),
    st.sampled_from(
        [MappingProxyType({}), {}, {"k": 1}, {"k": object()}, MappingProxyType({"a": "b"})]
    ),
)
_LIKELY = {
    "status": st.sampled_from(list(Status)),
    "score": st.one_of(st.none(), st.floats(0.0, 1.0)),
    "label": st.one_of(st.none(), st.sampled_from(["yes", " ", ""])),
    "confidence": st.one_of(st.none(), st.floats(0.0, 1.0)),
    "reasoning": st.sampled_from(["", "  ", "ok", " why "]),
    "checks": st.sampled_from([(), (Check(name="c", passed=True),), ("x",)]),
    "metadata": st.sampled_from([MappingProxyType({}), MappingProxyType({"model": "m"}), {}]),
}


class _Built:
    """Anything whose ``__dict__`` is the drawn one (what `judgment_problem` reads)."""


@st.composite
def _values(draw: st.DrawFn) -> dict[str, Any]:
    """A sound plain verdict's fields with up to three of them changed or missing."""
    values: dict[str, Any] = {
        "status": draw(st.sampled_from(list(Status))),
        "score": None,
        "label": None,
        "confidence": None,
        "reasoning": "ok",
        "checks": (),
        "metadata": MappingProxyType({}),
    }
    for field in draw(st.lists(st.sampled_from(_FIELDS), max_size=3)):
        kind = draw(st.sampled_from(["likely", "any", "missing"]))
        if kind == "missing":
            values.pop(field, None)
        else:
            values[field] = draw(_LIKELY[field] if kind == "likely" else _ANY)
    return values


@settings(max_examples=300)
@given(_values())
def test_judgment_problem_answers_as_the_field_by_field_check(values: dict[str, Any]) -> None:
    judgment = _Built()
    judgment.__dict__.update(values)
    assert judgment_problem(judgment) == _problem_of(values)  # type: ignore[arg-type]


def test_a_plain_verdict_is_sound_and_a_blank_error_is_not() -> None:
    assert judgment_problem(Judgment.passed("ok", metadata={"model": "m"})) is None
    broken = Judgment.model_construct(status=Status.ERROR, reasoning=" ")
    assert judgment_problem(broken) == "reasoning: must be non-blank on error"
    assert judgment_problem(Judgment.model_construct(status="pass")) == (
        "status must be a Status, got 'pass'"
    )

"""The plain-JSON fast path of `freeze_portable` and `with_metadata` equals the checked walk."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentjudge.core import Judgment, Status, freeze_metadata, freeze_portable
from agentjudge.core._portable import MAX_SAFE_INT, _freeze_checked
from agentjudge.judges._verdict import with_metadata

_SCALARS = st.one_of(
    st.text(max_size=5),
    st.sampled_from(["\ud800", "ok\udfff"]),  # lone surrogates: refused
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.sampled_from([MAX_SAFE_INT, MAX_SAFE_INT + 1, -MAX_SAFE_INT - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.sampled_from([b"bytes", {1, 2}, 1j]),  # not portable at all
)


def _values() -> st.SearchStrategy[Any]:
    keys = st.one_of(st.text(max_size=3), st.integers(0, 3))
    return st.recursive(
        _SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(keys, inner, max_size=3),
            st.dictionaries(st.text(max_size=3), inner, max_size=3).map(MappingProxyType),
            st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict),
        ),
        max_leaves=8,
    )


def _outcome(freeze: Any, value: Any, nulls: bool) -> tuple[str, Any]:
    try:
        return "value", freeze(value, nulls)
    except ValueError as exc:
        return "error", str(exc)


@settings(max_examples=150)
@given(_values(), st.booleans())
def test_freeze_portable_equals_the_checked_walk(value: Any, nulls: bool) -> None:
    fast = _outcome(lambda v, n: freeze_portable(v, "metadata", nulls=n), value, nulls)
    checked = _outcome(lambda v, n: _freeze_checked(v, "metadata", n), value, nulls)
    assert fast == checked
    if fast[0] == "value":
        assert type(fast[1]) is type(checked[1])


def _metadata_checked(value: Any) -> Any:
    """`freeze_metadata` as it was for every mapping: the abstract-class checks first."""
    if not value and isinstance(value, Mapping):
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ValueError(f"metadata: expected a mapping with str keys, got {type(value).__name__}")
    return freeze_portable(value, "metadata")


@settings(max_examples=150)
@given(_values())
def test_freeze_metadata_of_a_dict_equals_the_mapping_way(value: Any) -> None:
    """A plain dict skips the abstract-class checks: same value or same error, any input."""
    fast = _outcome(lambda v, n: freeze_metadata(v), value, False)
    checked = _outcome(lambda v, n: _metadata_checked(v), value, False)
    assert fast == checked
    if fast[0] == "value":
        assert type(fast[1]) is type(checked[1]) is MappingProxyType


def _rebuilt(judgment: Judgment, extra: dict[str, Any]) -> Judgment:
    """`with_metadata` as it was: a validated rebuild."""
    return Judgment(
        status=judgment.status,
        score=judgment.score,
        label=judgment.label,
        confidence=judgment.confidence,
        reasoning=judgment.reasoning,
        checks=judgment.checks,
        metadata={**extra, **dict(judgment.metadata)},
    )


_JUDGMENTS = st.one_of(
    st.builds(
        Judgment.passed,
        st.just("fine"),
        score=st.floats(0, 1),
        metadata=st.dictionaries(st.sampled_from(["a", "model"]), st.integers(0, 9), max_size=2),
    ),
    st.builds(Judgment.abstained, st.just("unsure"), label=st.sampled_from(["x", "y"])),
    st.builds(Judgment.errored, st.just("broke")),
)


@settings(max_examples=120)
@given(_JUDGMENTS, st.dictionaries(st.text(max_size=4), _values(), min_size=1, max_size=3))
def test_with_metadata_equals_a_validated_rebuild(judgment: Judgment, extra: Any) -> None:
    try:
        expected: Any = _rebuilt(judgment, extra)
    except ValidationError as exc:
        with pytest.raises(ValidationError) as raised:
            with_metadata(judgment, extra)
        assert str(raised.value) == str(exc)
        return
    got = with_metadata(judgment, extra)
    assert got == expected
    assert type(got.metadata) is MappingProxyType
    assert list(got.metadata) == list(expected.metadata)


def test_with_metadata_of_an_unsound_judgment_still_validates() -> None:
    broken = Judgment.model_construct(status=Status.PASS, score=2.0, reasoning="", metadata={})
    with pytest.raises(ValidationError):
        with_metadata(broken, {"model": "m"})

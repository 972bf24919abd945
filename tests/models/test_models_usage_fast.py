"""The usage reader builds `Usage` without validating it again: equal to validation (issue 19.11).

`read_usage` checks every count itself, so it builds the `Usage` directly (one per answer);
these property tests pin it to the straightforward reading: each count through
`UsageReader.count`, then ``Usage(**counts)`` validated. And `Usage.to_portable`, read from
the instance, gives what pydantic's dump gives.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentjudge.models import Usage, read_usage
from agentjudge.models._anthropic import USAGE_FIELDS as ANTHROPIC_FIELDS
from agentjudge.models._openai import USAGE_FIELDS as OPENAI_FIELDS
from agentjudge.models._usage import UsageReader

COUNT = st.one_of(
    st.none(),
    st.integers(min_value=-3, max_value=2**53 + 3),
    st.sampled_from([0, 1, 2**53 - 1, 2**53, -1]),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
)
KEYS = ["prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens"]
NESTED = ["completion_tokens_details", "prompt_tokens_details"]
DETAIL = st.sampled_from(["reasoning_tokens", "cached_tokens"])
RAW = st.dictionaries(
    st.sampled_from(KEYS + NESTED),
    st.one_of(COUNT, st.dictionaries(DETAIL, COUNT)),
)
NESTED_FIRST = {
    "reasoning_tokens": "completion_tokens_details.reasoning_tokens",
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
}
"""A nested count before top-level ones: the warnings still come in the mapping's order."""
FIELDS = st.sampled_from(
    [OPENAI_FIELDS, ANTHROPIC_FIELDS, {}, {"input_tokens": "prompt_tokens"}, NESTED_FIRST]
)


def _validated(raw: Any, fields: Mapping[str, str]) -> tuple[Usage, tuple[str, ...]]:
    """The straightforward reading: every count checked, then ``Usage(**counts)`` validated."""
    if not isinstance(raw, dict):
        return Usage(), ()
    reader = UsageReader("c")
    counts: dict[str, int | None] = {}
    for field, path in fields.items():
        value: Any = raw
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        counts[field] = reader.count(value, f"usage.{path}")
    return Usage(**counts), tuple(reader.warnings)


@settings(max_examples=150)
@given(raw=st.one_of(RAW, COUNT, st.lists(COUNT, max_size=2)), fields=FIELDS)
def test_read_usage_equals_validating_the_counts(raw: Any, fields: Mapping[str, str]) -> None:
    """Same fields, set fields, warnings, dump, repr, hash and pickle as the validated `Usage`."""
    usage, warnings = read_usage("c", raw, "usage", fields)
    expected, expected_warnings = _validated(raw, fields)
    assert warnings == expected_warnings
    assert usage == expected
    assert usage.model_fields_set == expected.model_fields_set
    assert usage.model_dump() == expected.model_dump()
    assert usage.to_portable() == expected.to_portable()
    assert repr(usage) == repr(expected)
    assert hash(usage) == hash(expected)
    assert pickle.loads(pickle.dumps(usage)) == expected
    assert Usage.model_validate(usage.model_dump()) == usage


def test_read_usage_still_refuses_a_field_usage_does_not_have() -> None:
    """A provider's mapping naming an unknown `Usage` field fails as validation did."""
    with pytest.raises(ValidationError, match="not_a_field"):
        read_usage("c", {"n": 1}, "usage", {"not_a_field": "n"})


def test_a_fields_mapping_changed_after_use_is_read_as_it_is_now() -> None:
    """How a mapping is read is worked out once, but a changed mapping is worked out again."""
    fields = {"input_tokens": "prompt_tokens"}
    raw = {"prompt_tokens": 3, "usage": {"in": 5}}
    assert read_usage("c", raw, "usage", fields)[0] == Usage(input_tokens=3)
    fields["input_tokens"] = "usage.in"
    fields["output_tokens"] = "prompt_tokens"
    usage, _ = read_usage("c", raw, "usage", fields)
    assert usage == Usage(input_tokens=5, output_tokens=3)
    assert usage.model_fields_set == {"input_tokens", "output_tokens"}


def test_mappings_made_per_call_keep_the_plans_bounded() -> None:
    """A provider that builds its mapping per answer does not grow the plan table for ever."""
    from agentjudge.models import _usage

    for n in range(600):
        assert read_usage("c", {"n": n}, "usage", {"input_tokens": "n"})[0].input_tokens == n
    assert len(_usage._PLANS) <= 256


class _Counted(int):
    """An int subclass: dumped by pydantic, never read as it is."""


@settings(max_examples=100)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            name: st.one_of(st.none(), st.integers(0, 2**53 - 1), st.booleans())
            for name in Usage.model_fields
        },
    ),
    st.booleans(),
)
def test_to_portable_equals_the_dump(counts: dict[str, Any], odd: bool) -> None:
    """Any usage, validated or built with odd values (bools, int subclasses): `to_portable`
    read from the instance gives the dict pydantic's dump gives (`_dumped`)."""
    usage = Usage(**counts)
    if odd:  # built without validation, as a client could: values the dump may convert
        values = {k: _Counted(v) if type(v) is int else v for k, v in usage.__dict__.items()}
        usage = Usage.model_construct(**values)
    read, dumped = usage.to_portable(), usage._dumped()
    assert read == dumped
    assert [type(v) for v in read.values()] == [type(v) for v in dumped.values()]
    assert list(read) == list(dumped)

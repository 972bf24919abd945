"""The call metadata of a judgment, built with fewer temporaries: equal to the way it was built.

`calls_metadata` sums the calls' costs in one loop (it built two lists and summed one), and
`with_metadata` / `verdict_with_metadata` freeze the metadata without copying it into a dict
first. The properties: for any responses (cached or not, batch or not, priced or not, with
any token counts), ``calls_metadata`` equals the formula it replaced (`_before`), value types
included; and for any metadata mapping (a dict, a read-only mapping, an ordered dict, with
values that cannot be frozen too), ``verdict_with_metadata`` equals the judgment built and
then copied with that metadata (`with_metadata(verdict_judgment(...))`), or fails the same way.
"""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType
from typing import Any

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentjudge.core import Judgment, Status
from agentjudge.judges._llm import calls_metadata
from agentjudge.judges._verdict import (
    response_metadata,
    verdict_judgment,
    verdict_with_metadata,
    with_metadata,
)
from agentjudge.models._prices import response_cost
from agentjudge.models._types import ModelResponse, Usage
from agentjudge.models._usage import add_usage

counts = st.one_of(st.none(), st.integers(0, 10**7))
clients = st.sampled_from(["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest", "x:unpriced"])

# Built once rather than at every draw (hypothesis does not cache a `sampled_from` of a list).
_MODELS = st.sampled_from([None, "gpt-4o-mini", "unknown-model"])
_WARNINGS = st.lists(st.sampled_from(["dropped", "w"]), max_size=2)


@st.composite
def responses(draw: st.DrawFn) -> ModelResponse:
    return ModelResponse(
        text=draw(st.text(max_size=8)),
        model=draw(_MODELS),
        usage=Usage(
            input_tokens=draw(counts),
            output_tokens=draw(counts),
            cache_read_tokens=draw(counts),
        ),
        cached=draw(st.booleans()),
        batch=draw(st.booleans()),
        warnings=tuple(draw(_WARNINGS)),
    )


def _before(client: str, calls: list[ModelResponse]) -> dict[str, Any]:
    """`calls_metadata` before the change."""
    metadata = response_metadata(client, calls[-1])
    if len(calls) > 1:
        warnings: list[str] = list(metadata.get("warnings", ()))
        total = None
        for response in calls:
            total = add_usage(total, response.usage, warnings)
        usage = total.to_portable() if total is not None else {}
        if usage:
            metadata["usage"] = usage
        if warnings:
            metadata["warnings"] = warnings
        metadata["cached"] = all(r.cached for r in calls)
        metadata["calls"] = len(calls)
    costs = [response_cost(client, r) for r in calls]
    known = [c for c in costs if c is not None]
    if len(known) == len(costs):
        metadata["cost_usd"] = round(sum(known), 10)
    return metadata


@hsettings(max_examples=100, deadline=None)
@given(clients, st.lists(responses(), min_size=1, max_size=3))
def test_calls_metadata_equals_the_two_lists_and_sum(
    client: str, calls: list[ModelResponse]
) -> None:
    now, before = calls_metadata(client, calls), _before(client, calls)
    assert now == before
    assert {k: type(v) for k, v in now.items()} == {k: type(v) for k, v in before.items()}


values = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["caf\u00e9", "\ud800", "ok\udfff", "\u00e9\ud83d"]),  # non-ASCII, surrogates
    st.integers(-(2**60), 2**60),
    st.booleans(),
    st.floats(allow_nan=True),
    st.none(),
    st.lists(st.text(max_size=3), max_size=2),
    st.just(b"bytes"),
)
kinds = st.sampled_from([dict, MappingProxyType, OrderedDict])


def _outcome(build: Any) -> Judgment | str:
    try:
        return build()
    except ValidationError as exc:  # its text quotes the input: compare where and why
        return f"refused: {[(e['loc'], e['msg']) for e in exc.errors()]}"
    except ValueError as exc:
        return f"refused: {exc}"


@hsettings(max_examples=120, deadline=None)
@given(
    st.sampled_from([Status.PASS, Status.FAIL]),
    st.text(max_size=6),
    st.sampled_from([None, "yes", "no"]),
    st.dictionaries(st.text(max_size=4), values, max_size=4),
    kinds,
)
def test_verdict_with_metadata_equals_the_judgment_then_its_copy(
    status: Status, reasoning: str, label: str | None, extra: dict[str, Any], kind: Any
) -> None:
    verdict = (status, reasoning, label)
    mapping = kind(extra)
    fused = _outcome(lambda: verdict_with_metadata(verdict, mapping))
    general = _outcome(lambda: with_metadata(verdict_judgment(verdict), dict(extra)))
    assert fused == general
    if isinstance(fused, Judgment):
        assert isinstance(general, Judgment)
        assert fused.model_dump_json() == general.model_dump_json()
        assert type(fused.metadata) is type(general.metadata)
        # a copy: changing the mapping given does not change the judgment
        if type(mapping) is not MappingProxyType and extra:
            mapping.clear()
            assert fused == general

"""`TrajectoryMatch`: the four modes, argument comparison, overrides, edge cases, errors."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge import Context, Message, Status, ToolCall, TrajectoryMatch
from agentjudge.judges._trajectory import json_equal, max_matching


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def assistant(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def tool(content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": "x"}


USER = {"role": "user", "content": "What is the weather in Paris and Rome?"}
FINAL = {"role": "assistant", "content": "Sunny in both."}
REFERENCE = [
    USER,
    assistant(call("get_weather", city="Paris"), call("get_weather", city="Rome")),
    tool(),
    tool(),
    FINAL,
]


def run(judge: TrajectoryMatch, actual: Any, reference: Any) -> Any:
    return anyio.run(judge, Context(output=actual, expected=reference))


@pytest.mark.parametrize("mode", ["strict", "unordered", "subset", "superset"])
def test_identical_trajectories_pass_in_every_mode(mode: str) -> None:
    """The reference itself matches in every mode, with score 1.0."""
    judgment = run(TrajectoryMatch(mode), REFERENCE, REFERENCE)
    assert judgment.status is Status.PASS and judgment.score == 1.0


def test_strict_ignores_content_but_not_roles() -> None:
    """Strict: different content passes; a different role fails naming the message index."""
    other = [*REFERENCE[:-1], {"role": "assistant", "content": "Different words."}]
    assert run(TrajectoryMatch(), other, REFERENCE).status is Status.PASS
    wrong_role = [*REFERENCE[:-1], {"role": "user", "content": "Sunny in both."}]
    judgment = run(TrajectoryMatch(), wrong_role, REFERENCE)
    assert judgment.status is Status.FAIL and judgment.score == 0.0
    assert judgment.reasoning == "messages[4]: expected role 'assistant', got 'user'"


def test_strict_call_order_names_count_and_arguments() -> None:
    """Strict: swapped calls, a missing call, a renamed call and other arguments all fail."""
    swapped = [
        USER,
        assistant(call("get_weather", city="Rome"), call("get_weather", city="Paris")),
        *REFERENCE[2:],
    ]
    assert "messages[1] tool call 0 'get_weather': arguments" in (
        run(TrajectoryMatch(), swapped, REFERENCE).reasoning
    )
    one = [USER, assistant(call("get_weather", city="Paris")), *REFERENCE[2:]]
    assert run(TrajectoryMatch(), one, REFERENCE).reasoning == (
        "messages[1]: expected 2 tool calls (get_weather, get_weather), got 1 tool call "
        "(get_weather)"
    )
    renamed = [USER, assistant(call("search", q="x"), call("get_weather", city="Rome"))]
    assert run(TrajectoryMatch(), [*renamed, *REFERENCE[2:]], REFERENCE).reasoning == (
        "messages[1] tool call 0: expected 'get_weather', got 'search'"
    )
    no_calls = [USER, {"role": "assistant", "content": "hmm"}, *REFERENCE[2:]]
    assert "expected 2 tool calls" in run(TrajectoryMatch(), no_calls, REFERENCE).reasoning


def test_strict_length_mismatch_names_the_first_missing_or_extra_message() -> None:
    """Strict: a shorter or longer trajectory names the first message beyond the other."""
    assert run(TrajectoryMatch(), REFERENCE[:-1], REFERENCE).reasoning == (
        "expected 5 messages, got 4: messages[4] (role 'assistant') is missing"
    )
    assert run(TrajectoryMatch(), [*REFERENCE, FINAL], REFERENCE).reasoning == (
        "expected 5 messages, got 6: messages[5] (role 'assistant') is extra"
    )


def test_unordered_accepts_any_order_but_needs_one_to_one() -> None:
    """Unordered: order is free; a repeated call cannot stand in for a missing one."""
    swapped = [
        USER,
        assistant(call("get_weather", city="Rome")),
        tool(),
        assistant(call("get_weather", city="Paris")),
        tool(),
        FINAL,
    ]
    assert run(TrajectoryMatch("unordered"), swapped, REFERENCE).status is Status.PASS
    twice = [USER, assistant(call("get_weather", city="Paris"), call("get_weather", city="Paris"))]
    judgment = run(TrajectoryMatch("unordered"), twice, REFERENCE)
    assert judgment.status is Status.FAIL
    assert 'get_weather({"city": "Rome"})' in judgment.reasoning
    extra = [*swapped, assistant(call("search", q="x"))]
    judgment = run(TrajectoryMatch("unordered"), extra, REFERENCE)
    assert judgment.reasoning.startswith('tool call search({"q": "x"}) (messages[6]) matches no')


def test_subset_and_superset_directions() -> None:
    """Subset: no call beyond the reference; superset: every reference call, extras allowed."""
    fewer = [USER, assistant(call("get_weather", city="Paris")), tool(), FINAL]
    more = [*REFERENCE, assistant(call("search", q="x"))]
    assert run(TrajectoryMatch("subset"), fewer, REFERENCE).status is Status.PASS
    assert run(TrajectoryMatch("subset"), more, REFERENCE).status is Status.FAIL
    assert run(TrajectoryMatch("superset"), more, REFERENCE).status is Status.PASS
    judgment = run(TrajectoryMatch("superset"), fewer, REFERENCE)
    assert judgment.status is Status.FAIL
    assert judgment.reasoning.startswith(
        'reference tool call get_weather({"city": "Rome"}) (reference messages[1]) has no'
    )


def test_repeated_calls_match_one_to_one_in_subset_and_superset() -> None:
    """Two identical actual calls need two reference calls (subset) and vice versa."""
    one = [assistant(call("search", q="x"))]
    two = [assistant(call("search", q="x")), assistant(call("search", q="x"))]
    assert run(TrajectoryMatch("subset"), two, one).status is Status.FAIL
    assert run(TrajectoryMatch("subset"), one, two).status is Status.PASS
    assert run(TrajectoryMatch("superset"), one, two).status is Status.FAIL
    assert run(TrajectoryMatch("superset"), two, one).status is Status.PASS


def test_pairing_is_a_maximum_matching_not_greedy() -> None:
    """With args="superset", a greedy pairing would use up the only call the second needs."""
    actual = [assistant(call("find", a=1, b=2), call("find", a=1))]
    # Reference call 0 ({a: 1}) fits both actual calls; reference call 1 ({a: 1, b: 2}) only
    # the first. Greedy pairs reference 0 with actual 0 and then fails reference 1 (and, seen
    # from the actual side, actual 0 takes reference 0 and leaves actual 1 without a partner).
    reference = [assistant(call("find", a=1), call("find", a=1, b=2))]
    for mode in ("unordered", "superset", "subset"):
        judgment = run(TrajectoryMatch(mode, args="superset"), actual, reference)
        assert judgment.status is Status.PASS, mode


def test_empty_trajectories() -> None:
    """Empty vs empty passes in every mode; empty vs calls fails strict, unordered, superset."""
    for mode in ("strict", "unordered", "subset", "superset"):
        assert run(TrajectoryMatch(mode), [], []).status is Status.PASS
    assert run(TrajectoryMatch("subset"), [], REFERENCE).status is Status.PASS
    assert run(TrajectoryMatch("superset"), REFERENCE, []).status is Status.PASS
    assert run(TrajectoryMatch("strict"), [], REFERENCE).status is Status.FAIL
    assert run(TrajectoryMatch("unordered"), [], REFERENCE).status is Status.FAIL
    assert run(TrajectoryMatch("superset"), [], REFERENCE).status is Status.FAIL


@pytest.mark.parametrize(
    ("args", "actual", "reference", "matches"),
    [
        ("exact", {"a": 1}, {"a": 1.0}, True),
        ("exact", {"a": True}, {"a": 1}, False),
        ("exact", {"a": 1, "b": 2}, {"a": 1}, False),
        ("ignore", {"a": 1}, {"z": 9}, True),
        ("subset", {"a": 1}, {"a": 1, "b": 2}, True),
        ("subset", {"a": 1, "c": 3}, {"a": 1, "b": 2}, False),
        ("superset", {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2}, True),
        ("superset", {"a": 1}, {"a": 1, "b": 2}, False),
        ("exact", {"a": None}, {"a": None}, True),
        ("exact", {"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}, True),
    ],
)
def test_argument_modes(args: str, actual: Any, reference: Any, matches: bool) -> None:
    """Each args mode compares JSON values in its direction (a bool is never a number)."""
    judgment = run(
        TrajectoryMatch(args=args),
        [assistant(call("t", **actual))],
        [assistant(call("t", **reference))],
    )
    assert (judgment.status is Status.PASS) is matches


def test_overrides_per_tool() -> None:
    """Overrides: a word, key paths (nested, missing on both equal) or a callable, per tool."""
    actual = [assistant(call("book", when={"day": "mon", "hour": 9}, note="x"), call("log", m="a"))]
    reference = [assistant(call("book", when={"day": "mon", "hour": 10}), call("log", m="b"))]
    judge = TrajectoryMatch(overrides={"book": ["when.day", "missing.path"], "log": "ignore"})
    assert run(judge, actual, reference).status is Status.PASS
    judge = TrajectoryMatch(overrides={"book": ["when.hour"], "log": "ignore"})
    assert run(judge, actual, reference).status is Status.FAIL
    seen: list[tuple[Any, Any]] = []

    def lenient(mine: Any, theirs: Any) -> bool:
        seen.append((mine, theirs))
        return True

    judge = TrajectoryMatch(overrides={"book": lenient, "log": "ignore"})
    assert run(judge, actual, reference).status is Status.PASS
    assert seen[0][0]["note"] == "x" and "note" not in seen[0][1]  # (actual, reference)


def test_raising_override_is_an_error_naming_the_tool() -> None:
    """An override that raises gives ERROR naming the tool and the exception."""

    def broken(mine: Any, theirs: Any) -> bool:
        raise KeyError("city")

    judgment = run(
        TrajectoryMatch(overrides={"t": broken}), [assistant(call("t"))], [assistant(call("t"))]
    )
    assert judgment.status is Status.ERROR
    assert "'t' raised KeyError" in judgment.reasoning


def test_malformed_trajectories_are_errors_with_the_message_index() -> None:
    """Unparseable arguments or a missing name are ERROR naming the side and the index."""
    bad_args = [
        USER,
        {"role": "assistant", "tool_calls": [{"function": {"name": "t", "arguments": "{"}}]},
    ]
    judgment = run(TrajectoryMatch(), bad_args, REFERENCE)
    assert judgment.status is Status.ERROR
    assert "trajectory messages[1]: tool_calls.0.arguments" in judgment.reasoning
    no_name = [USER, {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]
    judgment = run(TrajectoryMatch(), REFERENCE, no_name)
    assert judgment.status is Status.ERROR
    assert "reference messages[1]: tool_calls.0.name" in judgment.reasoning


def test_missing_reference_is_an_error() -> None:
    """No reference trajectory in ctx.expected: ERROR saying where it is read from."""
    judgment = run(TrajectoryMatch(), REFERENCE, "Sunny")
    assert judgment.status is Status.ERROR and "ctx.expected" in judgment.reasoning


def test_reads_ctx_messages_first_and_mapping_forms() -> None:
    """ctx.messages wins over ctx.output; {"messages": [...]} works on both sides."""
    messages = tuple(Message.model_validate(m) for m in REFERENCE)
    ctx = Context(messages=messages, output="Sunny", expected={"messages": REFERENCE})
    assert anyio.run(TrajectoryMatch(), ctx).status is Status.PASS
    ctx = Context(output={"messages": REFERENCE}, expected=list(messages))
    assert anyio.run(TrajectoryMatch(), ctx).status is Status.PASS


def test_bad_settings_are_value_errors() -> None:
    """An unknown mode, args word or override is a ValueError naming the allowed values."""
    with pytest.raises(ValueError, match="strict, unordered, subset, superset"):
        TrajectoryMatch("loose")
    with pytest.raises(ValueError, match="exact, ignore, subset, superset"):
        TrajectoryMatch(args="fuzzy")
    with pytest.raises(ValueError, match="overrides\\['t'\\]"):
        TrajectoryMatch(overrides={"t": "fuzzy"})
    with pytest.raises(ValueError, match="key paths"):
        TrajectoryMatch(overrides={"t": [""]})


def test_pass_metadata_lists_the_calls() -> None:
    """The judgment's metadata names the mode and both sides' tool calls."""
    judgment = run(TrajectoryMatch("superset"), REFERENCE, REFERENCE)
    assert judgment.metadata["mode"] == "superset"
    assert judgment.metadata["tool_calls"] == ("get_weather", "get_weather")


def _brute_force(compatible: list[list[bool]], right: int) -> int:
    best = 0

    def go(i: int, used: frozenset[int], size: int) -> None:
        nonlocal best
        if i == len(compatible):
            best = max(best, size)
            return
        go(i + 1, used, size)
        for j in range(right):
            if compatible[i][j] and j not in used:
                go(i + 1, used | {j}, size + 1)

    go(0, frozenset(), 0)
    return best


@settings(max_examples=60)
@given(st.integers(0, 5), st.integers(0, 5), st.data())
def test_max_matching_is_maximum(left: int, right: int, data: st.DataObject) -> None:
    """The matching is one-to-one, uses only compatible pairs and is as large as possible."""
    compatible = [[data.draw(st.booleans()) for _ in range(right)] for _ in range(left)]
    paired = max_matching(compatible, right)
    chosen = [(i, j) for i, j in enumerate(paired) if j is not None]
    assert all(compatible[i][j] for i, j in chosen)
    assert len({j for _, j in chosen}) == len(chosen)
    assert len(chosen) == _brute_force(compatible, right)


def test_long_trajectories_do_not_recurse() -> None:
    """An augmenting path longer than the recursion limit is found (the search is iterative)."""
    n = 1200
    # Left i fits right i and i + 1; the greedy start pairs i with i, except the last left
    # item, which fits only right 0: the one augmenting path runs through every item.
    compatible = [[j in (i, i + 1) for j in range(n + 1)] for i in range(n)]
    compatible.append([j == 0 for j in range(n + 1)])
    paired = max_matching(compatible, n + 1)
    assert None not in paired


def test_json_equal_distinguishes_bools_and_containers() -> None:
    """json_equal: 1 == 1.0, True != 1, [] != {}, tuple == list."""
    assert json_equal(1, 1.0) and json_equal((1, 2), [1, 2])
    assert not json_equal(True, 1) and not json_equal([], {}) and not json_equal("1", 1)


def test_tool_call_str() -> None:
    """str(ToolCall) is name(JSON arguments), used in reasoning."""
    assert str(ToolCall("t", {"a": [1]})) == 't({"a": [1]})'

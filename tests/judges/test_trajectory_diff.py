"""A failing trajectory judgment carries its expected vs actual tool calls, step by step."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge import Context, Message, Status, ToolCall, TrajectoryMatch
from agentjudge.judges import ToolSelection
from agentjudge.judges._trajectory_diff import MAX_DIFF_CALLS, stepwise_diff


def step(*calls: ToolCall) -> Message:
    return Message(role="assistant", tool_calls=calls)


def trajectory(*steps: Message) -> list[Message]:
    return [Message(role="user", content="go"), *steps]


def ops(diff: dict[str, Any]) -> list[tuple[str, int | None, int | None]]:
    return [(c["op"], c.get("step"), c.get("reference_step")) for c in diff["calls"]]


REFERENCE = trajectory(
    step(ToolCall("search", {"q": "paris"})),
    step(ToolCall("fetch", {"url": "a"})),
    step(ToolCall("summarize")),
)
ACTUAL = trajectory(
    step(ToolCall("search", {"q": "paris"})),
    step(ToolCall("fetch", {"url": "b"})),
    step(ToolCall("delete", {"path": "/"})),
)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "strict",
            [("match", 1, 1), ("arguments", 2, 2), ("extra", 3, None), ("missing", None, 3)],
        ),
        (
            "unordered",
            [("match", 1, 1), ("arguments", 2, 2), ("extra", 3, None), ("missing", None, 3)],
        ),
        ("subset", [("match", 1, 1), ("arguments", 2, 2), ("extra", 3, None)]),
        ("superset", [("match", 1, 1), ("arguments", 2, 2), ("missing", None, 3)]),
    ],
)
async def test_each_mode_names_wrong_arguments_extra_and_missing_calls(
    mode: str, expected: list[tuple[str, int | None, int | None]]
) -> None:
    """Allowed differences are left out: subset lists no missing call, superset no extra one."""
    judgment = await TrajectoryMatch(mode)(Context(messages=ACTUAL, expected=REFERENCE))
    assert judgment.status is Status.FAIL
    diff = judgment.model_dump(mode="json")["metadata"]["tool_call_diff"]
    assert ops(diff) == expected
    assert diff["calls"][1]["keys"] == ["url"]
    assert diff["calls"][1]["actual"] == {"name": "fetch", "arguments": {"url": "b"}}


async def test_a_passing_trajectory_and_a_role_only_mismatch_carry_no_diff() -> None:
    """No diff where no tool call differs (the reasoning names the role mismatch)."""
    passed = await TrajectoryMatch()(Context(messages=REFERENCE, expected=REFERENCE))
    assert passed.status is Status.PASS and "tool_call_diff" not in passed.metadata
    longer = [*REFERENCE, Message(role="assistant", content="done")]
    failed = await TrajectoryMatch()(Context(messages=longer, expected=REFERENCE))
    assert failed.status is Status.FAIL and "tool_call_diff" not in failed.metadata


def test_an_inserted_step_shifts_the_alignment_like_a_text_diff() -> None:
    """One extra step in front does not make every later step a mismatch."""
    search, fetch, log = ToolCall("search"), ToolCall("fetch"), ToolCall("log")
    diff = stepwise_diff([(log,), (search,), (fetch,)], [(search,), (fetch,)], lambda a, r: a == r)
    assert ops(diff) == [("extra", 1, None), ("match", 2, 1), ("match", 3, 2)]


def test_long_diffs_drop_matches_first_and_count_what_they_left_out() -> None:
    """At most MAX_DIFF_CALLS entries; the differences are kept, matches are omitted first."""
    same = [(ToolCall("t", {"i": i}),) for i in range(MAX_DIFF_CALLS)]
    actual = [*same, (ToolCall("x"),), (ToolCall("y"),)]
    diff = stepwise_diff(actual, same, lambda a, r: a == r)
    assert len(diff["calls"]) == MAX_DIFF_CALLS and diff["omitted"] == 2
    assert [c["op"] for c in diff["calls"][-2:]] == ["extra", "extra"]


def test_huge_arguments_are_kept_as_cut_text() -> None:
    """Arguments whose JSON is long are stored as their cut JSON text."""
    big = ToolCall("write", {"text": "x" * 5000})
    diff = stepwise_diff([(big,)], [()], lambda a, r: False)
    arguments = diff["calls"][0]["actual"]["arguments"]
    assert isinstance(arguments, str) and len(arguments) == 500 and arguments.endswith("…")


async def test_tool_selection_diff_uses_the_reference_calls() -> None:
    """ToolSelection's diff compares tools only; a reference trajectory gives the expected calls."""
    judgment = await ToolSelection()(Context(messages=ACTUAL, expected=REFERENCE))
    diff = judgment.model_dump(mode="json")["metadata"]["tool_call_diff"]
    assert ops(diff) == [("match", 1, 1), ("match", 2, 2), ("extra", 3, None), ("missing", None, 3)]
    names_only = await ToolSelection()(Context(messages=ACTUAL, expected=["search", "open"]))
    diff = names_only.model_dump(mode="json")["metadata"]["tool_call_diff"]
    missing = [c["expected"] for c in diff["calls"] if c["op"] == "missing"]
    assert missing == [{"name": "open", "arguments": {}}]


async def test_llm_trajectory_judge_fail_with_a_reference_carries_the_diff() -> None:
    """TrajectoryJudge: a NO against a reference adds the exact-arguments diff; a YES does not."""
    from agentjudge.judges import TrajectoryJudge
    from agentjudge.models import OpenAIChat
    from agentjudge.testing import FakeModelServer, FakeResponse

    async with FakeModelServer() as server:
        server.enqueue(
            FakeResponse(text="Answer: NO\nReasoning: it deleted something"),
            FakeResponse(text="Answer: YES\nReasoning: fine"),
            FakeResponse(text="Answer: NO\nReasoning: no"),
        )
        async with OpenAIChat("m", base_url=server.base_url, api_key="k", retry=None) as model:
            judge = TrajectoryJudge(model)
            failed = await judge(Context(messages=ACTUAL, expected=REFERENCE))
            passed = await judge(Context(messages=ACTUAL, expected=REFERENCE))
            no_reference = await judge(Context(messages=ACTUAL))
    diff = failed.model_dump(mode="json")["metadata"]["tool_call_diff"]
    assert ops(diff) == [
        ("match", 1, 1),
        ("arguments", 2, 2),
        ("extra", 3, None),
        ("missing", None, 3),
    ]
    assert failed.metadata["model"] == "m"  # the call metadata is kept
    assert passed.status is Status.PASS and "tool_call_diff" not in passed.metadata
    assert no_reference.status is Status.FAIL and "tool_call_diff" not in no_reference.metadata


# A call of tool a, b or c with {"x": 0, 1 or 2}: one draw from the nine (name, x) pairs, each
# built into a new ToolCall (st.builds over a fixed_dictionaries drew the same nine calls at
# about twice the CPU).
_CALLS = st.sampled_from([(name, x) for name in "abc" for x in range(3)]).map(
    lambda call: ToolCall(call[0], {"x": call[1]})
)
_STEPS = st.lists(st.lists(_CALLS, min_size=1, max_size=3).map(tuple), max_size=6)


@settings(max_examples=60)
@given(actual=_STEPS, reference=_STEPS)
def test_every_call_of_both_sides_appears_once(
    actual: list[tuple[ToolCall, ...]], reference: list[tuple[ToolCall, ...]]
) -> None:
    """Each actual call is a match, arguments or extra entry, each reference call a match,
    arguments or missing one, exactly once, at its own step; equal sides give only matches."""
    diff = stepwise_diff(actual, reference, lambda a, r: a == r)
    calls = diff["calls"]
    mine = sorted(
        (c["step"], c["actual"]["name"], c["actual"]["arguments"]["x"])
        for c in calls
        if "step" in c
    )
    theirs = sorted(
        (c["reference_step"], c["expected"]["name"], c["expected"]["arguments"]["x"])
        for c in calls
        if "reference_step" in c
    )
    assert mine == sorted((n, c.name, c.arguments["x"]) for n, s in enumerate(actual, 1) for c in s)
    assert theirs == sorted(
        (n, c.name, c.arguments["x"]) for n, s in enumerate(reference, 1) for c in s
    )
    for c in calls:
        if c["op"] == "arguments":
            assert c["actual"]["name"] == c["expected"]["name"] and c["keys"] == ["x"]
    same = stepwise_diff(actual, actual, lambda a, r: a == r)
    assert all(c["op"] == "match" for c in same["calls"]) and diff["omitted"] == 0

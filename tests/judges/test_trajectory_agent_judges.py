"""Deterministic agent judges: ToolSelection, ToolArgumentsValid, StepEfficiency, ForbiddenTools."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agentjudge import Context, Status
from agentjudge.harness import TaskOutput
from agentjudge.judges import ForbiddenTools, StepEfficiency, ToolArgumentsValid, ToolSelection


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


TRAJECTORY = [
    {"role": "user", "content": "Book a table for two in Paris tonight."},
    assistant(call("search", q="restaurants Paris")),
    {"role": "tool", "content": "Chez A, Chez B", "tool_call_id": "1"},
    assistant(call("book", place="Chez A", people=2), call("notify", to="me")),
    {"role": "tool", "content": "booked", "tool_call_id": "2"},
    {"role": "assistant", "content": "Booked Chez A."},
]


def judge_it(judge: Any, **fields: Any) -> Any:
    fields.setdefault("messages", TRAJECTORY)
    return anyio.run(judge, Context(**fields))


# --------------------------------------------------------------------------- ToolSelection


def test_tool_selection_per_step_names() -> None:
    """Expected names per step; a step with parallel calls compares as a multiset."""
    judgment = judge_it(ToolSelection(), expected=["search", ["notify", "book"]])
    assert judgment.status is Status.PASS and judgment.score == 1.0
    assert [c.name for c in judgment.checks] == ["step 1", "step 2"]


def test_tool_selection_scores_the_share_of_right_steps() -> None:
    """A wrong step lowers the score; a missing or extra step counts as wrong."""
    judgment = judge_it(ToolSelection(), expected={"tools": ["browse", ["book", "notify"]]})
    assert judgment.status is Status.FAIL and judgment.score == 0.5
    assert "first wrong: step 1: expected browse, got search" in judgment.reasoning
    judgment = judge_it(ToolSelection(threshold=0.7), expected=["search", ["book", "notify"], "x"])
    assert judgment.status is Status.FAIL and judgment.score == pytest.approx(2 / 3)
    judgment = judge_it(ToolSelection(threshold=0.5), expected=["search", "book"])
    assert judgment.status is Status.PASS and judgment.score == 0.5


def test_tool_selection_from_a_reference_trajectory() -> None:
    """A reference trajectory gives the expected tools per step."""
    assert judge_it(ToolSelection(), expected=TRAJECTORY).status is Status.PASS


def test_tool_selection_errors() -> None:
    """No expected tools, or a bad entry, is an ERROR saying what is expected."""
    assert "no expected tools" in judge_it(ToolSelection(), expected="search").reasoning
    judgment = judge_it(ToolSelection(), expected=["search", 3])
    assert judgment.status is Status.ERROR and "tools[1]" in judgment.reasoning
    with pytest.raises(ValueError, match="threshold"):
        ToolSelection(threshold=2)


# --------------------------------------------------------------------------- ToolArgumentsValid

OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book",
            "parameters": {
                "type": "object",
                "properties": {"place": {"type": "string"}, "people": {"type": "integer"}},
                "required": ["place", "people"],
                "additionalProperties": False,
            },
        },
    },
    {"name": "search", "input_schema": {"type": "object", "required": ["q"]}},
    {"type": "function", "function": {"name": "notify", "parameters": {"type": "object"}}},
]


def test_tool_arguments_valid_against_openai_and_anthropic_definitions() -> None:
    """Every call follows its tool's schema: PASS with one check per call."""
    judgment = judge_it(ToolArgumentsValid(OPENAI_TOOLS))
    assert judgment.status is Status.PASS and judgment.score == 1.0
    assert len(judgment.checks) == 3


def test_tool_arguments_invalid_names_the_call_and_the_problem() -> None:
    """A call breaking its schema fails, naming the message, the call and the JSON path."""
    bad = [assistant(call("book", place="Chez A", people="two"))]
    judgment = judge_it(ToolArgumentsValid(OPENAI_TOOLS), messages=bad)
    assert judgment.status is Status.FAIL and judgment.score == 0.0
    assert "messages[0] tool call 0 'book'" in judgment.reasoning
    assert "$.people" in judgment.reasoning


def test_tool_arguments_unknown_tools_and_per_case_schemas() -> None:
    """A tool without a schema fails unless ignored; metadata["tools"] adds schemas per case."""
    schemas = {"search": {"type": "object"}}
    judgment = judge_it(ToolArgumentsValid(schemas))
    assert judgment.status is Status.FAIL and "no schema for this tool" in judgment.reasoning
    assert judge_it(ToolArgumentsValid(schemas, unknown="ignore")).status is Status.PASS
    judgment = judge_it(ToolArgumentsValid(), metadata={"tools": OPENAI_TOOLS})
    assert judgment.status is Status.PASS


def test_tool_arguments_bad_schema() -> None:
    """An invalid schema is a ValueError naming the tool (or ERROR when it comes per case)."""
    with pytest.raises(ValueError, match="tool 'book' is not a valid"):
        ToolArgumentsValid({"book": {"type": "nonsense"}})
    judgment = judge_it(ToolArgumentsValid(), metadata={"tools": {"book": {"type": 3}}})
    assert judgment.status is Status.ERROR and "tool 'book'" in judgment.reasoning


def test_tool_arguments_no_calls() -> None:
    """No tool calls: nothing can be invalid."""
    judgment = judge_it(ToolArgumentsValid(OPENAI_TOOLS), messages=[{"role": "user"}])
    assert judgment.status is Status.PASS and judgment.reasoning == "No tool calls to check"


# --------------------------------------------------------------------------- StepEfficiency


def test_step_efficiency_against_a_budget_and_a_reference() -> None:
    """Steps are tool calls; within budget passes; over budget fails with budget/used."""
    assert judge_it(StepEfficiency(max_steps=3)).status is Status.PASS
    judgment = judge_it(StepEfficiency(max_steps=2))
    assert judgment.status is Status.FAIL and judgment.score == pytest.approx(2 / 3)
    short = [assistant(call("book", place="A", people=2))]
    judgment = judge_it(StepEfficiency(), expected=short)
    assert judgment.status is Status.FAIL and "budget 1 (the reference)" in judgment.reasoning
    assert judge_it(StepEfficiency(), metadata={"max_steps": 5}).status is Status.PASS


def test_step_efficiency_tokens() -> None:
    """Tokens from the output's usage, metadata usage or the bridges' keys; none found fails."""
    output = TaskOutput("done", usage={"input_tokens": 700, "output_tokens": 500})
    judgment = judge_it(StepEfficiency(max_tokens=1000), output=output)
    assert judgment.status is Status.FAIL and judgment.score == pytest.approx(1000 / 1200)
    meta = {"openai.usage.input_tokens": 100, "openai.usage.output_tokens": 50}
    assert judge_it(StepEfficiency(max_tokens=200), metadata=meta).status is Status.PASS
    judgment = judge_it(StepEfficiency(max_tokens=200), metadata={"usage": {"total_tokens": 201}})
    assert judgment.status is Status.FAIL
    judgment = judge_it(StepEfficiency(max_tokens=200))
    assert judgment.status is Status.FAIL and "no token usage found" in judgment.reasoning


def test_step_efficiency_without_budget_abstains() -> None:
    """No budget anywhere: ABSTAIN saying how to give one; bad budgets are ValueErrors."""
    assert judge_it(StepEfficiency()).status is Status.ABSTAIN
    with pytest.raises(ValueError, match="max_steps"):
        StepEfficiency(max_steps=-1)


# --------------------------------------------------------------------------- ForbiddenTools


def test_forbidden_tools_and_allow_list() -> None:
    """A forbidden tool or one outside the allow-list fails with a check per violation."""
    assert judge_it(ForbiddenTools(["delete"])).status is Status.PASS
    judgment = judge_it(ForbiddenTools(["book"]))
    assert judgment.status is Status.FAIL and judgment.score == 0.0
    assert "messages[3] tool call 0" in judgment.reasoning and "is forbidden" in judgment.reasoning
    judgment = judge_it(ForbiddenTools(allowed=["search", "book"]))
    assert judgment.status is Status.FAIL and "'notify' is not among the allowed" in (
        judgment.reasoning
    )


def test_forbidden_tools_per_case_and_argument_rules() -> None:
    """Per-case metadata adds forbidden/allowed tools; a deny rule inspects arguments."""
    judgment = judge_it(ForbiddenTools(), metadata={"forbidden_tools": ["notify"]})
    assert judgment.status is Status.FAIL
    big = ForbiddenTools(deny={"book": lambda a: a.get("people", 0) > 8})
    assert judge_it(big).status is Status.PASS
    judgment = judge_it(big, messages=[assistant(call("book", place="A", people=9))])
    assert judgment.status is Status.FAIL and "denied by the rule" in judgment.reasoning


def test_forbidden_tools_raising_rule_is_an_error() -> None:
    """A deny rule that raises is ERROR naming the tool."""
    judgment = judge_it(ForbiddenTools(deny={"search": lambda a: a["missing"]}))
    assert judgment.status is Status.ERROR and "rule for tool 'search' raised KeyError" in (
        judgment.reasoning
    )
    with pytest.raises(ValueError, match="tool names"):
        ForbiddenTools("delete")


def test_agent_judges_report_malformed_trajectories() -> None:
    """A malformed message in ctx.output is ERROR naming its index, for every judge."""
    bad = [{"role": "assistant", "tool_calls": [{"function": {"name": "t", "arguments": "["}}]}]
    for judge in (ToolSelection(), ToolArgumentsValid(), StepEfficiency(max_steps=1)):
        judgment = anyio.run(judge, Context(output=bad, expected=["t"]))
        assert judgment.status is Status.ERROR, judge
        assert "messages[0]" in judgment.reasoning
    judgment = anyio.run(ForbiddenTools(), Context(output=bad))
    assert judgment.status is Status.ERROR

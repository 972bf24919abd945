"""PromptTemplate: unknown variables follow the MissingPolicy (issue 12, item 28)."""

from __future__ import annotations

import pytest

from agentjudge import Evaluator, Status
from agentjudge.core import Context
from agentjudge.exceptions import TemplateError
from agentjudge.judges import LLMJudge, MissingPolicy, PromptTemplate
from agentjudge.models import OpenAIChat
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse


def test_strict_unknown_variable_is_a_template_error_at_construction() -> None:
    """Under STRICT an unknown variable raises TemplateError (a ValueError) naming line and name."""
    with pytest.raises(TemplateError, match=r"unknown variable '\{\{bogus\}\}' on line 2") as info:
        PromptTemplate("Q: {{input}}\n{{bogus}}", missing=MissingPolicy.STRICT)
    assert isinstance(info.value, ValueError)
    assert "{{metadata.KEY}}" in str(info.value)


def test_empty_policy_blanks_an_unknown_variable() -> None:
    """Under EMPTY an unknown placeholder renders as the empty string."""
    t = PromptTemplate("[{{ bogus }}]{{input}}[{{metadata.}}]", missing=MissingPolicy.EMPTY)
    assert t.render(Context(input="q")) == "[]q[]"


def test_leave_policy_keeps_an_unknown_variable_as_written() -> None:
    """Under LEAVE an unknown placeholder stays exactly as written in the template."""
    t = PromptTemplate("[{{ bogus }}] {{input}} {{other.x}}", missing=MissingPolicy.LEAVE)
    assert t.render(Context(input="q")) == "[{{ bogus }}] q {{other.x}}"
    assert t.variables == ("bogus", "input", "other.x")


def test_leave_policy_keeps_missing_metadata_and_unknown_alike() -> None:
    """LEAVE keeps both an unknown variable and an absent metadata key."""
    t = PromptTemplate("{{x}} {{metadata.k}}", missing=MissingPolicy.LEAVE)
    assert t.render(Context()) == "{{x}} {{metadata.k}}"


async def test_llm_judge_sends_a_left_placeholder_to_the_model() -> None:
    """An LLMJudge with a LEAVE template asks the model with the placeholder kept verbatim."""
    template = PromptTemplate("Grade {{output}} with {{rubric}}", missing=MissingPolicy.LEAVE)
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES")) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k", retry=None) as model,
    ):
        [result] = await Evaluator(LLMJudge("j", model, template)).evaluate(
            Context(input="q", output="a")
        )
    assert result.judgment is not None and result.judgment.status is Status.PASS
    assert server.requests[0]["messages"][-1]["content"] == "Grade a with {{rubric}}"

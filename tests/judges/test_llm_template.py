from __future__ import annotations

from pathlib import Path

import pytest

from agentjudge.core import Context, ExecutionStatus, Message
from agentjudge.exceptions import TemplateError
from agentjudge.judges._template import MissingPolicy, PromptTemplate, render_value


def test_renders_standard_variables() -> None:
    """Every standard variable is filled from the context."""
    t = PromptTemplate("{{input}}|{{output}}|{{expected}}|{{workspace}}|{{status}}")
    ctx = Context(
        input="q",
        output="a",
        expected="e",
        workspace=Path("/tmp/ws"),
        status=ExecutionStatus.SUCCESS,
    )
    assert t.render(ctx) == "q|a|e|/tmp/ws|success"


def test_spaces_inside_braces_are_allowed() -> None:
    """`{{ input }}` and `{{input}}` are the same variable."""
    t = PromptTemplate("{{ input }} {{input}} {{  metadata.k  }}")
    assert t.render(Context(input="x", metadata={"k": "v"})) == "x x v"
    assert t.variables == ("input", "metadata.k")


def test_none_renders_as_empty_string() -> None:
    """None values (output, expected, workspace, a None metadata value) render as ''."""
    t = PromptTemplate("[{{output}}][{{expected}}][{{workspace}}][{{metadata.k}}]")
    assert t.render(Context(metadata={"k": None})) == "[][][][]"


def test_status_renders_enum_value() -> None:
    """`{{status}}` renders the lower-case enum value."""
    assert PromptTemplate("{{status}}").render(Context()) == "unknown"
    assert PromptTemplate("{{status}}").render(Context(status=ExecutionStatus.FAILED)) == "failed"


def test_non_string_values() -> None:
    """Scalars use str(); dicts and lists are JSON with non-ASCII kept."""
    t = PromptTemplate("{{input}} {{output}} {{metadata.n}} {{metadata.b}}")
    ctx = Context(input={"q": "café", "n": [1, 2]}, output=[1, "two"], metadata={"n": 3, "b": True})
    assert t.render(ctx) == '{"q": "café", "n": [1, 2]} [1, "two"] 3 True'


def test_messages_variable() -> None:
    """`{{messages}}` renders 'role: content' lines."""
    ctx = Context(
        messages=(Message(role="user", content="hi"), Message(role="assistant", content="yo"))
    )
    assert PromptTemplate("{{messages}}").render(ctx) == "user: hi\nassistant: yo"


def test_values_are_never_rescanned() -> None:
    """An output containing placeholders is inserted verbatim, even under STRICT."""
    t = PromptTemplate("Out: {{output}} In: {{input}}")
    ctx = Context(input="{{metadata.secret}}", output="{{input}} {{missing.thing}} {{metadata.x}}")
    assert (
        t.render(ctx) == "Out: {{input}} {{missing.thing}} {{metadata.x}} In: {{metadata.secret}}"
    )


def test_metadata_value_with_placeholders_is_safe() -> None:
    """A metadata value containing `{{output}}` does not pull the output in."""
    t = PromptTemplate("{{metadata.a}}/{{output}}")
    assert t.render(Context(output="OUT", metadata={"a": "{{output}}"})) == "{{output}}/OUT"


def test_metadata_keys_with_dots() -> None:
    """The whole text after `metadata.` is the key, dots included."""
    t = PromptTemplate("{{metadata.rag.context}}")
    assert t.render(Context(metadata={"rag.context": "chunks"})) == "chunks"


def test_strict_missing_metadata_raises_template_error() -> None:
    """STRICT: an absent metadata key raises TemplateError naming variable and template."""
    t = PromptTemplate("Use {{metadata.rubric}}", name="grader")
    with pytest.raises(TemplateError) as info:
        t.render(Context(metadata={"other": 1}))
    message = str(info.value)
    assert "metadata.rubric" in message
    assert "grader" in message
    assert "'other'" in message
    assert isinstance(info.value, ValueError)


def test_strict_unnamed_template_is_described_by_its_start() -> None:
    """An unnamed template is identified by the start of its text."""
    with pytest.raises(TemplateError, match="starting 'Score this:"):
        PromptTemplate("Score this: {{metadata.k}}").render(Context())


def test_empty_policy() -> None:
    """EMPTY: an absent metadata key renders as ''."""
    t = PromptTemplate("a{{metadata.k}}b", missing=MissingPolicy.EMPTY)
    assert t.render(Context()) == "ab"


def test_leave_policy_keeps_placeholder_as_written() -> None:
    """LEAVE: an absent metadata key keeps its placeholder text."""
    t = PromptTemplate("a{{ metadata.k }}b{{metadata.j}}", missing=MissingPolicy.LEAVE)
    assert t.render(Context(metadata={"j": "J"})) == "a{{ metadata.k }}bJ"


def test_policy_accepts_string_values() -> None:
    """MissingPolicy can be given by its value."""
    assert PromptTemplate("x", missing="empty").missing is MissingPolicy.EMPTY  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text", ["{{goal}}", "{{ Input }}", "{{}}", "{{metadata.}}", "{{metadata}}"]
)
def test_unknown_variable_is_rejected_at_construction(text: str) -> None:
    """Unknown variable names raise ValueError when the template is built."""
    with pytest.raises(ValueError, match="unknown variable"):
        PromptTemplate(text)


def test_unknown_variable_error_names_the_line() -> None:
    """The construction error names the line of the bad placeholder."""
    with pytest.raises(ValueError, match="line 3"):
        PromptTemplate("a\nb\n{{agent_output}}")


def test_text_without_placeholders_and_lone_braces() -> None:
    """Lone braces and JSON examples are plain text."""
    text = 'Reply as {"score": 1} or {{input}} }} {{'
    assert PromptTemplate(text).render(Context(input="I")) == 'Reply as {"score": 1} or I }} {{'


def test_template_must_be_text() -> None:
    """A non-str template is a TypeError."""
    with pytest.raises(TypeError):
        PromptTemplate(123)  # type: ignore[arg-type]


def test_render_value_helpers() -> None:
    """render_value covers None, str, enums, paths, sets and objects."""
    assert render_value(None) == ""
    assert render_value("s") == "s"
    assert render_value(ExecutionStatus.TIMEOUT) == "timeout"
    assert render_value(Path("a/b")) == "a/b"
    assert render_value(2.5) == "2.5"
    assert render_value({"m": Message(role="user", content="x")}) == (
        '{"m": {"role": "user", "content": "x"}}'
    )

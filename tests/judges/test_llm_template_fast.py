"""A template's standard fields holding an exact str are inserted without `render_value`.

`PromptTemplate.render` reads ``{{input}}``, ``{{output}}``, ``{{expected}}``,
``{{workspace}}`` and ``{{status}}`` directly and inserts a value whose type is exactly
``str`` as it is (issue 19.11: two calls per placeholder on every judged call); everything
else goes through `render_value` as before. A template whose placeholders are all standard
fields reads them in one call and, when each is an exact str, fills them in one ``%``
formatting (literal ``%`` escaped). The property: any template over any variables,
for any context values (str and its subclasses, None, numbers, containers, enums, paths,
metadata), renders exactly what rendering every placeholder through `render_value` gives.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentjudge.core import Context, ExecutionStatus, Message
from agentjudge.judges._template import MissingPolicy, PromptTemplate, render_messages, render_value


class Colour(enum.StrEnum):
    RED = "red"


class Text(str):
    """A str subclass: not an exact str, so it takes the general way."""


_VALUES = st.one_of(
    st.none(),
    st.text(max_size=8),
    st.text(max_size=8).map(Text),
    st.integers(),
    st.floats(allow_nan=False),
    st.just(Colour.RED),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_VARIABLES = st.sampled_from(
    ["input", "output", "expected", "workspace", "status", "messages", "metadata.k"]
)


def _general(template: PromptTemplate, ctx: Context) -> str:
    """The rendering with every placeholder through `render_value` (the way before)."""
    pieces = []
    for literal, variable, _, _ in template._parts:
        if variable == "messages":
            value = render_messages(ctx.messages)
        elif variable.startswith("metadata."):
            value = render_value(ctx.metadata[variable.removeprefix("metadata.")])
        else:
            value = render_value(getattr(ctx, variable))
        pieces += [literal, value]
    return "".join(pieces) + template._tail


@hsettings(max_examples=150)
@given(
    variables=st.lists(_VARIABLES, min_size=1, max_size=5),
    literals=st.lists(st.text(alphabet="ab {}\n%s", max_size=4), min_size=6, max_size=6),
    fields=st.tuples(_VALUES, _VALUES, _VALUES, _VALUES),
    workspace=st.sampled_from([None, Path("/tmp/ws")]),
    status=st.sampled_from(list(ExecutionStatus)),
)
def test_rendering_equals_render_value_of_every_placeholder(
    variables: list[str],
    literals: list[str],
    fields: tuple[Any, Any, Any, Any],
    workspace: Path | None,
    status: ExecutionStatus,
) -> None:
    literals = [text.replace("{{", "{ {") for text in literals]
    pairs = zip(literals[: len(variables)], variables, strict=True)
    text = "".join(f"{lit}{{{{{var}}}}}" for lit, var in pairs) + literals[-1]
    template = PromptTemplate(text, missing=MissingPolicy.STRICT)
    ctx = Context(
        input=fields[0],
        output=fields[1],
        expected=fields[2],
        workspace=workspace,
        status=status,
        messages=[Message(role="user", content="hi")],
        metadata={"k": fields[3] if fields[3] is not None else "v"},
    )
    assert template.render(ctx) == _general(template, ctx)


@hsettings(max_examples=100)
@given(
    variables=st.lists(st.sampled_from(["input", "output", "expected"]), min_size=1, max_size=4),
    literals=st.lists(st.text(alphabet="a {}\n%sd()", max_size=4), min_size=5, max_size=5),
    fields=st.tuples(*[st.one_of(st.text(max_size=6), st.text(max_size=3).map(Text))] * 3),
)
def test_a_template_of_str_fields_renders_as_every_placeholder_does(
    variables: list[str], literals: list[str], fields: tuple[str, str, str]
) -> None:
    """The one-formatting way (every placeholder a standard field holding an exact str)."""
    literals = [text.replace("{{", "{ {") for text in literals]
    pairs = zip(literals[: len(variables)], variables, strict=True)
    text = "".join(f"{lit}{{{{{var}}}}}" for lit, var in pairs) + literals[-1]
    template = PromptTemplate(text)
    ctx = Context(input=fields[0], output=fields[1], expected=fields[2])
    assert template.render(ctx) == _general(template, ctx)


def test_percent_signs_in_a_template_of_str_fields_stay_as_written() -> None:
    template = PromptTemplate("100% sure? %s %(x)s {{input}} %% {{output}}%")
    ctx = Context(input="%s", output="%d")
    assert template.render(ctx) == "100% sure? %s %(x)s %s %% %d%"

"""Prompt templates: `PromptTemplate` and `MissingPolicy`.

A template is text with ``{{variable}}`` placeholders (spaces inside the braces are allowed:
``{{ input }}``). The variables are::

    {{input}} {{output}} {{expected}} {{workspace}} {{status}} {{messages}} {{metadata.KEY}}

Rendering is a single pass over the template text: each placeholder is replaced by its value
exactly once and the inserted values are never scanned again, so an agent output that contains
``{{output}}`` or ``{{metadata.secret}}`` is inserted verbatim and can neither pull in other values
nor make a STRICT template fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from enum import Enum, StrEnum
from operator import attrgetter
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from agentjudge.core import Context, Message
from agentjudge.exceptions import TemplateError

__all__ = ["VARIABLES", "MissingPolicy", "PromptTemplate", "render_messages", "render_value"]

VARIABLES: tuple[str, ...] = (
    "input",
    "output",
    "expected",
    "workspace",
    "status",
    "messages",
    "metadata.KEY",
)
"""The variable names a template may use (``KEY`` stands for any metadata key)."""

_STANDARD = frozenset(v for v in VARIABLES if v != "metadata.KEY")
_METADATA_PREFIX = "metadata."
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


class MissingPolicy(StrEnum):
    """What a template does with a placeholder it cannot fill.

    Two cases: an unknown variable (``{{bogus}}``, known when the template is built) and a
    ``{{metadata.KEY}}`` whose key the context lacks (known only when rendering). The standard
    variables (``input``, ``output``...) are always present; a None value renders as the empty
    string under every policy.
    """

    STRICT = "strict"
    """Raise `agentjudge.exceptions.TemplateError` (a ValueError) naming the variable and the
    template: at construction for an unknown variable, at render for a missing metadata key."""
    EMPTY = "empty"
    """Render the placeholder as the empty string."""
    LEAVE = "leave"
    """Keep the placeholder text as written in the template."""


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return str(value)


def render_value(value: Any) -> str:
    """Turn a context value into prompt text.

    None renders as ``""``, strings as themselves, enums as their value, mappings, sequences and
    pydantic models as JSON (``ensure_ascii=False``), and every other value through ``str()``.

    Args:
        value: Any value found on a `Context`.

    Returns:
        The text to insert into a prompt.
    """
    if value is None:
        return ""
    if isinstance(value, Enum):
        return render_value(value.value)
    if isinstance(value, str):
        return value
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping | list | tuple | set | frozenset | BaseModel):
        return json.dumps(_jsonable(value), ensure_ascii=False)
    return str(value)


def _is_known(variable: str) -> bool:
    """True for a standard variable or ``metadata.KEY`` with a non-blank key."""
    if variable in _STANDARD:
        return True
    return variable.startswith(_METADATA_PREFIX) and bool(variable[len(_METADATA_PREFIX) :].strip())


def render_messages(messages: Sequence[Message]) -> str:
    """Messages as prompt text: one ``role: content`` line each, tool calls and ids included.

    An assistant message's tool calls follow it as ``  -> name({"arg": ...})`` lines (with
    ``[id]`` when set); a tool result shows the call it answers as ``tool [id]: ...``.
    """
    lines: list[str] = []
    for m in messages:
        role = f"{m.role} [{m.tool_call_id}]" if m.tool_call_id is not None else m.role
        lines.append(f"{role}: {m.content}")
        for call in m.tool_calls:
            ref = f" [{call.id}]" if call.id is not None else ""
            lines.append(f"  -> {call}{ref}")
    return "\n".join(lines)


class PromptTemplate:
    r"""A prompt with ``{{variable}}`` placeholders filled from a `Context`.

    Args:
        text: The template text.
        missing: What to do with an unknown variable or a ``{{metadata.KEY}}`` whose key is
            absent from the context (see `MissingPolicy`).
        name: A name used in error messages (defaults to the start of the text).

    Raises:
        TemplateError: under `MissingPolicy.STRICT`, a placeholder names an unknown variable
            (the message names the line and lists the known variables). Under EMPTY and LEAVE
            an unknown placeholder renders as ``""`` or stays as written.

    Example:
        >>> from agentjudge.core import Context, Message
        >>> t = PromptTemplate("Q: {{ input }}\nA: {{output}}")
        >>> t.render(Context(input="2+2?", output="{{input}}"))
        'Q: 2+2?\nA: {{input}}'
    """

    def __init__(
        self,
        text: str,
        *,
        missing: MissingPolicy = MissingPolicy.STRICT,
        name: str | None = None,
    ) -> None:
        if not isinstance(text, str):
            raise TypeError(f"template text must be a str, got {type(text).__name__}")
        self.text = text
        """The template text as given."""
        self.missing = MissingPolicy(missing)
        """The policy for absent metadata keys."""
        self.name = name
        """The name used in error messages."""
        # (literal before, variable, placeholder text, a standard field read as it is)
        parts: list[tuple[str, str, str, bool]] = []
        seen: dict[str, None] = {}
        unknown: set[str] = set()
        position = 0
        for match in _PLACEHOLDER.finditer(text):
            variable = match.group(1)
            if not _is_known(variable):
                self._refuse_unknown(match)  # raises under STRICT only
                unknown.add(variable)
            direct = variable in _STANDARD and variable != "messages"
            parts.append((text[position : match.start()], variable, match.group(0), direct))
            seen.setdefault(variable, None)
            position = match.end()
        self._parts = tuple(parts)
        self._unknown = frozenset(unknown)
        self._tail = text[position:]
        # Every placeholder a standard field (and at least one): `render` reads them in one
        # call and, when each is an exact str (its own text), fills them in one % formatting.
        self._fields: attrgetter[Any] | None = None
        self._single = len(parts) == 1  # attrgetter of one name gives the value, not a tuple
        self._format = ""
        if parts and all(part[3] for part in parts):
            self._fields = attrgetter(*[part[1] for part in parts])
            self._format = "".join(
                part[0].replace("%", "%%") + "%s" for part in parts
            ) + self._tail.replace("%", "%%")
        self.variables: tuple[str, ...] = tuple(seen)
        """The variables the template uses, in order of first appearance."""

    @property
    def _label(self) -> str:
        if self.name:
            return repr(self.name)
        head = self.text.strip().replace("\n", " ")
        if len(head) > 40:
            head = head[:40] + "..."
        return f"starting {head!r}"

    def _refuse_unknown(self, match: re.Match[str]) -> None:
        if self.missing is not MissingPolicy.STRICT:
            return
        line = self.text.count("\n", 0, match.start()) + 1
        known = ", ".join("{{" + v + "}}" for v in VARIABLES)
        raise TemplateError(
            f"template {self._label}: unknown variable {match.group(0)!r} on line {line}; "
            f"expected one of {known} (or use MissingPolicy.EMPTY / LEAVE to blank or keep it)"
        )

    def _value(self, variable: str, placeholder: str, ctx: Context) -> str:
        if variable in self._unknown:
            return "" if self.missing is MissingPolicy.EMPTY else placeholder
        if variable.startswith(_METADATA_PREFIX):
            key = variable[len(_METADATA_PREFIX) :]
            if key not in ctx.metadata:
                if self.missing is MissingPolicy.EMPTY:
                    return ""
                if self.missing is MissingPolicy.LEAVE:
                    return placeholder
                present = ", ".join(sorted(map(repr, ctx.metadata))) or "none"
                raise TemplateError(
                    f"template {self._label}: variable {{{{{variable}}}}} is missing "
                    f"(context metadata has no key {key!r}; keys present: {present})"
                )
            return render_value(ctx.metadata[key])
        if variable == "messages":
            return render_messages(ctx.messages)
        return render_value(getattr(ctx, variable))

    def render(self, ctx: Context) -> str:
        """Fill the placeholders from ``ctx`` in one pass.

        Args:
            ctx: The context being judged.

        Returns:
            The prompt text.

        Raises:
            TemplateError: under `MissingPolicy.STRICT`, a ``{{metadata.KEY}}`` whose key is
                absent (unknown variables were refused at construction already).
        """
        fields = self._fields
        if fields is not None:
            values = (fields(ctx),) if self._single else fields(ctx)
            for value in values:
                if type(value) is not str:
                    break
            else:  # each placeholder's text is its field's value, as the loop below puts it
                return self._format % values
        pieces: list[str] = []
        for literal, variable, placeholder, direct in self._parts:
            pieces.append(literal)
            if direct:  # a field such as input or output: an exact str is its own text
                value = getattr(ctx, variable)
                if type(value) is str:
                    pieces.append(value)
                    continue
            pieces.append(self._value(variable, placeholder, ctx))
        pieces.append(self._tail)
        return "".join(pieces)

    def __repr__(self) -> str:
        return f"PromptTemplate({self._label}, missing={self.missing.value})"

"""One dataset row (`Case`) and what a task may return (`TaskOutput`).

Process-global cache: ``_SHAPES`` maps the usual row shapes (the keys ``id``, ``input``, then
optionally ``expected``, ``metadata`` and ``human``, in that order) to their shared
``model_fields_set`` and missing defaults. It is built once at import with one entry per such
prefix of `Case`'s fields (4 today) and never written afterwards: rows of any other shape take
the general path and add nothing, so it cannot grow however many distinct shapes a dataset has.
Sharing the set is safe because pydantic never changes a frozen model's fields set in place.
``tests/harness/test_harness_caches.py`` checks it stays that size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

from agentjudge._compat import build_model, check_buildable
from agentjudge.core import Message

if TYPE_CHECKING:
    from agentjudge.models import Usage

__all__ = ["Case", "HumanLabel", "TaskOutput", "case_from_row", "human_label_problem"]

HumanLabel = StrictStr | StrictBool | StrictInt | StrictFloat
"""What a row's ``human`` field may hold: a label, a status word, true/false or a number."""

_MISSING: Any = object()


class Case(BaseModel):
    """One row of a dataset: what the task is asked and what a good answer looks like.

    ``Case(id, input, expected=None, metadata={}, human=None, **extra)``: fields beyond these
    five are kept as extras (``case.model_extra``, or attribute access ``case.tag``) and reach
    the task, not the judges.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str = Field(min_length=1)
    """Unique, non-blank identifier of the case (ids are compared exactly, case-sensitively)."""
    input: Any
    """What the system under test is given (any JSON value)."""
    expected: Any = None
    """The reference the judges compare against (any JSON value), when there is one."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form facts about the case; judges see it as ``ctx.metadata`` (plus ``case_id``)."""
    human: HumanLabel | None = None
    """A person's verdict on the case, for measuring the judges against it (never shown to a
    judge: the `Context` has no place for it). A label (``"relevant"``), a status word
    (``"pass"``, ``"fail"``), a bool (true = ``"pass"``, false = ``"fail"``) or a finite number
    (compared with the judges' scores); None: the case is unlabelled. The results row carries
    it back as a top-level ``"human"`` key."""

    def __init__(self, id: Any = _MISSING, input: Any = _MISSING, /, **data: Any) -> None:
        if id is not _MISSING:
            data["id"] = id
        if input is not _MISSING:
            data["input"] = input
        super().__init__(**data)

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("id must be a non-blank string")
        return v

    @field_validator("human")
    @classmethod
    def _human_usable(cls, v: HumanLabel | None) -> HumanLabel | None:
        problem = human_label_problem(v)
        if problem is not None:
            raise ValueError(problem)
        return v

    @property
    def extras(self) -> Mapping[str, Any]:
        """The row's fields beyond id, input, expected and metadata."""
        return self.model_extra or {}


def human_label_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a ``human`` label (None: nothing; None is no label)."""
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, str):
        return None if value.strip() else "human must be a non-blank label, got ''"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"human must be a finite number, got {value!r}"
    return (
        "human must be a label string, a status word, a boolean (pass/fail) or a number, "
        f"got {type(value).__name__}"
    )


def case_from_row(row: dict[str, Any]) -> Case:
    """Build a case from a row the dataset checks accepted, without pydantic validation.

    The dataset's hot path: the result equals ``Case.model_validate(row)`` in everything
    observable (field values and their order, extras, ``model_fields_set``, equality, dumps,
    repr, pickling, copying; frozen) at a fraction of the cost. The caller guarantees what
    validation would check (the dataset's ``_row`` does): ``id`` is a non-blank string,
    ``input`` is present, ``metadata`` is absent or a dict with str keys, ``human`` is absent
    or a usable label (`human_label_problem`). Which fields exist,
    which are required and what the others default to all come from ``Case.model_fields``, so
    a field added to `Case` cannot be missed here (a new *required* field fails at import:
    the dataset check would have to learn it first).

    Rows of the usual shapes share one ``model_fields_set`` per shape: pydantic never changes
    a frozen model's set in place (``model_copy`` copies it first).

    Args:
        row: A freshly decoded row, taken over by the case (it becomes the case's
            ``__dict__`` or its extras).

    Returns:
        The case.
    """
    shape = _SHAPES.get(tuple(row))
    if shape is not None:
        # The keys are the first fields in declaration order: the row is the __dict__ once
        # the missing trailing fields get their defaults.
        fields_set, missing = shape
        for name, default, factory in missing:
            row[name] = default if factory is None else factory()
        return build_model(Case, row, fields_set, {})
    fields_set = set(row)
    values = {
        name: row.pop(name) if name in row else (default if factory is None else factory())
        for name, default, factory in _DEFAULTS
    }
    return build_model(Case, values, fields_set, row)


def _defaults() -> tuple[tuple[str, Any, Callable[[], Any] | None], ...]:
    """``(name, default, default_factory)`` of every field of `Case`, in declaration order."""
    required = [name for name, info in Case.model_fields.items() if info.is_required()]
    if required != list(_CHECKED_REQUIRED):
        raise TypeError(
            f"Case requires {required} but the dataset row check covers {_CHECKED_REQUIRED}: "
            "teach agentjudge.harness._dataset._row the new field before case_from_row uses it"
        )
    return tuple(
        (name, info.default, cast("Callable[[], Any] | None", info.default_factory))
        for name, info in Case.model_fields.items()
    )


_CHECKED_REQUIRED = ("id", "input")
"""The fields the dataset's row check requires (and checks) before `case_from_row`."""
check_buildable(Case)
_DEFAULTS = _defaults()
# Row shapes whose keys are the first fields in declaration order (the usual ones), with their
# fields set and the defaults of the fields they leave out.
_SHAPES: dict[tuple[str, ...], tuple[set[str], tuple[tuple[str, Any, Any], ...]]] = {
    tuple(name for name, _, _ in _DEFAULTS[:given]): (
        {name for name, _, _ in _DEFAULTS[:given]},
        _DEFAULTS[given:],
    )
    for given in range(len(_CHECKED_REQUIRED), len(_DEFAULTS) + 1)
}


class TaskOutput(BaseModel):
    """What a task may return when judges need more than the answer text.

    ``TaskOutput(text, citations=(), route=None, refused=False, usage=None, messages=())``. The
    retrieval and routing judges read ``citations``, ``route`` and ``refused`` from it; the
    trajectory judges read ``messages`` (as ``ctx.messages``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = ""
    """The answer text."""
    citations: tuple[str, ...] = ()
    """Identifiers of the sources the answer cites, in the order given."""
    route: str | None = None
    """The route / sub-agent / tool the system chose, when it routes."""
    refused: bool = False
    """True when the system declined to answer."""
    usage: Any = None
    """Token usage of the call (an `agentjudge.models.Usage` or a dict of its fields)."""
    messages: tuple[Message, ...] = ()
    """The agent's trajectory (messages with tool calls; OpenAI chat-format dicts accepted):
    judges see it as ``ctx.messages``."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else worth keeping in the results file (JSON values)."""

    def __init__(self, text: Any = _MISSING, /, **data: Any) -> None:
        if text is not _MISSING:
            data["text"] = text
        super().__init__(**data)

    @field_validator("usage", mode="before")
    @classmethod
    def _usage(cls, v: object) -> Usage | None:
        # Imported lazily: agentjudge.models pulls in httpx, which the CLI need not pay for.
        if v is None:
            return None
        from agentjudge.models import Usage

        return v if isinstance(v, Usage) else Usage.model_validate(v)

    def __str__(self) -> str:
        return self.text

"""One dataset row (`Case`) and what a task may return (`TaskOutput`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:
    from agentjudge.models import Usage

__all__ = ["Case", "TaskOutput"]

_MISSING: Any = object()


class Case(BaseModel):
    """One row of a dataset: what the task is asked and what a good answer looks like.

    ``Case(id, input, expected=None, metadata={}, **extra)``: fields beyond these four are kept
    as extras (``case.model_extra``, or attribute access ``case.tag``) and reach the task, not
    the judges.
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

    @property
    def extras(self) -> Mapping[str, Any]:
        """The row's fields beyond id, input, expected and metadata."""
        return self.model_extra or {}

    @classmethod
    def _trusted(cls, row: dict[str, Any]) -> Case:
        """Build a case from a row the dataset checks accepted, without pydantic validation.

        The dataset's hot path: the result equals ``Case.model_validate(row)`` in everything
        observable (field values and their order, extras, ``model_fields_set``, equality, dumps,
        repr, pickling, copying; frozen) at a fraction of the cost. The caller guarantees what
        validation would check: ``id`` is a non-blank string, ``input`` is present, ``metadata``
        is absent or a dict with str keys.

        Rows of the usual shapes share one ``model_fields_set`` per shape, as
        `agentjudge.core.construct` does for the engine's models: pydantic never changes a
        frozen model's set in place (``model_copy`` copies it first).

        Args:
            row: A freshly decoded row, taken over by the case (it becomes the case's
                ``__dict__`` or its extras).

        Returns:
            The case.
        """
        shape = _SHAPES.get(tuple(row))
        if shape is not None:
            # The keys are the fields in declaration order: the row is the __dict__ once the
            # missing trailing fields get their defaults.
            fields_set, present = shape
            if present < 3:
                row["expected"] = None
            if present < 4:
                row["metadata"] = {}
            values, extra = row, {}
        else:
            fields_set = set(row)
            values = {
                "id": row.pop("id"),
                "input": row.pop("input"),
                "expected": row.pop("expected", None),
                "metadata": row.pop("metadata") if "metadata" in row else {},
            }
            extra = row
        case = _new(cls)
        _set_dict(case, values)
        _set_fields_set(case, fields_set)
        _set_extra(case, extra)
        _set_private(case, None)
        return case


# Row shapes whose keys are a prefix of the fields in declaration order (the usual ones), with
# their fields set and how many fields they give; `Case._trusted` uses such a row as the case's
# __dict__ directly.
_FIELD_ORDER = ("id", "input", "expected", "metadata")
_SHAPES: dict[tuple[str, ...], tuple[set[str], int]] = {
    _FIELD_ORDER[:present]: (set(_FIELD_ORDER[:present]), present) for present in (2, 3, 4)
}
# The four attributes validation fills in, set through BaseModel's slot descriptors (calling
# them directly is cheaper than ``object.__setattr__``, which `core.construct` uses).
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


class TaskOutput(BaseModel):
    """What a task may return when judges need more than the answer text.

    ``TaskOutput(text, citations=(), route=None, refused=False, usage=None)``. The retrieval and
    routing judges read ``citations``, ``route`` and ``refused`` from it.
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

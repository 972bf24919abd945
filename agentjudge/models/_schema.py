"""Structured output: decode a model's JSON answer and check it against a JSON schema.

Validation is `jsonschema`'s (the full specification: ``pattern``, ``multipleOf``,
``uniqueItems``, ``prefixItems``, formats are not asserted). The dialect is the schema's
``$schema`` when it names one, else Draft 2020-12 (what pydantic generates). Two house rules sit
on top: numbers must be finite (``NaN``/``Infinity`` are never a ``number`` or ``integer``), and
booleans are never numbers (already true in JSON schema). `jsonschema` is imported on first
use, so judges and the command line start without it.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is imported on first use: judges and the CLI start without it
    from jsonschema.protocols import Validator

__all__ = [
    "SchemaViolation",
    "compiled_schema",
    "decode_json_object",
    "plain_json",
    "schema_errors",
    "tool_name",
    "validator_errors",
]

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_MAX_ERRORS = 5


_LEAVES = (str, int, float, type(None))


def plain_json(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists (for json.dumps).

    Exact dicts, lists and JSON scalars (most of a schema, walked for every structured
    request) are dispatched on their type; anything else takes `_plain_other`.
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): plain_json(v) for k, v in value.items()}
    if kind is list:
        return [plain_json(v) for v in value]
    return _plain_other(value)


def _plain_other(value: Any) -> Any:
    """`plain_json` of subclasses, other mappings and tuples."""
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, dict | Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    return value


class SchemaViolation(ValueError):
    """An answer is not JSON or does not follow the requested schema."""


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a valid JSON number")


def decode_json_object(text: str) -> dict[str, Any]:
    """Decode ``text`` as one JSON object (a surrounding code fence is tolerated).

    Raises:
        SchemaViolation: Not JSON, a non-finite number, or not an object.
    """
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        value = json.loads(stripped, parse_constant=_reject_constant)
    except ValueError as exc:
        raise SchemaViolation(f"the answer is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise SchemaViolation(f"the answer must be a JSON object, got {_kind(value)}")
    return value


def schema_errors(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every way ``value`` breaks ``schema`` (at most a few), as ``"$.path: problem"`` strings.

    Raises:
        ValueError: ``schema`` itself is not a valid JSON schema (a caller's bug, not the
            model's: asking the model again would not help).
    """
    return validator_errors(compiled_schema(schema), value)


def validator_errors(validator: Validator, value: Any) -> list[str]:
    """Every way ``value`` breaks a `compiled_schema` (at most a few), as `schema_errors`."""
    from referencing.exceptions import Unresolvable

    try:
        found = list(islice(validator.iter_errors(value), _MAX_ERRORS))
    except Unresolvable as exc:
        return [f"$: unresolvable $ref {getattr(exc, 'ref', '?')!r} in the schema"]
    return [f"{error.json_path}: {error.message}" for error in found]


def tool_name(schema: Mapping[str, Any]) -> str:
    """A function/tool name for the schema: its ``title`` made identifier-safe, else "response"."""
    title = schema.get("title")
    if isinstance(title, str):
        name = re.sub(r"[^a-zA-Z0-9_-]+", "_", title).strip("_")[:64]
        if name:
            return name
    return "response"


def _finite_number(checker: Any, value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _finite_integer(checker: Any, value: Any) -> bool:
    if not _finite_number(checker, value):
        return False
    return isinstance(value, int) or float(value).is_integer()


def compiled_schema(schema: Mapping[str, Any], what: str = "response_schema") -> Validator:
    """A validator for ``schema``, checked once and cached by the schema's canonical JSON.

    Args:
        schema: A JSON schema (its ``$schema`` picks the dialect; default Draft 2020-12).
        what: Names the schema in the error (``"response_schema"``, ``"tool 'search'"``).

    Raises:
        ValueError: ``schema`` is not a valid JSON schema (or not JSON), naming ``what``.
    """
    try:
        key = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a JSON schema: {exc}") from None
    return _compiled(key, what)


@functools.lru_cache(maxsize=256)
def _compiled(key: str, what: str) -> Validator:
    """The validator for one canonical schema text (bounded cache: 256 schemas)."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import SchemaError

    schema = json.loads(key)
    base = validators.validator_for(schema, default=Draft202012Validator)
    try:
        base.check_schema(dict(schema))
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path) or "(root)"
        raise ValueError(
            f"{what} is not a valid {base.__name__} JSON schema at {where}: {exc.message}"
        ) from None
    checker = base.TYPE_CHECKER.redefine_many(
        {"number": _finite_number, "integer": _finite_integer}
    )
    strict = validators.extend(base, type_checker=checker)  # type: ignore[no-untyped-call]
    validator: Validator = strict(schema)
    return validator


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__

"""Structured output: decode a model's JSON answer and check it against a JSON schema.

The checker covers the JSON-schema subset that judges and pydantic generate: ``type`` (one or a
list), ``properties``, ``required``, ``additionalProperties`` (bool or schema), ``items``,
``enum``, ``const``, ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``,
``minLength``/``maxLength``, ``minItems``/``maxItems``, ``anyOf``/``oneOf``/``allOf`` and local
``$ref`` (``#/$defs/...``, ``#/definitions/...``). Other keywords are ignored. Numbers must be
finite and booleans are never numbers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SchemaViolation", "decode_json_object", "schema_errors", "tool_name"]

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_MAX_ERRORS = 5


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
    """Every way ``value`` breaks ``schema`` (at most a few), as ``"$.path: problem"`` strings."""
    errors: list[str] = []
    _check(value, schema, "$", schema, errors)
    return errors[:_MAX_ERRORS]


def tool_name(schema: Mapping[str, Any]) -> str:
    """A function/tool name for the schema: its ``title`` made identifier-safe, else "response"."""
    title = schema.get("title")
    if isinstance(title, str):
        name = re.sub(r"[^a-zA-Z0-9_-]+", "_", title).strip("_")[:64]
        if name:
            return name
    return "response"


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


def _is_type(value: Any, expected: str) -> bool:
    if expected == "null":
        return value is None
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "string":
        return isinstance(value, str)
    if expected == "array":
        return isinstance(value, list)
    if expected == "object":
        return isinstance(value, dict)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if not math.isfinite(value):
        return False
    if expected == "number":
        return True
    if expected == "integer":
        return isinstance(value, int) or value.is_integer()
    return True  # unknown type names are not enforced


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _check(  # noqa: C901 - to be replaced by jsonschema (issue 14 item 6)
    value: Any, schema: Any, path: str, root: Mapping[str, Any], errors: list[str]
) -> None:
    if schema is True or not isinstance(schema, Mapping):
        return
    if len(errors) >= _MAX_ERRORS:
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root)
        if target is None:
            errors.append(f"{path}: unresolvable $ref {ref!r} in the schema")
            return
        _check(value, target, path, root, errors)
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, n) for n in names):
            shown = " or ".join(names)
            if isinstance(value, float) and not math.isfinite(value):
                errors.append(f"{path}: expected {shown}, got a non-finite number")
            else:
                errors.append(f"{path}: expected {shown}, got {_kind(value)}")
            return
    if "enum" in schema and value not in list(schema["enum"]):
        errors.append(f"{path}: {value!r} is not one of {list(schema['enum'])!r}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, path, errors)
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']} characters")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _check(item, items, f"{path}[{i}]", root, errors)
    if isinstance(value, dict):
        _check_object(value, schema, path, root, errors)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, Sequence) and options:
            matching = sum(1 for option in options if not _sub_errors(value, option, path, root))
            if matching == 0 or (key == "oneOf" and matching > 1):
                errors.append(f"{path}: does not match {key} of the schema")
    all_of = schema.get("allOf")
    if isinstance(all_of, Sequence):
        for option in all_of:
            _check(value, option, path, root, errors)


def _sub_errors(value: Any, schema: Any, path: str, root: Mapping[str, Any]) -> list[str]:
    sub: list[str] = []
    _check(value, schema, path, root, sub)
    return sub


def _check_number(value: float, schema: Mapping[str, Any], path: str, errors: list[str]) -> None:
    if not math.isfinite(value):
        errors.append(f"{path}: not a finite number")
        return
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: {value!r} is below the minimum {schema['minimum']!r}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{path}: {value!r} is above the maximum {schema['maximum']!r}")
    low = schema.get("exclusiveMinimum")
    if isinstance(low, int | float) and not isinstance(low, bool) and value <= low:
        errors.append(f"{path}: {value!r} must be greater than {low!r}")
    high = schema.get("exclusiveMaximum")
    if isinstance(high, int | float) and not isinstance(high, bool) and value >= high:
        errors.append(f"{path}: {value!r} must be less than {high!r}")


def _check_object(
    value: dict[str, Any],
    schema: Mapping[str, Any],
    path: str,
    root: Mapping[str, Any],
    errors: list[str],
) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for name in schema.get("required", ()):
        if name not in value:
            errors.append(f"{path}: missing required property {name!r}")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        where = f"{path}.{name}"
        if name in properties:
            _check(item, properties[name], where, root, errors)
        elif extra is False:
            errors.append(f"{path}: unexpected property {name!r}")
        elif isinstance(extra, Mapping):
            _check(item, extra, where, root, errors)

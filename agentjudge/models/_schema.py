"""Structured output: decode a model's JSON answer and check it against a JSON schema.

Validation is `jsonschema`'s (the full specification: ``pattern``, ``multipleOf``,
``uniqueItems``, ``prefixItems``, formats are not asserted). The dialect is the schema's
``$schema`` when it names one, else Draft 2020-12 (what pydantic generates). Two house rules sit
on top: numbers must be finite (``NaN``/``Infinity`` are never a ``number`` or ``integer``), and
booleans are never numbers (already true in JSON schema). `jsonschema` is imported on first
use, so judges and the command line start without it.

Every answer is first checked by a quick check compiled once per schema (`quick_check`) for
the part of JSON schema pydantic generates; it only ever says "valid". An answer it does not
accept, or a schema it does not fully understand, goes to `jsonschema`, which gives the errors.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple

from agentjudge._compat import json_scanner
from agentjudge.models._json import TextMemo, c_encoder

if TYPE_CHECKING:  # jsonschema is imported on first use: judges and the CLI start without it
    from jsonschema.protocols import Validator

__all__ = [
    "SchemaViolation",
    "compiled_schema",
    "decode_json_object",
    "plain_json",
    "quick_check",
    "schema_errors",
    "tool_name",
    "validator_errors",
]

Quick = Callable[[Any], bool]
"""A quick check: True only for a value its schema accepts; False: ask jsonschema."""

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_MAX_ERRORS = 5


_LEAVES = (str, int, float, type(None))
_SCALARS = frozenset((str, int, float, bool, type(None)))
"""The exact JSON scalar types: kept as they are, without a call."""


def plain_json(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists (for json.dumps).

    Exact dicts, lists and JSON scalars (most of a schema, copied for every structured
    request) are dispatched on their type, a dict's scalar values kept in its loop without a
    call (~25% fewer instructions for a judge's schema than a call per value); anything else
    takes `_plain_other`.
    """
    kind = type(value)
    if kind is dict:
        plain = {}
        for key, item in value.items():
            plain[key if type(key) is str else str(key)] = (
                item if type(item) in _SCALARS else plain_json(item)
            )
        return plain
    if kind in _SCALARS:
        return value
    if kind is list:
        return [item if type(item) in _SCALARS else plain_json(item) for item in value]
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


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
"""``json.loads(text, parse_constant=...)`` builds this decoder on every call: made once."""
_SCAN = json_scanner(_DECODER)
_CANONICAL = json.JSONEncoder(sort_keys=True, allow_nan=False)
"""``json.dumps(schema, sort_keys=True, allow_nan=False)``'s encoder, made once."""
_SORTED: Any = c_encoder(sort_keys=True, allow_nan=False)
"""The C encoder ``_CANONICAL.encode`` builds on every call (one per structured answer), built
once: the same text, or on any failure ``_CANONICAL`` itself raises its own error."""


def decode_json_object(text: str) -> dict[str, Any]:
    """Decode ``text`` as one JSON object (a surrounding code fence is tolerated).

    Raises:
        SchemaViolation: Not JSON, a non-finite number, or not an object.
    """
    stripped = text.strip()
    if stripped.startswith("```"):  # what the fence pattern begins with
        fenced = _FENCE.match(stripped)
        if fenced:
            stripped = fenced.group(1).strip()
    try:
        # json.loads refuses a leading byte-order mark with its own message: keep it for that
        bom = stripped.startswith("\ufeff")
        value = json.loads(stripped) if bom else _decoded(stripped)
    except ValueError as exc:
        raise SchemaViolation(f"the answer is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise SchemaViolation(f"the answer must be a JSON object, got {_kind(value)}")
    return value


def _decoded(text: str) -> Any:
    """``_DECODER.decode(text)``: the same value, or the same error.

    ``decode`` skips leading whitespace, scans one value and refuses anything after it. A scan
    from the start that ends at the end of the text is that whole answer (whitespace cannot
    begin a value), read by the scanner alone without ``decode``'s Python layers; anything
    else (no value there, text after it) is decoded by ``decode``, for its answer or error
    (``tests/models/test_models_schema_decode.py``).
    """
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return _DECODER.decode(text)
    if end != len(text):
        return _DECODER.decode(text)
    return value


def schema_errors(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every way ``value`` breaks ``schema`` (at most a few), as ``"$.path: problem"`` strings.

    Raises:
        ValueError: ``schema`` itself is not a valid JSON schema (a caller's bug, not the
            model's: asking the model again would not help).
    """
    checks = _compiled(_canonical(schema, "response_schema"), "response_schema")
    if checks.quick is not None:
        try:
            if checks.quick(value):
                return []
        except RecursionError:  # a deeply nested answer: jsonschema decides
            pass
    return validator_errors(checks.validator, value)


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
        return _title_name(title)
    return "response"


@functools.lru_cache(maxsize=256)
def _title_name(title: str) -> str:
    """`tool_name` of a title (the same few titles on every request: cached)."""
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", title).strip("_")[:64]
    return name or "response"


def _finite_number(checker: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):  # every int is finite (math.isfinite overflows past 1e308)
        return True
    return isinstance(value, float) and math.isfinite(value)


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
    return _compiled(_canonical(schema, what), what).validator


def _canonical(schema: Mapping[str, Any], what: str) -> str:
    """The schema's canonical JSON text: the key its checks are cached by.

    Read for every structured answer: written once per schema value (`TextMemo`: the same
    schema arrives as a new copy with every request; ``tests/models/test_models_json_memo.py``),
    by `_canonical_text`.
    """
    return _SCHEMA_KEYS.text(schema, _canonical_text, what)


_SCHEMA_KEYS = TextMemo()
"""Each schema's canonical text, by its exact data."""


def _canonical_text(schema: Mapping[str, Any], what: str) -> str:
    """`_canonical`, written now.

    By the C encoder built once (`_SORTED`) for an exact dict; anything it does not encode
    (and any other mapping) takes ``_CANONICAL.encode``, which gives the same text or raises
    its own error (``tests/models/test_models_schema_canonical.py``).
    """
    if _SORTED is not None and type(schema) is dict:
        try:
            return "".join(_SORTED(schema, 0))
        except Exception:  # the standard encoder below raises its own error
            pass
    try:
        return _CANONICAL.encode(schema)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a JSON schema: {exc}") from None


class _Checks(NamedTuple):
    """What one schema is checked with: jsonschema's validator and the quick check (or None)."""

    validator: Validator
    quick: Quick | None


@functools.lru_cache(maxsize=256)
def _compiled(key: str, what: str) -> _Checks:
    """The checks of one canonical schema text (bounded cache: 256 schemas)."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import SchemaError

    schema = json.loads(key)
    base = validators.validator_for(schema, default=Draft202012Validator)
    meta, strict = _dialect(base)
    # ``base.check_schema(schema)``, with the metaschema's validator built once per dialect
    error = next(meta.iter_errors(dict(schema)), None)
    if error is not None:
        exc = SchemaError.create_from(error)
        where = "/".join(str(part) for part in exc.path) or "(root)"
        raise ValueError(
            f"{what} is not a valid {base.__name__} JSON schema at {where}: {exc.message}"
        ) from None
    validator: Validator = strict(schema)
    quick = quick_check(schema) if base is Draft202012Validator else None
    return _Checks(validator, quick)


@functools.cache
def _dialect(base: Any) -> tuple[Validator, Any]:
    """A dialect's metaschema validator and its validator class with the house rules.

    The metaschema's validator is what ``base.check_schema`` builds at every call, and the class
    (finite numbers) is the same for every schema of the dialect: both are built once per
    dialect, not per schema (together ~1.4 ms of each new schema's ~4.7).
    """
    from jsonschema import validators

    meta_class = validators.validator_for(base.META_SCHEMA, default=base)
    meta = meta_class(base.META_SCHEMA, format_checker=meta_class.FORMAT_CHECKER)
    checker = base.TYPE_CHECKER.redefine_many(
        {"number": _finite_number, "integer": _finite_integer}
    )
    return meta, validators.extend(base, type_checker=checker)  # type: ignore[no-untyped-call]


# -- the quick check ------------------------------------------------------------------------------

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
    | {"$comment", "format", "$defs"}
)
"""Keywords that assert nothing here (formats are not asserted; ``$defs`` only holds schemas)."""
_UNDERSTOOD = _ANNOTATIONS | {
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "additionalProperties",
    "anyOf",
    "allOf",
    "$ref",
}
_DEF_REF = re.compile(r"#/\$defs/([A-Za-z0-9_.-]+)")


class _Unsupported(Exception):
    """A schema part the quick check does not fully understand."""


def quick_check(schema: Any) -> Quick | None:
    """A check that is True only for values ``schema`` accepts, or None.

    ``schema`` is a Draft 2020-12 schema already checked against its metaschema, as JSON
    values. The check understands the keywords pydantic generates (``type``, ``enum``,
    ``const``, number and length bounds, ``pattern``, ``items``, ``properties``, ``required``,
    ``additionalProperties``, ``anyOf``, ``allOf``, ``$ref`` into the root's ``$defs``, and
    annotations) with the house rules (numbers are finite, booleans are not numbers). It is
    None for a schema with anything else; it is False for a value it does not accept, and for
    one it cannot judge (a non-finite number, a subclass of a JSON type): jsonschema decides
    those and words the errors.
    """
    if not isinstance(schema, dict):
        return None
    root = {k: v for k, v in schema.items() if k != "$schema"}
    try:
        return _QuickCompiler(root).node(root)
    except (_Unsupported, RecursionError, re.error):
        return None


class _QuickCompiler:
    """Compiles one schema's quick check (`quick_check`)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, list[Quick]] = {}
        self.level: set[str] = set()  # references followed since the check last went inside

    def node(self, schema: Any) -> Quick:
        if schema is True:
            return _always
        if schema is False:
            return _never
        if type(schema) is not dict or not schema.keys() <= _UNDERSTOOD:
            raise _Unsupported
        found = [
            _type_check(schema.get("type")),
            _members(schema["enum"]) if "enum" in schema else None,
            _members([schema["const"]]) if "const" in schema else None,
            _number_check(schema),
            _string_check(schema),
            self.array(schema),
            self.object(schema),
            self.combined(schema),
            self.ref(schema.get("$ref")),
        ]
        return _every([check for check in found if check is not None])

    def inside(self, schema: Any) -> Quick:
        """The check of a part of the value (a reference cycle there ends in the value)."""
        level, self.level = self.level, set()
        try:
            return self.node(schema)
        finally:
            self.level = level

    def array(self, schema: dict[str, Any]) -> Quick | None:
        low, high = schema.get("minItems"), schema.get("maxItems")
        each = self.inside(schema["items"]) if "items" in schema else None
        if each is _always:
            each = None
        if low is None and high is None and each is None:
            return None

        def check(value: Any) -> bool:
            if type(value) is not list:
                return not isinstance(value, list)
            if (low is not None and len(value) < low) or (high is not None and len(value) > high):
                return False
            return each is None or all(map(each, value))

        return check

    def object(self, schema: dict[str, Any]) -> Quick | None:
        props: dict[str, Quick | None] = {}
        for key, sub in schema.get("properties", {}).items():
            part = self.inside(sub)
            props[key] = None if part is _always else part  # None: nothing to check
        required = tuple(schema.get("required", ()))
        extra = (
            self.inside(schema["additionalProperties"])
            if "additionalProperties" in schema
            else None
        )
        if extra is _always:
            extra = None
        if not props and not required and extra is None:
            return None

        def check(value: Any) -> bool:
            if type(value) is not dict:
                return not isinstance(value, dict)
            for key in required:
                if key not in value:
                    return False
            for key, item in value.items():
                sub = props.get(key, extra)
                if sub is not None and not sub(item):
                    return False
            return True

        return check

    def combined(self, schema: dict[str, Any]) -> Quick | None:
        checks = []
        if "allOf" in schema:
            checks.append(_every([self.node(sub) for sub in schema["allOf"]]))
        if "anyOf" in schema:
            branches = tuple(self.node(sub) for sub in schema["anyOf"])
            checks.append(lambda value: any(branch(value) for branch in branches))
        return _every(checks) if checks else None

    def ref(self, ref: Any) -> Quick | None:
        if ref is None:
            return None
        if ref == "#":
            target: Any = self.root
        else:
            named = _DEF_REF.fullmatch(ref) if isinstance(ref, str) else None
            defs = self.root.get("$defs")
            if named is None or not isinstance(defs, dict) or named.group(1) not in defs:
                raise _Unsupported
            target = defs[named.group(1)]
        if ref in self.level:  # a cycle that never goes inside the value
            raise _Unsupported
        cell = self.refs.get(ref)
        if cell is None:
            cell = self.refs[ref] = []
            self.level.add(ref)
            cell.append(self.node(target))
            self.level.discard(ref)
        if cell:
            return cell[0]
        return lambda value: cell[0](value)  # a recursive reference, compiled by now when run


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _every(checks: list[Quick]) -> Quick:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    first, second, *rest = checks
    if not rest:
        return lambda value: first(value) and second(value)
    return lambda value: first(value) and second(value) and all(check(value) for check in rest)


def _is_object(value: Any) -> bool:
    return type(value) is dict


def _is_array(value: Any) -> bool:
    return type(value) is list


def _is_string(value: Any) -> bool:
    return type(value) is str


def _is_boolean(value: Any) -> bool:
    return value is True or value is False


def _is_null(value: Any) -> bool:
    return value is None


def _is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and math.isfinite(value))


def _is_integer(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and value.is_integer())


_TYPES: dict[str, Quick] = {
    "object": _is_object,
    "array": _is_array,
    "string": _is_string,
    "boolean": _is_boolean,
    "null": _is_null,
    "number": _is_number,
    "integer": _is_integer,
}


def _type_check(types: Any) -> Quick | None:
    if types is None:
        return None
    if isinstance(types, str):
        types = [types]
    if not isinstance(types, list) or not all(name in _TYPES for name in types):
        raise _Unsupported
    checks = tuple(_TYPES[name] for name in types)
    if len(checks) == 1:
        return checks[0]
    return lambda value: any(check(value) for check in checks)


def _members(values: Any) -> Quick:
    """``enum`` / ``const``: jsonschema's equality (a bool equals only a bool, 1 equals 1.0)."""
    if not isinstance(values, list):
        raise _Unsupported
    strings = frozenset(v for v in values if type(v) is str)
    numbers = frozenset(v for v in values if type(v) is int or type(v) is float)
    flags = frozenset(v for v in values if type(v) is bool)
    null = any(v is None for v in values)

    def check(value: Any) -> bool:
        kind = type(value)
        if kind is str:
            return value in strings
        if kind is int or kind is float:
            return value in numbers
        if kind is bool:
            return value in flags
        return null and value is None

    return check


def _number_check(schema: dict[str, Any]) -> Quick | None:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if low is None and high is None and above is None and below is None:
        return None

    def check(value: Any) -> bool:
        kind = type(value)
        if kind is not int and kind is not float:
            return kind is bool or not isinstance(value, int | float)  # not a number: no bound
        if kind is float and not math.isfinite(value):
            return False
        return (
            (low is None or value >= low)
            and (high is None or value <= high)
            and (above is None or value > above)
            and (below is None or value < below)
        )

    return check


def _string_check(schema: dict[str, Any]) -> Quick | None:
    low, high = schema.get("minLength"), schema.get("maxLength")
    pattern = schema.get("pattern")
    if low is None and high is None and pattern is None:
        return None
    search = None if pattern is None else re.compile(pattern).search

    def check(value: Any) -> bool:
        if type(value) is not str:
            return not isinstance(value, str)
        return (
            (low is None or len(value) >= low)
            and (high is None or len(value) <= high)
            and (search is None or search(value) is not None)
        )

    return check


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

"""Python packaging files: ``requirements*.txt``, ``pyproject.toml`` and plain TOML."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from agentjudge.judges._compare_base import (
    TOO_DEEP,
    ParseFailure,
    decode,
    diff_sets,
    norm_ws,
)
from agentjudge.judges._compare_json import diff_values

# Trailing zeros do not change these comparisons (``>=1.0`` is ``>=1``); they do change ``~=``
# (``~=1.4.0`` is not ``~=1.4``) and ``===`` is literal by definition.
_ZERO_INSENSITIVE = frozenset({"==", "!=", "<=", ">=", "<", ">"})


def canonical_name(name: str) -> str:
    """PEP 503 name normalisation: lower case, runs of ``-``, ``_``, ``.`` become ``-``."""
    from packaging.utils import canonicalize_name  # packaging: ~25 ms, only when comparing

    return str(canonicalize_name(name))


def _specifier(operator: str, version: str) -> str:
    from packaging.utils import canonicalize_version

    if operator == "===":
        return operator + version
    strip = operator in _ZERO_INSENSITIVE
    return operator + canonicalize_version(version, strip_trailing_zero=strip)


def normalize_requirement(requirement: str) -> str:
    """Normalise a PEP 508 requirement string for comparison, with `packaging`.

    The name and extras are canonicalised (``My_Pkg`` -> ``my-pkg``; extras sorted), version
    specifiers are sorted with canonical versions (``>= 1.0.0`` -> ``>=1``; ``~=`` keeps its
    precision), markers are rendered by `packaging.markers.Marker` (single spacing, double
    quotes). A string that is not a valid PEP 508 requirement comes back whitespace-collapsed,
    so it still compares equal only to the same text.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    text = requirement.strip()
    try:
        parsed = Requirement(text)
    except InvalidRequirement:
        return norm_ws(text)
    result = canonical_name(parsed.name)
    if parsed.extras:
        result += "[" + ",".join(sorted({canonical_name(e) for e in parsed.extras})) + "]"
    if parsed.url:
        result += " @ " + parsed.url
    else:
        result += ",".join(sorted(_specifier(s.operator, s.version) for s in parsed.specifier))
    if parsed.marker is not None:
        result += "; " + str(parsed.marker)
    return result


def _requirement_set(values: object, where: str, side: str) -> set[str]:
    if not isinstance(values, list):
        raise ParseFailure(side, f"{where} must be an array, got {type(values).__name__}")
    result: set[str] = set()
    for item in values:
        if isinstance(item, str):
            result.add(normalize_requirement(item))
        else:
            result.add(json.dumps(item, sort_keys=True, default=str))
    return result


def compare_requirements_txt(expected: bytes, actual: bytes) -> list[str]:
    """``requirements*.txt``: the set of normalised requirement lines (comments ignored)."""
    sets = []
    for side, data in (("expected", expected), ("actual", actual)):
        text = decode(data, side).replace("\\\n", " ")
        items: set[str] = set()
        for line in text.splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if not line:
                continue
            items.add(norm_ws(line) if line.startswith("-") else normalize_requirement(line))
        sets.append(items)
    return diff_sets(sets[0], sets[1], "requirements")


def _load_toml(data: bytes, side: str) -> dict[str, Any]:
    try:
        return tomllib.loads(decode(data, side))
    except tomllib.TOMLDecodeError as exc:
        raise ParseFailure(side, f"not valid TOML ({exc})") from None
    except RecursionError:
        raise ParseFailure(side, f"TOML {TOO_DEEP} to parse") from None


def compare_toml(expected: bytes, actual: bytes) -> list[str]:
    """Structural TOML equality (tables order-insensitive, arrays positional)."""
    return diff_values(_load_toml(expected, "expected"), _load_toml(actual, "actual"))


_PYPROJECT_STRING_SETS = (("project", "classifiers"), ("project", "keywords"))


def _pop(doc: dict[str, Any], *path: str) -> Any:
    node: Any = doc
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return None
    return node.pop(path[-1], None) if isinstance(node, dict) else None


def _pyproject_sets(doc: dict[str, Any], side: str) -> dict[str, set[str]]:
    sets: dict[str, set[str]] = {}
    deps = _pop(doc, "project", "dependencies")
    if deps is not None:
        sets["project.dependencies"] = _requirement_set(deps, "project.dependencies", side)
    optional = _pop(doc, "project", "optional-dependencies")
    if isinstance(optional, dict):
        for extra, reqs in optional.items():
            where = f"project.optional-dependencies.{canonical_name(extra)}"
            sets[where] = _requirement_set(reqs, where, side)
    requires = _pop(doc, "build-system", "requires")
    if requires is not None:
        sets["build-system.requires"] = _requirement_set(requires, "build-system.requires", side)
    groups = _pop(doc, "dependency-groups")
    if isinstance(groups, dict):
        for group, reqs in groups.items():
            where = f"dependency-groups.{canonical_name(group)}"
            sets[where] = _requirement_set(reqs, where, side)
    for path in _PYPROJECT_STRING_SETS:
        values = _pop(doc, *path)
        if isinstance(values, list):
            sets[".".join(path)] = {norm_ws(str(v)) for v in values}
    project = doc.get("project")
    if isinstance(project, dict) and isinstance(project.get("name"), str):
        project["name"] = canonical_name(project["name"])
    return sets


def compare_pyproject(expected: bytes, actual: bytes) -> list[str]:
    """``pyproject.toml``: requirement lists as normalised sets, the rest structurally.

    Sets: ``project.dependencies``, each ``project.optional-dependencies`` extra,
    ``build-system.requires``, each ``dependency-groups`` group, ``project.classifiers`` and
    ``project.keywords``. ``project.name`` is compared canonicalised.
    """
    e_doc = _load_toml(expected, "expected")
    a_doc = _load_toml(actual, "actual")
    e_sets = _pyproject_sets(e_doc, "expected")
    a_sets = _pyproject_sets(a_doc, "actual")
    diffs: list[str] = []
    for where in list(e_sets) + [w for w in a_sets if w not in e_sets]:
        if where not in a_sets:
            diffs.append(f"{where}: missing (expected {sorted(e_sets[where])})")
        elif where not in e_sets:
            diffs.append(f"{where}: unexpected {sorted(a_sets[where])}")
        else:
            diffs.extend(diff_sets(e_sets[where], a_sets[where], where))
    diffs.extend(diff_values(e_doc, a_doc))
    return diffs

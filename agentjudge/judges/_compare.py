"""Semantic file comparison: `FileComparison` and its per-type comparators.

Every comparator takes the reference and the actual bytes and returns a list of differences
(empty when the files match). A reference file that cannot be parsed makes the judgment ERROR
(the reference is broken); an actual file that cannot be parsed is a failing check for that
file; XML with entity declarations or external references is refused (ERROR) on either side.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree as SafeET

from agentjudge.core import Check, Context, Judgment
from agentjudge.judges._paths import (
    DeterministicJudge,
    check_reference_files,
    first_names,
    normalise_excludes,
)
from agentjudge.judges._safeio import (
    FileTooLargeError,
    NotRegularFileError,
    PathEscapeError,
    read_file,
)

__all__ = [
    "DEFAULT_COMPARE_MAX_BYTES",
    "FileComparison",
    "comparator_for",
    "compare_contents",
    "normalize_requirement",
]

DEFAULT_COMPARE_MAX_BYTES = 8 * 1024 * 1024
"""Largest file (8 MiB) `FileComparison` reads by default: comparing parses or normalises whole
files, which peaks at about 25 times the file size (two 8 MiB files: about 210 MiB)."""

MAX_DIFFERENCES = 20
"""Differences listed per file (the rest are counted)."""

_TOO_DEEP = "nested too deeply"
"""Why a file beyond Python's recursion limit is not compared (a failing check, not ERROR)."""

Facts = dict[str, str]


class _ParseFailure(Exception):
    def __init__(self, side: str, message: str) -> None:
        super().__init__(message)
        self.side = side
        self.message = message


class _Unsafe(Exception):
    def __init__(self, side: str, message: str) -> None:
        super().__init__(message)
        self.side = side
        self.message = message


def _short(value: object, limit: int = 120) -> str:
    try:
        text = (
            value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
        )
    except RecursionError:
        return f"<{type(value).__name__} {_TOO_DEEP} to show>"
    text = re.sub(r"\s+", " ", text)
    return repr(text) if len(text) <= limit else repr(text[:limit] + "...")


def _decode(data: bytes, side: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _ParseFailure(side, f"not valid UTF-8 (byte {exc.start}: {exc.reason})") from None


def diff_facts(expected: Facts, actual: Facts) -> list[str]:
    """Differences between two flat fact maps: missing, unexpected and differing keys."""
    diffs: list[str] = []
    for key, value in expected.items():
        if key not in actual:
            diffs.append(f"missing {key}")
        elif actual[key] != value:
            diffs.append(f"{key} differs: expected {_short(value)}, got {_short(actual[key])}")
    diffs.extend(f"unexpected {key}" for key in actual if key not in expected)
    return diffs


def _add(facts: Facts, key: str, value: str) -> None:
    if key not in facts:
        facts[key] = value
        return
    n = 2
    while f"{key} #{n}" in facts:
        n += 1
    facts[f"{key} #{n}"] = value


# --------------------------------------------------------------------------- text
def _norm_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def compare_text(expected: bytes, actual: bytes) -> list[str]:
    """Whitespace-normalised text equality with a short diff; binary files compare bytes."""
    try:
        e_text = expected.decode("utf-8")
        a_text = actual.decode("utf-8")
    except UnicodeDecodeError:
        return _compare_bytes(expected, actual)
    if "\x00" in e_text or "\x00" in a_text:
        return _compare_bytes(expected, actual)
    if _norm_ws(e_text) == _norm_ws(a_text):
        return []
    e_lines = [_norm_ws(line) for line in e_text.splitlines() if line.strip()]
    a_lines = [_norm_ws(line) for line in a_text.splitlines() if line.strip()]
    diff = list(difflib.unified_diff(e_lines, a_lines, "expected", "actual", n=0, lineterm=""))[2:]
    shown = diff[:12]
    if len(diff) > 12:
        shown.append(f"... ({len(diff) - 12} more diff lines)")
    if not shown:
        shown = ["text differs (after whitespace normalisation)"]
    return ["text differs (whitespace-normalised):\n" + "\n".join(shown)]


def _compare_bytes(expected: bytes, actual: bytes) -> list[str]:
    if expected == actual:
        return []
    limit = min(len(expected), len(actual))
    at = next((i for i in range(limit) if expected[i] != actual[i]), limit)
    return [f"binary content differs at byte {at}"]


# --------------------------------------------------------------------------- structured values
def _key_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def diff_values(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Structural differences between two JSON/TOML values, each with its path."""
    out: list[str] = []
    _diff_values(expected, actual, path, out)
    return out


def _diff_values(expected: Any, actual: Any, path: str, out: list[str]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            sub = _key_path(path, str(key))
            if key not in actual:
                out.append(f"{sub}: missing (expected {_short(expected[key])})")
            else:
                _diff_values(expected[key], actual[key], sub, out)
        out.extend(
            f"{_key_path(path, str(key))}: unexpected {_short(actual[key])}"
            for key in actual
            if key not in expected
        )
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{path}: expected {len(expected)} items, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _diff_values(e, a, f"{path}[{i}]", out)
        return
    if _is_number(expected) and _is_number(actual):
        if expected != actual and not (
            isinstance(expected, float)
            and isinstance(actual, float)
            and math.isnan(expected)
            and math.isnan(actual)
        ):
            out.append(f"{path}: expected {expected!r}, got {actual!r}")
        return
    if type(expected) is not type(actual):
        out.append(
            f"{path}: expected {type(expected).__name__} {_short(expected)}, "
            f"got {type(actual).__name__} {_short(actual)}"
        )
        return
    if expected != actual:
        out.append(f"{path}: expected {_short(expected)}, got {_short(actual)}")


def compare_json(expected: bytes, actual: bytes) -> list[str]:
    """Structural JSON equality (key order and formatting ignored; numbers by value)."""
    docs = []
    for side, data in (("expected", expected), ("actual", actual)):
        try:
            docs.append(json.loads(data))
        except UnicodeDecodeError as exc:
            raise _ParseFailure(side, f"not valid UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise _ParseFailure(
                side, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        except RecursionError:
            raise _ParseFailure(side, f"JSON {_TOO_DEEP} to parse") from None
    return diff_values(docs[0], docs[1])


# --------------------------------------------------------------------------- requirements
_REQ = re.compile(r"^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?P<rest>.*)$")
_MARKER_TOKEN = re.compile(
    r"""\s*(?:(?P<str>'[^']*'|"[^"]*")|(?P<op>===|==|!=|<=|>=|~=|<|>|\(|\))|(?P<word>[^\s'"()<>=!~]+))"""
)


def canonical_name(name: str) -> str:
    """PEP 503 name normalisation: lower case, runs of ``-``, ``_``, ``.`` become ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _normalise_marker(marker: str) -> str:
    tokens: list[str] = []
    pos = 0
    marker = marker.strip()
    while pos < len(marker):
        match = _MARKER_TOKEN.match(marker, pos)
        if match is None or match.end() == pos:
            return _norm_ws(marker)
        pos = match.end()
        if match.group("str") is not None:
            tokens.append('"' + match.group("str")[1:-1] + '"')
        elif match.group("op") is not None:
            tokens.append(match.group("op"))
        else:
            tokens.append(match.group("word"))
    return " ".join(tokens).replace("( ", "(").replace(" )", ")")


def normalize_requirement(requirement: str) -> str:
    """Normalise a PEP 508 requirement string for comparison.

    The name is canonicalised (``My_Pkg`` -> ``my-pkg``), extras are canonicalised and sorted,
    version specifiers lose their whitespace and are sorted, markers get single spacing and
    double quotes. Strings that do not look like a requirement come back whitespace-collapsed.
    """
    text = requirement.strip()
    match = _REQ.match(text)
    if match is None:
        return _norm_ws(text)
    name = canonical_name(match.group("name"))
    rest = match.group("rest").strip()
    extras = ""
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            return _norm_ws(text)
        items = sorted({canonical_name(x.strip()) for x in rest[1:end].split(",") if x.strip()})
        extras = f"[{','.join(items)}]" if items else ""
        rest = rest[end + 1 :].strip()
    marker = ""
    if rest.startswith("@"):
        url, sep, marker_text = rest[1:].partition(" ;")
        if not sep:
            url, _, marker_text = rest[1:].partition("; ")
        spec = " @ " + url.strip()
        marker = marker_text
    else:
        spec_text, _, marker = rest.partition(";")
        spec_text = spec_text.strip()
        if spec_text.startswith("(") and spec_text.endswith(")"):
            spec_text = spec_text[1:-1]
        parts = sorted(re.sub(r"\s+", "", p) for p in spec_text.split(",") if p.strip())
        spec = ",".join(parts)
    result = name + extras + spec
    if marker.strip():
        result += "; " + _normalise_marker(marker)
    return result


def _requirement_set(values: object, where: str, side: str) -> set[str]:
    if not isinstance(values, list):
        raise _ParseFailure(side, f"{where} must be an array, got {type(values).__name__}")
    result: set[str] = set()
    for item in values:
        if isinstance(item, str):
            result.add(normalize_requirement(item))
        else:
            result.add(json.dumps(item, sort_keys=True, default=str))
    return result


def _diff_sets(expected: set[str], actual: set[str], where: str) -> list[str]:
    diffs = [f"{where}: missing {item!r}" for item in sorted(expected - actual)]
    diffs.extend(f"{where}: unexpected {item!r}" for item in sorted(actual - expected))
    return diffs


def compare_requirements_txt(expected: bytes, actual: bytes) -> list[str]:
    """``requirements*.txt``: the set of normalised requirement lines (comments ignored)."""
    sets = []
    for side, data in (("expected", expected), ("actual", actual)):
        text = _decode(data, side).replace("\\\n", " ")
        items: set[str] = set()
        for line in text.splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if not line:
                continue
            items.add(_norm_ws(line) if line.startswith("-") else normalize_requirement(line))
        sets.append(items)
    return _diff_sets(sets[0], sets[1], "requirements")


def _load_toml(data: bytes, side: str) -> dict[str, Any]:
    try:
        return tomllib.loads(_decode(data, side))
    except tomllib.TOMLDecodeError as exc:
        raise _ParseFailure(side, f"not valid TOML ({exc})") from None
    except RecursionError:
        raise _ParseFailure(side, f"TOML {_TOO_DEEP} to parse") from None


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
            sets[".".join(path)] = {_norm_ws(str(v)) for v in values}
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
            diffs.extend(_diff_sets(e_sets[where], a_sets[where], where))
    diffs.extend(diff_values(e_doc, a_doc))
    return diffs


# --------------------------------------------------------------------------- XML
def _parse_xml(data: bytes, side: str) -> Element:
    try:
        root: Element = SafeET.fromstring(
            data, forbid_dtd=False, forbid_entities=True, forbid_external=True
        )
    except defusedxml.DefusedXmlException as exc:
        raise _Unsafe(side, f"refused unsafe XML ({exc})") from None
    except ParseError as exc:
        line, column = exc.position
        raise _ParseFailure(
            side, f"not well-formed XML (line {line}, column {column}: {exc})"
        ) from None
    return root


def _local(tag: object) -> str:
    return str(tag).rsplit("}", 1)[-1]


def _groups(element: Element, strip_ns: bool) -> dict[str, list[Element]]:
    groups: dict[str, list[Element]] = {}
    for child in element:
        if not isinstance(child.tag, str):
            continue
        tag = _local(child.tag) if strip_ns else child.tag
        groups.setdefault(tag, []).append(child)
    return groups


def diff_xml(
    expected: Element, actual: Element, path: str = "", strip_ns: bool = False
) -> list[str]:
    """Structural XML differences.

    Attributes compare as sets; children are grouped by tag, so the relative order of different
    tags is ignored while same-tag siblings compare positionally; leaf text is whitespace-
    normalised; text of elements with children, comments and processing instructions are ignored.
    """
    out: list[str] = []
    e_tag = _local(expected.tag) if strip_ns else expected.tag
    a_tag = _local(actual.tag) if strip_ns else actual.tag
    here = path or f"/{_local(e_tag)}"
    if e_tag != a_tag:
        out.append(f"{here}: expected element <{_local(e_tag)}>, got <{_local(a_tag)}>")
        return out
    _diff_element(expected, actual, here, out, strip_ns)
    return out


def _diff_element(
    expected: Element, actual: Element, path: str, out: list[str], strip_ns: bool
) -> None:
    e_attrs, a_attrs = dict(expected.attrib), dict(actual.attrib)
    for key in sorted(set(e_attrs) | set(a_attrs)):
        name = _local(key)
        if key not in a_attrs:
            out.append(f"{path}/@{name}: missing (expected {e_attrs[key]!r})")
        elif key not in e_attrs:
            out.append(f"{path}/@{name}: unexpected {a_attrs[key]!r}")
        elif e_attrs[key] != a_attrs[key]:
            out.append(f"{path}/@{name}: expected {e_attrs[key]!r}, got {a_attrs[key]!r}")
    e_groups = _groups(expected, strip_ns)
    a_groups = _groups(actual, strip_ns)
    if not e_groups and not a_groups:
        e_text = _norm_ws(expected.text or "")
        a_text = _norm_ws(actual.text or "")
        if e_text != a_text:
            out.append(f"{path}: text expected {_short(e_text)}, got {_short(a_text)}")
        return
    for tag in list(e_groups) + [t for t in a_groups if t not in e_groups]:
        e_list = e_groups.get(tag, [])
        a_list = a_groups.get(tag, [])
        name = _local(tag)
        if len(e_list) != len(a_list):
            if not a_list:
                out.append(f"{path}/{name}: missing")
            elif not e_list:
                out.append(f"{path}/{name}: unexpected")
            else:
                out.append(f"{path}/{name}: expected {len(e_list)} elements, got {len(a_list)}")
        several = max(len(e_list), len(a_list)) > 1
        for i, (e, a) in enumerate(zip(e_list, a_list, strict=False)):
            sub = f"{path}/{name}[{i + 1}]" if several else f"{path}/{name}"
            _diff_element(e, a, sub, out, strip_ns)


def compare_xml(expected: bytes, actual: bytes) -> list[str]:
    """Structural XML equality through defusedxml (see `diff_xml`)."""
    return diff_xml(_parse_xml(expected, "expected"), _parse_xml(actual, "actual"))


# --------------------------------------------------------------------------- Maven POM
def _child(element: Element | None, *names: str) -> Element | None:
    node = element
    for name in names:
        if node is None:
            return None
        node = next((c for c in node if isinstance(c.tag, str) and _local(c.tag) == name), None)
    return node


def _children(element: Element | None, name: str) -> list[Element]:
    if element is None:
        return []
    return [c for c in element if isinstance(c.tag, str) and _local(c.tag) == name]


def _text(element: Element | None, *names: str, default: str = "") -> str:
    node = _child(element, *names) if names else element
    if node is None:
        return default
    return _norm_ws(node.text or "") or default


def _dependency_key(dep: Element) -> tuple[str, str]:
    key = f"{_text(dep, 'groupId')}:{_text(dep, 'artifactId')}"
    dep_type = _text(dep, "type", default="jar")
    if dep_type != "jar":
        key += f":{dep_type}"
    classifier = _text(dep, "classifier")
    if classifier:
        key += f":{classifier}"
    coordinate = key
    version = _text(dep, "version")
    if version:
        coordinate += f":{version}"
    scope = _text(dep, "scope", default="compile")
    if scope != "compile":
        coordinate += f" ({scope})"
    if _text(dep, "optional") == "true":
        coordinate += " (optional)"
    return key, coordinate


def _diff_dependencies(expected: list[Element], actual: list[Element], where: str) -> list[str]:
    e_map: dict[str, set[str]] = {}
    a_map: dict[str, set[str]] = {}
    for deps, target in ((expected, e_map), (actual, a_map)):
        for dep in deps:
            key, coordinate = _dependency_key(dep)
            target.setdefault(key, set()).add(coordinate)
    diffs: list[str] = []
    for key in sorted(set(e_map) | set(a_map)):
        e_set, a_set = e_map.get(key, set()), a_map.get(key, set())
        if e_set == a_set:
            continue
        if not a_set:
            diffs.extend(f"{where}: missing {c}" for c in sorted(e_set))
        elif not e_set:
            diffs.extend(f"{where}: unexpected {c}" for c in sorted(a_set))
        else:
            diffs.append(
                f"{where}: {key} expected {', '.join(sorted(e_set))}, "
                f"got {', '.join(sorted(a_set))}"
            )
    return diffs


def _plugins(element: Element | None) -> dict[str, Element]:
    result: dict[str, Element] = {}
    for plugin in _children(element, "plugin"):
        group = _text(plugin, "groupId", default="org.apache.maven.plugins")
        _add_plugin(result, f"{group}:{_text(plugin, 'artifactId')}", plugin)
    return result


def _add_plugin(result: dict[str, Element], key: str, plugin: Element) -> None:
    n = 1
    unique = key
    while unique in result:
        n += 1
        unique = f"{key} #{n}"
    result[unique] = plugin


def _diff_plugins(expected: Element | None, actual: Element | None, where: str) -> list[str]:
    e_plugins, a_plugins = _plugins(expected), _plugins(actual)
    diffs: list[str] = []
    for key, e_plugin in e_plugins.items():
        a_plugin = a_plugins.get(key)
        if a_plugin is None:
            diffs.append(f"{where}: missing plugin {key}")
            continue
        e_version = _text(e_plugin, "version")
        a_version = _text(a_plugin, "version")
        if e_version and e_version != a_version:
            diffs.append(
                f"{where}: plugin {key} version expected {e_version!r}, got {a_version or 'none'!r}"
            )
        for section in ("configuration", "executions", "dependencies"):
            e_sec, a_sec = _child(e_plugin, section), _child(a_plugin, section)
            if e_sec is None and a_sec is None:
                continue
            if e_sec is None or a_sec is None:
                state = "missing" if a_sec is None else "unexpected"
                diffs.append(f"{where}: plugin {key} {section} {state}")
                continue
            diffs.extend(
                f"{where}: plugin {key} {d}"
                for d in diff_xml(e_sec, a_sec, f"/{section}", strip_ns=True)
            )
    diffs.extend(f"{where}: unexpected plugin {key}" for key in a_plugins if key not in e_plugins)
    return diffs


def _properties(root: Element) -> dict[str, str]:
    node = _child(root, "properties")
    if node is None:
        return {}
    return {_local(c.tag): _norm_ws(c.text or "") for c in node if isinstance(c.tag, str)}


def compare_pom(expected: bytes, actual: bytes) -> list[str]:
    """Compare Maven ``pom.xml`` files.

    Compared: coordinates, parent, packaging, modules, properties, dependencies (and
    dependencyManagement) as sets of coordinates, plugins (and pluginManagement) by key with
    their version (when the reference declares one), configuration, executions and dependencies.

    Namespaces are ignored. Not compared: profiles, repositories, reporting, distribution
    management and descriptive elements (name, description, url...).
    """
    e_root = _parse_xml(expected, "expected")
    a_root = _parse_xml(actual, "actual")
    diffs: list[str] = []
    for field in ("groupId", "artifactId", "version"):
        e_value, a_value = _text(e_root, field), _text(a_root, field)
        if e_value != a_value:
            diffs.append(f"{field}: expected {e_value!r}, got {a_value!r}")
    e_pack = _text(e_root, "packaging", default="jar")
    a_pack = _text(a_root, "packaging", default="jar")
    if e_pack != a_pack:
        diffs.append(f"packaging: expected {e_pack!r}, got {a_pack!r}")
    e_parent, a_parent = _child(e_root, "parent"), _child(a_root, "parent")
    e_coord = ":".join(_text(e_parent, f) for f in ("groupId", "artifactId", "version"))
    a_coord = ":".join(_text(a_parent, f) for f in ("groupId", "artifactId", "version"))
    if (e_parent is None) != (a_parent is None) or e_coord != a_coord:
        diffs.append(
            f"parent: expected {e_coord if e_parent is not None else 'none'!r}, "
            f"got {a_coord if a_parent is not None else 'none'!r}"
        )
    e_modules = {_text(m) for m in _children(_child(e_root, "modules"), "module")}
    a_modules = {_text(m) for m in _children(_child(a_root, "modules"), "module")}
    diffs.extend(_diff_sets(e_modules, a_modules, "modules"))
    e_props, a_props = _properties(e_root), _properties(a_root)
    for key in list(e_props) + [k for k in a_props if k not in e_props]:
        if key not in a_props:
            diffs.append(f"properties: missing {key} (expected {e_props[key]!r})")
        elif key not in e_props:
            diffs.append(f"properties: unexpected {key} = {a_props[key]!r}")
        elif e_props[key] != a_props[key]:
            diffs.append(f"properties: {key} expected {e_props[key]!r}, got {a_props[key]!r}")
    diffs.extend(
        _diff_dependencies(
            _children(_child(e_root, "dependencies"), "dependency"),
            _children(_child(a_root, "dependencies"), "dependency"),
            "dependencies",
        )
    )
    diffs.extend(
        _diff_dependencies(
            _children(_child(e_root, "dependencyManagement", "dependencies"), "dependency"),
            _children(_child(a_root, "dependencyManagement", "dependencies"), "dependency"),
            "dependencyManagement",
        )
    )
    diffs.extend(
        _diff_plugins(
            _child(e_root, "build", "plugins"), _child(a_root, "build", "plugins"), "build"
        )
    )
    diffs.extend(
        _diff_plugins(
            _child(e_root, "build", "pluginManagement", "plugins"),
            _child(a_root, "build", "pluginManagement", "plugins"),
            "pluginManagement",
        )
    )
    return diffs


# --------------------------------------------------------------------------- Python
def _parse_python(data: bytes, side: str) -> ast.Module:
    text = _decode(data, side)
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise _ParseFailure(
            side, f"not valid Python (line {exc.lineno}, column {exc.offset}: {exc.msg})"
        ) from None
    except (RecursionError, MemoryError):
        # CPython's parser reports a too deeply nested expression as MemoryError ("parser stack
        # overflow"); the file is at most max_bytes, so this is nesting, not a lack of memory.
        raise _ParseFailure(side, f"Python {_TOO_DEEP} to parse") from None


def _py_signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    lines = [f"@{ast.unparse(d)}" for d in node.decorator_list]
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    type_params = getattr(node, "type_params", None)
    params = f"[{', '.join(ast.unparse(p) for p in type_params)}]" if type_params else ""
    sig = f"{prefix} {node.name}{params}({ast.unparse(node.args)})"
    if node.returns is not None:
        sig += f" -> {ast.unparse(node.returns)}"
    lines.append(sig)
    return " ".join(lines)


def _py_class_header(node: ast.ClassDef) -> str:
    lines = [f"@{ast.unparse(d)}" for d in node.decorator_list]
    bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
    lines.append(f"class {node.name}({', '.join(bases)})")
    return " ".join(lines)


def _py_body(body: Iterable[ast.stmt], scope: str, facts: Facts, top: bool) -> None:
    other = 0
    for node in body:
        if top and isinstance(node, ast.Import):
            for alias in node.names:
                _add(
                    facts,
                    f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""),
                    "",
                )
        elif top and isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                text = f"from {module} import {alias.name}"
                _add(facts, text + (f" as {alias.asname}" if alias.asname else ""), "")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            key = f"function {scope}{node.name}" if top else f"method {scope}{node.name}"
            _add(facts, key, _py_signature(node))
            for i, stmt in enumerate(node.body, 1):
                _add(facts, f"{key} / statement {i}", ast.unparse(stmt))
        elif isinstance(node, ast.ClassDef):
            key = f"class {scope}{node.name}"
            _add(facts, key, _py_class_header(node))
            _py_body(node.body, f"{scope}{node.name}.", facts, top=False)
        elif (
            isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets)
        ) or (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = ", ".join(t.id for t in targets if isinstance(t, ast.Name))
            _add(facts, f"assignment {scope}{names}", ast.unparse(node))
        else:
            other += 1
            where = f"{scope.rstrip('.')} " if scope else "module "
            _add(facts, f"{where}statement {other}", ast.unparse(node))


def python_facts(tree: ast.Module) -> Facts:
    """Flatten a module: imports (a set), definitions keyed by name, statements in order."""
    facts: Facts = {}
    _py_body(tree.body, "", facts, top=True)
    return facts


def compare_python(expected: bytes, actual: bytes) -> list[str]:
    """Python source through the stdlib ``ast``: formatting and comments are ignored.

    Imports compare as a set, top-level functions, classes, methods and assignments are keyed
    by name (order-insensitive), and each function body is compared statement by statement.
    """
    e_facts = _sided(python_facts, _parse_python(expected, "expected"), "expected")
    a_facts = _sided(python_facts, _parse_python(actual, "actual"), "actual")
    return diff_facts(e_facts, a_facts)


def _sided(facts: Callable[[Any], Facts], tree: Any, side: str) -> Facts:
    """``facts(tree)``, with a tree too deep to flatten reported against its side."""
    try:
        return facts(tree)
    except RecursionError:
        raise _ParseFailure(side, f"source {_TOO_DEEP} to compare") from None


# --------------------------------------------------------------------------- Java
_JAVA_PARSER: Any = None

_JAVA_TYPES = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "record_declaration": "record",
    "annotation_type_declaration": "@interface",
}
_ATOMIC = {"string_literal", "character_literal", "text_block"}
_COMMENTS = {"line_comment", "block_comment"}
_NO_SPACE_BEFORE = {".", ";", ",", ")", "]", "::"}
_NO_SPACE_AFTER = {".", "(", "[", "@", "::"}


def _java_parser() -> Any:
    global _JAVA_PARSER
    if _JAVA_PARSER is None:
        try:
            import tree_sitter
            import tree_sitter_java
        except ImportError as exc:
            raise ImportError(
                "comparing .java files needs tree-sitter-java: install the 'java' extra "
                "(pip install 'agentjudge[java]')"
            ) from exc
        _JAVA_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_java.language()))
    return _JAVA_PARSER


def _tokens(node: Any, out: list[str]) -> None:
    if node.type in _COMMENTS:
        return
    if node.type in _ATOMIC or node.child_count == 0:
        out.append(node.text.decode("utf-8", errors="replace"))
        return
    for child in node.children:
        _tokens(child, out)


def _jtext(node: Any) -> str:
    """Comment-free, formatting-free text: the node's tokens, single-spaced where needed."""
    if node is None:
        return ""
    out: list[str] = []
    _tokens(node, out)
    parts: list[str] = []
    previous = ""
    for token in out:
        if parts and token not in _NO_SPACE_BEFORE and previous not in _NO_SPACE_AFTER:
            parts.append(" ")
        parts.append(token)
        previous = token
    return "".join(parts)


def _jtype(node: Any) -> str:
    return (
        re.sub(r"\s*([<>,\[\].?&])\s*", r"\1", _jtext(node))
        .replace("?extends", "? extends ")
        .replace("?super", "? super ")
    )


def _jmodifiers(node: Any) -> str:
    mods = next((c for c in node.children if c.type == "modifiers"), None)
    if mods is None:
        return ""
    keywords = sorted(_jtext(c) for c in mods.children if "annotation" not in c.type)
    annotations = sorted(_jtext(c) for c in mods.children if "annotation" in c.type)
    return " ".join(annotations + keywords)


def _jparams(node: Any) -> str:
    params = node.child_by_field_name("parameters")
    types: list[str] = []
    if params is not None:
        for p in params.named_children:
            if p.type == "formal_parameter":
                dims = p.child_by_field_name("dimensions")
                types.append(
                    _jtype(p.child_by_field_name("type"))
                    + (_jtext(dims).replace(" ", "") if dims else "")
                )
            elif p.type == "spread_parameter":
                type_node = next(
                    (
                        c
                        for c in p.named_children
                        if c.type not in ("modifiers", "variable_declarator")
                    ),
                    None,
                )
                types.append(_jtype(type_node) + "...")
    return ",".join(types)


def _jstatements(body: Any, key: str, facts: Facts) -> None:
    if body is None:
        return
    statements = [c for c in body.named_children if c.type not in _COMMENTS]
    for i, stmt in enumerate(statements, 1):
        _add(facts, f"{key} / statement {i}", _jtext(stmt))


def _jclause(node: Any, kinds: Sequence[str]) -> str:
    parts = []
    for child in node.children:
        if child.type in kinds:
            inner = next((c for c in child.named_children if c.type == "type_list"), None)
            items = (
                [_jtype(t) for t in inner.named_children]
                if inner is not None
                else [_jtype(t) for t in child.named_children]
            )
            parts.append(f"{child.children[0].type} {', '.join(sorted(items))}")
    return " ".join(parts)


def _jtype_facts(node: Any, scope: str, facts: Facts) -> None:
    kind = _JAVA_TYPES[node.type]
    name = _jtext(node.child_by_field_name("name"))
    qualified = f"{scope}{name}"
    header = " ".join(
        p
        for p in (
            _jmodifiers(node),
            kind,
            name + _jtype(node.child_by_field_name("type_parameters")),
            _jtext(node.child_by_field_name("parameters")) if kind == "record" else "",
            _jclause(node, ("superclass", "super_interfaces", "extends_interfaces")),
        )
        if p
    )
    _add(facts, f"{kind} {qualified}", header)
    body = node.child_by_field_name("body")
    if body is not None:
        _jbody(body, qualified, facts)


def _jbody(body: Any, owner: str, facts: Facts) -> None:
    initializer = 0
    for member in body.named_children:
        kind = member.type
        if kind in _COMMENTS:
            continue
        if kind == "enum_constant":
            _add(
                facts,
                f"enum constant {owner}.{_jtext(member.child_by_field_name('name'))}",
                _jtext(member),
            )
        elif kind == "enum_body_declarations":
            _jbody(member, owner, facts)
        elif kind in _JAVA_TYPES:
            _jtype_facts(member, f"{owner}.", facts)
        elif kind in ("field_declaration", "constant_declaration"):
            type_text = _jtype(member.child_by_field_name("type"))
            mods = _jmodifiers(member)
            for declarator in member.children_by_field_name("declarator"):
                var = _jtext(declarator.child_by_field_name("name"))
                dims = declarator.child_by_field_name("dimensions")
                value = declarator.child_by_field_name("value")
                text = " ".join(
                    p
                    for p in (
                        mods,
                        type_text + (_jtext(dims).replace(" ", "") if dims else ""),
                        var,
                    )
                    if p
                )
                if value is not None:
                    text += " = " + _jtext(value)
                _add(facts, f"field {owner}.{var}", text)
        elif kind in ("method_declaration", "annotation_type_element_declaration"):
            name = _jtext(member.child_by_field_name("name"))
            key = f"method {owner}.{name}({_jparams(member)})"
            header = " ".join(
                p
                for p in (
                    _jmodifiers(member),
                    _jtype(member.child_by_field_name("type_parameters")),
                    _jtype(member.child_by_field_name("type")),
                    _jclause(member, ("throws",)),
                    "default " + _jtext(member.child_by_field_name("value"))
                    if member.child_by_field_name("value") is not None
                    else "",
                    "{...}" if member.child_by_field_name("body") is not None else ";",
                )
                if p
            )
            _add(facts, key, header)
            _jstatements(member.child_by_field_name("body"), key, facts)
        elif kind in ("constructor_declaration", "compact_constructor_declaration"):
            name = _jtext(member.child_by_field_name("name"))
            key = f"constructor {owner}.{name}({_jparams(member)})"
            header = " ".join(p for p in (_jmodifiers(member), _jclause(member, ("throws",))) if p)
            _add(facts, key, header or "constructor")
            _jstatements(member.child_by_field_name("body"), key, facts)
        elif kind in ("static_initializer", "block"):
            initializer += 1
            key = f"initializer {owner} {initializer}"
            block = (
                member
                if kind == "block"
                else next((c for c in member.named_children if c.type == "block"), None)
            )
            _add(facts, key, "static" if kind == "static_initializer" else "instance")
            _jstatements(block, key, facts)
        else:
            _add(facts, f"member {owner}", _jtext(member))


def _first_error(node: Any) -> Any:
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error:
            found = _first_error(child)
            if found is not None:
                return found
    return None


def java_facts(source: bytes, side: str = "actual") -> Facts:
    """Flatten Java source into comparable facts.

    Package, imports (a set), types, fields, methods by signature and each method / constructor
    / initializer statement as comment-free normalised text.
    """
    tree = _java_parser().parse(source)
    root = tree.root_node
    if root.has_error:
        bad = _first_error(root)
        where = (
            f"line {bad.start_point[0] + 1}, column {bad.start_point[1] + 1}" if bad else "unknown"
        )
        raise _ParseFailure(side, f"not valid Java (syntax error at {where})")
    facts: Facts = {}
    for node in root.named_children:
        if node.type == "package_declaration":
            _add(
                facts,
                "package",
                _jtype(next((c for c in node.named_children if "identifier" in c.type), None)),
            )
        elif node.type == "import_declaration":
            text = _jtext(node).removeprefix("import ").removesuffix(";").strip()
            _add(facts, "import " + re.sub(r"\s*\.\s*", ".", text), "")
        elif node.type in _JAVA_TYPES:
            _jtype_facts(node, "", facts)
        elif node.type not in _COMMENTS:
            _add(facts, "top-level", _jtext(node))
    return facts


def compare_java(expected: bytes, actual: bytes) -> list[str]:
    """Compare Java source through tree-sitter-java (the ``java`` extra).

    Formatting and comments are ignored; imports compare as a set; types, fields and methods
    (keyed by signature) are order-insensitive; statements compare in order as normalised text.

    Raises:
        ImportError: tree-sitter-java is not installed (names the ``java`` extra).
    """
    e_facts = _sided(lambda src: java_facts(src, "expected"), expected, "expected")
    a_facts = _sided(lambda src: java_facts(src, "actual"), actual, "actual")
    return diff_facts(e_facts, a_facts)


# --------------------------------------------------------------------------- dispatch
Comparator = Callable[[bytes, bytes], list[str]]


def comparator_for(path: str) -> tuple[str, Comparator]:
    """The comparator for a file, chosen by its name: ``(kind, function)``."""
    name = path.rsplit("/", 1)[-1]
    lower = name.lower()
    if name == "pom.xml":
        return "pom", compare_pom
    if name == "pyproject.toml":
        return "pyproject", compare_pyproject
    if lower.startswith("requirements") and lower.endswith(".txt"):
        return "requirements", compare_requirements_txt
    suffix = lower.rsplit(".", 1)[-1] if "." in lower else ""
    if suffix == "xml":
        return "xml", compare_xml
    if suffix == "json":
        return "json", compare_json
    if suffix == "toml":
        return "toml", compare_toml
    if suffix in ("py", "pyi"):
        return "python", compare_python
    if suffix == "java":
        return "java", compare_java
    return "text", compare_text


def compare_contents(path: str, expected: bytes, actual: bytes) -> list[str]:
    """Compare two versions of the file ``path`` with the comparator its name selects.

    Returns the differences (empty when they match). Unparsable input raises ``ValueError``
    naming the side; unsafe XML too; Java without the extra raises ``ImportError``.
    """
    _, comparator = comparator_for(path)
    try:
        return comparator(expected, actual)
    except (_ParseFailure, _Unsafe) as exc:
        raise ValueError(f"{exc.side} {path}: {exc.message}") from None


class FileComparison(DeterministicJudge):
    """PASS when every reference file has a semantically equal counterpart in the workspace.

    Walks the folder in ``ctx.metadata["expected_dir"]`` (sorted; missing folder -> ABSTAIN)
    and compares each file with the same relative path in the workspace, choosing a comparator
    by file name: ``pom.xml`` (Maven), ``pyproject.toml`` and ``requirements*.txt``
    (requirements as normalised sets), ``*.xml``, ``*.json``, ``*.toml``, ``*.py``, ``*.java``
    (tree-sitter-java, the ``java`` extra) and whitespace-normalised text for the rest. One check
    per file; the score is matched / total; a missing actual file is a failing check. A
    reference file that cannot be parsed, unsafe XML, or a workspace path escaping through a
    symbolic link is ERROR.

    A workspace file that is not a regular file (a pipe, a folder), larger than ``max_bytes`` or
    nested too deeply for Python's recursion limit is a failing check naming the file; the same
    about a reference file is ERROR. Workspace files are opened confined to the workspace, without
    following links out of it and without blocking.

    Args:
        exclude: Relative POSIX paths to skip (as in `SupersetDiff`).
        name: Judge name; defaults to ``"FileComparison"``.
        max_bytes: Largest file read on either side (default 8 MiB,
            `DEFAULT_COMPARE_MAX_BYTES`; peak memory is about 25 times the files' size).

    Raises:
        ValueError: a bad ``exclude`` entry or a negative ``max_bytes``.
    """

    def __init__(
        self,
        exclude: Sequence[str] = (),
        *,
        name: str | None = None,
        max_bytes: int = DEFAULT_COMPARE_MAX_BYTES,
    ) -> None:
        self.exclude = normalise_excludes(exclude)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        super().__init__(name, "Compares workspace files with the reference folder semantically")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        check = functools.partial(_compare_file, limit=self.max_bytes)
        walked = await check_reference_files(ctx, self.exclude, check)
        if isinstance(walked, Judgment):
            return walked
        checks, meta = walked
        matched, total = meta["matched_files"], meta["total_files"]
        if matched == total:
            return Judgment.passed(
                f"All {total} files match", score=1.0, checks=tuple(checks), metadata=meta
            )
        failing = [c.name for c in checks if not c.passed]
        shown_names = first_names(failing, "; ")
        return Judgment.failed(
            f"{len(failing)} of {total} files differ: {shown_names}",
            score=matched / total,
            checks=tuple(checks),
            metadata=meta,
        )


def _read_pair(
    rel: str, expected_path: Path, root: Path, limit: int
) -> tuple[bytes, bytes] | Check | str:
    """Both versions of ``rel``, a failing check for the workspace's, or the reason for ERROR."""
    try:
        expected = read_file(expected_path, None, limit)
    except FileTooLargeError as exc:
        return (
            f"Reference file {rel} is too large to compare ({exc.size} bytes; "
            f"the limit is max_bytes={limit})"
        )
    except OSError as exc:
        return f"Cannot read reference file {rel}: {exc.strerror or exc}"
    try:
        actual = read_file(root / rel, root, limit)
    except (FileNotFoundError, NotADirectoryError):
        return Check.fail(rel, f"Missing file: {rel}")
    except NotRegularFileError as exc:
        return Check.fail(rel, f"Not a regular file: {rel} ({exc.kind})")
    except FileTooLargeError as exc:
        return Check.fail(
            rel, f"{rel} is too large to compare ({exc.size} bytes; the limit is max_bytes={limit})"
        )
    except PathEscapeError as exc:
        return str(exc)
    except OSError as exc:
        return Check.fail(rel, f"Cannot read {rel}: {exc.strerror or exc}")
    return expected, actual


def _compare_file(rel: str, expected_path: Path, root: Path, limit: int) -> Check | str:
    pair = _read_pair(rel, expected_path, root, limit)
    if not isinstance(pair, tuple):
        return pair
    kind, comparator = comparator_for(rel)
    try:
        diffs = comparator(*pair)
    except _Unsafe as exc:
        return f"{exc.side} file {rel}: {exc.message}"
    except _ParseFailure as exc:
        if exc.side == "expected":
            return f"Reference file {rel} is {exc.message}"
        return Check.fail(rel, f"{rel} is {exc.message}")
    except ImportError as exc:
        return f"Cannot compare {rel}: {exc}"
    except RecursionError:
        return Check.fail(rel, f"{rel} is {_TOO_DEEP} to compare ({kind})")
    if not diffs:
        return Check.ok(rel, f"matches ({kind})")
    shown = diffs[:MAX_DIFFERENCES]
    if len(diffs) > MAX_DIFFERENCES:
        shown.append(f"... and {len(diffs) - MAX_DIFFERENCES} more differences")
    return Check.fail(rel, f"{kind} differences:\n" + "\n".join(shown))

"""Maven ``pom.xml`` comparison: coordinates, dependencies and plugins as sets."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from agentjudge.judges._compare_base import (
    diff_sets,
    norm_ws,
)
from agentjudge.judges._compare_xml import diff_xml, local_name, parse_xml


def _child(element: Element | None, *names: str) -> Element | None:
    node = element
    for name in names:
        if node is None:
            return None
        node = next((c for c in node if isinstance(c.tag, str) and local_name(c.tag) == name), None)
    return node


def _children(element: Element | None, name: str) -> list[Element]:
    if element is None:
        return []
    return [c for c in element if isinstance(c.tag, str) and local_name(c.tag) == name]


def _text(element: Element | None, *names: str, default: str = "") -> str:
    node = _child(element, *names) if names else element
    if node is None:
        return default
    return norm_ws(node.text or "") or default


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
    return {local_name(c.tag): norm_ws(c.text or "") for c in node if isinstance(c.tag, str)}


def compare_pom(expected: bytes, actual: bytes) -> list[str]:
    """Compare Maven ``pom.xml`` files.

    Compared: coordinates, parent, packaging, modules, properties, dependencies (and
    dependencyManagement) as sets of coordinates, plugins (and pluginManagement) by key with
    their version (when the reference declares one), configuration, executions and dependencies.

    Namespaces are ignored. Not compared: profiles, repositories, reporting, distribution
    management and descriptive elements (name, description, url...).
    """
    e_root = parse_xml(expected, "expected")
    a_root = parse_xml(actual, "actual")
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
    diffs.extend(diff_sets(e_modules, a_modules, "modules"))
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

"""XML comparison through defusedxml (entities and external references refused)."""

from __future__ import annotations

from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree as SafeET

from agentjudge.judges._compare_base import (
    ParseFailure,
    Unsafe,
    norm_ws,
    short,
)


def parse_xml(data: bytes, side: str) -> Element:
    try:
        root: Element = SafeET.fromstring(
            data, forbid_dtd=False, forbid_entities=True, forbid_external=True
        )
    except defusedxml.DefusedXmlException as exc:
        raise Unsafe(side, f"refused unsafe XML ({exc})") from None
    except ParseError as exc:
        line, column = exc.position
        raise ParseFailure(
            side, f"not well-formed XML (line {line}, column {column}: {exc})"
        ) from None
    return root


def local_name(tag: object) -> str:
    return str(tag).rsplit("}", 1)[-1]


def _groups(element: Element, strip_ns: bool) -> dict[str, list[Element]]:
    groups: dict[str, list[Element]] = {}
    for child in element:
        if not isinstance(child.tag, str):
            continue
        tag = local_name(child.tag) if strip_ns else child.tag
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
    e_tag = local_name(expected.tag) if strip_ns else expected.tag
    a_tag = local_name(actual.tag) if strip_ns else actual.tag
    here = path or f"/{local_name(e_tag)}"
    if e_tag != a_tag:
        out.append(f"{here}: expected element <{local_name(e_tag)}>, got <{local_name(a_tag)}>")
        return out
    _diff_element(expected, actual, here, out, strip_ns)
    return out


def _diff_element(
    expected: Element, actual: Element, path: str, out: list[str], strip_ns: bool
) -> None:
    e_attrs, a_attrs = dict(expected.attrib), dict(actual.attrib)
    for key in sorted(set(e_attrs) | set(a_attrs)):
        name = local_name(key)
        if key not in a_attrs:
            out.append(f"{path}/@{name}: missing (expected {e_attrs[key]!r})")
        elif key not in e_attrs:
            out.append(f"{path}/@{name}: unexpected {a_attrs[key]!r}")
        elif e_attrs[key] != a_attrs[key]:
            out.append(f"{path}/@{name}: expected {e_attrs[key]!r}, got {a_attrs[key]!r}")
    e_groups = _groups(expected, strip_ns)
    a_groups = _groups(actual, strip_ns)
    if not e_groups and not a_groups:
        e_text = norm_ws(expected.text or "")
        a_text = norm_ws(actual.text or "")
        if e_text != a_text:
            out.append(f"{path}: text expected {short(e_text)}, got {short(a_text)}")
        return
    for tag in list(e_groups) + [t for t in a_groups if t not in e_groups]:
        e_list = e_groups.get(tag, [])
        a_list = a_groups.get(tag, [])
        name = local_name(tag)
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
    return diff_xml(parse_xml(expected, "expected"), parse_xml(actual, "actual"))

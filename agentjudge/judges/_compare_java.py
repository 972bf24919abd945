"""Java source comparison through tree-sitter-java (the ``java`` extra)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentjudge.judges._compare_base import (
    Facts,
    ParseFailure,
    add_fact,
    diff_facts,
    sided,
)

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
        add_fact(facts, f"{key} / statement {i}", _jtext(stmt))


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
    add_fact(facts, f"{kind} {qualified}", header)
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
            add_fact(
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
                add_fact(facts, f"field {owner}.{var}", text)
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
            add_fact(facts, key, header)
            _jstatements(member.child_by_field_name("body"), key, facts)
        elif kind in ("constructor_declaration", "compact_constructor_declaration"):
            name = _jtext(member.child_by_field_name("name"))
            key = f"constructor {owner}.{name}({_jparams(member)})"
            header = " ".join(p for p in (_jmodifiers(member), _jclause(member, ("throws",))) if p)
            add_fact(facts, key, header or "constructor")
            _jstatements(member.child_by_field_name("body"), key, facts)
        elif kind in ("static_initializer", "block"):
            initializer += 1
            key = f"initializer {owner} {initializer}"
            block = (
                member
                if kind == "block"
                else next((c for c in member.named_children if c.type == "block"), None)
            )
            add_fact(facts, key, "static" if kind == "static_initializer" else "instance")
            _jstatements(block, key, facts)
        else:
            add_fact(facts, f"member {owner}", _jtext(member))


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
        raise ParseFailure(side, f"not valid Java (syntax error at {where})")
    facts: Facts = {}
    for node in root.named_children:
        if node.type == "package_declaration":
            add_fact(
                facts,
                "package",
                _jtype(next((c for c in node.named_children if "identifier" in c.type), None)),
            )
        elif node.type == "import_declaration":
            text = _jtext(node).removeprefix("import ").removesuffix(";").strip()
            add_fact(facts, "import " + re.sub(r"\s*\.\s*", ".", text), "")
        elif node.type in _JAVA_TYPES:
            _jtype_facts(node, "", facts)
        elif node.type not in _COMMENTS:
            add_fact(facts, "top-level", _jtext(node))
    return facts


def compare_java(expected: bytes, actual: bytes) -> list[str]:
    """Compare Java source through tree-sitter-java (the ``java`` extra).

    Formatting and comments are ignored; imports compare as a set; types, fields and methods
    (keyed by signature) are order-insensitive; statements compare in order as normalised text.

    Raises:
        ImportError: tree-sitter-java is not installed (names the ``java`` extra).
    """
    e_facts = sided(lambda src: java_facts(src, "expected"), expected, "expected")
    a_facts = sided(lambda src: java_facts(src, "actual"), actual, "actual")
    return diff_facts(e_facts, a_facts)

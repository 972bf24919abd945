"""Python source comparison through the standard library ``ast``."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from agentjudge.judges._compare_base import (
    TOO_DEEP,
    Facts,
    ParseFailure,
    add_fact,
    decode,
    diff_facts,
    sided,
)


def _parse_python(data: bytes, side: str) -> ast.Module:
    text = decode(data, side)
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise ParseFailure(
            side, f"not valid Python (line {exc.lineno}, column {exc.offset}: {exc.msg})"
        ) from None
    except (RecursionError, MemoryError):
        # CPython's parser reports a too deeply nested expression as MemoryError ("parser stack
        # overflow"); the file is at most max_bytes, so this is nesting, not a lack of memory.
        raise ParseFailure(side, f"Python {TOO_DEEP} to parse") from None


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
                add_fact(
                    facts,
                    f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""),
                    "",
                )
        elif top and isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                text = f"from {module} import {alias.name}"
                add_fact(facts, text + (f" as {alias.asname}" if alias.asname else ""), "")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            key = f"function {scope}{node.name}" if top else f"method {scope}{node.name}"
            add_fact(facts, key, _py_signature(node))
            for i, stmt in enumerate(node.body, 1):
                add_fact(facts, f"{key} / statement {i}", ast.unparse(stmt))
        elif isinstance(node, ast.ClassDef):
            key = f"class {scope}{node.name}"
            add_fact(facts, key, _py_class_header(node))
            _py_body(node.body, f"{scope}{node.name}.", facts, top=False)
        elif (
            isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets)
        ) or (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = ", ".join(t.id for t in targets if isinstance(t, ast.Name))
            add_fact(facts, f"assignment {scope}{names}", ast.unparse(node))
        else:
            other += 1
            where = f"{scope.rstrip('.')} " if scope else "module "
            add_fact(facts, f"{where}statement {other}", ast.unparse(node))


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
    e_facts = sided(python_facts, _parse_python(expected, "expected"), "expected")
    a_facts = sided(python_facts, _parse_python(actual, "actual"), "actual")
    return diff_facts(e_facts, a_facts)

"""Every third-party module the package imports is declared in pyproject.toml (issue 19, item 22).

aiohttp was imported by the default transport but arrived only through httpx-aiohttp: an
upgrade of that package could have broken every install. Here every ``import`` of
``agentjudge/**/*.py`` is read with `ast` and its top-level name mapped to the declared
distributions that provide it (read as `importlib.metadata.packages_distributions` reads them,
for the declared distributions only: scanning every installed one took ~0.4 s of CPU):

* an import that runs when its module is imported must come from ``[project] dependencies``;
* an optional one (inside a function, under ``try: ... except ImportError`` or
  ``if TYPE_CHECKING:``) from the dependencies or an extra (``[project.optional-dependencies]``),
  or be listed in `UNDECLARED_OPTIONAL` with the reason it is declared nowhere.
"""

from __future__ import annotations

import ast
import inspect
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agentjudge"

UNDECLARED_OPTIONAL = {
    "tiktoken": "run --dry-run counts tokens exactly when it happens to be installed (chars/4 "
    "otherwise); no feature needs it, so no extra installs it",
}
"""Optional imports no extra declares, each with the reason."""
LOADED_BY_PYTEST = "agentjudge/_pytest/"
"""The pytest plugin's implementation: only pytest loads it (the ``pytest11`` entry point
module ``_agentjudge_pytest`` imports it lazily), so pytest is always there when it runs."""


@dataclass(frozen=True)
class Imported:
    """One third-party import statement."""

    top: str
    """The top-level module name (``opentelemetry`` for ``opentelemetry.trace``)."""
    where: str
    """``file:line``."""
    optional: bool
    """Runs only on demand: in a function, an ImportError guard or ``if TYPE_CHECKING``."""


def _guards_import_error(node: ast.Try) -> bool:
    names: list[str] = []
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names += [k.id for k in kinds if isinstance(k, ast.Name)]
    return any(n in ("ImportError", "ModuleNotFoundError", "Exception") for n in names)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _optional_scope(node: ast.AST, body_of: ast.AST | None) -> bool:
    """True when statements in ``node`` (reached through ``body_of``) run only on demand."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return True
    if isinstance(node, ast.Try) and body_of in node.body:
        return _guards_import_error(node)
    return isinstance(node, ast.If) and _is_type_checking(node) and body_of in node.body


def _import_nodes(node: ast.AST, optional: bool) -> Iterator[tuple[ast.AST, bool]]:
    """Every import statement under ``node``, and whether it runs only on demand (one walk, each
    scope's rule applied on the way down)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):  # an expression holds no statement, so no import
            continue
        inner = optional or _optional_scope(node, child)
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, inner
        else:
            yield from _import_nodes(child, inner)


def _imports(file: Path, root: Path = ROOT) -> Iterator[Imported]:
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    for node, optional in _import_nodes(tree, False):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        where = f"{file.relative_to(root)}:{node.lineno}"
        for module in modules:
            top = module.partition(".")[0]
            if top not in sys.stdlib_module_names and top != "agentjudge":
                yield Imported(top, where, optional)


def _declared() -> tuple[set[str], set[str]]:
    """Canonical names of the distributions in dependencies, and in the extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(specs: list[str]) -> set[str]:
        return {canonicalize_name(Requirement(spec).name) for spec in specs}

    extras = project.get("optional-dependencies", {})
    return names(project["dependencies"]), names([s for group in extras.values() for s in group])


def _top_levels(name: str) -> set[str]:
    """The top-level modules the installed distribution ``name`` provides (none if it is not
    installed), as `packages_distributions` finds them: its ``top_level.txt``, else the first
    part of each of its files' paths."""
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return set()
    declared = (dist.read_text("top_level.txt") or "").split()
    if declared:
        return set(declared)
    inferred = (
        file.parts[0] if len(file.parts) > 1 else inspect.getmodulename(file.name) or file.name
        for file in dist.files or ()
    )
    return {top for top in inferred if "." not in top}


def test_every_imported_module_is_a_declared_dependency() -> None:
    """Imports that always run come from dependencies; optional ones from an extra as well."""
    required, extras = _declared()
    providers: dict[str, set[str]] = {}  # top-level module -> declared distributions
    for name in required | extras:
        for top in _top_levels(name):
            providers.setdefault(top, set()).add(name)
    found = [i for file in sorted(PACKAGE.rglob("*.py")) for i in _imports(file)]
    assert any(i.top == "aiohttp" for i in found)  # the scan sees lazy imports too
    problems = []
    for imported in found:
        allowed = required | extras if imported.optional else required
        if providers.get(imported.top, set()) & allowed:
            continue
        if imported.optional and imported.top in UNDECLARED_OPTIONAL:
            continue
        if imported.top == "pytest" and imported.where.startswith(LOADED_BY_PYTEST):
            continue
        problems.append(imported)
    assert not problems, "\n".join(_problem(i, packages_distributions()) for i in problems)


def _problem(imported: Imported, installed: Mapping[str, list[str]]) -> str:
    """What is wrong with an import, naming the installed distributions that provide it."""
    dists = sorted({canonicalize_name(d) for d in installed.get(imported.top, [])})
    need = "dependencies or an extra" if imported.optional else "[project] dependencies"
    installed_as = dists or "nothing installed"
    return f"{imported.where}: {imported.top} (from {installed_as}) is not declared in {need}"


def test_the_scan_tells_optional_imports_from_required_ones(tmp_path: Path) -> None:
    """Guards are recognised: function bodies, ImportError handlers, TYPE_CHECKING blocks."""
    source = tmp_path / "mod.py"
    source.write_text(
        "import yaml\n"
        "try:\n    import rich\nexcept ImportError:\n    rich = None\n"
        "try:\n    import ujson\nexcept ValueError:\n    pass\n"
        "if TYPE_CHECKING:\n    import numpy\n"
        "def f():\n    import pandas\n",
        encoding="utf-8",
    )
    found = {i.top: i.optional for i in _imports(source, tmp_path)}
    assert found == {
        "yaml": False,
        "rich": True,
        "ujson": False,
        "numpy": True,
        "pandas": True,
    }

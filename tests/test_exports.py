"""The curated public facade matches the API contract."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentjudge

CONTRACT = {
    # 1. values
    "Status", "Check", "Judgment", "ExecutionStatus", "Message", "Context", "JudgeResult",
    # 2. judges
    "judge", "named", "JudgeKind", "all_of", "any_of", "judge_name", "Judge",
    # 3. voting
    "TiePolicy", "ErrorPolicy", "Majority", "Consensus", "Average", "Median", "WeightedAverage",
    # 4. juries and cascades
    "Jury", "TierPolicy", "Tier", "Cascade",
    # 5. the evaluator
    "Evaluator", "EvaluationHandle", "Verdict", "TierAttempt", "CaseResult", "RetryPolicy",
    "RetryableError", "EvaluationCancelled", "AgentJudgeError",
}  # fmt: skip


def test_all_is_unique() -> None:
    """__all__ has no duplicates (ruff's RUF022 keeps it sorted)."""
    names = list(agentjudge.__all__)
    assert len(names) == len(set(names))


def test_every_exported_name_resolves() -> None:
    """Every name in __all__ is an attribute of the package."""
    missing = [n for n in agentjudge.__all__ if not hasattr(agentjudge, n)]
    assert missing == []


def test_contract_names_are_exported() -> None:
    """Every name API.md lists for the top-level package is in __all__."""
    assert CONTRACT - set(agentjudge.__all__) == set()


def test_no_private_module_leaks() -> None:
    """No exported name is a module or private."""
    for name in agentjudge.__all__:
        assert not name.startswith("_") or name == "__version__"
        assert type(getattr(agentjudge, name)).__name__ != "module"


# A fresh interpreter imports step by step and reports what each step loaded; the tests below
# read their step. Each step loads what its import alone would: the judges import the model
# values anyway, so the modules loaded after the judges' step are those of the judges alone.
# One interpreter (in one xdist worker) instead of one per test: ~2 s of CPU less.
IMPORT_PROBE = r"""
import json, sys

def http():
    return [m for m in ("httpx", "aiohttp", "httpx_aiohttp") if m in sys.modules]

seen = {}
import agentjudge
seen["agentjudge"] = http()
seen["pairwise"] = "agentjudge.judges._pairwise" in sys.modules
import agentjudge.models._types
from agentjudge.models import ModelRequest, ModelResponse, Usage, ModelClient
seen["agentjudge.models._types"] = http()
import agentjudge.judges
seen["agentjudge.judges"] = http()
seen["judge modules"] = sorted(m for m in sys.modules if m.startswith("agentjudge.judges."))
from agentjudge.judges import RouteAccuracy
seen["judge modules for RouteAccuracy"] = sorted(
    m for m in set(agentjudge.judges._LAZY.values()) if m in sys.modules)
from agentjudge import LogprobConfidence, PairwiseJudge, SelfConsistency, SimulatedAnnotators
import agentjudge.judges as j
seen["trust"] = (PairwiseJudge, LogprobConfidence, SelfConsistency, SimulatedAnnotators) == (
    j.PairwiseJudge, j.LogprobConfidence, j.SelfConsistency, j.SimulatedAnnotators)
from agentjudge import LLMJudge, OpenAIChat, FileExists
seen["modules"] = [LLMJudge.__module__, OpenAIChat.__module__, FileExists.__module__]
seen["httpx after OpenAIChat"] = "httpx" in sys.modules
import agentjudge.testing
from agentjudge.testing import assert_eval
seen["testing modules for assert_eval"] = sorted(
    m for m in set(agentjudge.testing._LAZY.values()) if m in sys.modules)
import types, _agentjudge_pytest as plugin
session = types.SimpleNamespace(stash={plugin._ROWS: []})  # a running session, as pytest's
plugin._CONFIGS.append(session)
plugin.record_outcome((), None)  # what assert_eval calls for each checked outcome
assert len(session.stash[plugin._ROWS]) == 1
seen["session modules for recording"] = sorted(
    m for m in sys.modules
    if m in ("agentjudge._pytest._session", "agentjudge.harness._gates")
    or m.startswith(("agentjudge.harness._summary", "agentjudge.harness._report")))
print(json.dumps(seen))
"""
PROBE_GROUP = pytest.mark.xdist_group("exports-import-probe")


@pytest.fixture(scope="module")
def imports() -> dict[str, Any]:
    """What each step of `IMPORT_PROBE` loaded, in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@PROBE_GROUP
def test_import_stays_light(imports: dict[str, Any]) -> None:
    """`import agentjudge` loads no HTTP stack; lazy names load it on first access."""
    assert imports["agentjudge"] == []
    llm_judge, openai_chat, _ = imports["modules"]
    assert llm_judge.startswith("agentjudge.judges")
    assert openai_chat.startswith("agentjudge.models")
    assert imports["httpx after OpenAIChat"]


@PROBE_GROUP
def test_trust_names_are_the_judges_objects_loaded_lazily(imports: dict[str, Any]) -> None:
    """PairwiseJudge and the confidence methods are top-level names, loaded on first access."""
    assert not imports["pairwise"]
    assert imports["trust"]


def test_unknown_attribute_raises() -> None:
    """An unknown top-level name is an AttributeError, not a silent None."""
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agentjudge.Nope  # noqa: B018


# -- every public subpackage ---------------------------------------------------------------------

SUBPACKAGES = [
    "agentjudge",
    "agentjudge.core",
    "agentjudge.judging",
    "agentjudge.voting",
    "agentjudge.engine",
    "agentjudge.models",
    "agentjudge.judges",
    "agentjudge.harness",
    "agentjudge.testing",
    "agentjudge.bridges",
    "agentjudge.agreement",
    "agentjudge.calibration",
    "agentjudge.pairwise",
]
PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "public-api.md"
PLUMBING = {
    "construct", "await_armed", "call_with_retry", "retry_delay", "call_judge",
    # judges: base classes, prompt helpers, tables and dispatchers (in the private modules)
    "DeterministicJudge", "ModelJudgeBase", "ModelRunner", "evaluation_input", "format_messages",
    "render_value", "VARIABLES", "SCORE_SCHEMA", "rag_answer", "rag_context", "rag_question",
    "comparator_for", "pyc_magic_for", "parse_coverage_bytes", "DEFAULT_COVERAGE_REPORTS",
    "DEFAULT_OUTPUT_LIMIT", "PathEscapeError", "WorkspaceError",
    # harness: parsing, the task runner, results scanning, statistics, the CLI
    "Gate", "parse_gate", "parse_case", "TaskRunner", "scan_results", "bootstrap_ci", "main",
}  # fmt: skip


def _documented() -> dict[str, list[str]]:
    sections = re.split(r"^## `([\w.]+)`$", PAGE.read_text(encoding="utf-8"), flags=re.M)
    return {
        name: re.findall(r"^- `([^`]+)`$", body, flags=re.M)
        for name, body in zip(sections[1::2], sections[2::2], strict=True)
    }


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_subpackage_all_resolves_and_is_public(package: str) -> None:
    """Every subpackage's __all__ is unique, resolves, and holds no private names or modules."""
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert len(names) == len(set(names))
    for name in names:
        assert not name.startswith("_") or name == "__version__", name
        value = getattr(module, name)
        assert type(value).__name__ != "module", name
    assert PLUMBING.isdisjoint(names)


def test_docs_list_every_public_subpackage_exactly() -> None:
    """docs/reference/public-api.md lists each subpackage's __all__, no more, no fewer."""
    documented = _documented()
    assert sorted(documented) == sorted(SUBPACKAGES)
    for package in SUBPACKAGES:
        exported = importlib.import_module(package).__all__
        assert sorted(documented[package]) == sorted(exported), package


def test_every_public_subpackage_is_walked() -> None:
    """A new public subpackage of agentjudge must be added to the walk (and the docs)."""
    root = Path(importlib.import_module("agentjudge").__file__ or "").parent
    found = {
        f"agentjudge.{p.parent.name}"
        for p in root.glob("*/__init__.py")
        if not p.parent.name.startswith("_")
    }
    assert found <= set(SUBPACKAGES)


@PROBE_GROUP
@pytest.mark.parametrize("package", ["agentjudge.judges", "agentjudge.models._types"])
def test_judges_and_model_values_load_without_http_stack(
    package: str, imports: dict[str, Any]
) -> None:
    """Importing the judges (or the request/response values) loads neither httpx nor aiohttp."""
    assert imports[package] == []
    assert imports["httpx after OpenAIChat"]


@PROBE_GROUP
def test_the_judges_package_imports_a_judge_module_on_first_use(imports: dict[str, Any]) -> None:
    """``import agentjudge.judges`` loads no judge; a name loads its own module (and what that
    imports) and no other judge's (a CLI run whose suite used one judge imported them all)."""
    assert imports["judge modules"] == []
    assert imports["judge modules for RouteAccuracy"] == ["agentjudge.judges._retrieval"]


@PROBE_GROUP
def test_assertions_load_without_the_fake_server(imports: dict[str, Any]) -> None:
    """``from agentjudge.testing import assert_eval`` (in every pytest-xdist worker of a session
    using the plugin) imports neither the fake server nor the scripted judges."""
    assert imports["testing modules for assert_eval"] == ["agentjudge.testing._assertions"]


@PROBE_GROUP
def test_recording_an_outcome_loads_neither_the_summary_nor_the_report(
    imports: dict[str, Any],
) -> None:
    """What every pytest-xdist worker of a session using the plugin does (``assert_eval``, then
    the outcome recorded as a row) imports neither the summary folds, the report, nor the gate
    parser: only the process that ends the session needs them."""
    assert imports["session modules for recording"] == []


def test_unknown_judges_attribute_raises() -> None:
    """An unknown name of the lazy judges package is an AttributeError naming it."""
    import agentjudge.judges

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agentjudge.judges.Nope  # noqa: B018


def test_unknown_model_attribute_raises() -> None:
    """An unknown name of the lazy models package is an AttributeError naming it."""
    import agentjudge.models

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agentjudge.models.Nope  # noqa: B018


API_INDEX = PAGE.parents[1] / "api" / "index.md"


def test_api_index_documents_every_top_level_name_once() -> None:
    """docs/api/index.md renders the top-level names no subpackage page renders, and links each
    other one to its subpackage's page (the docs build checks that every link resolves)."""
    text = API_INDEX.read_text(encoding="utf-8")
    rendered = re.findall(r"^ {8}- (\w+)$", text, flags=re.M)
    linked = re.findall(r"\[`(\w+)`\]\[agentjudge\.(\w+)\.(\w+)\]", text)
    pages = {p.stem for p in API_INDEX.parent.glob("*.md")} - {"index"}
    assert all(name == target for name, _, target in linked)
    for name, package, _ in linked:
        assert package in pages and name in importlib.import_module(f"agentjudge.{package}").__all__
    on_pages = {n for p in pages for n in importlib.import_module(f"agentjudge.{p}").__all__}
    public = set(agentjudge.__all__) - {"__version__"}
    assert sorted(rendered) == sorted(public - on_pages)
    assert sorted(name for name, _, _ in linked) == sorted(public & on_pages)


def _type_checking_imports(package: str) -> dict[str, str]:
    """``{name: module}`` of the ``if TYPE_CHECKING:`` imports in ``package``'s ``__init__``."""
    import ast

    source = Path(importlib.import_module(package).__file__ or "").read_text("utf-8")
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for item in node.body:
                if isinstance(item, ast.ImportFrom) and item.module:
                    found.update({alias.asname or alias.name: item.module for alias in item.names})
    return found


def _same_package_tree(a: str, b: str) -> bool:
    """``a`` and ``b`` are one module, or one is a package holding the other."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


@pytest.mark.parametrize(
    "package",
    [
        "agentjudge",
        "agentjudge.core",
        "agentjudge.models",
        "agentjudge.harness",
        "agentjudge.judges",
        "agentjudge.testing",
    ],
)
def test_a_lazy_name_is_imported_for_type_checkers_listed_and_exported(package: str) -> None:
    """A name loaded on first use is written in three places; this says which one is missing.

    ``_LAZY`` (where it loads from), the ``TYPE_CHECKING`` import (what mypy and editors see,
    from the same module or the subpackage re-exporting it) and ``__all__``.
    """
    module = importlib.import_module(package)
    lazy: dict[str, str] = module._LAZY
    typed = _type_checking_imports(package)
    assert sorted(set(lazy) - set(typed)) == [], "add these to the TYPE_CHECKING imports"
    assert sorted(set(typed) - set(lazy)) == [], "add these to _LAZY (or drop the import)"
    moved = {
        name: (lazy[name], typed[name])
        for name in lazy
        if not _same_package_tree(lazy[name], typed[name])
    }
    assert moved == {}, "_LAZY and the TYPE_CHECKING import name different modules"
    assert sorted(set(lazy) - set(module.__all__)) == [], "add these to __all__"

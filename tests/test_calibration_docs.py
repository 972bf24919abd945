"""The examples of docs/how-to/trust.md and of the agreement/calibration docstrings run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from zygote_support import python_c

import agentjudge.agreement
import agentjudge.calibration

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "how-to" / "trust.md"


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.slow  # the page's last example runs the CLI four times (`make quick` skips it)
@pytest.mark.xdist_group("docs-examples")  # the docs examples' preloaded interpreter
def test_trust_page_examples_run(tmp_path: Path) -> None:
    """The page's examples run in order as one ``python -c`` program (its own process and
    ``__main__``, forked from the docs examples' preloaded interpreter), their asserts holding."""
    blocks = _blocks(PAGE.read_text("utf-8"))
    assert len(blocks) >= 3
    proc = python_c("\n\n".join(blocks), tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("module", [agentjudge.agreement, agentjudge.calibration])
def test_module_docstring_examples_run(module: object) -> None:
    """The example in each module docstring runs without errors."""
    blocks = _blocks(module.__doc__ or "")
    assert blocks
    for code in blocks:
        exec(compile(code, module.__name__, "exec"), {})  # type: ignore[attr-defined]

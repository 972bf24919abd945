"""The examples of docs/how-to/trust.md and of the agreement/calibration docstrings run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentjudge.agreement
import agentjudge.calibration

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "how-to" / "trust.md"


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_trust_page_examples_run(tmp_path: Path) -> None:
    """The page's examples run in order in one fresh interpreter, their asserts holding."""
    blocks = _blocks(PAGE.read_text("utf-8"))
    assert len(blocks) >= 3
    proc = subprocess.run(
        [sys.executable, "-c", "\n\n".join(blocks)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("module", [agentjudge.agreement, agentjudge.calibration])
def test_module_docstring_examples_run(module: object) -> None:
    """The example in each module docstring runs without errors."""
    blocks = _blocks(module.__doc__ or "")
    assert blocks
    for code in blocks:
        exec(compile(code, module.__name__, "exec"), {})  # type: ignore[attr-defined]

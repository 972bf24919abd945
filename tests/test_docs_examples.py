"""Python examples in docs/ that run themselves (they call ``anyio.run``) are executed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Pages whose examples build on each other run in one namespace in their own tests.
OWN_TESTS = {
    "docs/concepts/voting.md": "tests/test_voting_docs.py",
    "docs/how-to/llm-judges.md": "tests/judges/test_llm_docs.py",
    "docs/how-to/fastapi-jury.md": "tests/judges/test_llm_docs.py",
    "docs/how-to/deterministic-judges.md": "tests/judges/test_judges_deterministic_docs.py",
    "docs/how-to/model-clients.md": "tests/models/test_models_docs.py",
}
BLOCKS = [
    pytest.param(code, id=f"{path.relative_to(ROOT)}#{i}")
    for path in sorted((ROOT / "docs").rglob("*.md"))
    if str(path.relative_to(ROOT)) not in OWN_TESTS
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", path.read_text("utf-8"), re.S))
    if "anyio.run(" in code
]


def test_pages_with_their_own_tests_have_them() -> None:
    """Every page excluded here is exercised by a test file that exists."""
    for page, test in OWN_TESTS.items():
        if (ROOT / page).exists():
            assert (ROOT / test).exists(), f"{page} is not tested: {test} is missing"


@pytest.mark.parametrize("code", BLOCKS)
def test_docs_example_runs(code: str, tmp_path: Path) -> None:
    """The example runs to completion without errors."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

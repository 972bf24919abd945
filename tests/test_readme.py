"""The README's example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_example_runs() -> None:
    """The fifteen-line example in README.md runs and prints a passing verdict."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    proc = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pass"), proc.stdout
    assert "('not_empty', <Status.PASS: 'pass'>)" in proc.stdout

"""Run the real ``agentjudge`` CLI in a subprocess, for harness tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m agentjudge ARGS`` in ``cwd`` (a 60 s bound for a hang), output captured."""
    return subprocess.run(
        [sys.executable, "-m", "agentjudge", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

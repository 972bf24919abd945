"""The README's example runs as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from zygote_support import python_c

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.xdist_group("docs-examples")  # the docs examples' preloaded interpreter
def test_readme_example_runs(tmp_path: Path) -> None:
    """The fifteen-line example in README.md runs as ``python -c`` (forked from the docs
    examples' preloaded interpreter) and prints a passing verdict."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    proc = python_c(blocks[0], tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pass"), proc.stdout
    assert "('not_empty', <Status.PASS: 'pass'>)" in proc.stdout


def _readme_shell_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command and not command.startswith("make "):
                lines.append(command)
    return lines


def _make_run_commands() -> list[str]:
    """The commands of the Makefile's `run` target, as `make run` executes them."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^run:.*?\n((?:\t.*\n)+)", text, flags=re.M)
    assert recipe is not None
    return [
        line.strip().replace("$(RUN) python", ".venv/bin/python")
        for line in recipe.group(1).splitlines()
    ]


def test_readme_shell_commands_work_verbatim_after_make_run(tmp_path: Path) -> None:
    """Every command the README shows runs as written in a checkout where `make run` ran."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    commands = _make_run_commands() + _readme_shell_commands()
    assert any(c.startswith(".venv/bin/agentjudge compare") for c in commands)
    for command in commands:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, f"{command!r} exited {proc.returncode}: {proc.stderr}"


def _uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else ["python3", "-m", "uv"]


def test_install_from_a_checkout(tmp_path: Path) -> None:
    """`pip install .` from the repository root installs an importable package (quickstart)."""
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    assert "pip install .  " in text or "pip install .\n" in text
    target = tmp_path / "site"
    proc = subprocess.run(
        [*_uv(), "pip", "install", "--offline", "--no-deps", "--no-build-isolation",
         "--python", sys.executable, "--target", str(target), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    check = subprocess.run(
        [sys.executable, "-c", "import agentjudge, sys; print(agentjudge.__file__)"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip().startswith(str(target))

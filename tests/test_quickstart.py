"""The quickstart (docs/quickstart.md) works as written: its files, its commands, its outputs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from docs_support import DOCS, blocks, shell_commands, write_files

PAGE = DOCS / "quickstart.md"


def _env() -> dict[str, str]:
    """The environment of a user who installed agentjudge: its scripts first on PATH."""
    scripts = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", "")}


def test_quickstart_runs_verbatim(tmp_path: Path) -> None:
    """Every file is written and every command run exactly as the page shows them, in order;
    the outputs the page quotes are what the commands print."""
    text = PAGE.read_text(encoding="utf-8")
    assert write_files(text, tmp_path) == ["data.jsonl", "task.py", "judges.py", "agentjudge.toml"]
    # `pip install .` is run by tests/test_readme.py::test_install_from_a_checkout
    commands = [c for c in shell_commands(text) if not c.startswith("pip install")]
    assert [c.split()[1] for c in commands] == ["run", "report", "run", "run", "compare"]
    out: list[str] = []
    for command in commands:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, f"{command!r} exited {proc.returncode}: {proc.stderr}"
        out.append(proc.stdout)
    first_run, report, strict, second_run, compare = out
    (shown,) = [b.code for b in blocks(text) if b.lang == "text"]
    assert shown in first_run and shown in report  # the gates block the page shows
    assert "FAIL  correct.pass_rate>=0.9  (value 0.6667)" in strict
    assert "result: FAILED" in strict and strict.rstrip().endswith("exit code: 1")
    assert "result: PASSED" in second_run and "baseline" in second_run
    assert "geo-3: fail -> pass" in compare

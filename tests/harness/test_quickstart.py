"""The quickstart (docs/quickstart.md) works as written: its files, its commands, its outputs.

Its commands are ``agentjudge ...`` programs: each runs as its own process through the CLI's
entry point, forked from `cli_support`'s preloaded interpreter (~0.45 s of CPU less per command
than a fresh interpreter; five commands). The same programs started from a shell, as written
(the ``agentjudge`` script on PATH), are run by tests/test_readme.py, whose README commands are
the same ``run``, ``report`` and ``compare``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from cli_support import cli
from docs_support import DOCS, blocks, shell_commands, write_files

PAGE = DOCS / "quickstart.md"
ECHO_STATUS = 'echo "exit code: $?"'
"""What the page's strict run prints after the program: its exit code, as the shell has it."""


def _program(command: str) -> tuple[list[str], bool]:
    """The ``agentjudge`` arguments of a page command, and whether it echoes the exit code."""
    program, _, after = command.partition("; ")
    assert after in ("", ECHO_STATUS), command
    words = shlex.split(program)
    assert words[0] == "agentjudge", command
    return words[1:], after == ECHO_STATUS


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
        args, echo_status = _program(command)
        proc = cli(tmp_path, *args)
        if echo_status:
            out.append(f"{proc.stdout}exit code: {proc.returncode}\n")
        else:
            assert proc.returncode == 0, f"{command!r} exited {proc.returncode}: {proc.stderr}"
            out.append(proc.stdout)
    first_run, report, strict, second_run, compare = out
    (shown,) = [b.code for b in blocks(text) if b.lang == "text"]
    assert shown in first_run and shown in report  # the gates block the page shows
    assert "FAIL  correct.pass_rate>=0.9  (value 0.6667)" in strict
    assert "result: FAILED" in strict and strict.rstrip().endswith("exit code: 1")
    assert "result: PASSED" in second_run and "baseline" in second_run
    assert "geo-3: fail -> pass" in compare

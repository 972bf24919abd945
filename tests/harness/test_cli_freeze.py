"""The program moves what it loaded to the collector's permanent generation, never the user's.

`agentjudge.harness._cli_args.freeze_loaded` runs only in the ``agentjudge`` program (`cli`):
after a command that runs no user code, and in ``run`` after its own imports but before the
suite's modules load (their objects keep their finalizers at exit). `main` called in-process
(here, or by a program embedding it) never freezes. Checked in this process, with
``gc.freeze`` recorded instead of done.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import pytest

from agentjudge.harness import _cli, _cli_args

TASK = "def answer(case):\n    return case.input.upper()\n"
JUDGES = "def nonempty(ctx):\n    return bool(ctx.output)\n\njudges = [nonempty]\n"


@pytest.fixture
def freezes(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """Each recorded ``gc.freeze()`` call: the modules imported at that moment."""
    calls: list[set[str]] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(set(sys.modules)))
    return calls


def _project(folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A one-case suite whose task and judges modules are new names; the ``run`` words."""
    (folder / "freeze_probe_task.py").write_text(TASK, encoding="utf-8")
    (folder / "freeze_probe_judges.py").write_text(JUDGES, encoding="utf-8")
    row = {"id": "a", "input": "x"}
    (folder / "data.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    for name in ("freeze_probe_task", "freeze_probe_judges"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return [
        "run",
        "--dataset",
        "data.jsonl",
        "--task",
        "freeze_probe_task:answer",
        "--judges",
        "freeze_probe_judges:judges",
        "--out",
        "out",
        "--quiet",
        "--progress",
        "off",
    ]


def test_the_program_freezes_once_after_a_command_without_user_code(
    freezes: list[set[str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_cli_args, "_program", True)
    assert _cli.main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)  # the command did its job first
    assert len(freezes) == 1


def test_a_run_freezes_before_the_suites_modules_load(
    freezes: list[set[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = _project(tmp_path, monkeypatch)
    monkeypatch.setattr(_cli_args, "_program", True)
    assert _cli.main(words) == 0
    assert (tmp_path / "out" / "summary.json").is_file()
    (loaded,) = freezes  # once, and not again at the end of the run
    assert "agentjudge.harness._run" in loaded
    assert not {"freeze_probe_task", "freeze_probe_judges"} & loaded
    assert {"freeze_probe_task", "freeze_probe_judges"} <= set(sys.modules)


def test_main_called_in_process_never_freezes(
    freezes: list[set[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = _project(tmp_path, monkeypatch)
    assert _cli.main(words) == 0
    assert _cli.main(["schema"]) == 0
    assert freezes == []

"""Two small runs (a baseline and a later run with flips) for the browser report's tests."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from agentjudge.harness import Suite, run_suite

JUDGES = """
from agentjudge.core import Check, Judgment

def exact(ctx):
    if ctx.output == ctx.expected:
        return Judgment.passed("same as expected")
    return Judgment.failed(f"expected {ctx.expected!r}")

def length(ctx):
    n = len(ctx.output)
    checks = (Check(name="short", passed=n <= 6, message=f"{n} characters"),)
    return Judgment.from_score(min(1.0, n / 8), threshold=0.5, reasoning="length", checks=checks)

judges = [exact, length]
"""

GOOD = """
def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    return case.input.upper()
"""

WORSE = """
def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    if case.input.startswith("b"):
        return "wrong"
    return case.input.upper()
"""

WORDS = ["apple", "banana", "cherry", "bean", "date", "berry", "elder", "fig", "boom", "grape"]
TRACEBACK = 'File "task.py", line 4, in answer\n    raise RuntimeError("kaboom")'


def rows() -> list[dict[str, object]]:
    """Ten cases: two tags, one task error (``c08``, input "boom")."""
    return [
        {
            "id": f"c{i:02d}",
            "input": word,
            "expected": word.upper(),
            "metadata": {"tags": ["fruit" if i % 2 == 0 else "other"]},
        }
        for i, word in enumerate(WORDS)
    ]


def _run(folder: Path, task: str, out: Path) -> None:
    (folder / "task.py").write_text(task, encoding="utf-8")
    suite = Suite(
        dataset=Path("data.jsonl"),
        task="task.py:answer",
        judges="judges.py:judges",
        base_dir=folder,
    )
    anyio.run(lambda: run_suite(suite, out=out, progress="off"))


def build_runs(root: Path) -> tuple[Path, Path]:
    """``(baseline, current)`` run folders; in the current one "b" words flip exact to FAIL.

    The task error's row gains a ``traceback`` field (as the failing-cases work writes).
    """
    for name in ("base_suite", "new_suite"):
        folder = root / name
        folder.mkdir()
        (folder / "data.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8"
        )
        (folder / "judges.py").write_text(JUDGES, encoding="utf-8")
    _run(root / "base_suite", GOOD, root / "base")
    _run(root / "new_suite", WORSE, root / "new")
    results = root / "new" / "results.jsonl"
    lines = []
    for line in results.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["error"] is not None:
            row["traceback"] = TRACEBACK
        lines.append(json.dumps(row))
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "base", root / "new"


HUMAN = ["pass", "fail", "pass", "fail", "pass", "pass", "fail", "pass", "pass", "pass"]
"""Human labels of `rows` (``exact`` on the current run: 2 fail/fail, 1 fail/pass, 1 pass/fail,
5 pass/pass; c08 is a task error)."""


def build_labelled_run(root: Path) -> Path:
    """The current run of `build_runs` over the same rows carrying ``human`` labels."""
    folder = root / "labelled_suite"
    folder.mkdir()
    labelled = [{**row, "human": label} for row, label in zip(rows(), HUMAN, strict=True)]
    (folder / "data.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in labelled), encoding="utf-8"
    )
    (folder / "judges.py").write_text(JUDGES, encoding="utf-8")
    _run(folder, WORSE, root / "labelled")
    return root / "labelled"

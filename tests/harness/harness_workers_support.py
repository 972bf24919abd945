"""Module-level task and judges for the worker-process tests (importable, so picklable)."""

from __future__ import annotations

import os
from pathlib import Path

from agentjudge.core import Judgment
from agentjudge.harness import Case

PASSED = Judgment.passed("same")
FAILED = Judgment.failed("differs")


async def exact(ctx: object) -> Judgment:
    """PASS when the output equals the expected value."""
    return PASSED if ctx.output == ctx.expected else FAILED  # type: ignore[attr-defined]


def half(ctx: object) -> float:
    """A sync judge scoring 0.5."""
    return 0.5


async def upper(case: Case) -> str:
    """The task: the input upper-cased; ``boom`` raises, ``die`` kills the worker process."""
    if case.input == "boom":
        raise RuntimeError("kaboom")
    if case.input == "die":
        os._exit(7)
    if case.input == "interrupt":
        raise KeyboardInterrupt
    return str(case.input).upper()


async def logged(case: Case) -> str:
    """The Ray killed-actor run's task: `upper`, logging each call in the case's folder.

    Each call appends "case-id pid" to ``calls.log`` in ``metadata["folder"]``; ``kill`` kills
    the Ray actor running it, the first time (a ``killed`` file there remembers it).
    """
    folder = Path(case.metadata["folder"])
    with open(folder / "calls.log", "a", encoding="utf-8") as log:
        log.write(f"{case.id} {os.getpid()}\n")
    if case.input == "kill" and not (folder / "killed").exists():
        (folder / "killed").write_text("once", encoding="utf-8")
        import ray

        ray.kill(ray.get_runtime_context().current_actor)
    return await upper(case)

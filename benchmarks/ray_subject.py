"""The task and judges of `bench_ray.py` (referenced by path, so Ray actors load them too)."""

from __future__ import annotations

import hashlib
import sys
from typing import Any

import anyio

from agentjudge import Judgment
from agentjudge.harness import Case

PASSED = Judgment.passed("ok")
COMMAND = [sys.executable, "-c", "print(sum(i * i for i in range(300_000)))"]


async def task(case: Case) -> str:
    """The task: the input upper-cased."""
    return str(case.input).upper()


async def command(ctx: Any) -> Judgment:
    """Run a small real command; PASS when it exits 0."""
    proc = await anyio.run_process(COMMAND, check=False)
    return PASSED if proc.returncode == 0 else Judgment.failed(f"exit {proc.returncode}")


def python(ctx: Any) -> Judgment:
    """About 10 ms of CPU in Python (a sync judge: it holds the GIL)."""
    digest = b"x"
    for _ in range(20_000):
        digest = hashlib.sha256(digest).digest()
    return PASSED


async def exact(ctx: Any) -> Judgment:
    """Instant: PASS when the output is the expected text."""
    return PASSED if ctx.output == ctx.expected else Judgment.failed("no")


async def always(ctx: Any) -> Judgment:
    """Instant: always PASS."""
    return PASSED


command_judges = [command]
python_judges = [python]
instant_judges = [exact, always]


def w6_judges() -> list[Any]:
    """W6's judge (bench_llm): one LLM judge on the server named by AGENTJUDGE_BENCH_URL."""
    import os

    from agentjudge.judges import LLMJudge
    from agentjudge.models import OpenAIChat

    model = OpenAIChat("judge", base_url=os.environ["AGENTJUDGE_BENCH_URL"], api_key="test")
    return [LLMJudge("correct", model, "Q: {{input}}\nA: {{output}}\nCorrect?")]

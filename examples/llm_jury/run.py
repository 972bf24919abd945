"""An LLM jury judging a chat model, all offline against a fake OpenAI-compatible server.

Run it with ``python examples/llm_jury/run.py [OUT_DIR]``. It

1. starts `FakeModelServer` on a loopback port; it plays every model in the example:
   ``assistant`` (the system under test, which knows all answers but one) and three jurors
   (``juror-a`` and ``juror-b`` compare the answer with the reference; ``juror-lenient``
   approves everything);
2. runs the dataset through the assistant over HTTP (`ModelTask`) and through a jury of three
   `CorrectnessJudge`s voting by majority;
3. writes ``results.jsonl`` / ``summary.json`` and prints the report.

Point the clients at a real server (``base_url``/``api_key``) to run the same thing for real.
"""

from __future__ import annotations

import re
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from agentjudge import Jury, Majority
from agentjudge.harness import ModelTask, Suite, render_report, run_suite
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse

HERE = Path(__file__).resolve().parent

KNOWLEDGE = {
    "France": "The capital of France is Paris.",
    "Japan": "The capital of Japan is Tokyo.",
    "Australia": "The capital of Australia is Sydney.",  # the assistant's one mistake
    "gold": "The chemical symbol for gold is Au.",
    "planets": "There are 8 planets in the solar system.",
    "photosynthesis": "Plants take in carbon dioxide for photosynthesis.",
}


def _section(prompt: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.DOTALL)
    return match.group(1) if match else ""


def respond(body: Any) -> FakeResponse:
    """Play every model of the example, by the ``model`` field of the request."""
    prompt = body["messages"][-1]["content"]
    if body["model"] == "assistant":
        for key, answer in KNOWLEDGE.items():
            if key in prompt:
                return FakeResponse(text=answer)
        return FakeResponse(text="I do not know.")
    if body["model"] == "juror-lenient":
        return FakeResponse(text="Answer: YES\nReasoning: looks fine to me.")
    output = _section(prompt, "agent_output").lower()
    reference = _section(prompt, "reference_answer").lower()
    if reference and reference in output:
        return FakeResponse(text="Answer: YES\nReasoning: the answer matches the reference.")
    return FakeResponse(text="Answer: NO\nReasoning: the answer contradicts the reference.")


async def main(out: Path) -> int:
    """Run the example; returns 0 when its gates pass."""
    async with FakeModelServer(default=respond) as server, AsyncExitStack() as stack:

        async def client(model: str) -> OpenAIChat:
            # `async with` closes each client's connections when the example ends
            return await stack.enter_async_context(
                OpenAIChat(model, base_url=server.base_url, api_key="test")
            )

        jury = Jury(
            [
                CorrectnessJudge(await client("juror-a"), name="juror_a"),
                CorrectnessJudge(await client("juror-b"), name="juror_b"),
                CorrectnessJudge(await client("juror-lenient"), name="juror_lenient"),
            ],
            voting=Majority(),
            name="jury",
        )
        suite = Suite(
            name="llm_jury",
            dataset=HERE / "data.jsonl",
            concurrency=4,
            gates=["verdict.pass_rate>=0.8", "juror_a.mean>=0.8", "errors.rate<=0"],
        )
        summary = await run_suite(
            suite,
            out=out,
            overwrite=True,
            task=ModelTask(await client("assistant")),
            judges=jury,
        )
    print(render_report(out))
    return 0 if summary.passed else 1


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".agentjudge/llm_jury")
    raise SystemExit(anyio.run(main, target))

"""Where a judged W4 call's CPU goes beyond an `OpenAIChat` call, measured in W4 itself.

``python benchmarks/w4_split.py --base-url URL`` (URL printed by ``python
benchmarks/bench_llm.py --serve``) runs, in one process against that fake provider, the same
``--requests`` calls at concurrency 100 five ways, each adding one layer to the last:

- ``chat``: `OpenAIChat.complete` of one prebuilt request (W4's ``chat`` variant);
- ``judge``: a plain `LLMJudge` awaited directly (its request, prompt, reading, metadata);
- ``evaluate_thin``: `Evaluator.evaluate` around a judge that only awaits the client with the
  prebuilt request (the engine's per-case work, no `run()`);
- ``run_thin``: the same judge through `Evaluator.run` (W4's ``plain`` without the LLM judge);
- ``run_plain``: the `LLMJudge` through `Evaluator.run` (W4's ``plain`` variant).

Per variant it prints CPU per call, the time spent in the garbage collector (timed with
``gc.callbacks``, per generation) and the collections run, and the loop callbacks per call.
``--no-gc`` switches the collector off for the whole process. ``--read-ahead K`` lets
`Evaluator.run` have ``K x concurrency`` cases started and not yet read (its `Handoff` gets
``K / 2`` times the slots `run()` asks for): 2 is what `run()` does since 2026-11-26
(``concurrency`` running, up to ``concurrency`` more finished and waiting for the reader), 1
the exact bound of before (a finished worker waits for a read). The findings are in
docs/reference/benchmarks.md ("Where
a judged call's CPU goes in W4").
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import _w4_worker as w4
import anyio

from agentjudge import Context, Evaluator, Judgment, LLMJudge, Message, ModelRequest, OpenAIChat

CONCURRENCY = 100
VARIANTS = "chat,judge,evaluate_thin,run_thin,run_plain"


class GcTimer:
    """CPU seconds the collector ran, per generation, and how many collections."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.runs = [0, 0, 0]
        self._start = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.seconds[info["generation"]] += time.process_time() - self._start
            self.runs[info["generation"]] += 1

    def reset(self) -> None:
        self.seconds, self.runs = [0.0, 0.0, 0.0], [0, 0, 0]


async def measure(name: str, base_url: str, total: int, timer: GcTimer) -> dict[str, Any]:
    async with OpenAIChat(
        "judge", base_url=base_url, api_key="test", max_concurrency=CONCURRENCY
    ) as model:
        judge = LLMJudge("correct", model, w4.PROMPT)
        contexts = [Context(input=f"what is {i}+{i}?", output=str(2 * i)) for i in range(total)]
        request = ModelRequest(messages=tuple(Message(**m) for m in w4.BODY["messages"]))

        class Thin:
            """A judge that only makes the client call (its request built once)."""

            name = "thin"

            async def __call__(self, ctx: Context, /) -> Judgment:
                await model.complete(request)
                return Judgment.passed()

        call: Callable[[int], Awaitable[None]]
        if name == "chat":

            async def call(i: int) -> None:
                await model.complete(request)

        elif name == "judge":

            async def call(i: int) -> None:
                assert (await judge(contexts[i])).is_pass

        elif name == "evaluate_thin":
            single = Evaluator(Thin(), max_concurrency=CONCURRENCY)

            async def call(i: int) -> None:
                await single.evaluate(contexts[i])

        else:
            evaluator = Evaluator(
                judge if name == "run_plain" else Thin(), max_concurrency=CONCURRENCY
            )

            async def many(count: int) -> w4.Timing:
                with w4.Clock() as clock:
                    async for case in evaluator.run(contexts[:count], concurrency=CONCURRENCY):
                        assert case.verdict.judgment.is_pass
                return clock.timing

            await many(w4.WARM_UP)
            timer.reset()
            _, cpu = await many(total)
            return report(name, cpu, total, timer)

        await w4.pool(w4.WARM_UP, CONCURRENCY, call)
        timer.reset()
        _, cpu = await w4.pool(total, CONCURRENCY, call)
        return report(name, cpu, total, timer)


def report(name: str, cpu: float, total: int, timer: GcTimer) -> dict[str, Any]:
    return {
        "variant": name,
        "cpu_us_per_call": round(cpu / total * 1e6, 1),
        "gc_us_per_call": round(sum(timer.seconds) / total * 1e6, 1),
        "gc_us_per_call_by_generation": [round(s / total * 1e6, 1) for s in timer.seconds],
        "gc_collections_by_generation": timer.runs,
        "loop_callbacks_per_call": round(w4.Clock.last.get("handles", 0) / total, 2),
    }


def read_ahead(factor: int) -> None:
    """Patch `Handoff` to give ``factor / 2`` times the slots it is asked for (`run()` asks
    for ``2 x concurrency``)."""
    from agentjudge.engine import _detached

    init = _detached.Handoff.__init__

    def patched(self: Any, loop: Any, slots: int = 0) -> None:
        init(self, loop, slots * factor // 2)

    _detached.Handoff.__init__ = patched  # type: ignore[method-assign]


async def main(args: argparse.Namespace) -> None:
    timer = GcTimer()
    for name in args.variants.split(","):
        print(json.dumps(await measure(name, args.base_url, args.requests, timer)), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--requests", type=int, default=3_000)
    parser.add_argument("--variants", default=VARIANTS)
    parser.add_argument("--no-gc", action="store_true", help="switch the collector off")
    parser.add_argument("--read-ahead", type=int, default=2, help="unread x concurrency")
    arguments = parser.parse_args()
    if arguments.read_ahead != 2:
        read_ahead(arguments.read_ahead)
    if arguments.no_gc:
        gc.disable()
    anyio.run(main, arguments)

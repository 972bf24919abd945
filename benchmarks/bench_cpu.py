"""CPU per case of the engine and the LLM judge, in one process, with a client that answers at once.

W4 (``bench_llm.py``) measures the whole LLM path against a provider in another process; on a
shared machine its walls mostly measure the scheduler. This probe isolates our own CPU: the
model client is replaced by one that suspends once (like a network call) and returns a ready
`ModelResponse`, so only the engine's and the judge's work counts. Variants (``N`` cases at
concurrency 100 each):

* ``floor``: 100 workers awaiting a bare judge that suspends once (the loop's own cost);
* ``fake_plain``: the fake client alone (subtract it from the judge rows);
* ``judge_plain`` / ``judge_struct``: an `LLMJudge` (plain / ``output_model=``) called directly;
* ``eval_bare``: `Evaluator.run` of the bare judge (the engine alone, minus ``floor``);
* ``eval_plain`` / ``eval_struct``: `Evaluator.run` of the LLM judges (engine plus judge);
* ``client`` / ``client_fixed``: `OpenAIChat.complete` itself (adaptive / ``adaptive=False``),
  its poster replaced by one that suspends once and returns W4's answer (the client's own
  work without aiohttp's; minus ``floor``);
* ``chat_plain`` / ``chat_struct``: `Evaluator.run` of an `LLMJudge` (plain / ``output_model=``)
  on that `OpenAIChat` (W4's judged call without aiohttp: the schema in the request body and
  the structured answer's decoding and checks included);
* ``chat_jury``: `Evaluator.run` of a `Jury` of 3 plain `LLMJudge`s on that `OpenAIChat`
  (three calls per case; W4's jury);
* ``chat_plain_budget`` / ``chat_struct_budget``: the same under a token `Budget` (each
  request's bound estimated, reserved and settled; minus ``chat_plain`` / ``chat_struct``).

``--alive`` holds ``CONCURRENCY`` calls at the client and counts the objects the garbage
collector tracks that are alive per case in flight (the ``eval_*``, ``judge_*``, ``chat_*`` and
``client_fixed`` variants; what each collection walks). Two more measures: ``--reps R``
prints the least CPU time (``time.process_time``) per case over R repetitions, in
microseconds; ``--instructions``
runs each variant under valgrind (cachegrind, no cache simulation) for 500 and 1,500 cases
and prints the instructions per case of the difference, which does not depend on the
machine's load (about 2.5-4k instructions per us here). ``PYTHONPATH=<another tree>``
measures another commit's package.

Run: ``uv run python benchmarks/bench_cpu.py [--variants a,b] [--reps 7 | --instructions |
--alive]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from multidict import CIMultiDict, CIMultiDictProxy
from pydantic import BaseModel

import agentjudge
from agentjudge import (
    Context,
    Evaluator,
    Judgment,
    Jury,
    LLMJudge,
    Message,
    ModelRequest,
    OpenAIChat,
)
from agentjudge.engine import Budget
from agentjudge.models import ModelResponse, Usage
from agentjudge.models._transport import Poster, Response, Session

ANSWER = "The answer matches the reference.\nAnswer: YES"
PROMPT = "Question: {{input}}\nAnswer: {{output}}\nIs the answer correct?"
CASES = 2000
CONCURRENCY = 100
PASS = Judgment.passed("ok")


class Grade(BaseModel):
    """The structured judge's answer."""

    passed: bool
    reasoning: str


class AtOnce:
    """A model client that suspends once and answers (plain text or a parsed grade)."""

    name = "fake:judge"

    def __init__(self, structured: bool) -> None:
        self.structured = structured

    async def complete(self, request: Any) -> ModelResponse:
        await suspend()
        usage = Usage(input_tokens=10, output_tokens=5, total_tokens=15)
        if self.structured:
            grade = {"passed": True, "reasoning": "matches"}
            text = '{"passed": true, "reasoning": "matches"}'
            return ModelResponse(text=text, parsed=grade, model="judge", usage=usage)
        return ModelResponse(text=ANSWER, model="judge", finish_reason="stop", usage=usage)


class Held:
    """``--alive``: the calls in flight are held at the client until counted."""

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        self.full = asyncio.Event()
        self.waiting = 0


HELD = Held()


async def suspend() -> None:
    """Suspend once, as a network call would (``--alive``: until the calls are all held)."""
    if HELD.gate is None:
        await asyncio.sleep(0)
    else:  # --alive: every call waits until CONCURRENCY of them are in flight
        HELD.waiting += 1
        if HELD.waiting == CONCURRENCY:
            HELD.full.set()
        await HELD.gate.wait()


def _kind(obj: object) -> str:
    kind = type(obj)
    if kind.__name__ == "coroutine":
        return "coroutine " + obj.cr_code.co_qualname  # type: ignore[attr-defined]
    return f"{kind.__module__}.{kind.__qualname__}"


async def alive(name: str) -> tuple[float, list[tuple[str, float]]]:
    """Objects the collector tracks, alive per case while ``CONCURRENCY`` calls are in flight.

    What the collector walks in each collection: fewer objects kept across the model call
    mean cheaper and fewer collections. Returns the total and the ten most common kinds.
    """
    if name not in HOLDING:  # its calls never reach the held client: it would wait for ever
        raise SystemExit(f"--alive counts {', '.join(HOLDING)} only, not {name}")
    run = VARIANTS[name]()
    await run(contexts(200))
    batch = contexts(CONCURRENCY)
    HELD.gate, HELD.full, HELD.waiting = asyncio.Event(), asyncio.Event(), 0
    gc.collect()
    before = Counter(map(_kind, gc.get_objects()))
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, batch)
        await HELD.full.wait()
        gc.collect()
        during = Counter(map(_kind, gc.get_objects()))
        HELD.gate.set()
    HELD.gate = None
    grown = {k: (during[k] - before[k]) / CONCURRENCY for k in during if during[k] > before[k]}
    top = sorted(grown.items(), key=lambda kv: -kv[1])[:10]
    return sum(grown.values()), top


async def bare(ctx: Context) -> Judgment:
    """A judge that suspends once."""
    await asyncio.sleep(0)
    return PASS


Run = Callable[[list[Context]], Awaitable[None]]


async def pool(items: list[Any], call: Callable[[Any], Awaitable[Any]]) -> None:
    """``call`` on every item, ``CONCURRENCY`` workers pulling from one iterator."""
    pending = iter(items)

    async def worker() -> None:
        for item in pending:
            await call(item)

    async with anyio.create_task_group() as tg:
        for _ in range(CONCURRENCY):
            tg.start_soon(worker)


def direct(call: Callable[[Any], Awaitable[Any]]) -> Run:
    async def run(contexts: list[Context]) -> None:
        await pool(contexts, call)

    return run


def evaluated(subject: Any, budget: Budget | None = None) -> Run:
    evaluator = Evaluator(subject, max_concurrency=CONCURRENCY, budget=budget)

    async def run(contexts: list[Context]) -> None:
        passed = 0
        async for case in evaluator.run(contexts, concurrency=CONCURRENCY):
            passed += case.verdict.judgment.is_pass
        assert passed == len(contexts), f"{len(contexts) - passed} cases did not pass"

    return run


def judge(structured: bool) -> LLMJudge:
    return LLMJudge("j", AtOnce(structured), PROMPT, output_model=Grade if structured else None)


W4_BODY = (
    b'{"id": "chatcmpl-1", "object": "chat.completion", "created": 1795690185, "model": '
    b'"judge", "choices": [{"index": 0, "message": {"role": "assistant", "content": '
    + json.dumps(ANSWER).encode()
    + b'}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 11, '
    b'"total_tokens": 12}}'
)
"""What W4's provider answers (`bench_llm.py --serve`)."""


class AtOncePoster(Poster):
    """A poster that suspends once and answers with W4's body (no connection)."""

    headers = CIMultiDictProxy(
        CIMultiDict(
            {
                "Server": "fake",
                "Content-Type": "application/json",
                "Content-Length": str(len(W4_BODY)),
            }
        )
    )

    def __init__(self, body: bytes = W4_BODY) -> None:
        self.body = body

    async def post(self, url: str, content: bytes, headers: Any, *_: Any) -> Response:
        await suspend()
        return Response(200, self.headers, self.body, False, len(self.body))


W4_GRADED = W4_BODY.replace(
    json.dumps(ANSWER).encode(), json.dumps('{"passed": true, "reasoning": "matches"}').encode()
)
"""What W4's provider answers a structured request (``{"passed": true, ...}``)."""


class AtOnceChat(OpenAIChat):
    """`OpenAIChat` on `AtOncePoster` (``body``: the answer it returns)."""

    body = W4_BODY

    def _new_session(self) -> Session:
        return Session(AtOncePoster(self.body), self.max_concurrency, self.name)


def chat(body: bytes = W4_BODY) -> AtOnceChat:
    model = AtOnceChat(
        "judge", base_url="http://127.0.0.1:9/v1", api_key="k", max_concurrency=CONCURRENCY
    )
    model.body = body
    return model


def chat_judge(structured: bool) -> LLMJudge:
    model = chat(W4_GRADED if structured else W4_BODY)
    return LLMJudge("j", model, PROMPT, output_model=Grade if structured else None)


def chat_jury() -> Jury:
    """W4's jury: 3 plain `LLMJudge`s on one `AtOnceChat` (three calls per case)."""
    model = chat(W4_BODY)
    return Jury([LLMJudge(f"juror-{k}", model, PROMPT) for k in range(3)])


def client(adaptive: bool) -> Run:
    model = chat()
    model.adaptive = adaptive
    request = ModelRequest(messages=(Message(role="user", content="Is 4 the answer to 2+2?"),))

    async def call(_: Context) -> None:
        assert (await model.complete(request)).text == ANSWER

    return direct(call)


VARIANTS: dict[str, Callable[[], Run]] = {
    "floor": lambda: direct(bare),
    "fake_plain": lambda: direct(AtOnce(False).complete),
    "judge_plain": lambda: direct(judge(False)),
    "judge_struct": lambda: direct(judge(True)),
    "eval_bare": lambda: evaluated(bare),
    "eval_plain": lambda: evaluated(judge(False)),
    "eval_struct": lambda: evaluated(judge(True)),
    "client": lambda: client(True),
    "client_fixed": lambda: client(False),
    "chat_plain": lambda: evaluated(chat_judge(False)),
    "chat_struct": lambda: evaluated(chat_judge(True)),
    "chat_jury": lambda: evaluated(chat_jury()),
    "chat_plain_budget": lambda: evaluated(chat_judge(False), Budget(tokens=10**15)),
    "chat_struct_budget": lambda: evaluated(chat_judge(True), Budget(tokens=10**15)),
}


HOLDING = (
    "fake_plain",
    "judge_plain",
    "judge_struct",
    "eval_plain",
    "eval_struct",
    "chat_plain",
    "chat_struct",
    "client_fixed",  # (not ``client``: the adaptive client admits fewer than CONCURRENCY at first)
)
"""The variants whose calls go through `AtOnce` or `AtOncePoster` (what ``--alive`` holds)."""


def contexts(n: int = CASES) -> list[Context]:
    return [Context(input=f"what is {i}+{i}?", output=str(2 * i)) for i in range(n)]


async def cpu_us(name: str, reps: int) -> float:
    """The least CPU time per case over ``reps`` runs, in microseconds (after a warm-up)."""
    run = VARIANTS[name]()
    await run(contexts(200))
    best = float("inf")
    for _ in range(reps):
        batch = contexts()
        gc.collect()
        start = time.process_time()
        await run(batch)
        best = min(best, time.process_time() - start)
    return best / CASES * 1e6


async def once(name: str, n: int, collector: bool = True) -> None:
    """``--once``: warm up, then run ``n`` cases (what valgrind counts)."""
    run = VARIANTS[name]()
    await run(contexts(200))
    batch = contexts(n)
    gc.collect()
    if not collector:
        gc.disable()
    await run(batch)


def instructions(name: str, collector: bool = True) -> int:
    """Instructions per case: valgrind's count at 1,500 cases minus 500, over 1,000.

    With the collector a full collection (the whole heap) falling in one of the two runs and
    not the other moves the result by up to ~20k per case; ``collector=False`` (``--no-gc``)
    counts the code alone, the same from one run to the next.
    """
    counts = []
    for n in (500, 1500):
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
        command += ["--cachegrind-out-file=/dev/null", sys.executable, __file__]
        command += ["--variants", name, "--once", str(n)]
        command += [] if collector else ["--no-gc"]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        assert found, done.stderr[-2000:]
        counts.append(int(found.group(1).replace(",", "")))
    return (counts[1] - counts[0]) // 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--alive", action="store_true", help="objects alive per case in flight")
    parser.add_argument("--once", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--no-gc", action="store_true", help="--instructions without the GC")
    args = parser.parse_args()
    names = args.variants.split(",")
    if args.once:
        anyio.run(once, names[0], args.once, not args.no_gc)
        return
    print(f"# {agentjudge.__file__}")
    for name in names:
        if args.alive:
            total, top = anyio.run(alive, name)
            kinds = ", ".join(f"{k} {v:.2f}" for k, v in top)
            print(f"{name}: {total:.1f} tracked objects alive per case in flight ({kinds})")
        elif args.instructions:
            if shutil.which("valgrind") is None:
                sys.exit("--instructions needs valgrind")
            count = instructions(name, not args.no_gc)
            print(f"{name}: {count} instructions per case", flush=True)
        else:
            print(f"{name}: {anyio.run(cpu_us, name, args.reps):.1f} us CPU per case", flush=True)


if __name__ == "__main__":
    main()

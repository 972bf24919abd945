"""LLM client benchmarks against FakeModelServer on loopback (prints one JSON line per result).

W4: 1,000 chat calls at concurrency 100 to a fake provider answering after 20 ms, running in
    a SEPARATE process (`--serve`), measured by `_w4_worker.py` in a fresh process per tree and
    round: raw aiohttp POSTs (the reference), `OpenAIChat.complete`, a plain `LLMJudge` and a
    structured ``LLMJudge(output_model=...)`` through an `Evaluator`, a 3-judge `Jury` (the
    same number of calls), and the plain judge under a token `Budget` (no target). The same
    workload runs on the previous commit's package
    (``--baseline-ref``, default ``HEAD~1``, checked out with `git worktree` under /tmp) in the
    same run; rounds alternate which tree goes first, and medians are reported (the machine is
    shared), with the quartiles of the rounds' ratios. Targets: `OpenAIChat` <= 1.15x raw
    aiohttp, both judges <= 1.35x.

Harness (``--harness``): ``agentjudge run`` of an LLM suite (``--requests`` cases, one
    `LLMJudge` on `OpenAIChat(max_concurrency=100)`, concurrency 100) against the W4 provider,
    this tree and ``--baseline-ref``'s interleaved: wall time and the run's CPU per case (process
    start and imports included).

Imports: ``import agentjudge`` and ``python -m agentjudge --help`` wall time, this tree and the
    baseline, interleaved, medians of 10 (``--imports`` runs only this).

Transports (``--transports``): in one process, raw aiohttp against raw httpx (default and
    httpx-aiohttp transports) and `OpenAIChat` on each transport it can build.

429: a jury of 3 LLM judges (3 clients sharing one RateLimit) over 300 cases while the server
    answers 429 with ``retry-after-ms: 200`` on 20% of calls. Target: zero ERROR results and never
    more requests in any window than the configured budget (checked on server timestamps).

W6: 1,000 LLM-judge calls through an `Evaluator` (max_concurrency=100) against a server with a
    hidden limit of 50 requests/s (burst 10), 20 ms latency, NO limit configured in agentjudge.
    Targets: wall <= 21 s (ideal 20 s), zero ERROR results, 429s <= 5% of requests. Also with a
    tokens-per-minute limit as the binding constraint, with the limit halving mid-run, and a
    naive client (fixed concurrency 100, retries honouring Retry-After) for comparison; the
    controller's trace (window, rate, served and 429 per second) is printed as a table.
    promptfoo runs against the same server in ``benchmarks/bench_w6_promptfoo.py``.

Run: ``uv run python benchmarks/bench_llm.py`` (W4, imports and the 429 jury, about 2 minutes;
``--quick`` for a smoke run; ``--rounds N`` W4 rounds (9); ``--w4`` only W4; ``--transports``
the transport comparison (``--all`` adds `OpenAIChat` on httpx's default transport, ~12 s more);
``--w6`` runs only W6, about 2 minutes; ``--jury`` only the 429 jury).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import httpx
from httpx_aiohttp import HttpxAiohttpClient

from agentjudge.core import Context, Message
from agentjudge.models import ModelRequest, OpenAIChat, RateLimit, RetryPolicy, default_transport
from agentjudge.testing._fake_server import FakeModelServer, FakeRateLimit, FakeResponse

LATENCY = 0.02
ANSWER = "The answer matches the reference.\nAnswer: YES"
BODY = {
    "model": "judge",
    "messages": [
        {"role": "user", "content": "Question: what is 2+2?\nAnswer: 4\nIs the answer correct?"}
    ],
}


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


async def pool(total: int, concurrency: int, call: Callable[[int], Awaitable[None]]) -> float:
    """Wall time of ``total`` calls made by ``concurrency`` workers pulling from one counter."""
    numbers = iter(range(total))

    async def worker() -> None:
        for i in numbers:
            await call(i)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return time.perf_counter() - start


# -- W4: the LLM path against raw aiohttp and the previous commit, provider in another process ---

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
W4_VARIANTS = ("raw_aiohttp", "chat", "plain", "structured", "jury", "budget")
W4_TARGETS = {"chat": 1.15, "plain": 1.35, "structured": 1.35}
W4_ROUNDS = 9
"""W4's default rounds. The ratio of one round moves a lot on a 2-core machine (the same code,
`OpenAIChat`: 0.93-1.29 over 15 rounds; the median of 5 rounds moved 1.00-1.27 between runs),
so the median of 9 is reported, with the quartiles of the rounds beside it."""
W4_LABELS = {
    "raw_aiohttp": "raw aiohttp (reference)",
    "chat": "`OpenAIChat.complete`",
    "plain": "`LLMJudge` through an `Evaluator`",
    "structured": "`LLMJudge(output_model=...)` through an `Evaluator`",
    "jury": "`Jury` of 3 `LLMJudge`s (a third as many cases, as many calls)",
    "budget": "`LLMJudge` through an `Evaluator` with a token `Budget`",
}


def _answer(body: Any) -> FakeResponse:
    """The W4 provider: a JSON grade for structured requests, else a YES verdict."""
    if isinstance(body, dict) and "response_format" in body:
        return FakeResponse(json={"passed": True, "reasoning": "matches"}, latency=LATENCY)
    return FakeResponse(text=ANSWER, latency=LATENCY)


async def serve() -> None:
    """``--serve``: run the W4 provider, print its base URL, serve until ended."""
    # nothing kept per request, and what the server imported and built frozen out of the
    # collector's work: before, its full collections (20-72 ms, longer as the requests it
    # kept piled up) stalled the provider in the middle of measured rounds
    async with FakeModelServer(_answer, record=False) as server:
        gc.freeze()
        print(server.base_url, flush=True)
        await anyio.sleep_forever()


@contextlib.contextmanager
def provider_process() -> Iterator[str]:
    """The W4 provider in its own process (so its CPU is not the client's); yields its URL."""
    command = [sys.executable, str(Path(__file__).resolve()), "--serve"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextlib.contextmanager
def baseline_tree(ref: str) -> Iterator[tuple[str, Path]]:
    """``ref`` checked out (detached `git worktree`) under /tmp; removed afterwards."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    path = Path(tempfile.mkdtemp(prefix="agentjudge-baseline-")) / sha
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(path), sha],
        check=True,
    )
    try:
        yield sha, path
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False
        )


def measured_trees(stack: contextlib.ExitStack, baseline_ref: str | None) -> dict[str, Path]:
    """``{"current": this tree}``, plus ``baseline_ref`` checked out (until ``stack`` closes)."""
    trees = {"current": ROOT}
    if baseline_ref:
        sha, path = stack.enter_context(baseline_tree(baseline_ref))
        trees[f"baseline {sha}"] = path
    return trees


def _on_path(tree: Path) -> dict[str, str]:
    """The environment that makes ``tree``'s agentjudge the one imported."""
    return dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])
    )


def _worker(tree: Path, base_url: str, total: int, variants: list[str]) -> dict[str, Any]:
    """Run `_w4_worker.py` once on ``tree``: its line (wall and CPU seconds) per variant."""
    command = [sys.executable, str(HERE / "_w4_worker.py"), "--base-url", base_url]
    command += ["--requests", str(total), "--concurrency", "100", "--variants", ",".join(variants)]
    done = subprocess.run(
        command, env=_on_path(tree), capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"W4 worker on {tree} failed:\n{done.stderr[-3000:]}")
    got: dict[str, list[dict[str, Any]]] = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        assert Path(row["package"]).is_relative_to(tree), (row["package"], tree)
        got.setdefault(row["variant"], []).append(row)
    # the reference runs first and last in each process: its mean is this process's unit
    return {
        variant: {
            key: statistics.mean(r.get(key, 0) for r in rows)
            for key in ("wall_s", "cpu_s", "loop_passes", "loop_callbacks", *W4_GC)
        }
        for variant, rows in got.items()
    }


Samples = dict[tuple[str, str], list[float]]
W4_GC = ("gc_s", "gc_young", "gc_older")
"""The worker's garbage-collector columns: CPU seconds, young and older collections."""


def w4(total: int, rounds: int, baseline_ref: str | None) -> None:
    """W4 on this tree and ``baseline_ref``'s, interleaved; medians and ratios."""
    with contextlib.ExitStack() as stack:
        trees = measured_trees(stack, baseline_ref)
        base_url = stack.enter_context(provider_process())
        samples: dict[str, Samples] = {"wall": {}, "ratio": {}, "cpu": {}, "passes": {}, "cb": {}}
        samples.update({key: {} for key in ("cpu_ratio", *W4_GC)})
        for r in range(rounds):
            order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
            variants = list(W4_VARIANTS[1:])
            variants = variants[r % len(variants) :] + variants[: r % len(variants)]
            for name, tree in order:
                got = _worker(tree, base_url, total, ["raw_aiohttp", *variants, "raw_aiohttp"])
                raw = got["raw_aiohttp"]["wall_s"]
                raw_cpu = got["raw_aiohttp"]["cpu_s"]
                for variant, timing in got.items():
                    samples["wall"].setdefault((name, variant), []).append(timing["wall_s"])
                    samples["ratio"].setdefault((name, variant), []).append(timing["wall_s"] / raw)
                    samples["cpu"].setdefault((name, variant), []).append(timing["cpu_s"])
                    cpu_ratio = timing["cpu_s"] / raw_cpu
                    samples["cpu_ratio"].setdefault((name, variant), []).append(cpu_ratio)
                    samples["passes"].setdefault((name, variant), []).append(timing["loop_passes"])
                    samples["cb"].setdefault((name, variant), []).append(timing["loop_callbacks"])
                    for key in W4_GC:
                        samples[key].setdefault((name, variant), []).append(timing[key])
                walls = {k: round(v["wall_s"], 3) for k, v in got.items()}
                emit(bench="W4", round=r + 1, tree=name, wall_s=walls)
    _w4_report(list(trees), samples, total, rounds)


def _w4_report(trees: list[str], samples: dict[str, Samples], total: int, rounds: int) -> None:
    median = statistics.median
    print(f"# W4: {total} calls at concurrency 100, 20 ms provider, medians of {rounds} rounds")
    print(
        "# | variant | "
        + " | ".join(f"{t}: wall, vs raw aiohttp, CPU/call, loop passes/call" for t in trees)
    )
    for variant in W4_VARIANTS:
        cells = []
        for tree in trees:
            calls = total - total % 3 if variant == "jury" else total
            wall = median(samples["wall"][(tree, variant)])
            ratio = median(samples["ratio"][(tree, variant)])
            quartiles = _quartiles(samples["ratio"][(tree, variant)])
            cpu_ms = median(samples["cpu"][(tree, variant)]) / calls * 1000
            passes = median(samples["passes"][(tree, variant)]) / calls
            callbacks = median(samples["cb"][(tree, variant)]) / calls
            cells.append(f"{wall:.3f} s | {ratio:.2f} | {cpu_ms:.2f} ms | {passes:.2f}")
            emit(
                bench="W4",
                tree=tree,
                variant=variant,
                calls=calls,
                median_wall_s=round(wall, 3),
                median_ratio_vs_raw_aiohttp=round(ratio, 2),
                ratio_quartiles=quartiles,  # of the rounds' ratios: how far one round moves
                median_cpu_ms_per_call=round(cpu_ms, 3),
                # CPU per call over raw aiohttp's in the same process: steadier than the walls
                median_cpu_vs_raw_aiohttp=round(median(samples["cpu_ratio"][(tree, variant)]), 2),
                loop_passes_per_call=round(passes, 3),
                loop_callbacks_per_call=round(callbacks, 2),
                gc_us_per_call=round(median(samples["gc_s"][(tree, variant)]) / calls * 1e6, 1),
                gc_young_per_1k_calls=round(
                    median(samples["gc_young"][(tree, variant)]) / calls * 1000, 1
                ),
                gc_older_per_1k_calls=round(
                    median(samples["gc_older"][(tree, variant)]) / calls * 1000, 1
                ),
                rounds=rounds,
            )
        print(f"# | {W4_LABELS[variant]} | " + " | ".join(cells) + " |")
    for variant, limit in W4_TARGETS.items():
        ratios = samples["ratio"][("current", variant)]
        ratio = median(ratios)
        emit(
            bench="W4",
            target=f"{variant} <= {limit}x raw aiohttp",
            ratio=round(ratio, 2),
            met=ratio <= limit if rounds > 1 else None,  # one round is too noisy to judge
            rounds_within=f"{sum(r <= limit for r in ratios)} of {len(ratios)}",
        )


def _quartiles(values: list[float]) -> list[float] | None:
    """The first and third quartiles of ``values`` (None for fewer than 2)."""
    if len(values) < 2:
        return None
    first, _, third = statistics.quantiles(values, n=4, method="inclusive")
    return [round(first, 2), round(third, 2)]


def import_times(rounds: int, baseline_ref: str | None) -> None:
    """Wall time of ``import agentjudge`` and ``agentjudge --help`` per tree (medians)."""
    commands = {
        "import agentjudge": ["-c", "import agentjudge"],
        "agentjudge --help": ["-m", "agentjudge", "--help"],
    }
    with contextlib.ExitStack() as stack:
        trees = measured_trees(stack, baseline_ref)
        times: Samples = {}
        for r in range(rounds + 1):  # round 0 writes the bytecode caches and is not counted
            for name, tree in trees.items() if r % 2 else reversed(trees.items()):
                for label, args in commands.items():
                    start = time.perf_counter()
                    subprocess.run(  # cwd: ``-c`` and ``-m`` put it first on sys.path
                        [sys.executable, *args],
                        env=_on_path(tree),
                        cwd=tree,
                        capture_output=True,
                        check=True,
                    )
                    if r:
                        times.setdefault((name, label), []).append(time.perf_counter() - start)
    for (name, label), spent in times.items():
        median = round(statistics.median(spent), 3)
        emit(bench="imports", tree=name, command=label, median_wall_s=median, rounds=rounds)


# -- the harness: `agentjudge run` on an LLM suite, this tree and the baseline, interleaved -------

_HARNESS_JUDGES = """\
from agentjudge import LLMJudge
from agentjudge.models import OpenAIChat


def build():
    model = OpenAIChat("judge", max_concurrency=100)  # OPENAI_BASE_URL: the W4 provider
    return LLMJudge("correct", model, "Question: {{input}}\\nAnswer: {{output}}\\nCorrect?")
"""
_HARNESS_SUITE = """\
name = "w4-llm"
dataset = "data.jsonl"
task = "task:answer"
judges = "judges:build"
concurrency = 100
gates = ["errors.rate<=0"]
"""


def _harness_suite(folder: Path, rows: int) -> None:
    """An LLM suite of ``rows`` cases (a lookup task, one `LLMJudge`) in ``folder``."""
    with (folder / "data.jsonl").open("w", encoding="utf-8") as data:
        for i in range(rows):
            data.write(json.dumps({"id": f"q{i}", "input": f"what is {i}+{i}?"}) + "\n")
    (folder / "task.py").write_text(
        "def answer(case):\n    return str(2 * int(case.input.split()[2].split('+')[0]))\n"
    )
    (folder / "judges.py").write_text(_HARNESS_JUDGES)
    (folder / "agentjudge.toml").write_text(_HARNESS_SUITE)


def harness_llm(rows: int, rounds: int, baseline_ref: str | None) -> None:
    """``agentjudge run`` of an LLM suite against the W4 provider: wall and CPU per tree."""
    with contextlib.ExitStack() as stack:
        trees = measured_trees(stack, baseline_ref)
        base_url = stack.enter_context(provider_process())
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="w4-harness-")))
        _harness_suite(folder, rows)
        walls: Samples = {}
        cpus: Samples = {}
        for r in range(rounds):
            for name, tree in trees.items() if r % 2 == 0 else reversed(trees.items()):
                env = _on_path(tree) | {"OPENAI_BASE_URL": base_url, "PYTHONPATH": str(tree)}
                env.pop("OPENAI_API_KEY", None)
                before = os.times()
                start = time.perf_counter()
                out = f"runs/{r}-{name.split()[0]}"
                command = [sys.executable, "-m", "agentjudge", "run", "--out", out]
                done = subprocess.run(
                    [*command, "--progress", "off", "--overwrite"],
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                wall = time.perf_counter() - start
                after = os.times()
                if done.returncode != 0:
                    raise RuntimeError(f"agentjudge run on {tree} failed:\n{done.stdout[-3000:]}")
                cpu = (after.children_user - before.children_user) + (
                    after.children_system - before.children_system
                )
                walls.setdefault((name, "run"), []).append(wall)
                cpus.setdefault((name, "run"), []).append(cpu)
                emit(bench="harness-llm", round=r + 1, tree=name, wall_s=round(wall, 3))
    for (name, _), spent in walls.items():
        emit(
            bench="harness-llm",
            tree=name,
            cases=rows,
            median_wall_s=round(statistics.median(spent), 3),
            median_cpu_ms_per_case=round(statistics.median(cpus[(name, "run")]) / rows * 1000, 3),
            rounds=rounds,
        )


# -- transports: raw aiohttp vs raw httpx vs OpenAIChat on each transport, one process ---------

Call = Callable[[int], Awaitable[None]]


async def transports(  # noqa: C901 - one long measurement sequence
    total: int, concurrency: int, rounds: int, slow: bool, everything: bool
) -> None:
    """Fast variants run interleaved for ``rounds`` rounds (best wall time kept, since other
    processes share the machine); httpx's default transport runs once, at the end."""
    async with FakeModelServer(FakeResponse(text=ANSWER, latency=LATENCY)) as server:
        url = f"{server.base_url}/chat/completions"
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        best: dict[str, tuple[float, float]] = {}

        async def measure(label: str, call: Call) -> None:
            await pool(min(total, 100), concurrency, call)  # warm connections
            before = time.process_time()
            wall = await pool(total, concurrency, call)
            cpu = time.process_time() - before
            if label not in best or wall < best[label][0]:
                best[label] = (wall, cpu)

        request = ModelRequest(messages=tuple(Message(**m) for m in BODY["messages"]))

        async def raw_aiohttp() -> None:
            connector = aiohttp.TCPConnector(limit=concurrency)
            async with aiohttp.ClientSession(connector=connector) as session:

                async def call(_: int) -> None:
                    async with session.post(url, json=BODY) as response:
                        data = await response.json()
                        assert data["choices"][0]["message"]["content"] == ANSWER

                await measure("raw_aiohttp", call)

        async def raw_httpx(label: str, http: httpx.AsyncClient) -> None:
            async with http:

                async def call(_: int) -> None:
                    response = await http.post(url, json=BODY)
                    assert response.json()["choices"][0]["message"]["content"] == ANSWER

                await measure(label, call)

        async def client(transport: str) -> None:
            os.environ["AGENTJUDGE_HTTP_TRANSPORT"] = transport
            try:
                async with OpenAIChat(
                    "judge", base_url=server.base_url, api_key="test", max_concurrency=concurrency
                ) as model:

                    async def call(_: int) -> None:
                        assert (await model.complete(request)).text == ANSWER

                    await measure(f"OpenAIChat[{transport}]", call)
            finally:
                del os.environ["AGENTJUDGE_HTTP_TRANSPORT"]

        for _ in range(rounds):
            await raw_aiohttp()
            await raw_httpx("raw_httpx[httpx-aiohttp]", HttpxAiohttpClient(limits=limits))
            await client("aiohttp")
            await client("httpx-aiohttp")
            wall = await w4_evaluator(server.base_url, total, concurrency)
            if wall is not None and (
                "LLMJudge+Evaluator" not in best or wall < best["LLMJudge+Evaluator"][0]
            ):
                best["LLMJudge+Evaluator"] = (wall, float("nan"))
        if slow:
            await raw_httpx("raw_httpx[httpx]", httpx.AsyncClient(limits=limits))
        if slow and everything:
            await client("httpx")

    reference = best["raw_aiohttp"][0]
    for label, (wall, cpu) in best.items():
        emit(
            bench="transports",
            variant=label,
            requests=total,
            concurrency=concurrency,
            latency_s=LATENCY,
            wall_s=round(wall, 3),
            cpu_s=None if cpu != cpu else round(cpu, 3),
            ratio_vs_raw_aiohttp=round(wall / reference, 2),
        )
    for label in (f"OpenAIChat[{default_transport()}]", "LLMJudge+Evaluator"):
        if label in best and rounds > 1:  # one small round (--quick) is too noisy to judge
            ratio = best[label][0] / reference
            emit(
                bench="transports",
                target=f"{label} <= 2.0x raw aiohttp",
                ratio=round(ratio, 2),
                met=ratio <= 2.0,
            )


async def w4_evaluator(base_url: str, total: int, concurrency: int) -> float | None:
    try:
        from agentjudge.engine import Evaluator
        from agentjudge.judges import LLMJudge
    except ImportError as exc:  # the engine / judges are built by other issues
        emit(bench="transports", variant="LLMJudge+Evaluator", skipped=f"not importable: {exc}")
        return None
    async with OpenAIChat(
        "judge", base_url=base_url, api_key="test", max_concurrency=concurrency
    ) as model:
        judge = LLMJudge("correct", model, "Question: {{input}}\nAnswer: {{output}}\nCorrect?")
        evaluator = Evaluator(judge, max_concurrency=concurrency)
        contexts = [Context(input=f"what is {i}+{i}?", output=str(2 * i)) for i in range(total)]
        passed = 0
        async for _case in evaluator.run(contexts[: min(total, 100)], concurrency=concurrency):
            pass  # warm-up
        start = time.perf_counter()
        async for case in evaluator.run(contexts, concurrency=concurrency):
            passed += case.verdict.judgment.is_pass
        wall = time.perf_counter() - start
    assert passed == total, f"{total - passed} cases did not pass"
    return wall


# -- 429 jury ------------------------------------------------------------------------------------


async def jury_429(cases: int, rpm: int, period: float, seed: int) -> None:
    rng = random.Random(seed)
    served = {"ok": 0, "429": 0}

    def flaky(request: Any) -> FakeResponse:
        if rng.random() < 0.2:
            served["429"] += 1
            return FakeResponse(status=429, headers={"retry-after-ms": "200"}, latency=LATENCY)
        served["ok"] += 1
        return FakeResponse(text=ANSWER, latency=LATENCY)

    limit = RateLimit(rpm=rpm, period=period)
    retry = RetryPolicy(attempts=8, initial_delay=0.05, max_delay=1.0)
    errors = 0
    non_pass = 0
    async with FakeModelServer(flaky) as server:
        clients = [
            OpenAIChat(
                f"judge-{k}",
                base_url=server.base_url,
                api_key="test",
                rate_limit=limit,
                retry=retry,
                max_concurrency=64,
            )
            for k in "abc"
        ]
        start = time.perf_counter()
        try:
            from agentjudge.engine import Evaluator, Jury
            from agentjudge.judges import LLMJudge
        except ImportError:
            mode = "3 clients x direct calls"
            errors = await _jury_without_engine(clients, cases)
        else:
            mode = "Jury(3 x LLMJudge) via Evaluator.run"
            jury = Jury(
                [LLMJudge(f"judge-{c.model}", c, "Q: {{input}}\nA: {{output}}") for c in clients]
            )
            evaluator = Evaluator(jury, max_concurrency=192)
            contexts = [Context(input=f"q{i}", output=f"a{i}") for i in range(cases)]
            async for case in evaluator.run(contexts, concurrency=64):
                for result in case.results:
                    errors += result.status is not None and result.status.value == "error"
                non_pass += not case.verdict.judgment.is_pass
        wall = time.perf_counter() - start
        for client in clients:
            await client.aclose()
        times = sorted(r.time for r in server.received)

    window_max = _max_in_window(times, period)
    emit(
        bench="jury_429",
        mode=mode,
        cases=cases,
        judges=3,
        requests=len(times),
        served_429=served["429"],
        errors=errors,
        non_pass_verdicts=non_pass,
        budget=f"{rpm} requests per {period:g} s window (= {rpm * 60 / period:.0f} rpm)",
        max_requests_in_any_window=window_max,
        wall_s=round(wall, 3),
        met=errors == 0 and window_max <= rpm,
    )


async def _jury_without_engine(clients: list[OpenAIChat], cases: int) -> int:
    errors = 0
    request = ModelRequest(messages=(Message(role="user", content="Q: x\nA: y"),))

    async def call(i: int) -> None:
        nonlocal errors
        try:
            await clients[i % 3].complete(request.model_copy(update={"sample_index": i}))
        except Exception:
            errors += 1

    await pool(cases * 3, 192, call)
    return errors


def _max_in_window(times: list[float], window: float) -> int:
    """Most timestamps within any half-open window [t, t + window) (two pointers)."""
    best = 0
    j = 0
    for i, t in enumerate(times):
        while j < len(times) and times[j] < t + window:
            j += 1
        best = max(best, j - i)
    return best


# -- W6 ------------------------------------------------------------------------------------------


async def w6_run(
    label: str,
    limit: FakeRateLimit,
    *,
    total: int,
    adaptive: bool = True,
    halve_at: float | None = None,
) -> None:
    """One W6 scenario: ``total`` LLMJudge calls through an Evaluator against ``limit``."""
    from agentjudge.engine import Evaluator
    from agentjudge.judges import LLMJudge

    answer = FakeResponse(text=ANSWER, latency=LATENCY)
    async with FakeModelServer(answer, rate_limit=limit) as server:
        if adaptive:
            model = OpenAIChat("judge", base_url=server.base_url, api_key="test")
        else:  # naive: fixed concurrency 100, retries honouring Retry-After, no controller
            retry = RetryPolicy(attempts=10_000, initial_delay=0.01, max_delay=1.0)
            model = OpenAIChat(
                "judge",
                base_url=server.base_url,
                api_key="test",
                adaptive=False,
                max_concurrency=100,
                retry=retry,
            )
        judge = LLMJudge("correct", model, "Q: {{input}}\nA: {{output}}\nCorrect?")
        evaluator = Evaluator(judge, max_concurrency=100, timeout=120.0)
        contexts = [Context(input=f"q{i}", output=f"a{i}") for i in range(total)]
        samples: list[tuple[float, float, float | None, int]] = []
        errors = 0
        queued = 0.0
        start = time.perf_counter()

        async def sample() -> None:
            while True:
                await anyio.sleep(1.0)
                control = model._session.get().controller
                samples.append((time.perf_counter() - start, control.window, control.rate, 0))
                if halve_at is not None and abs(time.perf_counter() - start - halve_at) < 0.5:
                    assert limit.rps is not None
                    server.set_rate_limit(
                        FakeRateLimit(rps=limit.rps / 2, burst=limit.burst, tpm=limit.tpm)
                    )

        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            async for case in evaluator.run(contexts, concurrency=100):
                for result in case.results:
                    errors += result.status is not None and result.status.value == "error"
                    queued += result.queued_s
            tg.cancel_scope.cancel()
        wall = time.perf_counter() - start
        await model.aclose()
        received = server.received
        throttled = server.throttled
    requests = len(received)
    ideal = _ideal_wall(limit, received, halve_at)
    emit(
        bench="W6",
        scenario=label,
        calls=total,
        wall_s=round(wall, 2),
        ideal_s=round(ideal, 2),
        errors=errors,
        requests=requests,
        served_429=throttled,
        share_429=round(throttled / max(requests, 1), 4),
        mean_queued_s=round(queued / total, 3),
        met=wall <= 21.0 and errors == 0 and throttled <= 0.05 * requests
        if label == "requests"
        else None,
    )
    _print_trace(label, samples, received, start_mono=received[0].time if received else 0.0)


def _ideal_wall(limit: FakeRateLimit, received: list[Any], halve_at: float | None) -> float:
    """The shortest wall the hidden limit allows for the answered calls (burst ignored)."""
    from agentjudge.testing._fake_server import _charge

    answered = [r for r in received if isinstance(r.json, dict)]
    calls = len({json.dumps(r.json, sort_keys=True) for r in answered})
    by_requests = calls / limit.rps if limit.rps else 0.0
    if halve_at is not None and by_requests > halve_at:
        by_requests = halve_at + (by_requests - halve_at) * 2
    if limit.tpm is None:
        return by_requests
    per_call = sum(_charge(r.json) for r in answered) / max(len(answered), 1)
    return max(by_requests, calls * per_call / (limit.tpm / 60.0))


async def _tokens_charged_per_call() -> int:
    """The tokens `FakeRateLimit` charges for one W6 judge call (measured on one call)."""
    from agentjudge.engine import Evaluator
    from agentjudge.judges import LLMJudge
    from agentjudge.testing._fake_server import _charge

    async with (
        FakeModelServer(FakeResponse(text=ANSWER)) as server,
        OpenAIChat("judge", base_url=server.base_url, api_key="test") as model,
    ):
        judge = LLMJudge("correct", model, "Q: {{input}}\nA: {{output}}\nCorrect?")
        await Evaluator(judge).evaluate(input="q1", output="a1")
        return _charge(server.requests[0])


def _print_trace(
    label: str,
    samples: list[tuple[float, float, float | None, int]],
    received: list[Any],
    start_mono: float,
) -> None:
    """The controller's window and rate per second beside what the server saw."""
    per_second: dict[int, int] = {}
    for r in received:
        second = int(r.time - start_mono)
        per_second[second] = per_second.get(second, 0) + 1
    print(f"# W6 {label}: t_s  window  rate/s  requests_received_in_second", flush=True)
    for t, window, rate, _ in samples:
        shown = f"{rate:6.1f}" if rate is not None else "   -  "
        got = per_second.get(int(t) - 1, 0)
        print(f"#   {t:5.1f}  {window:6.1f}  {shown}  {got}", flush=True)


async def w6(total: int, only: str | None = None) -> None:
    """W6 scenarios (see the module docstring); ``only``: run just the one named."""
    if only in (None, "requests"):
        await w6_run("requests", FakeRateLimit(rps=50, burst=10), total=total)
    if only in (None, "no-headers"):
        limit = FakeRateLimit(rps=50, burst=10, headers=False)
        await w6_run("requests, no headers", limit, total=total)
    if only in (None, "tokens"):
        # the token limit binds near 30 calls/s (the request limit would allow 200/s)
        tpm = 30 * 60 * await _tokens_charged_per_call()
        await w6_run("tokens", FakeRateLimit(rps=200, burst=20, tpm=tpm), total=total)
    if only in (None, "halving"):
        await w6_run("halving", FakeRateLimit(rps=50, burst=10), total=total, halve_at=8.0)
    if only in (None, "naive"):
        await w6_run("naive", FakeRateLimit(rps=50, burst=10), total=total, adaptive=False)


async def main(args: argparse.Namespace) -> None:
    emit(
        bench="env",
        python=sys.version.split()[0],
        httpx=httpx.__version__,
        aiohttp=aiohttp.__version__,
        default_transport=default_transport(),
    )
    total = args.requests or (200 if args.quick else 1_000)
    if args.w6 or args.w6_only:
        await w6(total, args.w6_only)
        return
    if args.transports:
        slow = not (args.quick or args.skip_httpx)
        rounds = 1 if args.quick else 3
        await transports(total, 100, rounds=rounds, slow=slow, everything=args.all)
        return
    baseline = args.baseline_ref or None
    if args.harness:
        rounds = args.rounds or (1 if args.quick else 5)
        await anyio.to_thread.run_sync(harness_llm, total, rounds, baseline)
        return
    if args.imports:
        await anyio.to_thread.run_sync(import_times, 3 if args.quick else 10, baseline)
        return
    if not args.jury:
        w4_rounds = args.rounds or (1 if args.quick else W4_ROUNDS)
        await anyio.to_thread.run_sync(w4, total, w4_rounds, baseline)
    if args.w4:
        return
    if not args.jury:
        await anyio.to_thread.run_sync(import_times, 3 if args.quick else 10, baseline)
    await jury_429(60 if args.quick else 300, rpm=200, period=1.0, seed=5)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, skip httpx default")
    parser.add_argument("--requests", type=int, default=0, help="W4 request count (1,000)")
    parser.add_argument(
        "--rounds", type=int, default=0, help=f"W4 rounds ({W4_ROUNDS}; harness 5; --quick: 1)"
    )
    parser.add_argument(
        "--baseline-ref",
        default="HEAD~1",
        help="git ref whose package W4 and the import times also measure ('' for none)",
    )
    parser.add_argument("--w4", action="store_true", help="only W4")
    parser.add_argument(
        "--harness", action="store_true", help="only `agentjudge run` on an LLM suite (W4 server)"
    )
    parser.add_argument("--imports", action="store_true", help="only the import / --help times")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # W4's provider
    parser.add_argument(
        "--transports", action="store_true", help="only the in-process transport comparison"
    )
    parser.add_argument(
        "--all", action="store_true", help="with --transports: OpenAIChat on httpx's default"
    )
    parser.add_argument(
        "--skip-httpx", action="store_true", help="skip the slow httpx default-transport runs"
    )
    parser.add_argument("--w6", action="store_true", help="only W6 (adaptive rate control)")
    parser.add_argument("--jury", action="store_true", help="only the 429 jury benchmark")
    parser.add_argument(
        "--w6-only",
        choices=["requests", "no-headers", "tokens", "halving", "naive"],
        help="only this W6 scenario",
    )
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    anyio.run(serve if arguments.serve else lambda: main(arguments))

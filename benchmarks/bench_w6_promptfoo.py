"""W6 against promptfoo: the same hidden rate limit, promptfoo's eval and agentjudge's, one run.

Both tools make 1,000 LLM-judge calls at concurrency 100 against a fresh `FakeModelServer`
with a hidden limit of 50 requests/s (burst 10) and 20 ms latency, with no limit configured in
either tool:

- **promptfoo** (npm): an eval of 1,000 test cases whose provider is OpenAI-compatible
  (``openai:chat:judge`` with ``apiBaseUrl`` = the fake server), ``maxConcurrency: 100`` and its
  default rate-limit handling (retries, adaptive scheduler); cache, telemetry, update checks
  and sharing are off, its config folder is a temporary one, so the eval makes no call beyond
  127.0.0.1.
- **agentjudge**: W6's "requests" scenario, run by `bench_llm.w6_run` (the same code as
  ``bench_llm.py --w6``).

Prints one JSON line per tool and then one table: tool, wall s, the tool's own eval s, errors,
429 responses, requests, 429 share, answered. "wall" for promptfoo includes starting Node
(~2-3 s) and writing its results; "eval" is the duration promptfoo reports, and for agentjudge
the same as wall. "answered" counts the requests the server answered without a 429: more than
the calls means the same prompt was sent again after it had been answered.

promptfoo is never installed by this script. It is found, in this order, at ``$PROMPTFOO_BIN``
(the executable), at ``$PROMPTFOO_PREFIX/node_modules/.bin/promptfoo`` (a folder given to
``npm install --prefix``), or as ``promptfoo`` on ``PATH``; when none exists the promptfoo row
is skipped with a message saying how to install it.

Run: ``PROMPTFOO_PREFIX=/path/to/node-folder uv run python benchmarks/bench_w6_promptfoo.py``
(about 50 s; ``--total 200`` for a smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from agentjudge.testing._fake_server import FakeModelServer, FakeRateLimit, FakeResponse

LATENCY = 0.02
ANSWER = "The answer matches the reference.\nAnswer: YES"
PROMPT = "Q: {{input}}\nA: {{output}}\nCorrect?"  # the same template as bench_llm's W6 judge
CONCURRENCY = 100
# Environment for promptfoo: no telemetry, no update check, no sharing, no cache, no
# remote generation; its config folder (database, logs) is set per run to a temporary folder.
PROMPTFOO_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "PROMPTFOO_CACHE_ENABLED": "false",
    "NO_PROXY": "127.0.0.1,localhost",
}


def limit() -> FakeRateLimit:
    """The hidden limit of W6: 50 requests/s, burst 10."""
    return FakeRateLimit(rps=50, burst=10)


@dataclass
class Row:
    """One tool's line of the comparison table."""

    tool: str
    wall_s: float
    eval_s: float | None
    errors: int
    served_429: int
    requests: int
    note: str = ""

    @property
    def answered(self) -> int:
        """Requests the server answered without a 429 (more than the calls: duplicates)."""
        return self.requests - self.served_429

    @property
    def share_429(self) -> float:
        return self.served_429 / max(self.requests, 1)

    def fields(self) -> dict[str, Any]:
        """The row as JSON fields (seconds rounded to 0.01)."""
        eval_s = round(self.eval_s, 2) if self.eval_s is not None else None
        return {
            "tool": self.tool,
            "wall_s": round(self.wall_s, 2),
            "eval_s": eval_s,
            "errors": self.errors,
            "served_429": self.served_429,
            "requests": self.requests,
            "share_429": round(self.share_429, 4),
            "answered": self.answered,
            "note": self.note,
        }


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


# -- promptfoo -------------------------------------------------------------------------------------


def find_promptfoo() -> tuple[Path | None, str]:
    """The promptfoo executable from ``$PROMPTFOO_BIN``, ``$PROMPTFOO_PREFIX`` or ``PATH``.

    Returns:
        The executable (``None`` when missing) and where it was looked for.
    """
    if explicit := os.environ.get("PROMPTFOO_BIN"):
        found = Path(explicit)
        where = f"PROMPTFOO_BIN={explicit}"
    elif prefix := os.environ.get("PROMPTFOO_PREFIX"):
        found = Path(prefix) / "node_modules" / ".bin" / "promptfoo"
        where = str(found)
    else:
        on_path = shutil.which("promptfoo")
        return (Path(on_path) if on_path else None), "promptfoo on PATH"
    return (found if found.is_file() else None), where


def promptfoo_config(base_url: str, total: int) -> dict[str, Any]:
    """An eval of ``total`` test cases, one chat call each, against ``base_url``."""
    provider = {"id": "openai:chat:judge", "config": {"apiBaseUrl": base_url, "apiKey": "test"}}
    tests = [
        {
            "vars": {"input": f"q{i}", "output": f"a{i}"},
            "assert": [{"type": "contains", "value": "YES"}],  # deterministic: no extra call
        }
        for i in range(total)
    ]
    return {
        "description": "W6 against a hidden 50 requests/s limit",
        "prompts": [PROMPT],
        "providers": [provider],
        "tests": tests,
        "evaluateOptions": {"maxConcurrency": CONCURRENCY},
    }


async def run_process(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> int:
    """Run ``command`` with its output in ``cwd/promptfoo.log``; kill its group on timeout."""
    with (cwd / "promptfoo.log").open("wb") as log:
        process = await anyio.open_process(
            command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            with anyio.fail_after(timeout):
                return await process.wait()
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                with anyio.CancelScope(shield=True):
                    await process.wait()


def promptfoo_counts(output: Path, total: int) -> tuple[int, float | None, str]:
    """Errors (errored or missing test cases), promptfoo's own duration, and a note."""
    if not output.is_file():
        return total, None, "no output file"
    stats = json.loads(output.read_text())["results"]["stats"]
    answered = stats["successes"] + stats["failures"] + stats["errors"]
    note = f"{stats['failures']} assertion failures" if stats["failures"] else ""
    duration = stats.get("durationMs")
    eval_s = duration / 1000 if isinstance(duration, int | float) else None
    return stats["errors"] + (total - answered), eval_s, note


async def promptfoo_row(executable: Path, total: int, timeout: float) -> Row:
    """promptfoo's eval of ``total`` cases against a fresh limited server."""
    with tempfile.TemporaryDirectory(prefix="w6-promptfoo-") as folder:
        work = Path(folder)
        env = {**os.environ, **PROMPTFOO_ENV, "PROMPTFOO_CONFIG_DIR": str(work / "home")}
        answer = FakeResponse(text=ANSWER, latency=LATENCY)
        async with FakeModelServer(answer, rate_limit=limit()) as server:
            config = work / "promptfooconfig.json"
            config.write_text(json.dumps(promptfoo_config(server.base_url, total)))
            command = [str(executable), "eval", "-c", str(config), "-o", str(work / "out.json")]
            command += ["--no-cache", "--no-progress-bar", "--no-table"]
            start, cpu_before = time.perf_counter(), _children_cpu()
            try:
                code = await run_process(command, cwd=work, env=env, timeout=timeout)
            except TimeoutError:
                code = None
            wall, cpu = time.perf_counter() - start, _children_cpu() - cpu_before
            requests, throttled = len(server.received), server.throttled
        errors, eval_s, note = promptfoo_counts(work / "out.json", total)
        note = "; ".join(filter(None, [f"Node CPU {cpu:.1f} s", note]))
        if code is None:
            note = f"killed after {timeout:.0f} s; {note}"
        elif errors == total:
            tail = (work / "promptfoo.log").read_text(errors="replace")[-2000:]
            print(f"# promptfoo exited {code}; the end of its output:\n{tail}", flush=True)
        return Row("promptfoo", wall, eval_s, errors, throttled, requests, note)


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def promptfoo_version(executable: Path) -> str:
    env = {**os.environ, **PROMPTFOO_ENV}
    result = await anyio.run_process([str(executable), "--version"], env=env, check=False)
    lines = result.stdout.decode(errors="replace").split()
    return lines[-1] if lines else "unknown"


# -- agentjudge ------------------------------------------------------------------------------------


async def agentjudge_row(total: int) -> Row:
    """W6's "requests" scenario as ``bench_llm.py --w6`` runs it (its JSON line is parsed)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_llm import w6_run

    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        await w6_run("requests", limit(), total=total)
    lines = captured.getvalue().splitlines()
    print("\n".join(line for line in lines if line.startswith("#")), flush=True)
    found = [json.loads(line) for line in lines if line.startswith("{")]
    result = next(r for r in found if r.get("bench") == "W6")
    wall = float(result["wall_s"])
    return Row(
        "agentjudge",
        wall,
        wall,
        int(result["errors"]),
        int(result["served_429"]),
        int(result["requests"]),
    )


# -- report ----------------------------------------------------------------------------------------


def print_table(rows: list[Row], total: int) -> None:
    print(
        f"\nW6: {total} LLM-judge calls, concurrency {CONCURRENCY}, hidden limit 50 req/s "
        f"(burst 10), {LATENCY * 1000:.0f} ms latency; ideal wall {total / 50:.0f} s",
        flush=True,
    )
    header = f"{'tool':<11} {'wall s':>7} {'eval s':>7} {'errors':>6} {'429s':>6} "
    print(header + f"{'requests':>8} {'429 share':>9} {'answered':>8}  note")
    for r in rows:
        eval_s = f"{r.eval_s:7.1f}" if r.eval_s is not None else f"{'-':>7}"
        print(
            f"{r.tool:<11} {r.wall_s:7.1f} {eval_s} {r.errors:6d} {r.served_429:6d} "
            f"{r.requests:8d} {r.share_429:9.1%} {r.answered:8d}  {r.note}",
            flush=True,
        )


async def main(args: argparse.Namespace) -> None:
    rows: list[Row] = []
    executable, where = find_promptfoo()
    if executable is None:
        print(
            f"# promptfoo skipped: not found ({where}). Install it outside the repo "
            "(npm install --prefix DIR promptfoo) and set PROMPTFOO_PREFIX=DIR "
            "or PROMPTFOO_BIN=DIR/node_modules/.bin/promptfoo.",
            flush=True,
        )
    else:
        emit(bench="env", promptfoo=await promptfoo_version(executable), node=shutil.which("node"))
        rows.append(await promptfoo_row(executable, args.total, args.timeout))
        emit(bench="W6-compare", **rows[-1].fields())
    if not args.skip_agentjudge:
        rows.append(await agentjudge_row(args.total))
        emit(bench="W6-compare", **rows[-1].fields())
    if rows:
        print_table(rows, args.total)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=1_000, help="judge calls per tool (1,000)")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds before promptfoo is killed (600)"
    )
    parser.add_argument("--skip-agentjudge", action="store_true", help="only the promptfoo run")
    anyio.run(main, parser.parse_args())

"""Model clients of a suite's LLM judges: owned and closed by the harness, end to end over HTTP."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_support import cli_async
from docs_support import blocks

from agentjudge import Cascade, Jury, Tier
from agentjudge.harness import RunAborted, Suite, iter_rows, run_suite
from agentjudge.harness._clients import close_model_clients, find_model_clients
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse

YES = FakeResponse(text="Answer: YES\nReasoning: matches the reference")

JUDGES = """
import os
from agentjudge import Jury
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import OpenAIChat

CLOSED = []


class Recording(OpenAIChat):
    async def aclose(self):
        CLOSED.append(self.name)
        await super().aclose()


def build():
    url = os.environ.get("FAKE_URL", "http://127.0.0.1:9/v1")
    return Jury(
        [
            CorrectnessJudge(Recording("juror-a", base_url=url, api_key="k"), name="a"),
            CorrectnessJudge(Recording("juror-b", base_url=url, api_key="k"), name="b"),
        ]
    )
"""

SUITE = """
dataset = "data.jsonl"
task = "task:answer"
judges = "judges:build"
concurrency = 2
gates = ["a.pass_rate>=1", "verdict.pass_rate>=1"]
"""

TASK = """
COUNT = 0

def answer(case):
    global COUNT
    COUNT += 1
    if case.input == "crash":
        raise SystemExit("simulated crash")
    return "Paris"
"""


def make_project(folder: Path, n: int = 6, extra: list[dict[str, Any]] | None = None) -> Path:
    rows = [{"id": f"q{i}", "input": "capital?", "expected": "Paris"} for i in range(n)]
    rows += extra or []
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "judges.py").write_text(textwrap.dedent(JUDGES))
    (folder / "task.py").write_text(textwrap.dedent(TASK))
    (folder / "agentjudge.toml").write_text(textwrap.dedent(SUITE))
    return folder


async def _run_suite(
    project: Path, workers: int, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``agentjudge run`` of ``project`` against ``server``: with one worker the program as a
    shell starts it (``python -m agentjudge``: the interpreter's exit, where an unclosed client
    would warn, is its own); with more, the same entry point forked from `cli_support`'s
    interpreter (its workers are the same `worker_main` processes, which end by ``os._exit`` in
    both cases: their clients are closed before, or an aiohttp session would log "Unclosed
    client session" when collected). The fork saves the interpreter and worker forkserver
    start-ups (~2 s of CPU with the workers' imports)."""
    args = ["run", "--out", "out", "--progress", "off", "--workers", str(workers)]
    if workers > 1:
        return await cli_async(project, *args, env={**_base_env(), **env})
    command = [sys.executable, "-m", "agentjudge", *args]
    with anyio.fail_after(60):  # generous bound: the run takes about a second
        proc = await anyio.run_process(
            command, cwd=project, env={**_base_env(), **env}, check=False
        )
    return subprocess.CompletedProcess(
        command, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


@pytest.mark.parametrize("workers", [1, 2])
async def test_llm_judge_suite_end_to_end_closes_its_clients(tmp_path: Path, workers: int) -> None:
    """The CLI runs an LLM-judge TOML suite against FakeModelServer with no unclosed sessions."""
    project = make_project(tmp_path)
    async with FakeModelServer(default=YES) as server:
        env = {"FAKE_URL": server.base_url, "PYTHONWARNINGS": "default"}
        proc = await _run_suite(project, workers, env)
        assert len(server.requests) == 12  # 6 cases x 2 jurors, really over HTTP
    stderr = proc.stderr
    assert proc.returncode == 0, stderr
    assert "Unclosed" not in stderr and "unclosed" not in stderr
    rows = list(iter_rows(project / "out" / "results.jsonl"))
    assert len(rows) == 6
    for row in rows:
        assert [r["judgment"]["status"] for r in row["results"]] == ["pass", "pass"]
        assert row["verdict"]["status"] == "pass"


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "FAKE_URL"}


def _closed(project: Path) -> list[str]:
    module = next(
        m
        for name, m in sys.modules.items()
        if name.startswith("agentjudge_user_")
        and getattr(m, "__file__", "") == str(project / "judges.py")
    )
    return list(module.CLOSED)


async def test_clients_are_closed_when_the_run_aborts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run aborted by a crashing task still closes the clients of the judges it built."""
    project = make_project(tmp_path, n=3, extra=[{"id": "zz", "input": "crash"}])
    async with FakeModelServer(default=YES) as server:
        monkeypatch.setenv("FAKE_URL", server.base_url)
        suite = Suite(
            dataset=Path("data.jsonl"),
            task="task.py:answer",
            judges="judges.py:build",
            concurrency=1,
            base_dir=project,
        )
        with pytest.raises(RunAborted, match="simulated crash"):
            await run_suite(suite, out=project / "out")
        assert len(server.requests) == 6  # the three cases before the crash were judged
    assert sorted(_closed(project)) == ["openai:juror-a", "openai:juror-b"]


async def test_judges_passed_as_objects_stay_open_for_their_owner(tmp_path: Path) -> None:
    """Clients of judges given to run_suite(judges=...) are the caller's: the run leaves them."""
    project = make_project(tmp_path, n=2)
    closed: list[str] = []

    class Recording(OpenAIChat):
        async def aclose(self) -> None:
            closed.append(self.name)
            await super().aclose()

    suite = Suite(dataset=Path("data.jsonl"), task="task.py:answer", base_dir=project)
    async with (
        FakeModelServer(default=YES) as server,
        Recording("juror", base_url=server.base_url, api_key="k") as model,
    ):
        summary = await run_suite(suite, out=project / "out", judges=CorrectnessJudge(model))
        assert summary.passed is True
        assert closed == []
    assert closed == ["openai:juror"]  # closed once, by its owner's `async with`


def test_find_model_clients_walks_juries_cascades_closures_and_partials() -> None:
    """Clients are found in members, tiers, closure cells, defaults and partials, each once."""
    a = OpenAIChat("a", base_url="http://127.0.0.1:9/v1", api_key="k")
    b = OpenAIChat("b", base_url="http://127.0.0.1:9/v1", api_key="k")
    c = OpenAIChat("c", base_url="http://127.0.0.1:9/v1", api_key="k")
    d = OpenAIChat("d", base_url="http://127.0.0.1:9/v1", api_key="k")

    def closure_judge(ctx: Any) -> bool:
        return c is not None

    def default_judge(ctx: Any, model: Any = d) -> bool:
        return True

    def two_args(model: Any, ctx: Any) -> bool:
        return True

    cascade = Cascade(
        [
            Tier("cheap", Jury([CorrectnessJudge(a), closure_judge, default_judge])),
            Tier("final", Jury({"x": CorrectnessJudge(b), "y": CorrectnessJudge(a)})),
        ]
    )
    found = find_model_clients([cascade, functools.partial(two_args, b)])
    assert sorted(client.model for client in found) == ["a", "b", "c", "d"]


def test_find_model_clients_ignores_proxies_and_plain_values() -> None:
    """Objects answering every attribute (mocks) and plain data are never taken for clients."""
    from unittest.mock import MagicMock

    assert find_model_clients([MagicMock(), "text", 3, {"k": [1.5, None]}]) == []


def test_find_model_clients_examines_each_class_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge holding thousands of records of one class (a ReplayJudge's log) costs one class
    check, not one per record (~0.2 s of CPU per walk of a 1,000-case log before); clients
    are found as before."""
    import inspect

    class Record:
        __slots__ = ("text",)

        def __init__(self, text: str) -> None:
            self.text = text

    class Holder:
        def __init__(self, model: Any) -> None:
            self.model = model

    checks: list[Any] = []
    real = inspect.getattr_static

    def counting(obj: Any, attr: str, default: Any = None) -> Any:
        checks.append(obj)
        return real(obj, attr, default)

    monkeypatch.setattr(inspect, "getattr_static", counting)
    model = OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    log = [Record(f"r{i}") for i in range(2_000)]
    assert find_model_clients([log, Holder(model)]) == [model]
    assert checks.count(Record) <= 2  # "complete" and "aclose", asked once for the class


async def test_closing_is_bounded_and_failures_become_warnings() -> None:
    """A client whose aclose raises or hangs yields a warning; closing never hangs the run."""

    class Raising:
        name = "raising"

        async def complete(self, request: Any) -> Any:
            raise NotImplementedError

        async def aclose(self) -> None:
            raise OSError("socket already gone")

    class Hanging(Raising):
        name = "hanging"

        async def aclose(self) -> None:
            await anyio.Event().wait()

    with anyio.fail_after(20):  # generous bound for a close limited to 0.2 s
        warnings = await close_model_clients([Raising(), Hanging()], grace=0.2)
    assert warnings == [
        "closing model client 'raising' raised OSError: socket already gone",
        "closing the model clients took longer than 0.2 s; gave up",
    ]


DOC = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "offline-evaluation.md"


def _doc_block(name: str) -> str:
    """The code block after ``<!-- file: NAME -->`` on the offline-evaluation page."""
    (code,) = [b.code for b in blocks(DOC.read_text(encoding="utf-8")) if b.file == name]
    return code


async def test_documented_llm_suite_runs_end_to_end(tmp_path: Path) -> None:
    """The documented LLM-judge suite runs via the CLI: real judgments, nothing left open.

    The entry point forked from `cli_support`'s interpreter: the program as a shell starts it,
    an LLM-judge suite in one process, is `test_llm_judge_suite_end_to_end_closes_its_clients`.
    """
    make_project(tmp_path)
    (tmp_path / "agentjudge.toml").write_text(_doc_block("agentjudge.toml"))
    (tmp_path / "judges.py").write_text(_doc_block("judges.py"))
    async with FakeModelServer(default=YES) as server:
        env = {**_base_env(), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
        proc = await cli_async(tmp_path, "run", "--out", "out", "--progress", "off", env=env)
        assert [body["model"] for body in server.requests] == ["gpt-4o-mini"] * 6
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Unclosed" not in proc.stderr
    rows = list(iter_rows(tmp_path / "out" / "results.jsonl"))
    assert [row["results"][0]["judgment"]["status"] for row in rows] == ["pass"] * 6
    assert rows[0]["results"][0]["name"] == "Correctness"

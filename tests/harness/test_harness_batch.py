"""Batch mode of the harness (``agentjudge run --batch``) against FakeModelServer's batch APIs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import pytest
from batch_rows_support import comparable, rows_by_id
from cli_support import cli_async
from pydantic import ValidationError

from agentjudge.harness import RunConfigError, Suite, run_suite
from agentjudge.harness._batch_mode import LINGER, batch_mode
from agentjudge.harness._suite import load_suite
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse

JUDGES = """
import os
from agentjudge import Cascade, Jury, Tier, TierPolicy
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import AnthropicMessages, OpenAIChat

def url():
    return os.environ.get("FAKE_URL", "http://127.0.0.1:9/v1")


def jury():
    URL = url()
    return Jury(
        [
            CorrectnessJudge(OpenAIChat("juror-a", base_url=URL, api_key="k"), name="a"),
            CorrectnessJudge(AnthropicMessages("juror-b", base_url=URL, api_key="k"), name="b"),
        ]
    )


def single():
    URL = url()
    return CorrectnessJudge(OpenAIChat("juror-a", base_url=URL, api_key="k"), name="a")


def sampled():
    from agentjudge.judges import SelfConsistency

    model = OpenAIChat("juror-a", base_url=url(), api_key="k")
    return CorrectnessJudge(model, name="a", confidence=SelfConsistency(samples=3))


def cascade():
    URL = url()
    cheap = CorrectnessJudge(OpenAIChat("cheap", base_url=URL, api_key="k"), name="cheap")
    strong = CorrectnessJudge(OpenAIChat("strong", base_url=URL, api_key="k"), name="strong")
    return Cascade(
        [Tier("cheap", cheap, TierPolicy.ACCEPT_ON_ALL_PASS), Tier("strong", strong)]
    )
"""

TASK = """
def answer(case):
    return case.input
"""

SUITE = """
dataset = "data.jsonl"
task = "task:answer"
judges = "judges:{judges}"
batch_poll_interval = 0.2
batch_linger = 0.5
"""
# batch_linger: the tests assert how many batches the calls went out in, and the collector
# submits what waits once no call arrived for this long. At 0.05 s a loaded machine could
# spread one run's calls over several batches (it did in the Bedrock tests' CI run,
# 2026-11-26).


def respond(data: dict[str, Any]) -> FakeResponse:
    """Cases whose input says "alpha" are correct; the strong model finds every case correct."""
    if data.get("model") == "strong" or "alpha" in json.dumps(data):
        return FakeResponse(text="Answer: YES\nReasoning: matches")
    return FakeResponse(text="Answer: NO\nReasoning: does not match")


def make_project(folder: Path, *, n: int = 6, judges: str = "jury") -> Path:
    rows = [
        {"id": f"q{i}", "input": f"{'omega' if i % 3 == 0 else 'alpha'}-{i}", "expected": "x"}
        for i in range(n)
    ]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "judges.py").write_text(textwrap.dedent(JUDGES))
    (folder / "task.py").write_text(textwrap.dedent(TASK))
    (folder / "agentjudge.toml").write_text(textwrap.dedent(SUITE.format(judges=judges)))
    return folder


def _env(server: FakeModelServer) -> dict[str, str]:
    return {**os.environ, "FAKE_URL": server.base_url}


async def _cli(project: Path, server: FakeModelServer, *args: str) -> tuple[int, str]:
    proc = await cli_async(project, "run", "--progress", "off", *args, env=_env(server))
    return proc.returncode, proc.stderr


async def test_batch_run_gives_the_rows_and_summary_of_an_online_run(tmp_path: Path) -> None:
    """--batch sends one batch per client and writes the same rows and verdicts as online."""
    project = make_project(tmp_path)
    async with FakeModelServer(default=respond) as server:
        code, stderr = await _cli(project, server, "--out", "online")
        assert code == 0, stderr
        assert server.batches.created == []
        online_calls = len(server.requests)
        code, stderr = await _cli(project, server, "--out", "batched", "--batch")
        assert code == 0, stderr
        assert online_calls == 12  # 6 cases x 2 jurors
        assert len(server.batches.created) == 2  # one OpenAI and one Anthropic batch
        assert sorted(len(ids) for _, ids in server.batches.created) == [6, 6]
    online, batched = rows_by_id(project / "online"), rows_by_id(project / "batched")
    assert {k: comparable(v) for k, v in batched.items()} == {
        k: comparable(v) for k, v in online.items()
    }
    for row in batched.values():
        assert [r["judgment"]["metadata"]["batch"] for r in row["results"]] == [True, True]
    summaries = [
        json.loads((project / folder / "summary.json").read_text())
        for folder in ("online", "batched")
    ]
    for key in ("judges", "verdict", "cases", "passed"):
        assert comparable(summaries[0][key]) == comparable(summaries[1][key]), key
    assert summaries[1]["config"]["batch"] is True
    assert sorted(p.name for p in (project / "batched").glob("batches-*.json")) == [
        "batches-anthropic_juror-b.json",
        "batches-openai_juror-a.json",
    ]


class Sampler:
    """Case ``<word>-i``: the first ``i % 4`` requests for its prompt say YES, the rest NO."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, data: dict[str, Any]) -> FakeResponse:
        prompt = json.dumps(data["messages"])
        k = self.seen[prompt] = self.seen.get(prompt, -1) + 1
        case = int(re.findall(r"(?:alpha|omega)-(\d+)", prompt)[0])
        if k < case % 4:
            return FakeResponse(text="Answer: YES\nReasoning: matches")
        return FakeResponse(text="Answer: NO\nReasoning: does not match")


async def test_batch_run_samples_like_an_online_run(tmp_path: Path) -> None:
    """--batch with SelfConsistency(3): 18 items for 6 cases, the rows an online run writes."""
    project = make_project(tmp_path, judges="sampled")
    async with FakeModelServer(default=Sampler()) as server:
        code, stderr = await _cli(project, server, "--out", "online")
        assert code == 0, stderr
        online_calls = len(server.requests)
        server.default = Sampler()
        code, stderr = await _cli(project, server, "--out", "batched", "--batch")
        assert code == 0, stderr
    assert online_calls == 18
    assert [len(ids) for _, ids in server.batches.created] == [18]
    online, batched = rows_by_id(project / "online"), rows_by_id(project / "batched")
    assert {k: comparable(v) for k, v in batched.items()} == {
        k: comparable(v) for k, v in online.items()
    }
    confidences = [batched[f"q{i}"]["results"][0]["judgment"]["confidence"] for i in range(6)]
    assert confidences == pytest.approx([1.0, 2 / 3, 2 / 3, 1.0, 1.0, 2 / 3])


async def test_killed_batch_run_resumes_polling_without_resubmitting(tmp_path: Path) -> None:
    """kill -9 after the batch was created; --resume polls that batch: no second batch."""
    project = make_project(tmp_path, judges="single")
    async with FakeModelServer(default=respond) as server:
        server.batches.complete_after = 10**6  # the batch stays in progress until the kill
        command = [sys.executable, "-m", "agentjudge", "run", "--progress", "off"]
        command += ["--out", "out", "--batch"]
        async with await anyio.open_process(command, cwd=project, env=_env(server)) as proc:
            with anyio.fail_after(30):  # generous bound for start-up and the first poll
                await server.batches.wait_created()
                # The state file is written before the first poll: wait for that poll.
                while server.batches.polls < 1:
                    await anyio.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert not rows_by_id(project / "out")  # killed before any case was written
        server.batches.complete_after = server.batches.polls + 1  # ends on the next poll
        code, stderr = await _cli(project, server, "--out", "out", "--batch", "--resume")
        assert code == 0, stderr
        assert len(server.batches.created) == 1
        assert not [r for r in server.received if r.path == "/v1/chat/completions"][6:]
    rows = rows_by_id(project / "out")
    assert sorted(rows) == [f"q{i}" for i in range(6)]
    statuses = {k: row["results"][0]["judgment"]["status"] for k, row in rows.items()}
    assert statuses == {f"q{i}": "fail" if i % 3 == 0 else "pass" for i in range(6)}
    assert all(row["results"][0]["judgment"]["metadata"]["batch"] for row in rows.values())


async def test_cascade_batches_go_tier_by_tier(tmp_path: Path) -> None:
    """The second tier's batch holds only the cases the first tier escalated."""
    project = make_project(tmp_path, n=9, judges="cascade")
    async with FakeModelServer(default=respond) as server:
        code, stderr = await _cli(project, server, "--out", "out", "--batch")
        assert code == 0, stderr
        created = server.batches.created
    assert [len(ids) for _, ids in created] == [9, 3]  # q0, q3, q6 failed the cheap tier
    rows = rows_by_id(project / "out")
    assert all(row["verdict"]["status"] == "pass" for row in rows.values())
    escalated = sorted(
        k for k, row in rows.items() if [r["name"] for r in row["results"]] == ["cheap", "strong"]
    )
    assert escalated == ["q0", "q3", "q6"]


async def _run_with_one_expired(project: Path, *, retry_online: bool) -> dict[str, Any]:
    """Run the suite in-process; the batch's first request expires."""
    async with FakeModelServer(default=respond) as server:
        server.batches.complete_after = 10**6
        suite = load_suite(project).with_overrides(
            batch=True, batch_retry_online=retry_online, allow_errors=True
        )
        os.environ["FAKE_URL"] = server.base_url
        try:
            async with anyio.create_task_group() as tg:

                async def expire_first() -> None:
                    await server.batches.wait_created()
                    server.batches.expire = {server.batches.created[0][1][0]}
                    server.batches.complete_after = 0  # ends on its next poll

                tg.start_soon(expire_first)
                await run_suite(suite, out=project / "out")
        finally:
            del os.environ["FAKE_URL"]
        online = [r for r in server.received if r.path == "/v1/chat/completions"]
    # The fake answers each batch item through its chat route too: 5 items, the 6th expired.
    return {"rows": rows_by_id(project / "out"), "online_after_batch": len(online) - 5}


async def test_expired_request_becomes_an_error_with_the_providers_reason(tmp_path: Path) -> None:
    """A request the batch did not answer is an ERROR judgment naming the provider's reason."""
    project = make_project(tmp_path, judges="single")
    result = await _run_with_one_expired(project, retry_online=False)
    judgments = [row["results"][0]["judgment"] for row in result["rows"].values()]
    errors = [j for j in judgments if j["status"] == "error"]
    assert len(judgments) == 6 and len(errors) == 1
    assert "expired" in errors[0]["reasoning"]
    assert result["online_after_batch"] == 0


async def test_batch_retry_online_answers_the_expired_request_online(tmp_path: Path) -> None:
    """With batch_retry_online the expired request is sent online and judged normally."""
    project = make_project(tmp_path, judges="single")
    result = await _run_with_one_expired(project, retry_online=True)
    judgments = [row["results"][0]["judgment"] for row in result["rows"].values()]
    assert [j["status"] for j in judgments].count("error") == 0
    assert sorted(j["metadata"].get("batch", False) for j in judgments) == [False] + [True] * 5
    assert result["online_after_batch"] == 1


class BatchRun(NamedTuple):
    """A finished ``--batch --workers 2`` run of the single judge: its project, stderr, batches."""

    project: Path
    stderr: str
    batches: int


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory: pytest.TempPathFactory) -> BatchRun:
    """One batch run shared by the tests that check it or start from its folder (a copy each).

    Run once for the module: three tests each made the same run before their own step.
    """

    async def run() -> BatchRun:
        project = make_project(tmp_path_factory.mktemp("batch_run"), judges="single")
        async with FakeModelServer(default=respond) as server:
            code, stderr = await _cli(project, server, "--out", "out", "--batch", "--workers", "2")
        assert code == 0, stderr
        return BatchRun(project, stderr, len(server.batches.created))

    return anyio.run(run)


def _copy(done: BatchRun, folder: Path) -> Path:
    """A copy of the shared run's project (its ``out`` folder included) in ``folder``."""
    return Path(shutil.copytree(done.project, folder / "project"))


def test_batch_mode_runs_in_one_process_and_says_so(batch_run: BatchRun) -> None:
    """workers > 1 with batch mode runs in this process, with a warning in the summary."""
    assert "batch mode runs in one process: workers = 2 was ignored" in batch_run.stderr
    summary = json.loads((batch_run.project / "out" / "summary.json").read_text())
    assert any("workers = 2 was ignored" in w for w in summary["warnings"])
    assert batch_run.batches == 1


def test_batch_retry_online_needs_batch(tmp_path: Path) -> None:
    """batch_retry_online = true without batch = true is refused, naming the setting."""
    (tmp_path / "agentjudge.toml").write_text("batch_retry_online = true\n")
    with pytest.raises(ValueError, match="setting 'batch_retry_online': needs batch = true"):
        load_suite(tmp_path)


async def test_overwrite_removes_an_earlier_runs_batch_state(
    batch_run: BatchRun, tmp_path: Path
) -> None:
    """--overwrite starts over: the batch state files of the earlier run are deleted."""
    project = _copy(batch_run, tmp_path)
    assert list((project / "out").glob("batches-*.json"))
    async with FakeModelServer(default=respond) as server:
        code, stderr = await _cli(project, server, "--out", "out", "--overwrite")
        assert code == 0, stderr
    assert not list((project / "out").glob("batches-*.json"))


async def test_corrupt_state_file_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    """A damaged batches-*.json stops the run with the file and the field named."""
    project = make_project(tmp_path, judges="single")
    (project / "out").mkdir()
    (project / "out" / "batches-openai_juror-a.json").write_text(
        '{"version": 1, "client": "openai:juror-a", "batches": [{"id": 3, "custom_ids": []}]}'
    )
    suite = load_suite(project).with_overrides(batch=True)
    with pytest.raises(RunConfigError, match=r"batches-openai_juror-a.json.*batches\.0\.id"):
        await run_suite(suite, out=project / "out")


def test_suite_batch_keys_round_trip() -> None:
    """Suite(batch=True) validates and keeps its batch settings."""
    suite = Suite(batch=True, batch_retry_online=True, batch_poll_interval=1.5)
    assert (suite.batch, suite.batch_retry_online, suite.batch_poll_interval) == (True, True, 1.5)
    assert suite.batch_linger == LINGER


def test_the_suites_batch_linger_reaches_every_collector(tmp_path: Path) -> None:
    """``batch_linger`` is how long each collector waits for more calls; 0, inf or NaN refused."""
    clients = [OpenAIChat("a", base_url="http://127.0.0.1:9", api_key="k-123456789")]
    mode = batch_mode(Suite(batch=True, batch_linger=0.3), clients, tmp_path)
    assert mode is not None and [c.linger for _, c in mode.pairs] == [0.3]
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValidationError, match="batch_linger"):
            Suite(batch=True, batch_linger=bad)


async def test_resuming_a_batch_run_without_batch_warns(
    batch_run: BatchRun, tmp_path: Path
) -> None:
    """--resume without --batch in a folder with batches says those batches are not used."""
    project = _copy(batch_run, tmp_path)
    async with FakeModelServer(default=respond) as server:
        code, stderr = await _cli(project, server, "--out", "out", "--resume")
        assert code == 0, stderr
    assert "resume with --batch to collect those batches' answers" in stderr

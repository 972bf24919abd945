"""``agentjudge run --batch`` with an AWS Bedrock judge: batch inference over a fake S3.

The judge's client is a `BedrockConverse` whose runtime, control plane and S3 endpoints are all
FakeModelServer (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` via ``base_url``,
``AWS_ENDPOINT_URL_BEDROCK``, ``AWS_ENDPOINT_URL_S3``), with an S3 location and a service role
in the environment (issue 23).
"""

from __future__ import annotations

import json
import os
import signal
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from aws_support import fake_aws_environment
from batch_rows_support import comparable, rows_by_id
from cli_support import cli_async, start_cli

from agentjudge.testing import FakeModelServer, FakeResponse

pytestmark = pytest.mark.xdist_group("sdk")  # botocore imports in one worker (sdk_support)

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
JUDGES = f"""
import os
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import BedrockConverse


def single():
    least = int(os.environ.get("MIN_RECORDS", "2"))
    model = BedrockConverse({MODEL!r}, base_url=os.environ["FAKE_URL"], batch_min_records=least)
    return CorrectnessJudge(model, name="claude")
"""
TASK = """
def answer(case):
    return case.input
"""
SUITE = """
dataset = "data.jsonl"
task = "task:answer"
judges = "judges:single"
batch_poll_interval = 0.05
batch_linger = 0.5
allow_errors = true
"""
# batch_linger: the tests assert which calls share a job, and the collector submits what
# waits once no call arrived for this long. At 0.05 s a loaded machine (make test's three
# workers) spread the six cases' calls over two jobs, and a job of one (under the minimum
# of 2 records) went online (CI, 2026-11-26).


def respond(data: dict[str, Any]) -> FakeResponse:
    """Cases whose input says "alpha" are correct (on the Converse and the Messages wire)."""
    if "alpha" in json.dumps(data):
        return FakeResponse(text="Answer: YES\nReasoning: matches")
    return FakeResponse(text="Answer: NO\nReasoning: does not match")


def make_project(folder: Path, n: int = 6) -> Path:
    rows = [
        {"id": f"q{i}", "input": f"{'omega' if i % 3 == 0 else 'alpha'}-{i}", "expected": "x"}
        for i in range(n)
    ]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "judges.py").write_text(textwrap.dedent(JUDGES))
    (folder / "task.py").write_text(textwrap.dedent(TASK))
    (folder / "agentjudge.toml").write_text(textwrap.dedent(SUITE))
    return folder


def _env(server: FakeModelServer, folder: Path) -> dict[str, str]:
    return {
        **fake_aws_environment(os.environ, folder),
        "FAKE_URL": server.url,
        "AWS_ENDPOINT_URL_BEDROCK": server.url,
        "AWS_ENDPOINT_URL_S3": server.url,
        "AGENTJUDGE_BEDROCK_BATCH_S3_URI": "s3://judge-batches/runs",
        "AGENTJUDGE_BEDROCK_BATCH_ROLE_ARN": "arn:aws:iam::123456789012:role/BedrockBatch",
    }


async def _cli(project: Path, server: FakeModelServer, *args: str, **extra: str) -> tuple[int, str]:
    env = {**_env(server, project), **extra}
    proc = await cli_async(project, "run", "--progress", "off", *args, env=env)
    return proc.returncode, proc.stderr


def _judgments(folder: Path) -> dict[str, dict[str, Any]]:
    return {k: row["results"][0]["judgment"] for k, row in rows_by_id(folder).items()}


async def test_batch_run_with_a_bedrock_judge_writes_the_rows_of_an_online_run(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    async with FakeModelServer(default=respond) as server:
        code, stderr = await _cli(project, server, "--out", "online")
        assert code == 0, stderr
        online_calls = len(server.received)
        code, stderr = await _cli(project, server, "--out", "batched", "--batch")
        assert code == 0, stderr
    assert online_calls == 6 and "sent online" not in stderr
    assert [len(ids) for _, ids in server.batches.created] == [6]
    online, batched = rows_by_id(project / "online"), rows_by_id(project / "batched")
    assert {k: comparable(v) for k, v in batched.items()} == {
        k: comparable(v) for k, v in online.items()
    }
    assert all(j["metadata"]["batch"] for j in _judgments(project / "batched").values())
    assert [p.name for p in (project / "batched").glob("batches-*.json")] == [
        f"batches-bedrock_{MODEL.replace(':', '_')}.json"
    ]


async def test_fewer_calls_than_bedrocks_minimum_are_judged_online(tmp_path: Path) -> None:
    """6 calls under a minimum of 100 records per job: no job, the online rows."""
    project = make_project(tmp_path)
    async with FakeModelServer(default=respond) as server:
        code, stderr = await _cli(project, server, "--out", "out", "--batch", MIN_RECORDS="100")
        assert code == 0, stderr
    assert server.batches.created == []
    assert [r.path for r in server.received] == [f"/model/{MODEL}/converse"] * 6
    judgments = _judgments(project / "out")
    assert {k: j["status"] for k, j in judgments.items()} == {
        f"q{i}": "fail" if i % 3 == 0 else "pass" for i in range(6)
    }
    assert not any(j["metadata"].get("batch") for j in judgments.values())


async def test_a_failed_record_is_an_error_judgment_the_others_are_judged(tmp_path: Path) -> None:
    """A partially completed job: the failed record's case errs with Bedrock's reason."""
    project = make_project(tmp_path)

    def one_fails(data: dict[str, Any]) -> FakeResponse:
        if "alpha-4" in json.dumps(data):
            return FakeResponse(status=400, text="the prompt is malformed")
        return respond(data)

    async with FakeModelServer(default=one_fails) as server:
        code, stderr = await _cli(project, server, "--out", "out", "--batch")
    assert code == 0, stderr
    judgments = _judgments(project / "out")
    assert judgments["q4"]["status"] == "error"
    assert "the record failed: 400: the prompt is malformed" in judgments["q4"]["reasoning"]
    statuses = {k: j["status"] for k, j in judgments.items() if k != "q4"}
    assert statuses == {"q0": "fail", "q1": "pass", "q2": "pass", "q3": "fail", "q5": "pass"}


async def test_killed_bedrock_batch_run_resumes_the_job_without_resubmitting(
    tmp_path: Path,
) -> None:
    """kill -9 while the job runs; --resume polls the saved job ARN: no second job.

    The killed run is a CLI process forked from the preloaded interpreter (`start_cli`), not
    ``python -m agentjudge``: that start-up (and botocore's import in it) cost ~0.8 s of CPU, and
    the batch run killed as a shell starts it is `test_killed_batch_run_resumes_polling...`.
    """
    project = make_project(tmp_path)
    async with FakeModelServer(default=respond) as server:
        server.batches.complete_after = 10**6
        run = start_cli(
            project,
            "run",
            "--progress",
            "off",
            "--out",
            "out",
            "--batch",
            env=_env(server, project),
        )
        try:
            with anyio.fail_after(30):  # generous bound for start-up and the first poll
                await server.batches.wait_created()
                while server.batches.polls < 1:  # the state file is written before it
                    await anyio.sleep(0.01)
        finally:
            os.kill(run.process.pid, signal.SIGKILL)
            killed = await anyio.to_thread.run_sync(run.wait)
        assert killed.returncode == -signal.SIGKILL
        assert not rows_by_id(project / "out")
        server.batches.complete_after = server.batches.polls + 1
        code, stderr = await _cli(project, server, "--out", "out", "--batch", "--resume")
        assert code == 0, stderr
    assert len(server.batches.created) == 1
    statuses = {k: j["status"] for k, j in _judgments(project / "out").items()}
    assert statuses == {f"q{i}": "fail" if i % 3 == 0 else "pass" for i in range(6)}

"""Bedrock batch inference through BatchCollector over loopback (issue 23).

FakeModelServer serves S3 (path-style PutObject / GetObject, signed for ``s3``) and the Bedrock
control plane's job routes (signed for ``bedrock``), checking every SigV4 signature with
botocore; jobs are answered record by record by the scripted responder, as Anthropic Messages
bodies (the native body of Claude models).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from aws_support import use_fake_aws

from agentjudge.core import Message
from agentjudge.exceptions import ModelError
from agentjudge.harness._batch_mode import BatchMode
from agentjudge.models import BatchCollector, ModelRequest
from agentjudge.models._batch import custom_id
from agentjudge.models._bedrock import BedrockConverse
from agentjudge.models._bedrock_batch import BedrockBatchAPI, anthropic_body, record_id
from agentjudge.testing import FakeModelServer, FakeResponse
from agentjudge.testing._fake_bedrock import FAKE_AWS_SECRET_ACCESS_KEY

pytestmark = pytest.mark.xdist_group("sdk")  # botocore imports in one worker (sdk_support)

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
ROLE = "arn:aws:iam::123456789012:role/BedrockBatch"
BUCKET = "judge-batches"
FAST: dict[str, Any] = {"linger": 0.01, "poll_interval": 0.01, "max_poll_interval": 0.02}
SCHEMA: dict[str, Any] = {
    "title": "Verdict",
    "type": "object",
    "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["verdict", "score"],
}
TOKEN = "FwoGZXIvYXdzEFAKE-session-token-0123456789"


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The fake's test credentials in the environment; no profile, file or metadata service."""
    use_fake_aws(monkeypatch, tmp_path)


def bedrock(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch, model: str = MODEL, **options: Any
) -> BedrockConverse:
    """A client whose runtime, control plane and S3 endpoints are all the fake."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK", server.url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server.url)
    monkeypatch.setenv("AGENTJUDGE_BEDROCK_BATCH_S3_URI", f"s3://{BUCKET}/runs/a")
    monkeypatch.setenv("AGENTJUDGE_BEDROCK_BATCH_ROLE_ARN", ROLE)
    options.setdefault("batch_min_records", 1)
    return BedrockConverse(model, base_url=server.url, **options)


def ask(text: str = "Grade this.", **fields: Any) -> ModelRequest:
    messages = (Message(role="system", content="Be strict."), Message(role="user", content=text))
    return ModelRequest(messages=messages, **fields)


def answer_by_prompt(data: dict[str, Any]) -> FakeResponse:
    """Structured requests get a score; plain ones echo the last user text (either wire)."""
    last = data["messages"][-1]["content"]
    text = last if isinstance(last, str) else last[0]["text"]
    if "toolConfig" in data or "tools" in data:
        return FakeResponse(json={"verdict": "PASS", "score": len(text)})
    return FakeResponse(text=f"echo {text}")


async def gather(client: Any, requests: list[ModelRequest]) -> list[Any]:
    out: list[Any] = [None] * len(requests)

    async def one(i: int) -> None:
        out[i] = await client.complete(requests[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(requests)):
            tg.start_soon(one, i)
    return out


def _same(response: Any) -> tuple[Any, ...]:
    return (response.text, response.parsed, response.finish_reason, response.usage)


async def test_batch_answers_equal_online_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain and structured calls: a job over S3 gives what the Converse calls give."""
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    requests = [ask(f"case {i}", response_schema=SCHEMA if i % 2 else None) for i in range(4)]
    async with FakeModelServer(answer_by_prompt) as server, bedrock(server, monkeypatch) as model:
        online = await gather(model, requests)
        async with BatchCollector(model, state_path=tmp_path / "s.json", **FAST) as bc:
            batched = await gather(bc, requests)
    assert [_same(r) for r in batched] == [_same(r) for r in online]
    assert all(r.batch for r in batched) and not any(r.batch for r in online)
    assert batched[1].parsed == {"verdict": "PASS", "score": len("case 1")}
    (_, record_ids) = server.batches.created[0]
    assert len(server.batches.created) == 1 and len(record_ids) == 4
    assert all(rid.isalnum() for rid in record_ids)
    create = next(r for r in server.received if r.path == "/model-invocation-job")
    assert create.json["roleArn"] == ROLE and create.json["modelId"] == MODEL
    input_uri = create.json["inputDataConfig"]["s3InputDataConfig"]["s3Uri"]
    assert input_uri.startswith(f"s3://{BUCKET}/runs/a/input/") and input_uri.endswith(".jsonl")
    output = create.json["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"]
    assert output == f"s3://{BUCKET}/runs/a/output/"
    key = input_uri.removeprefix(f"s3://{BUCKET}/")
    records = [
        json.loads(line) for line in server.bedrock_batch.objects[(BUCKET, key)].splitlines()
    ]
    first = records[0]["modelInput"]
    assert first["anthropic_version"] == "bedrock-2023-05-31"
    assert first["system"] == "Be strict." and first["max_tokens"] == 1024
    structured = next(r["modelInput"] for r in records if "tools" in r["modelInput"])
    assert structured["tool_choice"] == {"type": "tool", "name": "Verdict"}
    assert structured["tools"][0]["input_schema"] == SCHEMA
    scopes = {
        r.path.split("/")[1]: r.headers["authorization"].split("/")[3]
        for r in server.received
        if r.path.startswith((f"/{BUCKET}/", "/model-invocation-job"))
    }
    assert scopes == {BUCKET: "s3", "model-invocation-job": "bedrock"}
    put = next(r for r in server.received if r.method == "PUT")
    assert put.headers["x-amz-security-token"] == TOKEN
    assert server.batches.downloads == 1


async def test_every_sample_is_its_own_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three samples of one request: three records, three answers (issue 19 item 5)."""
    counter = iter(range(100))

    def respond(data: Any) -> FakeResponse:
        return FakeResponse(text=f"answer {next(counter)}")

    async with FakeModelServer(respond) as server:
        model = bedrock(server, monkeypatch)
        async with BatchCollector(model, state_path=tmp_path / "s.json", **FAST) as bc:
            got = await gather(bc, [ask(sample_index=i) for i in range(3)])
    assert sorted(r.text for r in got) == ["answer 0", "answer 1", "answer 2"]
    assert [len(ids) for _, ids in server.batches.created] == [3]


async def test_fewer_calls_than_the_minimum_are_sent_online(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below Bedrock's minimum of records per job no job is created: the calls go online."""
    async with (
        FakeModelServer(answer_by_prompt) as server,
        bedrock(server, monkeypatch, batch_min_records=3) as model,
        BatchCollector(model, state_path=tmp_path / "s.json", **FAST) as bc,
    ):
        got = await gather(bc, [ask("a"), ask("b")])
    assert [r.text for r in got] == ["echo a", "echo b"]
    assert not any(r.batch for r in got)
    assert server.batches.created == []
    assert [r.path for r in server.received] == [f"/model/{MODEL}/converse"] * 2
    with pytest.raises(ValueError, match=r"max_batch_size is 2.*at least 3"):
        BatchCollector(model, state_path=tmp_path / "t.json", max_batch_size=2)


async def test_a_failed_job_fails_its_calls_with_its_message_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's message reaches the error, with the secret key redacted (issue 19 item 7)."""
    async with FakeModelServer(answer_by_prompt) as server:
        model = bedrock(server, monkeypatch)
        server.batches.fail_batch = f"validation failed for {FAKE_AWS_SECRET_ACCESS_KEY}"
        async with BatchCollector(model, state_path=tmp_path / "s.json", **FAST) as bc:
            with pytest.raises(ModelError) as caught:
                await bc.complete(ask())
    message = str(caught.value)
    assert "the batch inference job ended Failed: validation failed for [REDACTED]" in message
    assert FAKE_AWS_SECRET_ACCESS_KEY not in message
    assert server.batches.downloads == 0


async def test_a_partially_completed_job_fails_only_its_failed_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeModelServer(answer_by_prompt) as server:
        model = bedrock(server, monkeypatch)
        bad = ask("bad")
        body = anthropic_body(model.request_body(bad, list(bad.messages), None))
        server.batches.fail = {record_id(custom_id(body))}
        async with BatchCollector(model, state_path=tmp_path / "s.json", **FAST) as bc:
            results: dict[str, Any] = {}

            async def one(name: str, request: ModelRequest) -> None:
                try:
                    results[name] = (await bc.complete(request)).text
                except ModelError as exc:
                    results[name] = str(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "good", ask("good"))
                tg.start_soon(one, "bad", bad)
    assert results["good"] == "echo good"
    assert "the record failed: 500: server error" in results["bad"]
    polls = [r for r in server.received if r.method == "GET" and "invocation" in r.path]
    assert polls


async def test_unreadable_and_repeated_output_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A garbage line fails nobody; a record reported twice keeps its success (issue 19 item 6)."""

    def hostile(content: bytes) -> bytes:
        lines = content.splitlines()
        first = json.loads(lines[0])
        error = {"recordId": first["recordId"], "error": {"errorCode": 500, "errorMessage": "x"}}
        return b"\n".join([json.dumps(error).encode(), b"{garbage", *lines, b'{"recordId": "cut'])

    async with FakeModelServer(answer_by_prompt) as server:
        server.batches.result_filter = hostile
        model = bedrock(server, monkeypatch)
        async with BatchCollector(model, state_path=tmp_path / "s.json", **FAST) as bc:
            got = await gather(bc, [ask(f"n{i}") for i in range(3)])
    assert [r.text for r in got] == ["echo n0", "echo n1", "echo n2"]
    assert server.batches.downloads == 1


async def test_an_expired_job_fails_the_records_it_did_not_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeModelServer(answer_by_prompt) as server:
        model = bedrock(server, monkeypatch)
        late = ask("late")
        body = anthropic_body(model.request_body(late, list(late.messages), None))
        server.batches.expire = {record_id(custom_id(body))}
        results: dict[str, str] = {}

        async def one(name: str, request: ModelRequest) -> None:
            try:
                results[name] = (await bc.complete(request)).text
            except ModelError as exc:
                results[name] = str(exc)

        async with (
            BatchCollector(model, state_path=tmp_path / "s.json", **FAST) as bc,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(one, "early", ask("early"))
            tg.start_soon(one, "late", late)
    assert results["early"] == "echo early"
    assert "the batch inference job ended Expired: The job timed out" in results["late"]


async def test_a_new_collector_resumes_the_saved_job_without_resubmitting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted while the job runs: the next collector polls the saved job ARN."""
    state = tmp_path / "s.json"
    async with FakeModelServer(answer_by_prompt) as server:
        model = bedrock(server, monkeypatch)
        server.batches.complete_after = 10**6
        async with (
            BatchCollector(model, state_path=state, **FAST) as bc,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(bc.complete, ask("resume me"))
            await server.batches.wait_created()
            while server.batches.polls < 1:
                await anyio.sleep(0)
            tg.cancel_scope.cancel()
        saved = json.loads(state.read_text())
        (job,) = saved["batches"]
        assert job["id"].startswith("arn:aws:bedrock:us-west-2:") and "/fakejob" in job["id"]
        server.batches.complete_after = server.batches.polls + 1
        async with BatchCollector(model, state_path=state, **FAST) as bc:
            response = await bc.complete(ask("resume me"))
    assert response.text == "echo resume me"
    assert len(server.batches.created) == 1
    assert server.batches.downloads == 1


def test_unsupported_models_and_missing_settings_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Non-Claude models and a client without S3/role stay online, with the reason given."""
    monkeypatch.setenv("AGENTJUDGE_BEDROCK_BATCH_S3_URI", f"s3://{BUCKET}")
    monkeypatch.setenv("AGENTJUDGE_BEDROCK_BATCH_ROLE_ARN", ROLE)
    llama = BedrockConverse("meta.llama3-1-8b-instruct-v1:0")
    claude = BedrockConverse(f"us.{MODEL}")
    unset = BedrockConverse(MODEL, batch_role_arn="", batch_s3_uri="")
    monkeypatch.delenv("AGENTJUDGE_BEDROCK_BATCH_ROLE_ARN")
    no_role = BedrockConverse(MODEL)
    with pytest.raises(TypeError, match=r"for Anthropic Claude models only, not 'meta\.llama3"):
        BatchCollector(llama, state_path=tmp_path / "s.json")
    with pytest.raises(
        TypeError, match=r"needs an IAM service role \(AGENTJUDGE_BEDROCK_BATCH_ROLE"
    ):
        BatchCollector(no_role, state_path=tmp_path / "s.json")
    assert claude.batch_api() is not None
    mode = BatchMode([llama, claude, no_role], tmp_path, retry_online=False, poll_interval=1.0)
    assert [client for client, _ in mode.pairs] == [claude]
    assert "Anthropic Claude models only" in mode.warnings[0]
    assert "needs an IAM service role" in mode.warnings[1]
    assert unset.batch.s3_uri == f"s3://{BUCKET}"  # empty arguments fall back to the variables
    with pytest.raises(ValueError, match="not an S3 location"):
        BedrockConverse(MODEL, batch_s3_uri="https://bucket/prefix")


def test_anthropic_body_converts_every_converse_member_or_refuses() -> None:
    converse = {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system": [{"text": "a"}, {"text": "b"}],
        "inferenceConfig": {
            "maxTokens": 5,
            "temperature": 0.5,
            "topP": 0.9,
            "stopSequences": ["x"],
        },
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "T", "inputSchema": {"json": {"type": "object"}}}}],
            "toolChoice": {"auto": {}},
        },
        "additionalModelRequestFields": {"top_k": 3},
    }
    assert anthropic_body(converse) == {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "system": "a\n\nb",
        "temperature": 0.5,
        "top_p": 0.9,
        "stop_sequences": ["x"],
        "tools": [{"name": "T", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "auto"},
        "top_k": 3,
    }
    with pytest.raises(ValueError, match="guardrailConfig"):
        anthropic_body({**converse, "guardrailConfig": {}})


def test_a_job_writing_to_another_bucket_is_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The output is read from the configured bucket only (credentials stay with it)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    model = BedrockConverse(MODEL, batch_s3_uri=f"s3://{BUCKET}/p", batch_role_arn=ROLE)
    api = model.batch_api()
    assert isinstance(api, BedrockBatchAPI)
    arn = "arn:aws:bedrock:us-west-2:123456789012:model-invocation-job/abcdefghijkl"
    info = {
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/p/input/x.jsonl"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/p/output/"}},
    }
    url = api._output_url(arn, info)
    assert url == f"http://127.0.0.1:9/{BUCKET}/p/output/abcdefghijkl/x.jsonl.out"
    info["outputDataConfig"] = {"s3OutputDataConfig": {"s3Uri": "s3://attacker-bucket/out/"}}
    with pytest.raises(ValueError, match="not the configured 'judge-batches'"):
        api._output_url(arn, info)

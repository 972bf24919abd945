"""FakeModelServer's S3 and Bedrock batch routes speak the real protocols (issue 23).

botocore's own ``s3`` and ``bedrock`` clients (their service models ship with botocore) are
pointed at the fake: PutObject / GetObject (path-style), CreateModelInvocationJob,
GetModelInvocationJob and StopModelInvocationJob succeed and read into botocore's types, S3's
and Bedrock's errors parse into botocore's ``ClientError`` codes, and a signature by the wrong
key is refused. agentjudge's own job request is then checked against botocore's shape of
CreateModelInvocationJob.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from aws_support import botocore_session, use_fake_aws
from sdk_support import sdk

from agentjudge.core import Message
from agentjudge.models import BatchCollector, ModelRequest
from agentjudge.models._bedrock import BedrockConverse
from agentjudge.testing import FakeModelServer, FakeResponse
from agentjudge.testing._fake_bedrock import FAKE_AWS_ACCESS_KEY_ID, FAKE_AWS_SECRET_ACCESS_KEY

botocore_config = sdk("botocore.config")
botocore_exceptions = sdk("botocore.exceptions")
botocore_validate = sdk("botocore.validate")
pytestmark = pytest.mark.xdist_group("sdk")  # botocore imports in one worker (sdk_support)

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
ROLE = "arn:aws:iam::123456789012:role/BedrockBatch"
WRONG = "wrong/secret+key/for+this+test/000000000"


def _client(service: str, url: str, secret: str = FAKE_AWS_SECRET_ACCESS_KEY) -> Any:
    config = botocore_config.Config(
        retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}
    )
    return botocore_session().create_client(
        service,
        region_name="us-west-2",
        endpoint_url=url,
        aws_access_key_id=FAKE_AWS_ACCESS_KEY_ID,
        aws_secret_access_key=secret,
        config=config,
    )


def _code(call: Any) -> tuple[str, int]:
    try:
        call()
    except botocore_exceptions.ClientError as exc:
        return exc.response["Error"]["Code"], exc.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("the call was not refused")


def _s3_session(url: str) -> dict[str, Any]:
    s3 = _client("s3", url)
    s3.put_object(Bucket="bkt", Key="in/data.jsonl", Body=b"hello\n")
    got = s3.get_object(Bucket="bkt", Key="in/data.jsonl")["Body"].read()
    missing = _code(lambda: s3.get_object(Bucket="bkt", Key="nothing"))
    refused = _code(lambda: _client("s3", url, WRONG).get_object(Bucket="bkt", Key="in/data.jsonl"))
    return {"got": got, "missing": missing, "refused": refused}


async def test_botocore_s3_client_puts_and_gets_objects() -> None:
    async with FakeModelServer() as server:
        got = await anyio.to_thread.run_sync(_s3_session, server.url)
        stored = server.bedrock_batch.objects[("bkt", "in/data.jsonl")]
    assert got == {
        "got": b"hello\n",
        "missing": ("NoSuchKey", 404),
        "refused": ("SignatureDoesNotMatch", 403),
    }
    assert stored == b"hello\n"


def _job_session(url: str) -> dict[str, Any]:
    s3, bedrock = _client("s3", url), _client("bedrock", url)
    record = {
        "recordId": "rec0000001",
        "modelInput": {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "Grade this."}],
        },
    }
    s3.put_object(Bucket="bkt", Key="in/job.jsonl", Body=json.dumps(record).encode() + b"\n")
    arn = bedrock.create_model_invocation_job(
        jobName="sdk-job",
        roleArn=ROLE,
        modelId=MODEL,
        inputDataConfig={"s3InputDataConfig": {"s3Uri": "s3://bkt/in/job.jsonl"}},
        outputDataConfig={"s3OutputDataConfig": {"s3Uri": "s3://bkt/out/"}},
    )["jobArn"]
    job = bedrock.get_model_invocation_job(jobIdentifier=arn)
    job_id = arn.rsplit("/", 1)[-1]
    output = s3.get_object(Bucket="bkt", Key=f"out/{job_id}/job.jsonl.out")["Body"].read()
    stopped = bedrock.stop_model_invocation_job(jobIdentifier=arn)
    unknown = _code(lambda: bedrock.get_model_invocation_job(jobIdentifier="abcdefghijkl"))
    refused = _code(
        lambda: _client("bedrock", url, WRONG).get_model_invocation_job(jobIdentifier=arn)
    )
    return {
        "arn": arn,
        "job": job,
        "output": output,
        "stopped": stopped["ResponseMetadata"]["HTTPStatusCode"],
        "unknown": unknown,
        "refused": refused,
    }


async def test_botocore_bedrock_client_runs_a_job_over_the_fake_s3() -> None:
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        got = await anyio.to_thread.run_sync(_job_session, server.url)
    assert got["arn"].startswith("arn:aws:bedrock:us-west-2:123456789012:model-invocation-job/")
    job = got["job"]
    assert (job["status"], job["modelId"], job["roleArn"]) == ("Completed", MODEL, ROLE)
    assert job["submitTime"].year >= 2024  # botocore parsed the timestamp
    (line,) = [json.loads(x) for x in got["output"].splitlines()]
    assert line["recordId"] == "rec0000001"
    assert line["modelOutput"]["content"] == [{"type": "text", "text": "PASS"}]
    assert got["stopped"] == 200
    assert got["unknown"] == ("ResourceNotFoundException", 404)
    assert got["refused"] == ("InvalidSignatureException", 403)


async def test_agentjudge_job_request_follows_botocores_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CreateModelInvocationJob body agentjudge sends validates against botocore's shape."""
    use_fake_aws(monkeypatch, tmp_path)
    request = ModelRequest(messages=(Message(role="user", content="Grade this."),))
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK", server.url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server.url)
        model = BedrockConverse(
            MODEL,
            base_url=server.url,
            batch_s3_uri="s3://bkt/agentjudge",
            batch_role_arn=ROLE,
            batch_min_records=1,
        )
        fast = {"linger": 0.01, "poll_interval": 0.01}
        async with BatchCollector(model, state_path=tmp_path / "s.json", **fast) as batched:
            assert (await batched.complete(request)).text == "PASS"
    create = next(r for r in server.received if r.path == "/model-invocation-job")
    service = botocore_session().get_service_model("bedrock")
    operation = service.operation_model("CreateModelInvocationJob")
    report = botocore_validate.ParamValidator().validate(create.json, operation.input_shape)
    assert not report.has_errors(), report.generate_report()
    assert operation.http["requestUri"] == "/model-invocation-job"

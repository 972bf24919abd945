"""BedrockConverse over real loopback HTTP against FakeModelServer's Converse route (issue 23).

The fake checks every request's SigV4 signature with botocore (a wrong one is a 403, as from
AWS), and botocore's own bedrock-runtime client is pointed at the same server: it reads the
fake's answers and errors into its own types, and agentjudge's request body is checked against
botocore's service model of the Converse operation.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from aws_support import use_fake_aws
from sdk_support import sdk

from agentjudge.core import Message
from agentjudge.exceptions import ModelError, ModelHTTPError
from agentjudge.models import BatchCollector, ModelRequest, RetryPolicy, model_from_string
from agentjudge.models._bedrock import BedrockConverse, bedrock_finish_reason
from agentjudge.testing import FakeModelServer, FakeResponse
from agentjudge.testing._fake_bedrock import FAKE_AWS_ACCESS_KEY_ID, FAKE_AWS_SECRET_ACCESS_KEY

botocore_config = sdk("botocore.config")
botocore_exceptions = sdk("botocore.exceptions")
botocore_session = sdk("botocore.session")
botocore_validate = sdk("botocore.validate")
pytestmark = pytest.mark.xdist_group("sdk")  # botocore imports in one worker (sdk_support)

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
TOKEN = "FwoGZXIvYXdzEFAKE-session-token-0123456789"
SCHEMA: dict[str, Any] = {
    "title": "Verdict",
    "type": "object",
    "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["verdict", "score"],
}
ANSWER = {"verdict": "PASS", "score": 4}


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The fake's test credentials in the environment; no profile, file or metadata service."""
    use_fake_aws(monkeypatch, tmp_path)


def ask(**fields: Any) -> ModelRequest:
    messages = (
        Message(role="system", content="You are strict."),
        Message(role="user", content="Grade this."),
    )
    return ModelRequest(messages=messages, **fields)


def converse_params(body: dict[str, Any]) -> dict[str, Any]:
    return {"modelId": MODEL, **body}


async def test_bedrock_request_structured_answer_usage_and_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    async with (
        FakeModelServer(FakeResponse(json=ANSWER)) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url) as model,
    ):
        assert isinstance(model, BedrockConverse)
        response = await model.complete(ask(response_schema=SCHEMA, temperature=0.0))
    assert response.parsed == ANSWER
    assert response.finish_reason == "tool_calls"
    assert response.usage.input_tokens == len("You are strict.Grade this.") // 4
    assert response.usage.total_tokens == response.usage.input_tokens + (
        response.usage.output_tokens or 0
    )
    received = server.received[0]
    assert received.path == f"/model/{MODEL}/converse"
    authorization = received.headers["authorization"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={FAKE_AWS_ACCESS_KEY_ID}/")
    assert "/us-west-2/bedrock/aws4_request" in authorization
    assert received.headers["x-amz-security-token"] == TOKEN
    body = received.json
    assert body["system"] == [{"text": "You are strict."}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "Grade this."}]}]
    assert body["inferenceConfig"] == {"maxTokens": 1024, "temperature": 0.0}
    tool = body["toolConfig"]["tools"][0]["toolSpec"]
    assert (tool["name"], tool["inputSchema"]) == ("Verdict", {"json": SCHEMA})
    assert body["toolConfig"]["toolChoice"] == {"tool": {"name": "Verdict"}}


async def test_both_transports_send_the_path_they_signed() -> None:
    """Regression: aiohttp sends ``%3A`` as ``:``, so a model id signed encoded was refused."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        async with model_from_string(f"bedrock:{MODEL}", base_url=server.url) as own:
            assert (await own.complete(ask())).text == "PASS"
        async with (
            httpx.AsyncClient() as http,
            model_from_string(f"bedrock:{MODEL}", base_url=server.url, client=http) as injected,
        ):
            assert (await injected.complete(ask())).text == "PASS"
    assert [r.path for r in server.received] == [f"/model/{MODEL}/converse"] * 2


async def test_a_wrong_secret_is_a_403_with_a_hint_and_no_secret_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong/secret+key/for+this+test/000000000")
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url, retry=FAST) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(ask())
    error = caught.value
    assert error.status_code == 403
    assert error.hint.startswith("InvalidSignatureException: the signature was refused")
    assert len(server.received) == 1  # not retried
    for secret in ("wrong/secret+key/for+this+test/000000000", TOKEN):
        assert secret not in str(error) and secret not in repr(model)


async def test_an_unknown_access_key_is_named_in_the_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOTKNOWNTOTHEFAKE")
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url) as model,
    ):
        with pytest.raises(ModelHTTPError, match=r"UnrecognizedClientException.*AWS_ACCESS_KEY_ID"):
            await model.complete(ask())


async def test_the_fake_refuses_unsigned_tampered_and_stale_requests() -> None:
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        model = BedrockConverse(MODEL, base_url=server.url)
        content = b'{"messages": []}'
        url = model.url
        signed = await model.signed_headers(
            "POST", url, content, {"content-type": "application/json"}
        )
        async with httpx.AsyncClient() as http:
            good = await http.post(url, content=content, headers=signed)
            unsigned = await http.post(url, content=content)
            tampered = await http.post(url, content=b'{"messages": [1]}', headers=signed)
            day = signed["x-amz-date"][:8]
            stale = {
                **signed,
                "x-amz-date": "20200101T000000Z",
                "authorization": signed["authorization"].replace(f"/{day}/", "/20200101/"),
            }
            expired = await http.post(url, content=content, headers=stale)
            server.enqueue(FakeResponse(status=429, text="Too many requests"))
            throttled = await http.post(url, content=content, headers=signed)
    assert good.status_code == 200
    assert throttled.status_code == 429
    assert throttled.headers["x-amzn-errortype"] == "ThrottlingException"
    assert throttled.json() == {"message": "Too many requests", "__type": "ThrottlingException"}
    refused = {
        "unsigned": unsigned,
        "tampered": tampered,
        "stale": expired,
    }
    kinds = {name: (r.status_code, r.headers["x-amzn-errortype"]) for name, r in refused.items()}
    assert kinds == {
        "unsigned": (403, "MissingAuthenticationTokenException"),
        "tampered": (403, "InvalidSignatureException"),
        "stale": (403, "InvalidSignatureException"),
    }
    assert "Signature expired" in expired.json()["message"]


async def test_throttling_and_unavailable_answers_are_retried_and_feed_the_controller() -> None:
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url, retry=FAST) as model,
    ):
        server.enqueue(
            FakeResponse(status=429, text="Too many requests, please wait before trying again."),
            FakeResponse(status=503, text="Bedrock is unable to process your request."),
        )
        response = await model.complete(ask())
        controller = model._session.get().controller
    assert (response.text, response.attempts) == ("PASS", 3)
    assert controller.throttles == 2
    assert server.requests[0] == server.requests[2]


async def test_throttling_until_attempts_run_out_is_an_http_error_naming_the_limit() -> None:
    retry = RetryPolicy(attempts=2, initial_delay=0.01, max_delay=0.02)
    async with (
        FakeModelServer(FakeResponse(status=429, text="Too many requests")) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url, retry=retry) as model,
    ):
        with pytest.raises(ModelHTTPError, match="rate limited") as caught:
            await model.complete(ask())
    assert caught.value.status_code == 429
    assert "ThrottlingException" in caught.value.body_excerpt


async def test_stop_reasons_are_mapped_to_finish_reasons() -> None:
    assert [
        bedrock_finish_reason(s)
        for s in ("end_turn", "max_tokens", "tool_use", "guardrail_intervened", "other", None)
    ] == ["stop", "length", "tool_calls", "content_filter", "other", None]
    async with (
        FakeModelServer(FakeResponse(text="cut", finish_reason="max_tokens")) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url) as model,
    ):
        assert (await model.complete(ask(max_tokens=1))).finish_reason == "length"
    assert server.requests[0]["inferenceConfig"] == {"maxTokens": 1}


async def test_a_secret_echoed_in_an_error_body_is_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    echoed = f'{{"message": "bad token {TOKEN} / {FAKE_AWS_SECRET_ACCESS_KEY}"}}'
    async with (
        FakeModelServer(FakeResponse(status=400, raw_body=echoed)) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(ask())
    text = str(caught.value)
    assert TOKEN not in text and FAKE_AWS_SECRET_ACCESS_KEY not in text
    assert "[REDACTED]" in text


def test_configuration_region_endpoint_repr_and_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    model = model_from_string(f"bedrock:{MODEL}")
    assert model.base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"
    assert model.url.endswith(f"/model/{MODEL}/converse")
    assert FAKE_AWS_SECRET_ACCESS_KEY not in repr(model)
    copy = pickle.loads(pickle.dumps(model))
    assert isinstance(copy, BedrockConverse) and copy.region == "us-west-2"
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "https://vpce.example.test")
    assert model_from_string(f"bedrock:{MODEL}", region="eu-west-1").base_url == (
        "https://vpce.example.test"
    )
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    assert BedrockConverse(MODEL).region == "eu-central-1"
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(ValueError, match="AWS_REGION"):
        model_from_string(f"bedrock:{MODEL}")


def test_missing_key_names_the_half_that_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert BedrockConverse(MODEL).missing_key is None
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert BedrockConverse(MODEL).missing_key == (
        "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
    )
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    assert BedrockConverse(MODEL).missing_key is None  # botocore's chain is asked when used


def test_without_botocore_the_import_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "botocore.auth", None)
    with pytest.raises(ImportError, match=r"agentjudge\[bedrock\]"):
        model_from_string(f"bedrock:{MODEL}")


async def test_credentials_from_botocore_chain_and_none_at_all(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        async with BedrockConverse(MODEL, base_url=server.url) as lost:
            with pytest.raises(ModelError, match="no AWS credentials"):
                await lost.complete(ask())
        shared = tmp_path / "credentials"
        shared.write_text(
            "[judge]\n"
            f"aws_access_key_id = {FAKE_AWS_ACCESS_KEY_ID}\n"
            f"aws_secret_access_key = {FAKE_AWS_SECRET_ACCESS_KEY}\n"
        )
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(shared))
        monkeypatch.setenv("AWS_PROFILE", "judge")
        async with BedrockConverse(MODEL, base_url=server.url) as profiled:
            assert (await profiled.complete(ask())).text == "PASS"
            copy = pickle.loads(pickle.dumps(profiled))  # the chain's credentials stay behind
        assert copy._chain is None
    assert len(server.received) == 1


def test_batch_collector_refuses_bedrock_without_s3_and_role(tmp_path: Path) -> None:
    """Batch inference needs an S3 location and a service role: the refusal names both."""
    with pytest.raises(TypeError, match=r"AGENTJUDGE_BEDROCK_BATCH_S3_URI.*BATCH_ROLE_ARN"):
        BatchCollector(model_from_string(f"bedrock:{MODEL}"), state_path=tmp_path / "s.json")


# -- botocore's own client against the same fake ---------------------------------------------------


def _botocore_client(url: str, secret: str = FAKE_AWS_SECRET_ACCESS_KEY) -> Any:
    return botocore_session.get_session().create_client(
        "bedrock-runtime",
        region_name="us-west-2",
        endpoint_url=url,
        aws_access_key_id=FAKE_AWS_ACCESS_KEY_ID,
        aws_secret_access_key=secret,
        config=botocore_config.Config(retries={"total_max_attempts": 1}),
    )


async def test_botocore_client_reads_the_fake_converse_answers_and_errors() -> None:
    def converse(url: str, server: FakeModelServer) -> dict[str, Any]:
        client = _botocore_client(url)
        tool = {"toolSpec": {"name": "Verdict", "inputSchema": {"json": SCHEMA}}}
        answer = client.converse(
            modelId=MODEL,
            messages=[{"role": "user", "content": [{"text": "Grade this."}]}],
            toolConfig={"tools": [tool], "toolChoice": {"tool": {"name": "Verdict"}}},
        )
        codes = {}
        for status in (429, 503, 400):
            server.enqueue(FakeResponse(status=status, text="nope"))
            try:
                client.converse(
                    modelId=MODEL, messages=[{"role": "user", "content": [{"text": "x"}]}]
                )
            except botocore_exceptions.ClientError as exc:
                codes[status] = (exc.response["Error"]["Code"], exc.response["Error"]["Message"])
        try:
            _botocore_client(url, "wrong/secret+key/for+this+test/000000000").converse(
                modelId=MODEL, messages=[{"role": "user", "content": [{"text": "x"}]}]
            )
        except botocore_exceptions.ClientError as exc:
            codes[403] = (
                exc.response["Error"]["Code"],
                exc.response["ResponseMetadata"]["HTTPStatusCode"],
            )
        return {"answer": answer, "codes": codes}

    async with FakeModelServer(FakeResponse(json=ANSWER)) as server:
        got = await anyio.to_thread.run_sync(converse, server.url, server)
    answer = got["answer"]
    assert answer["stopReason"] == "tool_use"
    use = answer["output"]["message"]["content"][0]["toolUse"]
    assert (use["name"], use["input"]) == ("Verdict", ANSWER)
    assert set(answer["usage"]) == {"inputTokens", "outputTokens", "totalTokens"}
    assert got["codes"] == {
        429: ("ThrottlingException", "nope"),
        503: ("ServiceUnavailableException", "nope"),
        400: ("ValidationException", "nope"),
        403: ("InvalidSignatureException", 403),
    }
    # botocore sends the model id percent-encoded; the fake checks that signature as well
    assert server.received[0].path == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"


async def test_agentjudge_request_body_follows_botocores_converse_model() -> None:
    """The body agentjudge sends validates against botocore's ConverseRequest shape."""
    async with (
        FakeModelServer(FakeResponse(json=ANSWER)) as server,
        model_from_string(f"bedrock:{MODEL}", base_url=server.url) as model,
    ):
        await model.complete(ask(response_schema=SCHEMA, temperature=0.5, max_tokens=64))
    service = botocore_session.get_session().get_service_model("bedrock-runtime")
    shape = service.operation_model("Converse").input_shape
    report = botocore_validate.ParamValidator().validate(converse_params(server.requests[0]), shape)
    assert not report.has_errors(), report.generate_report()
    assert service.operation_model("Converse").http["requestUri"] == "/model/{modelId}/converse"

"""`BedrockBatchAPI`: AWS Bedrock batch inference (``CreateModelInvocationJob``) over S3.

A batch is one model invocation job: its records are written as one JSONL object to S3
(``PutObject``), the job is created on the Bedrock control plane (``POST
/model-invocation-job`` with the IAM service role Bedrock assumes to read and write the
bucket) and polled (``GET /model-invocation-job/{jobId}``) until its status is final
(``Completed``, ``PartiallyCompleted``, ``Failed``, ``Stopped`` or ``Expired``; before that
``Submitted``, ``Validating``, ``Scheduled``, ``InProgress``, ``Stopping``). Bedrock then writes
``<output prefix>/<job id>/<input file name>.out``: one JSON line per record,
``{"recordId", "modelInput", "modelOutput"}`` or ``{"recordId", "modelInput", "error":
{"errorCode", "errorMessage"}}``, in no guaranteed order. That file is downloaded once
(``GetObject``) and each line goes back to its call by ``recordId`` (the custom id without its
``-``, records being alphanumeric).

Every request is signed with SigV4 by botocore (service ``bedrock`` for the control plane,
``s3`` with ``x-amz-content-sha256`` for S3) and sent only to the two configured origins: the
control plane (``AWS_ENDPOINT_URL_BEDROCK``, default ``https://bedrock.<region>.amazonaws.com``)
and S3 (``AWS_ENDPOINT_URL_S3``, path-style ``<endpoint>/<bucket>/<key>``; default
``https://<bucket>.s3.<region>.amazonaws.com``). The bucket is always the configured one: a job
whose output names another bucket is refused, never followed.

A record's ``modelInput`` is the model's native ``InvokeModel`` body, not a Converse request:
agentjudge writes it for Anthropic Claude models (the Messages body with ``anthropic_version:
"bedrock-2023-05-31"``), converted from the Converse body the online client sends (system,
messages, ``maxTokens``, temperature, ``topP``, stop sequences, the forced tool;
``additionalModelRequestFields`` are merged in), and each answer (a Messages response) is
turned back into a Converse response, so `BedrockConverse.parse_reply` reads batch and online
answers alike. Other model families have no batch API here (`batch_family`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from agentjudge.exceptions import ModelError, ModelHTTPError
from agentjudge.models._batch_api import BatchAPI, Outcome, PollResult, Results

if TYPE_CHECKING:
    from agentjudge.models._bedrock import BedrockConverse

__all__ = [
    "BATCH_ROLE_ENV",
    "BATCH_S3_ENV",
    "MIN_RECORDS",
    "BatchConfig",
    "BedrockBatchAPI",
    "anthropic_body",
    "batch_family",
    "converse_answer",
    "parse_s3_uri",
    "record_id",
]

BATCH_S3_ENV = "AGENTJUDGE_BEDROCK_BATCH_S3_URI"
"""The S3 location (``s3://bucket/prefix``) of the batch input and output files."""
BATCH_ROLE_ENV = "AGENTJUDGE_BEDROCK_BATCH_ROLE_ARN"
"""The IAM service role Bedrock assumes to run the jobs (read and write that location)."""
CONTROL_ENV = "AWS_ENDPOINT_URL_BEDROCK"
S3_ENV = "AWS_ENDPOINT_URL_S3"
MIN_RECORDS = 100
"""Bedrock's quota "Minimum number of records per batch inference job" (its default)."""
ANTHROPIC_BEDROCK_VERSION = "bedrock-2023-05-31"

ENDED = frozenset({"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"})
"""Job statuses after which nothing changes."""
_JOB_ARN = re.compile(
    r"arn:aws[a-z-]*:bedrock:[a-z0-9-]{1,20}:\d{12}:model-invocation-job/[a-z0-9]{12}"
)
_S3_URI = re.compile(r"s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(?P<key>.*))?")
_REGION_PREFIX = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au|ca)\.")
_CONVERSE_KEYS = frozenset(
    {"messages", "system", "inferenceConfig", "toolConfig", "additionalModelRequestFields"}
)


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``(bucket, key prefix)`` of ``s3://bucket[/prefix]``; the prefix ends with ``/`` or is empty.

    Raises:
        ValueError: Not an ``s3://`` URI with a valid bucket name.
    """
    found = _S3_URI.fullmatch(uri.strip())
    if found is None:
        raise ValueError(f"not an S3 location: {uri!r} (expected s3://<bucket>/<prefix>)")
    prefix = (found["key"] or "").strip("/")
    return found["bucket"], f"{prefix}/" if prefix else ""


def batch_family(model: str) -> str | None:
    """``"anthropic"`` for Anthropic Claude model ids and inference profiles, else None."""
    name = _REGION_PREFIX.sub("", model.rsplit("/", 1)[-1])
    return "anthropic" if name.startswith("anthropic.claude") else None


def record_id(custom_id: str) -> str:
    """The ``recordId`` of a custom id: its letters and digits (Bedrock's record ids)."""
    return re.sub(r"[^A-Za-z0-9]", "", custom_id)


def _tool(spec: dict[str, Any]) -> dict[str, Any]:
    tool = {"name": spec["name"], "input_schema": spec["inputSchema"]["json"]}
    if "description" in spec:
        tool["description"] = spec["description"]
    return tool


def _tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    if "tool" in choice:
        return {"type": "tool", "name": choice["tool"]["name"]}
    return {"type": "any" if "any" in choice else "auto"}


def anthropic_body(converse: dict[str, Any]) -> dict[str, Any]:
    """The Anthropic Messages ``InvokeModel`` body of a Converse request body.

    Raises:
        ValueError: The body holds a Converse member with no Messages equivalent (e.g. a
            ``guardrailConfig`` in ``extra_body``), named in the message.
    """
    unknown = sorted(set(converse) - _CONVERSE_KEYS)
    if unknown:
        raise ValueError(
            f"Bedrock batch inference cannot send the Converse member(s) {', '.join(unknown)} "
            "in a native Anthropic body; use additionalModelRequestFields or run online"
        )
    config = converse.get("inferenceConfig") or {}
    body: dict[str, Any] = {
        "anthropic_version": ANTHROPIC_BEDROCK_VERSION,
        "max_tokens": config["maxTokens"],
        "messages": [
            {
                "role": message["role"],
                "content": [
                    {"type": "text", "text": block["text"]} for block in message["content"]
                ],
            }
            for message in converse["messages"]
        ],
    }
    if converse.get("system"):
        body["system"] = "\n\n".join(block["text"] for block in converse["system"])
    for ours, theirs in (
        ("temperature", "temperature"),
        ("topP", "top_p"),
        ("stopSequences", "stop_sequences"),
    ):
        if ours in config:
            body[theirs] = config[ours]
    tools = converse.get("toolConfig")
    if tools:
        body["tools"] = [_tool(t["toolSpec"]) for t in tools["tools"]]
        if "toolChoice" in tools:
            body["tool_choice"] = _tool_choice(tools["toolChoice"])
    body.update(converse.get("additionalModelRequestFields") or {})
    return body


def _content(block: Any) -> dict[str, Any] | None:
    if not isinstance(block, dict):
        raise TypeError("a content block is not an object")
    if block.get("type") == "text":
        return {"text": block.get("text")}
    if block.get("type") == "tool_use":
        use = {"toolUseId": block.get("id"), "name": block.get("name"), "input": block.get("input")}
        return {"toolUse": use}
    return None  # thinking and other blocks have no place in the answer


def converse_answer(message: dict[str, Any]) -> dict[str, Any]:
    """A Converse response holding an Anthropic Messages answer (``modelOutput``).

    Text and ``tool_use`` blocks become ``text`` and ``toolUse`` blocks, ``stop_reason`` the
    ``stopReason`` (Converse uses the same words) and ``usage`` the Converse counts
    (``totalTokens``: their sum).

    Raises:
        TypeError: ``content`` is not a list of objects.
    """
    content = message.get("content")
    if not isinstance(content, list):
        raise TypeError("'content' is not a list")
    blocks = [converted for block in content if (converted := _content(block)) is not None]
    answer: dict[str, Any] = {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": message.get("stop_reason"),
    }
    usage = message.get("usage")
    if isinstance(usage, dict):
        counts = {
            theirs: usage[ours]
            for ours, theirs in (
                ("input_tokens", "inputTokens"),
                ("output_tokens", "outputTokens"),
                ("cache_read_input_tokens", "cacheReadInputTokens"),
                ("cache_creation_input_tokens", "cacheWriteInputTokens"),
            )
            if isinstance(usage.get(ours), int) and not isinstance(usage.get(ours), bool)
        }
        if counts:
            counts["totalTokens"] = sum(counts.values())
        answer["usage"] = counts
    return answer


@dataclass(frozen=True)
class BatchConfig:
    """Where a Bedrock client's batch jobs run.

    Attributes:
        s3_uri: ``s3://bucket/prefix`` (inputs under ``<prefix>/input/``, outputs under
            ``<prefix>/output/``).
        role_arn: The IAM service role of the jobs.
        control_url: The Bedrock control plane endpoint.
        s3_url: The S3 endpoint (path-style), or None for the region's virtual-hosted one.
        min_records: Fewer calls than this are sent online.
    """

    s3_uri: str | None
    role_arn: str | None
    control_url: str
    s3_url: str | None
    min_records: int = MIN_RECORDS

    def missing(self) -> str | None:
        """What is not configured, or None."""
        lacking = [
            f"{what} ({env} or {arg}=)"
            for value, what, env, arg in (
                (self.s3_uri, "an S3 location", BATCH_S3_ENV, "batch_s3_uri"),
                (self.role_arn, "an IAM service role", BATCH_ROLE_ENV, "batch_role_arn"),
            )
            if not value
        ]
        if not lacking:
            return None
        return "Bedrock batch inference needs " + " and ".join(lacking)


class BedrockBatchAPI(BatchAPI):
    """Bedrock batch inference for one `BedrockConverse` client (Anthropic Claude models).

    Args:
        client: The client whose model, region and credentials the jobs use.
        config: Where the jobs run (`BatchConfig`, complete).
    """

    def __init__(self, client: BedrockConverse, config: BatchConfig) -> None:
        assert config.s3_uri and config.role_arn
        super().__init__(client.name, config.control_url.rstrip("/"), {}, client.secrets)
        self.client = client
        self.config = config
        self.bucket, self.prefix = parse_s3_uri(config.s3_uri)
        self.role_arn = config.role_arn
        self.min_items = config.min_records

    # -- the batch protocol -------------------------------------------------------------------

    async def submit(self, http: httpx.AsyncClient, items: list[tuple[str, dict[str, Any]]]) -> str:
        """Upload the records as one JSONL object, then create the job; its id is its ARN."""
        name = f"agentjudge-{uuid.uuid4().hex[:24]}"
        key = f"{self.prefix}input/{name}.jsonl"
        lines = [{"recordId": record_id(cid), "modelInput": body} for cid, body in items]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        await self._call(http, "PUT", self._object_url(key), content=data, service="s3")
        job = {
            "jobName": name,
            "roleArn": self.role_arn,
            "clientRequestToken": name,
            "modelId": self.client.model,
            "inputDataConfig": {
                "s3InputDataConfig": {"s3InputFormat": "JSONL", "s3Uri": self._uri(key)}
            },
            "outputDataConfig": {
                "s3OutputDataConfig": {"s3Uri": self._uri(f"{self.prefix}output/")}
            },
        }
        created = await self._json(
            http, "POST", f"{self.base_url}/model-invocation-job", content=json.dumps(job).encode()
        )
        arn = created.get("jobArn")
        if not isinstance(arn, str) or not _JOB_ARN.fullmatch(arn):
            raise ValueError(f"the created job has no model-invocation-job ARN: {arn!r}")
        return arn

    async def poll(self, http: httpx.AsyncClient, batch_id: str) -> PollResult:
        """``GetModelInvocationJob``: ended when the status is final."""
        url = f"{self.base_url}/model-invocation-job/{quote(_job_id(batch_id), safe='')}"
        info = await self._json(http, "GET", url)
        status = str(info.get("status"))
        return PollResult(status in ENDED, status, info)

    async def results(
        self,
        http: httpx.AsyncClient,
        batch_id: str,
        info: dict[str, Any],
        custom_ids: Sequence[str] = (),
    ) -> Results:
        """Download the job's output file once and read each record's answer or error.

        A failed job has none; a stopped or expired one may have none (its records then fail
        with the job's message).
        """
        results = Results()
        status = info.get("status")
        if status == "Failed":
            return results
        try:
            response = await self._call(http, "GET", self._output_url(batch_id, info), service="s3")
        except ModelHTTPError as exc:
            if exc.status_code == 404 and status in ("Stopped", "Expired"):
                return results
            raise
        ids = {record_id(cid): cid for cid in custom_ids}
        for rid, line in results.lines(response.text, key="recordId"):
            cid = ids.get(rid)
            if cid is None:
                results.unreadable += 1
                continue
            results.add(cid, self._outcome(batch_id, cid, line))
        return results

    def sample_body(self, body: dict[str, Any], sample_index: int) -> dict[str, Any]:
        """The record's ``modelInput``: the Converse body as a native Anthropic body.

        The Messages API has no seed: samples are told apart by their record ids.
        """
        return anthropic_body(body)

    def missing_reason(self, status: str, info: dict[str, Any]) -> str:
        """Why a record has no result: the job's status and message."""
        message = info.get("message")
        detail = f": {message}" if isinstance(message, str) and message else ""
        return f"the batch inference job ended {status}{detail}"

    # -- requests -----------------------------------------------------------------------------

    async def _call(
        self,
        http: httpx.AsyncClient,
        method: str,
        url: str,
        *,
        service: str = "bedrock",
        content: bytes = b"",
        **kwargs: Any,
    ) -> httpx.Response:
        """Sign the request for ``service`` (a fresh signature per request), then send it."""
        headers = {"content-type": "application/json"} if service == "bedrock" and content else {}
        signed = await self.client.signed_headers(method, url, content, headers, service)
        self.secrets = self.client.secrets  # with keys found by botocore's chain since
        return await super()._call(http, method, url, content=content, headers=signed, **kwargs)

    def _uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def _object_url(self, key: str) -> str:
        path = quote(key, safe="/-._~")
        if self.config.s3_url:
            return f"{self.config.s3_url.rstrip('/')}/{self.bucket}/{path}"
        region = self.client.region
        if "." in self.bucket:  # a dotted name does not fit the certificate of virtual hosts
            return f"https://s3.{region}.amazonaws.com/{self.bucket}/{path}"
        return f"https://{self.bucket}.s3.{region}.amazonaws.com/{path}"

    def _output_url(self, batch_id: str, info: dict[str, Any]) -> str:
        """``<output prefix><job id>/<input file name>.out``, in the configured bucket only."""
        source = _member(info, "inputDataConfig", "s3InputDataConfig")
        target = _member(info, "outputDataConfig", "s3OutputDataConfig")
        _, input_key = parse_s3_uri(source)
        bucket, output_prefix = parse_s3_uri(target)
        if bucket != self.bucket:
            raise ValueError(
                f"job {batch_id} writes to bucket {bucket!r}, not the configured {self.bucket!r}"
            )
        name = input_key.rstrip("/").rsplit("/", 1)[-1]
        return self._object_url(f"{output_prefix}{_job_id(batch_id)}/{name}.out")

    def _outcome(self, batch_id: str, cid: str, line: dict[str, Any]) -> Outcome:
        output = line.get("modelOutput")
        if isinstance(output, dict):
            try:
                return converse_answer(output)
            except TypeError as exc:
                return self._error(batch_id, cid, f"the record's answer is unreadable: {exc}")
        error = line.get("error")
        if isinstance(error, dict):
            code, message = error.get("errorCode"), error.get("errorMessage")
            return self._error(batch_id, cid, f"the record failed: {code}: {message}")
        return self._error(batch_id, cid, "the record has neither a modelOutput nor an error")


def _job_id(batch_id: str) -> str:
    """The 12-character job id of a job ARN (or of a bare id)."""
    return batch_id.rsplit("/", 1)[-1]


def _member(info: dict[str, Any], outer: str, inner: str) -> str:
    section = info.get(outer)
    config = section.get(inner) if isinstance(section, dict) else None
    uri = config.get("s3Uri") if isinstance(config, dict) else None
    if not isinstance(uri, str):
        raise ModelError(f"the job description has no {outer}.{inner}.s3Uri")
    return uri

"""Bedrock batch inference in `FakeModelServer`: S3 objects and model invocation jobs.

- **S3** (path-style, service ``s3``): ``PUT /<bucket>/<key>`` (PutObject) stores an object,
  ``GET /<bucket>/<key>`` (GetObject) returns it (``NoSuchKey`` 404 otherwise). Requests must be
  signed with SigV4 for ``s3`` by a known key, with ``x-amz-content-sha256`` equal to the
  body's SHA-256 (or ``UNSIGNED-PAYLOAD``); refusals are S3's XML errors
  (``SignatureDoesNotMatch``, ``InvalidAccessKeyId``, ``AccessDenied``,
  ``XAmzContentSHA256Mismatch``).
- **Control plane** (service ``bedrock``): ``POST /model-invocation-job``
  (CreateModelInvocationJob: reads the input JSONL object, answers ``{"jobArn"}``; a repeated
  ``clientRequestToken`` gives the same job), ``GET /model-invocation-job/<id or ARN>``
  (GetModelInvocationJob) and ``POST /model-invocation-job/<id>/stop``.

Jobs progress like every fake batch (`FakeBatches` settings on ``server.batches``:
``complete_after``, ``fail`` and ``expire`` by record id, ``fail_batch``, ``result_filter``,
``created``, ``polls``, ``downloads``): status ``Submitted``, then ``InProgress`` until the
job ends ``Completed``, ``PartiallyCompleted`` (some records errored), ``Expired`` (records in
``expire`` are never processed), ``Stopped`` or ``Failed`` (``fail_batch``, or fewer records than
`FakeBedrockBatch.min_records`). Each record's ``modelInput`` (a native Anthropic Messages body)
is answered by the server's scripted responder as a ``POST /v1/messages`` would be, and the
output ``<output prefix><job id>/<input name>.out`` (lines ``{"recordId", "modelInput",
"modelOutput" | "error"}``) and ``manifest.json.out`` are written when the job ends.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote
from xml.sax.saxutils import escape

from agentjudge.testing._fake_bedrock import bedrock_error, signature_refusal

if TYPE_CHECKING:
    from agentjudge.testing._fake_batches import Answer, FakeBatches, _Batch

__all__ = ["FakeBedrockBatch"]

CONTROL_ROUTE = re.compile(r"^/model-invocation-job(?:/(?P<job>[^/]+)(?P<stop>/stop)?)?$")
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request")
_S3_URI = re.compile(r"^s3://(?P<bucket>[^/]+)/?(?P<key>.*)$")
_S3_CODES = {
    "MissingAuthenticationTokenException": "AccessDenied",
    "UnrecognizedClientException": "InvalidAccessKeyId",
    "InvalidSignatureException": "SignatureDoesNotMatch",
}
ACCOUNT = "123456789012"


def _scope(headers: Mapping[str, str]) -> re.Match[str] | None:
    return _SCOPE.search(headers.get("authorization", ""))


def _s3_error(status: int, code: str, message: str) -> Answer:
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{escape(message)}</Message>"
        "<RequestId>FAKE0000000000</RequestId></Error>"
    )
    return status, xml.encode(), {"content-type": "application/xml"}


def _aws_error(status: int, kind: str, message: str) -> Answer:
    return status, bedrock_error(status, message, kind), {"x-amzn-ErrorType": kind}


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


class FakeBedrockBatch:
    """The S3 store and the model invocation jobs of one `FakeModelServer`.

    Attributes:
        objects: The S3 objects, ``(bucket, key) -> bytes``.
        min_records: A job with fewer records fails validation (Bedrock's quota is 100).
    """

    def __init__(self, batches: FakeBatches, keys: Callable[[], Mapping[str, str]]) -> None:
        self.batches = batches
        self._keys = keys
        self.objects: dict[tuple[str, str], bytes] = {}
        self.min_records = 1
        self._jobs: dict[str, dict[str, Any]] = {}  # job id -> the job's fields
        self._tokens: dict[str, str] = {}  # clientRequestToken -> job ARN

    @staticmethod
    def handles(method: str, route: str, headers: Mapping[str, str]) -> bool:
        """True for the control plane's routes and for S3 requests (PUT, or signed for s3)."""
        if CONTROL_ROUTE.match(route):
            return True
        scope = _scope(headers)
        return method == "PUT" or (scope is not None and scope["service"] == "s3")

    async def respond(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Answer:
        """Answer one S3 or control-plane request (``target``: the raw path and query)."""
        route = target.partition("?")[0]
        control = CONTROL_ROUTE.match(route)
        service = "bedrock" if control else "s3"
        denied = signature_refusal(method, target, headers, body, self._keys(), service)
        if denied is not None:
            kind, message = denied
            if service == "s3":
                status = 400 if kind == "XAmzContentSHA256Mismatch" else 403
                return _s3_error(status, _S3_CODES.get(kind, kind), message)
            return _aws_error(403, kind, message)
        if control is None:
            return self._s3(method, route, body)
        try:
            return await self._control(method, control, headers, body)
        except (ValueError, KeyError, TypeError) as exc:
            return _aws_error(400, "ValidationException", f"bad request: {exc}")

    # -- S3 -----------------------------------------------------------------------------------

    def _s3(self, method: str, route: str, body: bytes) -> Answer:
        bucket, _, key = unquote(route).lstrip("/").partition("/")
        if not bucket or not key:
            return _s3_error(400, "InvalidRequest", "path-style /<bucket>/<key> expected")
        if method == "PUT":
            self.objects[(bucket, key)] = body
            return 200, b"", {"etag": f'"{hashlib.md5(body).hexdigest()}"'}
        if method != "GET":
            return _s3_error(405, "MethodNotAllowed", f"{method} is not served")
        data = self.objects.get((bucket, key))
        if data is None:
            return _s3_error(404, "NoSuchKey", "The specified key does not exist.")
        if key.endswith(".jsonl.out"):
            data = self.batches._served(data)
        return 200, data, {"content-type": "application/octet-stream"}

    def _object(self, uri: str) -> tuple[str, str]:
        found = _S3_URI.match(uri)
        if found is None:
            raise ValueError(f"not an S3 URI: {uri!r}")
        return found["bucket"], found["key"]

    # -- control plane ------------------------------------------------------------------------

    async def _control(
        self, method: str, route: re.Match[str], headers: Mapping[str, str], body: bytes
    ) -> Answer:
        if method == "POST" and route["job"] is None:
            return 200, json.dumps({"jobArn": self._create(json.loads(body), headers)}).encode(), {}
        job = self._jobs.get(unquote(route["job"] or "").rsplit("/", 1)[-1])
        if job is None:
            return _aws_error(404, "ResourceNotFoundException", "The job was not found.")
        batch = self.batches._get(job["id"], "bedrock")
        if method == "GET" and not route["stop"]:
            await self.batches._poll(batch)
        elif method == "POST" and route["stop"]:
            await self.batches._finish(batch, cancelled=True)
        else:
            return _aws_error(404, "UnknownOperationException", f"no route for {method}")
        if batch.status == "ended" and not job["published"]:
            self._publish(job, batch)
        if route["stop"]:
            return 200, b"{}", {}
        return 200, json.dumps(self._view(job, batch)).encode(), {}

    def _create(self, data: dict[str, Any], headers: Mapping[str, str]) -> str:
        token = data.get("clientRequestToken")
        if isinstance(token, str) and token in self._tokens:
            return self._tokens[token]
        source = data["inputDataConfig"]["s3InputDataConfig"]["s3Uri"]
        self._object(data["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        for field in ("jobName", "roleArn", "modelId"):
            if not isinstance(data.get(field), str):
                raise ValueError(f"{field} is required")
        content = self.objects.get(self._object(source))
        if content is None:
            raise ValueError(f"the input {source} does not exist")
        items = []
        for number, line in enumerate(content.decode().splitlines(), 1):
            if line.strip():
                record = json.loads(line)
                if not isinstance(record.get("modelInput"), dict):
                    raise ValueError(f"line {number}: modelInput must be a JSON object")
                rid = str(record.get("recordId") or f"{number:011d}")  # Bedrock names unnamed ones
                items.append((rid, record["modelInput"]))
        batch = self.batches._new("bedrock", "/v1/messages", items)
        if self.batches.fail_batch is not None:
            batch.failure, self.batches.fail_batch = self.batches.fail_batch, None
        elif len(items) < self.min_records:
            batch.failure = (
                f"The job has {len(items)} records, fewer than the minimum of {self.min_records}."
            )
        scope = _scope(headers)
        region = scope["region"] if scope else "us-east-1"
        arn = f"arn:aws:bedrock:{region}:{ACCOUNT}:model-invocation-job/{batch.id}"
        self._jobs[batch.id] = {
            "id": batch.id,
            "arn": arn,
            "request": data,
            "submitted": time.time(),
            "published": False,
        }
        if isinstance(token, str):
            self._tokens[token] = arn
        return arn

    def _status(self, batch: _Batch) -> tuple[str, str | None]:
        if batch.status != "ended":
            return ("InProgress" if batch.polls > 1 else "Submitted"), None
        if batch.failure:
            return "Failed", batch.failure
        if batch.info.get("final") == "cancelled":
            return "Stopped", "The job was stopped."
        kinds = {entry["kind"] for entry in batch.results}
        if "expired" in kinds:
            return "Expired", "The job timed out before all of its records were processed."
        if "errored" in kinds:
            return "PartiallyCompleted", "Some records could not be processed."
        return "Completed", None

    def _view(self, job: dict[str, Any], batch: _Batch) -> dict[str, Any]:
        status, message = self._status(batch)
        data = job["request"]
        view: dict[str, Any] = {
            "jobArn": job["arn"],
            "jobName": data["jobName"],
            "modelId": data["modelId"],
            "roleArn": data["roleArn"],
            "status": status,
            "submitTime": _iso(job["submitted"]),
            "lastModifiedTime": _iso(time.time()),
            "inputDataConfig": data["inputDataConfig"],
            "outputDataConfig": data["outputDataConfig"],
            "totalRecordCount": len(batch.items),
        }
        if message is not None:
            view["message"] = message
        if batch.ended_at is not None:
            view["endTime"] = _iso(batch.ended_at)
        return view

    def _publish(self, job: dict[str, Any], batch: _Batch) -> None:
        """Write the job's output and manifest to S3 (none for a job that failed)."""
        job["published"] = True
        if batch.failure:
            return
        inputs = dict(batch.items)
        lines = []
        for entry in batch.results:
            if entry["kind"] in ("succeeded", "errored"):
                line = {"recordId": entry["recordId"], "modelInput": inputs[entry["recordId"]]}
                line.update({k: v for k, v in entry.items() if k in ("modelOutput", "error")})
                lines.append(line)
        request = job["request"]
        _, input_key = self._object(request["inputDataConfig"]["s3InputDataConfig"]["s3Uri"])
        bucket, prefix = self._object(request["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        folder = f"{prefix.rstrip('/')}/{job['id']}/".lstrip("/")
        name = input_key.rsplit("/", 1)[-1]
        output = "".join(json.dumps(line) + "\n" for line in lines).encode()
        self.objects[(bucket, f"{folder}{name}.out")] = output
        ok = sum(1 for line in lines if "modelOutput" in line)
        manifest = {
            "totalRecordCount": len(batch.items),
            "processedRecordCount": len(lines),
            "successRecordCount": ok,
            "errorRecordCount": len(lines) - ok,
        }
        self.objects[(bucket, f"{folder}manifest.json.out")] = json.dumps(manifest).encode()

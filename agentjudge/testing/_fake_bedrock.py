"""The AWS Bedrock wire format of `FakeModelServer`: ``POST /model/<modelId>/converse``.

Requests must be signed with AWS Signature Version 4 for the service ``bedrock`` (any region)
with credentials the server knows (`FakeModelServer.aws_keys`; by default
`FAKE_AWS_ACCESS_KEY_ID` / `FAKE_AWS_SECRET_ACCESS_KEY`): the server recomputes the signature
with botocore's own signer from the request as it arrived (method, raw path, signed headers,
body) and answers a request whose signature differs, whose key it does not know, or whose
``X-Amz-Date`` is more than five minutes away, with a 403 as AWS does
(``InvalidSignatureException``, ``UnrecognizedClientException``,
``MissingAuthenticationTokenException``). Checking needs botocore (``agentjudge[bedrock]``).

Answers are ``ConverseResponse`` bodies (``output.message.content``, ``stopReason``, ``usage``,
``metrics``); a request forcing a tool (``toolConfig.toolChoice.tool``) is answered with a
``toolUse`` block holding the scripted ``json``. Errors are AWS JSON errors: ``{"message"}``
with the error type (``ThrottlingException`` for 429, ``ServiceUnavailableException`` for
503...) in the ``x-amzn-ErrorType`` header and the body's ``__type`` member.
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import json
import re
import time
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from agentjudge.core._portable import thaw
from agentjudge.testing._fake_wire import prompt_chars, tokens

if TYPE_CHECKING:
    from agentjudge.testing._fake_server import FakeResponse

__all__ = [
    "BEDROCK_ROUTE",
    "FAKE_AWS_ACCESS_KEY_ID",
    "FAKE_AWS_SECRET_ACCESS_KEY",
    "bedrock_body",
    "bedrock_error",
    "signature_refusal",
    "with_error_type",
]

BEDROCK_ROUTE = re.compile(r"^/model/(?P<model>[^/]+)/converse$")
"""The Converse path (the model id percent-encoded or not)."""

FAKE_AWS_ACCESS_KEY_ID = "AKIAFAKEAGENTJUDGE00"
"""The access key id `FakeModelServer` knows by default (test credentials, never real)."""
FAKE_AWS_SECRET_ACCESS_KEY = "fake/agentjudge+secret/access+key/000000"
"""Its secret access key."""

MAX_SKEW = 300.0
"""Seconds an ``X-Amz-Date`` may be away from the server's clock (AWS allows five minutes)."""

_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
"""The Converse API's error types by status (botocore's bedrock-runtime service model)."""

_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/"
    r"(?P<service>[^/,\s]+)/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9;_.-]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)

_CONTENT_MISMATCH = "The provided 'x-amz-content-sha256' header does not match what was computed."
_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method."
)


def bedrock_error(status: int, message: str | None, kind: str | None = None) -> bytes:
    """An AWS JSON error body: ``{"message", "__type"}`` (the type from the status if unset)."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    fallback = "InternalServerException" if status >= 500 else "ValidationException"
    kind = kind or _TYPES.get(status, fallback)
    return json.dumps({"message": message or phrase, "__type": kind}).encode()


def with_error_type(
    answer: tuple[int, bytes, Mapping[str, str]] | None,
) -> tuple[int, bytes, Mapping[str, str]] | None:
    """An error answer with its ``__type`` also in the ``x-amzn-ErrorType`` header, as AWS sends.

    Other answers (and a scripted header) are left as they are.
    """
    if answer is None or answer[0] < 400:
        return answer
    status, payload, headers = answer
    try:
        kind = json.loads(payload).get("__type")
    except (ValueError, AttributeError):
        return answer
    if not isinstance(kind, str) or any(k.lower() == "x-amzn-errortype" for k in headers):
        return answer
    return status, payload, {**headers, "x-amzn-ErrorType": kind}


def _amz_time(stamp: str) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ")))
    except ValueError:
        return None


def signature_refusal(
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    keys: Mapping[str, str],
    service: str = "bedrock",
) -> tuple[str, str] | None:
    """Why AWS would refuse the request's SigV4 signature: ``(error type, message)``, or None.

    ``target`` is the request target as received (raw path and query); ``headers`` have lower
    case names; ``keys`` maps access key ids to their secret keys; ``service`` is the signing
    name the endpoint expects (``s3``: S3's signer, and ``x-amz-content-sha256`` must be the
    body's SHA-256 or ``UNSIGNED-PAYLOAD``).
    """
    found = _AUTHORIZATION.match(headers.get("authorization", ""))
    if found is None:
        return "MissingAuthenticationTokenException", "Missing Authentication Token"
    secret = keys.get(found["key"])
    if secret is None:
        return (
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    stamp = headers.get("x-amz-date", "")
    sent = _amz_time(stamp)
    if sent is None or abs(time.time() - sent) > MAX_SKEW or not stamp.startswith(found["date"]):
        return "InvalidSignatureException", f"Signature expired or malformed: X-Amz-Date {stamp!r}"
    if found["service"] != service:
        return (
            "InvalidSignatureException",
            f"Credential should be scoped to correct service: '{service}'.",
        )
    if service == "s3" and headers.get("x-amz-content-sha256") not in (
        hashlib.sha256(body).hexdigest(),
        "UNSIGNED-PAYLOAD",
    ):
        return "XAmzContentSHA256Mismatch", _CONTENT_MISMATCH
    signed = found["signed"].split(";")
    if "host" not in signed or any(name not in headers for name in signed):
        return "InvalidSignatureException", "SignedHeaders must include host and name sent headers"
    expected = _signature(method, target, headers, signed, body, found, secret)
    if not hmac.compare_digest(expected, found["signature"]):
        return "InvalidSignatureException", _MISMATCH
    return None


def _signature(
    method: str,
    target: str,
    headers: Mapping[str, str],
    signed: list[str],
    body: bytes,
    found: re.Match[str],
    secret: str,
) -> str:
    """The signature botocore computes for the request as received."""
    from botocore.auth import S3SigV4Auth, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(
        method=method,
        url=f"http://{headers['host']}{target}",
        data=body,
        headers={name: headers[name] for name in signed},
    )
    request.context["timestamp"] = headers["x-amz-date"]
    token = headers.get("x-amz-security-token")
    kind = S3SigV4Auth if found["service"] == "s3" else SigV4Auth
    signer = kind(Credentials(found["key"], secret, token), found["service"], found["region"])
    canonical = signer.canonical_request(request)
    return str(signer.signature(signer.string_to_sign(request, canonical), request))


def _forced_tool(request: Mapping[str, Any]) -> str | None:
    config = request.get("toolConfig")
    choice = config.get("toolChoice") if isinstance(config, dict) else None
    tool = choice.get("tool") if isinstance(choice, dict) else None
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) else None


def _tool_input(response: FakeResponse) -> Any:
    if response.json is not None or response.text is None:
        return response.json
    try:
        return json.loads(response.text)
    except ValueError:
        return None


def bedrock_body(request: dict[str, Any], response: FakeResponse, ids: Iterator[int]) -> bytes:
    """A ``ConverseResponse`` answering ``request`` with ``response``."""
    forced = _forced_tool(request)
    tool_input = _tool_input(response) if forced is not None else None
    content: list[dict[str, Any]]
    if forced is not None and isinstance(tool_input, dict):
        use = {"toolUseId": f"tooluse_fake_{next(ids)}", "name": forced, "input": tool_input}
        content, out_text, stop = [{"toolUse": use}], json.dumps(tool_input), "tool_use"
    else:
        out_text = json.dumps(response.json) if response.json is not None else response.text or ""
        content, stop = [{"text": out_text}], "end_turn"
        if response.tool_calls:
            content = content if out_text else []
            for call in response.tool_calls:
                use = {
                    "toolUseId": call.id or f"tooluse_fake_{next(ids)}",
                    "name": call.name,
                    "input": thaw(call.arguments),
                }
                content.append({"toolUse": use})
            stop = "tool_use"
    prompt = tokens(prompt_chars(request.get("messages")) + prompt_chars(request.get("system")))
    answer = tokens(len(out_text))
    usage = response.usage or {
        "inputTokens": prompt,
        "outputTokens": answer,
        "totalTokens": prompt + answer,
    }
    body = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": response.finish_reason or stop,
        "usage": dict(usage),
        "metrics": {"latencyMs": 1},
    }
    return json.dumps(body).encode()

"""`BedrockConverse`: AWS Bedrock through the Converse API, signed with SigV4 by botocore.

Only botocore's signer is used (``SigV4Auth`` + ``AWSRequest`` + ``Credentials``; the optional
extra ``agentjudge[bedrock]``), not the AWS SDK's clients: the request goes through agentjudge's
own transport, limits, retries and cache like every client's. Configured as the AWS SDKs are:
the region from ``region=``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``; credentials from
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, else botocore's
credential chain (``AWS_PROFILE``, ``~/.aws``, SSO, container and instance roles), resolved on
the first request; the endpoint from ``base_url=``, ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` or
``https://bedrock-runtime.<region>.amazonaws.com``.

Requests are ``POST {base_url}/model/{modelId}/converse``, each attempt signed anew (a
signature is valid for five minutes). Structured output forces a call of one tool
(``toolConfig``: a ``toolSpec`` whose ``inputSchema.json`` is the schema, ``toolChoice.tool``);
usage comes from ``usage`` (``inputTokens``, ``outputTokens``...), ``stopReason`` is mapped to
OpenAI's finish reasons, and AWS's error type (``x-amzn-ErrorType`` or the body's ``__type``)
picks the hint of a refused request. Throttling (``ThrottlingException``, 429) and
``ServiceUnavailableException`` (503) drive the adaptive controller like any 429/503. The
secret key and the session token are never shown: reprs, errors and logs redact them.

Batch inference (``--batch``, `BatchCollector`) runs model invocation jobs over S3 for
Anthropic Claude models once an S3 location and an IAM service role are configured
(``batch_s3_uri=`` / ``AGENTJUDGE_BEDROCK_BATCH_S3_URI``, ``batch_role_arn=`` /
``AGENTJUDGE_BEDROCK_BATCH_ROLE_ARN``): see `agentjudge.models._bedrock_batch`. Without them,
or for other model families, `batch_api` is None and `no_batch_reason` says why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar, Unpack
from urllib.parse import quote

import anyio

from agentjudge.core import Message
from agentjudge.exceptions import ModelError, ModelHTTPError
from agentjudge.models._batch_api import BatchAPI
from agentjudge.models._bedrock_batch import (
    BATCH_ROLE_ENV,
    BATCH_S3_ENV,
    CONTROL_ENV,
    MIN_RECORDS,
    S3_ENV,
    BatchConfig,
    BedrockBatchAPI,
    batch_family,
    parse_s3_uri,
)
from agentjudge.models._failures import is_retryable_status
from agentjudge.models._headers import CapacitySignals
from agentjudge.models._http import HTTPModelClient
from agentjudge.models._options import ClientKeywords
from agentjudge.models._provider import Reply, check_against_schema, reply_from
from agentjudge.models._schema import SchemaViolation, tool_name
from agentjudge.models._secrets import Secrets
from agentjudge.models._transport import Poster, Response
from agentjudge.models._types import ModelRequest
from agentjudge.models._usage import read_usage

__all__ = ["BedrockConverse", "aws_error_type", "bedrock_finish_reason"]

INSTALL_HINT = "AWS Bedrock needs botocore to sign requests: pip install 'agentjudge[bedrock]'"
"""The message of the ImportError raised when botocore is missing."""

SIGNING_NAME = "bedrock"
"""The SigV4 service name of the Bedrock runtime (its endpoint prefix is bedrock-runtime)."""

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
"""Converse stop reasons in OpenAI's words; others are passed on as they are."""

USAGE_FIELDS = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "total_tokens": "totalTokens",
    "cache_read_tokens": "cacheReadInputTokens",
    "cache_creation_tokens": "cacheWriteInputTokens",
}
"""`Usage` fields and where the Converse ``usage`` object holds them."""

_HINTS = {
    "AccessDeniedException": "access denied: check that the IAM identity may call "
    "bedrock:InvokeModel on this model and that model access is enabled in this region",
    "UnrecognizedClientException": "the access key is not known: check AWS_ACCESS_KEY_ID",
    "InvalidSignatureException": "the signature was refused: check AWS_SECRET_ACCESS_KEY "
    "(and AWS_SESSION_TOKEN for temporary credentials) and the machine's clock",
    "ExpiredTokenException": "the session token expired: refresh the temporary credentials",
    "ResourceNotFoundException": "not found: check the model id (an inference profile such as "
    "'us.<model>' for cross-region models) and the region",
    "ValidationException": "the request was rejected: check the model supports the Converse "
    "API and a forced tool (structured output), and temperature / max_tokens / extra_body",
    "ServiceQuotaExceededException": "a Bedrock service quota is exceeded: request a higher "
    "quota or lower RateLimit(...) / max_concurrency",
}
"""The hint of a refused request, by AWS error type."""


def aws_error_type(response: Response) -> str | None:
    """The AWS error type of an answer: ``x-amzn-ErrorType`` or the body's ``__type``/``code``.

    Only the name is kept (``"ThrottlingException:http://internal..."`` and
    ``"com.amazon...#ThrottlingException"`` both give ``"ThrottlingException"``).
    """
    raw = response.headers.get("x-amzn-errortype")
    if not raw:
        try:
            data = json.loads(response.content)
        except ValueError:
            return None
        raw = data.get("__type", data.get("code")) if isinstance(data, dict) else None
    if not isinstance(raw, str) or not raw:
        return None
    return raw.split(":", 1)[0].rsplit("#", 1)[-1] or None


def bedrock_finish_reason(stop: Any) -> str | None:
    """A Converse ``stopReason`` as a finish reason (``end_turn`` -> ``stop``...)."""
    return _FINISH.get(stop, stop) if isinstance(stop, str) else None


def _signer(service: str = SIGNING_NAME) -> tuple[Any, Any, Any]:
    """The signer parts of botocore (S3's signer for ``s3``); an ImportError naming the extra."""
    try:
        from botocore.auth import S3SigV4Auth, SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return S3SigV4Auth if service == "s3" else SigV4Auth, AWSRequest, Credentials


def _batch_config(
    region: str, s3_uri: str | None, role_arn: str | None, min_records: int
) -> BatchConfig:
    """The batch settings of a client: arguments, else the environment; the S3 URI checked."""
    if isinstance(min_records, bool) or not isinstance(min_records, int) or min_records < 1:
        raise ValueError(f"batch_min_records must be an integer >= 1, got {min_records!r}")
    s3_uri = s3_uri or os.environ.get(BATCH_S3_ENV) or None
    if s3_uri is not None:
        parse_s3_uri(s3_uri)
    return BatchConfig(
        s3_uri=s3_uri,
        role_arn=role_arn or os.environ.get(BATCH_ROLE_ENV) or None,
        control_url=os.environ.get(CONTROL_ENV) or f"https://bedrock.{region}.amazonaws.com",
        s3_url=os.environ.get(S3_ENV) or None,
        min_records=min_records,
    )


def _chain_credentials() -> Any:
    """The credentials of botocore's default chain (profiles, SSO, roles...), or None."""
    import botocore.session

    return botocore.session.Session().get_credentials()


class BedrockConverse(HTTPModelClient):
    """A client for ``POST {base_url}/model/{modelId}/converse`` (prefix ``bedrock:``).

    Args:
        model: The model id or inference profile, e.g.
            ``"anthropic.claude-3-5-haiku-20241022-v1:0"`` (colons and ARNs allowed).
        region: The AWS region (default ``AWS_REGION``, else ``AWS_DEFAULT_REGION``).
        aws_access_key_id: The access key id (default ``AWS_ACCESS_KEY_ID``).
        aws_session_token: The session token of temporary credentials (default
            ``AWS_SESSION_TOKEN``); never shown.
        max_tokens: Output allowance when the request sets none.
        batch_s3_uri: Where batch jobs keep their files, ``s3://bucket/prefix`` (default
            ``AGENTJUDGE_BEDROCK_BATCH_S3_URI``); batch inference needs it.
        batch_role_arn: The IAM service role Bedrock assumes to run batch jobs (default
            ``AGENTJUDGE_BEDROCK_BATCH_ROLE_ARN``); batch inference needs it.
        batch_min_records: Bedrock's minimum of records per job (its quota, default 100):
            fewer calls waiting at a flush are sent online.
        **options: The options every client shares (see `ClientOptions`); ``api_key`` is the
            secret access key (default ``AWS_SECRET_ACCESS_KEY``), never shown; ``base_url`` the
            endpoint (default ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, else the region's).

    Raises:
        ImportError: botocore is not installed (the message names ``agentjudge[bedrock]``).
        ValueError: No region, or a ``batch_s3_uri`` that is not ``s3://bucket[/prefix]``.
    """

    provider: ClassVar[str] = "bedrock"
    path: ClassVar[str] = "/converse"
    base_url_env: ClassVar[str] = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
    api_key_header: ClassVar[str] = "authorization"
    api_key_env: ClassVar[str] = "AWS_SECRET_ACCESS_KEY"
    default_base_url: ClassVar[str] = ""
    supports_logprobs: ClassVar[bool] = False
    """The Converse API returns no token log-probabilities."""
    cache_tokens_apart: ClassVar[bool] = True
    """``inputTokens`` excludes the prompt-cache reads and writes, counted apart."""

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        aws_access_key_id: str | None = None,
        aws_session_token: str | None = None,
        max_tokens: int = 1024,
        batch_s3_uri: str | None = None,
        batch_role_arn: str | None = None,
        batch_min_records: int = MIN_RECORDS,
        **options: Unpack[ClientKeywords],
    ) -> None:
        _signer()
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        found = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not found:
            raise ValueError(
                "AWS Bedrock needs a region: pass region= or set AWS_REGION (or AWS_DEFAULT_REGION)"
            )
        self.region = found
        self.max_tokens = max_tokens
        self.access_key_id = aws_access_key_id or os.environ.get("AWS_ACCESS_KEY_ID")
        self._session_token = aws_session_token or os.environ.get("AWS_SESSION_TOKEN")
        self._chain: Any = None  # botocore's credentials, when the chain had to be asked
        self.batch = _batch_config(found, batch_s3_uri, batch_role_arn, batch_min_records)
        if not (options.get("base_url") or os.environ.get(self.base_url_env)):
            options = {**options, "base_url": f"https://bedrock-runtime.{found}.amazonaws.com"}
        super().__init__(model, **options)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.model!r}, region={self.region!r}, "
            f"base_url={self.base_url!r})"
        )

    @property
    def url(self) -> str:
        """``{base_url}/model/{modelId}/converse``.

        The model id is percent-encoded except for ``:``, which every transport sends as it
        is (one that decodes ``%3A`` would send a path other than the one signed).
        """
        return f"{self.base_url}/model/{quote(self.model, safe='-._~:')}{self.path}"

    @property
    def missing_key(self) -> str | None:
        """A key given without its pair (id without secret, or the reverse), else None.

        Without either, botocore's credential chain is asked on the first request.
        """
        if self._injected is not None or bool(self.access_key_id) == bool(self.api_key):
            return None
        given, lacking = (
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
            if self.access_key_id
            else ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID")
        )
        return f"{given} is set but {lacking} is not"

    @property
    def secrets(self) -> Secrets:
        """The secret key and the session tokens (given or found by the chain), redacted."""
        values = [self.api_key, self._session_token]
        if self._chain is not None:
            frozen = self._chain.get_frozen_credentials()
            values += [frozen.secret_key, frozen.token]
        if self._credentials is not None:  # user:password@ in base_url
            values += list(self._credentials)
        return Secrets(values, self._build_headers())

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_chain"] = None  # botocore's credentials hold locks; found again where used
        return state

    def auth_headers(self) -> dict[str, str]:
        """None: each attempt is signed when it is sent (`_post`)."""
        return {}

    def batch_api(self) -> BatchAPI | None:
        """Batch inference (`BedrockBatchAPI`) for Claude models once S3 and a role are set."""
        if self.batch.missing() is not None or batch_family(self.model) is None:
            return None
        return BedrockBatchAPI(self, self.batch)

    def no_batch_reason(self) -> str:
        """What batch inference lacks: the S3 location / role, or a supported model family."""
        missing = self.batch.missing()
        if missing is not None:
            return missing
        return (
            "Bedrock batch inference takes each model's native request body, which agentjudge "
            f"writes for Anthropic Claude models only, not {self.model!r}"
        )

    def _cache_params(self) -> dict[str, Any]:
        return {**super()._cache_params(), "max_tokens": self.max_tokens}

    def _output_allowance(self, request: ModelRequest) -> int:
        return request.max_tokens or self.max_tokens

    # -- signing ----------------------------------------------------------------------------------

    async def _keys(self) -> tuple[str, str, str | None]:
        """(access key id, secret key, session token): given, else from botocore's chain."""
        if self.access_key_id and self.api_key:
            return self.access_key_id, self.api_key, self._session_token
        if self._chain is None:  # files, SSO, instance metadata: off the event loop
            self._chain = await anyio.to_thread.run_sync(_chain_credentials)
        if self._chain is None:
            raise ModelError(
                f"{self.name}: no AWS credentials: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or configure "
                "a profile (AWS_PROFILE, ~/.aws/credentials)"
            )
        frozen = self._chain.get_frozen_credentials()
        return frozen.access_key, frozen.secret_key, frozen.token

    async def signed_headers(
        self,
        method: str,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        service: str = SIGNING_NAME,
    ) -> dict[str, str]:
        """``headers`` plus the SigV4 ones (``Authorization``, ``X-Amz-Date``...) for ``url``.

        ``service`` is the signing name: ``bedrock`` (runtime and control plane) or ``s3``
        (botocore's S3 signer, which adds ``x-amz-content-sha256``).
        """
        keys = await self._keys()
        sigv4, aws_request, credentials = _signer(service)
        request = aws_request(method=method, url=url, data=content, headers=dict(headers))
        sigv4(credentials(*keys), service, self.region).add_auth(request)
        return {name.lower(): value for name, value in request.headers.items()}

    async def _post(self, poster: Poster, content: bytes, headers: Mapping[str, str]) -> Response:
        """Sign this attempt (a fresh ``X-Amz-Date``), then POST it (`_once` awaits it)."""
        signed = await self.signed_headers("POST", self.url, content, headers)
        return await super()._post(poster, content, signed)

    # -- wire format ------------------------------------------------------------------------------

    def request_body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        system = [m.content for m in messages if m.role == "system"]
        body: dict[str, Any] = {
            "messages": [
                {
                    "role": "assistant" if m.role == "assistant" else "user",
                    "content": [{"text": m.content}],
                }
                for m in messages
                if m.role != "system"
            ],
            "inferenceConfig": {"maxTokens": self._output_allowance(request)},
        }
        if system:
            body["system"] = [{"text": "\n\n".join(system)}]
        if request.temperature is not None:
            body["inferenceConfig"]["temperature"] = request.temperature
        if schema is not None:
            name = tool_name(schema)
            spec = {
                "name": name,
                "description": "Record the answer in the required structure.",
                "inputSchema": {"json": schema},
            }
            body["toolConfig"] = {
                "tools": [{"toolSpec": spec}],
                "toolChoice": {"tool": {"name": name}},
            }
        body.update(self.extra_body)
        return body

    def parse_reply(self, data: dict[str, Any]) -> Reply:
        """The text blocks joined, or the forced tool's ``toolUse.input`` (structured)."""
        content = data["output"]["message"]["content"]
        if not isinstance(content, list):
            raise TypeError("'output.message.content' is not a list")
        texts: list[str] = []
        tool_input: Any = None
        for block in content:
            if not isinstance(block, dict):
                raise TypeError("a content block is not an object")
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif isinstance(block.get("toolUse"), dict) and tool_input is None:
                tool_input = block["toolUse"].get("input")
        text = json.dumps(tool_input) if tool_input is not None else "".join(texts)
        usage = read_usage(self.name, data.get("usage"), "usage", USAGE_FIELDS)
        finish = bedrock_finish_reason(data.get("stopReason"))
        # the Converse answer does not name the model
        return reply_from(data, text, usage, model=None, finish=finish, structured=tool_input)

    def structured_answer(self, reply: Reply, schema: dict[str, Any]) -> dict[str, Any]:
        """The forced tool call's input, checked against ``schema`` (re-asked when missing)."""
        if reply.structured is None:
            raise SchemaViolation("the answer did not call the tool with the structured result")
        return check_against_schema(reply.structured, schema)

    def _status_error(self, response: Response, signals: CapacitySignals | None) -> Exception:
        error = super()._status_error(response, signals)
        status = response.status_code
        if type(error) is not ModelHTTPError or is_retryable_status(status):
            return error
        kind = aws_error_type(response)
        hint = _HINTS.get(kind or "", error.hint)
        named = f"{kind}: {hint}" if kind else hint
        return ModelHTTPError(status, self.name, error.body_excerpt, named)

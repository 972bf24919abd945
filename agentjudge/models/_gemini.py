"""`GeminiChat`: Google Gemini through the Generative Language REST API (``generateContent``).

Configured like the official ``google-genai`` SDK: the key is ``api_key=``, else
``GOOGLE_API_KEY``, else ``GEMINI_API_KEY`` (the SDK's order), sent in the ``x-goog-api-key``
header. Structured output uses ``responseMimeType: application/json`` with ``responseSchema``
(the request's JSON schema translated to Gemini's OpenAPI subset, `gemini_schema`); the answer
is still checked against the original schema and re-asked like every client's. Usage comes from
``usageMetadata``; a 429's wait from ``Retry-After`` or, as Google sends it, from the JSON error
body's ``google.rpc.RetryInfo`` (``"retryDelay": "37s"``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self, Unpack
from urllib.parse import quote

import httpx

from agentjudge.core import Message
from agentjudge.models._batch_api import BatchAPI, PollResult, Results
from agentjudge.models._headers import CapacitySignals, header_signals
from agentjudge.models._http import HTTPModelClient
from agentjudge.models._options import ClientKeywords
from agentjudge.models._provider import Reply, reply_from
from agentjudge.models._types import ModelRequest
from agentjudge.models._usage import read_usage

__all__ = ["GeminiBatchAPI", "GeminiChat", "gemini_retry_delay", "gemini_schema"]

_SCHEMA_KEYS = frozenset(
    {
        "description",
        "enum",
        "format",
        "maxItems",
        "maximum",
        "maxLength",
        "minItems",
        "minimum",
        "minLength",
        "nullable",
        "pattern",
        "required",
        "title",
    }
)
"""JSON-schema keywords Gemini's ``Schema`` takes as they are (others are dropped)."""

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
}
"""Gemini finish reasons in OpenAI's words; others are passed on in lower case."""

USAGE_FIELDS = {
    "input_tokens": "promptTokenCount",
    "output_tokens": "candidatesTokenCount",
    "total_tokens": "totalTokenCount",
    "reasoning_tokens": "thoughtsTokenCount",
    "cache_read_tokens": "cachedContentTokenCount",
}
"""Where ``usageMetadata`` holds each `Usage` count (the output adds the thoughts)."""

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
"""The ``@type`` of the error detail that carries the retry delay."""
_DURATION = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,9})?s")
"""A protobuf ``Duration`` in JSON: seconds with up to 9 fractional digits and an ``s``."""


def gemini_schema(schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None) -> Any:
    """``schema`` (JSON Schema) as Gemini's ``responseSchema`` (an OpenAPI 3.0 subset).

    Types are upper-cased, ``["string", "null"]`` becomes ``nullable``, local ``$ref``s to
    ``$defs`` are inlined, and keywords Gemini rejects (``additionalProperties``, ``$schema``...)
    are dropped. The answer is validated against the original schema, so nothing is lost.

    Raises:
        ValueError: A ``$ref`` that is not local or nests deeper than 32 levels (recursive).
    """
    return _convert(schema, defs if defs is not None else schema.get("$defs", {}), 0)


def _convert(node: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if depth > 32:
        raise ValueError("response_schema nests deeper than 32 levels (recursive $ref?)")
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix("#/$defs/")
        if name == ref or name not in defs:
            raise ValueError(f"response_schema $ref {ref!r} is not a local '#/$defs/...' name")
        return _convert(defs[name], defs, depth + 1)
    out: dict[str, Any] = {k: v for k, v in node.items() if k in _SCHEMA_KEYS}
    kind = node.get("type")
    if isinstance(kind, list):
        named = [k for k in kind if k != "null"]
        out["nullable"] = len(named) < len(kind)
        kind = named[0] if named else None
    if isinstance(kind, str):
        out["type"] = kind.upper()
    if isinstance(node.get("properties"), Mapping):
        out["properties"] = {k: _convert(v, defs, depth + 1) for k, v in node["properties"].items()}
        out["propertyOrdering"] = list(node["properties"])
    if isinstance(node.get("items"), Mapping):
        out["items"] = _convert(node["items"], defs, depth + 1)
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            out["anyOf"] = [_convert(v, defs, depth + 1) for v in node[key]]
    return out


def _seconds(duration: Any) -> float | None:
    """A protobuf Duration in JSON (``"37s"``, ``"1.5s"``) as seconds; None if malformed.

    Only the canonical form is read: no sign, exponent, blank or other unit.
    """
    if not isinstance(duration, str) or not _DURATION.fullmatch(duration):
        return None
    return float(duration[:-1])


def gemini_retry_delay(body: bytes) -> float | None:
    """The ``retryDelay`` of the ``google.rpc.RetryInfo`` in a Google JSON error body, or None.

    Strict: the body must be ``{"error": {"details": [...]}}`` with a detail whose ``@type`` is
    exactly `RETRY_INFO` and whose delay is a canonical Duration (``"7s"``, ``"0.5s"``); any
    other shape, or two RetryInfo details that disagree, reads as None.
    """
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    delays = {
        _seconds(detail.get("retryDelay"))
        for detail in (details if isinstance(details, list) else ())
        if isinstance(detail, dict) and detail.get("@type") == RETRY_INFO
    }
    return delays.pop() if len(delays) == 1 else None


_BATCH_NAME = re.compile(r"batches/[A-Za-z0-9_-]{1,200}")
_ENDED = frozenset(
    {"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"}
)


class GeminiBatchAPI(BatchAPI):
    """Gemini batch mode: ``models/{model}:batchGenerateContent`` with inline requests.

    Each item is an ``InlinedRequest`` (the ``generateContent`` body and ``metadata.key`` = its
    custom id); the batch is a long-running operation polled at ``batches/{id}`` until it is
    done (``metadata.state`` ``BATCH_STATE_SUCCEEDED``, ``_FAILED``, ``_CANCELLED`` or
    ``_EXPIRED``). Its ``response.inlinedResponses.inlinedResponses`` come back in the order of
    the requests, each a ``GenerateContentResponse`` or an ``error`` (a ``google.rpc.Status``);
    a response's ``metadata.key`` is used when the API echoes it, else its position. Inline
    requests are limited to 20 MB per batch by the API: keep ``max_batch_size`` modest.
    """

    model = ""
    """The model id (the client's)."""

    @classmethod
    def of(cls, client: HTTPModelClient) -> Self:
        """The adapter for ``client`` and its model."""
        api = super().of(client)
        api.model = client.model
        return api

    async def submit(self, http: httpx.AsyncClient, items: list[tuple[str, dict[str, Any]]]) -> str:
        """Create the batch; its id is the operation's ``batches/...`` name."""
        requests = [{"request": body, "metadata": {"key": cid}} for cid, body in items]
        batch = {"displayName": "agentjudge", "inputConfig": {"requests": {"requests": requests}}}
        url = f"{self.base_url}/models/{quote(self.model, safe='-._~')}:batchGenerateContent"
        operation = await self._json(http, "POST", url, json={"batch": batch})
        name = operation.get("name")
        if not isinstance(name, str) or not _BATCH_NAME.fullmatch(name):
            raise ValueError(f"the batch operation has no batches/<id> name: {name!r}")
        return name

    async def poll(self, http: httpx.AsyncClient, batch_id: str) -> PollResult:
        """``GET batches/{id}``: ended when the operation is done or its state is final."""
        if not _BATCH_NAME.fullmatch(batch_id):
            raise ValueError(f"not a Gemini batch name: {batch_id!r}")
        info = await self._json(http, "GET", f"{self.base_url}/{batch_id}")
        metadata = info.get("metadata")
        state = metadata.get("state") if isinstance(metadata, dict) else None
        state = str(state or ("BATCH_STATE_DONE" if info.get("done") else "BATCH_STATE_PENDING"))
        return PollResult(info.get("done") is True or state in _ENDED, state, info)

    async def results(
        self,
        http: httpx.AsyncClient,
        batch_id: str,
        info: dict[str, Any],
        custom_ids: Sequence[str] = (),
    ) -> Results:
        """The inline responses of the done operation (no download: they are in ``info``)."""
        results = Results()
        response = info.get("response")
        inlined = response.get("inlinedResponses") if isinstance(response, dict) else None
        entries = inlined.get("inlinedResponses") if isinstance(inlined, dict) else None
        keys = list(custom_ids)
        for position, entry in enumerate(entries if isinstance(entries, list) else []):
            cid = _entry_key(entry, keys, position)
            if cid is None:
                results.unreadable += 1
                continue
            answer = entry.get("response")
            if isinstance(answer, dict):
                results.add(cid, answer)
                continue
            error = entry.get("error")
            detail = (
                f"{error.get('code')}: {error.get('message')}"
                if isinstance(error, dict)
                else "neither a response nor an error"
            )
            results.add(cid, self._error(batch_id, cid, f"the request failed: {detail}"))
        return results

    def sample_body(self, body: dict[str, Any], sample_index: int) -> dict[str, Any]:
        """Sample ``i > 0`` asks for ``generationConfig.seed = i`` (unless one is set)."""
        config = body.get("generationConfig")
        config = config if isinstance(config, dict) else {}
        if sample_index == 0 or "seed" in config:
            return body
        return {**body, "generationConfig": {**config, "seed": sample_index}}

    def missing_reason(self, status: str, info: dict[str, Any]) -> str:
        """Why a request has no result: the operation's error when it failed."""
        error = info.get("error")
        if isinstance(error, dict):
            return f"the batch ended {status}: {error.get('code')}: {error.get('message')}"
        return super().missing_reason(status, info)


def _entry_key(entry: Any, keys: list[str], position: int) -> str | None:
    """The custom id of an inline response: its ``metadata.key``, else its position's."""
    if not isinstance(entry, dict):
        return None
    metadata = entry.get("metadata")
    key = metadata.get("key") if isinstance(metadata, dict) else None
    if isinstance(key, str) and key:
        return key
    return keys[position] if position < len(keys) else None


class GeminiChat(HTTPModelClient):
    """A client for ``POST {base_url}/models/{model}:generateContent`` (Gemini API).

    Args:
        model: The model id, e.g. ``"gemini-2.5-flash"`` (a leading ``models/`` is accepted).
        **options: The options every client shares (see `ClientOptions`); ``base_url`` defaults
            to ``GEMINI_BASE_URL`` or ``https://generativelanguage.googleapis.com/v1beta``.

    System messages become ``systemInstruction``; assistant turns are sent with role
    ``model``. Gemini returns no token logprobs through this client (``supports_logprobs`` is
    False). ``--batch`` and `BatchCollector` use Gemini's batch mode (`GeminiBatchAPI`). A
    throttled answer's wait is read from ``Retry-After`` or, as Google sends it, the
    error body's ``RetryInfo`` (`capacity_signals`), for the retries and the adaptive
    controller alike.
    """

    provider: ClassVar[str] = "gemini"
    path: ClassVar[str] = ":generateContent"
    base_url_env: ClassVar[str] = "GEMINI_BASE_URL"
    api_key_header: ClassVar[str] = "x-goog-api-key"
    api_key_env: ClassVar[str] = "GEMINI_API_KEY"
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com/v1beta"

    def __init__(self, model: str, **options: Unpack[ClientKeywords]) -> None:
        super().__init__(model.removeprefix("models/"), **options)
        google = os.environ.get("GOOGLE_API_KEY")
        if options.get("api_key") is None and google:
            self.api_key = google  # the google-genai SDK's precedence over GEMINI_API_KEY

    @property
    def url(self) -> str:
        """``{base_url}/models/{model}:generateContent``."""
        return f"{self.base_url}/models/{quote(self.model, safe='-._~')}{self.path}"

    @property
    def missing_key(self) -> str | None:
        """``"GEMINI_API_KEY is not set (nor GOOGLE_API_KEY)"`` without a key, else None."""
        reason = super().missing_key
        return None if reason is None else f"{reason} (nor GOOGLE_API_KEY)"

    def request_body(
        self, request: ModelRequest, messages: list[Message], schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        system = [m.content for m in messages if m.role == "system"]
        body: dict[str, Any] = {
            "contents": [
                {
                    "role": "model" if m.role == "assistant" else "user",
                    "parts": [{"text": m.content}],
                }
                for m in messages
                if m.role != "system"
            ]
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if schema is not None:
            config["responseMimeType"] = "application/json"
            config["responseSchema"] = gemini_schema(schema)
        if config:
            body["generationConfig"] = config
        body.update(self.extra_body)
        return body

    def parse_reply(self, data: dict[str, Any]) -> Reply:
        """``candidates[0]``'s text parts (thoughts left out) and ``usageMetadata``.

        The output tokens are ``candidatesTokenCount`` + ``thoughtsTokenCount`` (both billed as
        output); the thoughts are also the reasoning tokens.
        """
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = data.get("promptFeedback")
            blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
            raise ValueError(
                f"no candidates (prompt blocked: {blocked})" if blocked else "'candidates' is empty"
            )
        candidate = candidates[0]
        content = candidate.get("content") or {}
        parts = content.get("parts") or [] if isinstance(content, dict) else []
        if not isinstance(parts, list):
            raise TypeError("'candidates[0].content.parts' is not a list")
        text = "".join(
            p["text"]
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
        )
        usage, warnings = read_usage(
            self.name, data.get("usageMetadata"), "usageMetadata", USAGE_FIELDS
        )
        answer, thoughts = usage.output_tokens, usage.reasoning_tokens
        if thoughts is not None:
            usage = usage.model_copy(update={"output_tokens": (answer or 0) + thoughts})
        finish = candidate.get("finishReason")
        return reply_from(
            data,
            text,
            (usage, warnings),
            model=data.get("modelVersion"),
            finish=_FINISH.get(finish, finish.lower()) if isinstance(finish, str) else None,
        )

    def batch_api(self) -> BatchAPI | None:
        """Gemini batch mode (`GeminiBatchAPI`) at ``base_url``."""
        return GeminiBatchAPI.of(self)

    def capacity_signals(
        self, status: int, headers: Mapping[str, str], body: bytes
    ) -> CapacitySignals:
        """The headers' signals; a wait not in the headers is read from the body's RetryInfo."""
        signals = header_signals(headers)
        if signals.retry_after is None and status >= 400:
            delay = gemini_retry_delay(body)
            if delay is not None:
                return CapacitySignals(delay, signals.rates)
        return signals

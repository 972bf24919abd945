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
from collections.abc import Mapping
from typing import Any, ClassVar, Unpack
from urllib.parse import quote

from agentjudge.core import Message
from agentjudge.models._headers import parse_retry_after
from agentjudge.models._http import HTTPModelClient, _Reply, check_against_schema
from agentjudge.models._options import ClientKeywords
from agentjudge.models._schema import decode_json_object
from agentjudge.models._transport import Response
from agentjudge.models._types import ModelRequest, Usage
from agentjudge.models._usage import UsageReader

__all__ = ["GeminiChat", "gemini_retry_delay", "gemini_schema"]

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
    """A protobuf Duration in JSON (``"37s"``, ``"1.5s"``) as seconds; None if malformed."""
    if not isinstance(duration, str) or not duration.endswith("s"):
        return None
    try:
        value = float(duration[:-1])
    except ValueError:
        return None
    return value if 0 <= value < float("inf") else None


def gemini_retry_delay(body: bytes) -> float | None:
    """The ``retryDelay`` of a ``google.rpc.RetryInfo`` in a Google JSON error body, or None."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("rpc.RetryInfo"):
            return _seconds(detail.get("retryDelay"))
    return None


class GeminiChat(HTTPModelClient):
    """A client for ``POST {base_url}/models/{model}:generateContent`` (Gemini API).

    Args:
        model: The model id, e.g. ``"gemini-2.5-flash"`` (a leading ``models/`` is accepted).
        **options: The options every client shares (see `ClientOptions`); ``base_url`` defaults
            to ``GEMINI_BASE_URL`` or ``https://generativelanguage.googleapis.com/v1beta``.

    System messages become ``systemInstruction``; assistant turns are sent with role
    ``model``. Gemini returns no token logprobs through this client (``supports_logprobs`` is
    False) and has no batch support here yet.
    """

    supports_logprobs: ClassVar[bool] = False
    """Token log-probabilities are not read from Gemini answers."""

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

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.api_key} if self.api_key else {}

    def _body(
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

    def _parse(self, data: dict[str, Any]) -> _Reply:
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
        usage, warnings = self._usage(data.get("usageMetadata"))
        finish = candidate.get("finishReason")
        model = data.get("modelVersion")
        billed = usage.total_tokens
        if billed is None and usage.input_tokens is not None:
            billed = usage.input_tokens + (usage.output_tokens or 0)
        return _Reply(
            text=text,
            structured=None,
            model=model if isinstance(model, str) else None,
            finish_reason=_FINISH.get(finish, finish.lower()) if isinstance(finish, str) else None,
            usage=usage,
            raw=data,
            billed_tokens=billed,
            warnings=warnings,
        )

    def _usage(self, raw: Any) -> tuple[Usage, tuple[str, ...]]:
        if not isinstance(raw, dict):
            return Usage(), ()
        reader = UsageReader(self.name)
        answer = reader.count(raw.get("candidatesTokenCount"), "usageMetadata.candidatesTokenCount")
        thoughts = reader.count(raw.get("thoughtsTokenCount"), "usageMetadata.thoughtsTokenCount")
        output = None if answer is None and thoughts is None else (answer or 0) + (thoughts or 0)
        usage = Usage(
            input_tokens=reader.count(
                raw.get("promptTokenCount"), "usageMetadata.promptTokenCount"
            ),
            output_tokens=output,
            total_tokens=reader.count(raw.get("totalTokenCount"), "usageMetadata.totalTokenCount"),
            reasoning_tokens=thoughts,
            cache_read_tokens=reader.count(
                raw.get("cachedContentTokenCount"), "usageMetadata.cachedContentTokenCount"
            ),
        )
        return usage, tuple(reader.warnings)

    def _structured(self, reply: _Reply, schema: dict[str, Any]) -> dict[str, Any]:
        return check_against_schema(decode_json_object(reply.text), schema)

    def _retry_after(self, response: Response) -> float | None:
        from_headers = parse_retry_after(response.headers)
        return from_headers if from_headers is not None else gemini_retry_delay(response.content)

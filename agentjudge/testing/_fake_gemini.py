"""The Gemini wire format of `FakeModelServer`: ``POST /<version>/models/<model>:generateContent``.

Answers are ``GenerateContentResponse`` bodies (``candidates``, ``usageMetadata``,
``modelVersion``); errors are Google's ``{"error": {"code", "message", "status"}}``, and a 429
carries a ``google.rpc.RetryInfo`` detail with the ``retryDelay`` when the wait is known.
"""

from __future__ import annotations

import json
import math
import re
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentjudge.testing._fake_server import FakeResponse

__all__ = ["GEMINI_ROUTE", "gemini_body", "gemini_error"]

GEMINI_ROUTE = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):generateContent$")
"""The generateContent path (``v1``, ``v1beta`` or ``v1alpha``)."""

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _chars(request: dict[str, Any]) -> int:
    texts = [
        part.get("text", "")
        for block in [*request.get("contents", []), request.get("systemInstruction") or {}]
        if isinstance(block, dict)
        for part in block.get("parts", [])
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return sum(len(t) for t in texts)


def gemini_body(model: str, request: dict[str, Any], response: FakeResponse) -> bytes:
    """A ``GenerateContentResponse`` for ``response`` (``json`` is sent as JSON text)."""
    text = json.dumps(response.json) if response.json is not None else response.text or ""
    prompt = max(1, _chars(request) // 4) if _chars(request) else 0
    answer = max(1, len(text) // 4) if text else 0
    usage = response.usage or {
        "promptTokenCount": prompt,
        "candidatesTokenCount": answer,
        "totalTokenCount": prompt + answer,
    }
    body = {
        "candidates": [
            {
                "content": {"parts": [{"text": text}], "role": "model"},
                "finishReason": response.finish_reason or "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": dict(usage),
        "modelVersion": model,
        "responseId": "fake-gemini",
    }
    return json.dumps(body).encode()


def gemini_error(status: int, message: str | None, retry_after: float | None = None) -> bytes:
    """Google's JSON error body; with ``retry_after`` a RetryInfo detail (``"<n>s"``)."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    error: dict[str, Any] = {
        "code": status,
        "message": message or phrase,
        "status": _STATUS.get(status, "UNKNOWN"),
    }
    if retry_after is not None:
        delay = f"{max(1, math.ceil(retry_after))}s"
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
        ]
    return json.dumps({"error": error}).encode()

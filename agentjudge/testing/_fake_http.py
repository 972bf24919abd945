"""The HTTP/1.1 plumbing of `FakeModelServer`: reading a request, writing an answer."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus

from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = [
    "CONTINUE",
    "MAX_HEAD",
    "BadRequest",
    "expects_continue",
    "http_response",
    "parse_head",
    "read_body",
]

MAX_HEAD = 64 * 1024
"""The longest request head read (request line and headers)."""
_MAX_BODY = 64 * 1024 * 1024
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
"""The interim answer to a client that waits for one before sending its body."""


class BadRequest(Exception):
    """A request that is not HTTP/1.1 the server can read (answered 400, connection closed)."""


def parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes everything
        raise BadRequest("undecodable request head") from exc
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"malformed request line {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(f"malformed header line {line!r}")
        headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], headers


def expects_continue(headers: Mapping[str, str]) -> bool:
    """Whether the client waits for `CONTINUE` before its body (``Expect: 100-continue``).

    botocore sends it with every S3 upload and waits up to a second for the interim answer
    before it sends the body anyway (RFC 9110 section 10.1.1: a server should answer it).
    """
    return headers.get("expect", "").lower() == "100-continue"


async def read_body(reader: BufferedByteReceiveStream, headers: Mapping[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = await reader.receive_until(b"\r\n", 1024)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise BadRequest("malformed chunk size") from exc
            if size == 0:
                while await reader.receive_until(b"\r\n", MAX_HEAD):  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > _MAX_BODY:
                raise BadRequest("request body too large")
            chunks.append(await reader.receive_exactly(size))
            await reader.receive_exactly(2)
    length_text = headers.get("content-length", "0")
    try:
        length = int(length_text)
    except ValueError as exc:
        raise BadRequest(f"malformed Content-Length {length_text!r}") from exc
    if not 0 <= length <= _MAX_BODY:
        raise BadRequest(f"unsupported Content-Length {length}")
    return await reader.receive_exactly(length) if length else b""


def http_response(
    status: int, body: bytes, headers: Mapping[str, str] | None = None, *, close: bool = False
) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "Server: agentjudge-fake",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

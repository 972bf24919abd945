"""The batch APIs of `FakeModelServer`: OpenAI / Azure, Anthropic and Gemini batches.

Shapes follow the providers' public references (checked with the official ``openai`` and
``anthropic`` SDKs in the tests):

- OpenAI: ``POST /v1/files`` (multipart upload, ``purpose=batch``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``,
  ``POST /v1/batches/{id}/cancel``. Output and error files are JSONL of
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``.
- Azure OpenAI: the OpenAI routes under ``/openai/files`` and ``/openai/batches``, which
  require the ``api-version`` query parameter (400 without it, as Azure answers); lines and
  batches name ``/chat/completions`` as their endpoint.
- Anthropic: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
  ``GET /v1/messages/batches/{id}/results`` (JSONL of ``{"custom_id", "result"}``),
  ``POST /v1/messages/batches/{id}/cancel``.
- Gemini: ``POST /v1beta/models/{model}:batchGenerateContent`` (inline requests, each with
  an optional ``metadata.key``) answers a long-running operation named ``batches/{id}``; ``GET
  /v1beta/batches/{id}`` polls it: ``metadata.state`` ``BATCH_STATE_RUNNING`` until it ends
  ``BATCH_STATE_SUCCEEDED`` (or ``_FAILED`` with the operation's ``error``, ``_CANCELLED``),
  with ``response.inlinedResponses.inlinedResponses`` (also in ``metadata.output``, where the
  google-genai SDK reads them) in request order (``echo_keys = False``
  leaves out their ``metadata``, as the API may).

Every item of a batch is answered by the server's normal responder (queue, then ``default``),
as if it had been posted to ``/v1/chat/completions`` or ``/v1/messages`` on its own, so tests
script batch answers exactly like online ones. Progression is configurable on
`FakeBatches` (``server.batches``): a batch ends on its ``complete_after``-th retrieval;
custom ids listed in ``expire`` end expired and those in ``fail`` end errored; ``fail_batch``
makes the next batch fail validation as a whole. Hostile providers can be imitated too:
``result_filter`` rewrites every result file as it is downloaded (a garbage line, a file cut
mid-line), ``results_base`` points the Anthropic ``results_url`` at another server, and
``downloads`` counts the result files served.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, TypeAlias

import anyio

__all__ = ["FakeBatches"]

Answer: TypeAlias = tuple[int, bytes, Mapping[str, str]]
Single: TypeAlias = Callable[[str, str, Mapping[str, str], bytes], Awaitable[Answer | None]]
"""How the server answers one online request: ``(method, path, headers, body)``."""

_JSONL = {"content-type": "application/jsonl"}
_DAY = 24 * 3600
_GEMINI_CREATE = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):batchGenerateContent$")
_GEMINI_BATCH = re.compile(r"^/v1(?:beta|alpha)/(?P<name>batches/[^/:]+)(?P<cancel>:cancel)?$")
_AZURE_BATCH = ("/openai/files", "/openai/batches")


@dataclass
class _Batch:
    id: str
    provider: str  # "openai" | "anthropic" | "gemini" | "bedrock"
    endpoint: str
    items: list[tuple[str, dict[str, Any]]]  # (custom_id, request body)
    created_at: int
    info: dict[str, Any] = field(default_factory=dict)  # input_file_id, metadata...
    polls: int = 0
    status: str = "in_progress"
    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    ended_at: int | None = None
    failure: str | None = None


class FakeBatches:
    """The batch endpoints of one `FakeModelServer` and their scripted progression.

    Attributes:
        complete_after: A batch ends on this retrieval (``GET``) of it; 1 = the first poll.
        expire: Custom ids whose items end ``expired`` (never answered).
        fail: Custom ids whose items end errored (``{"code": "server_error"}``).
        fail_batch: When set, the next created OpenAI or Gemini batch fails with this message
            (OpenAI: status ``failed`` with validation errors; Gemini: ``BATCH_STATE_FAILED``
            with the operation's ``error``; no output), then the setting clears.
        echo_keys: Gemini inline responses carry their request's ``metadata`` (False: not,
            so clients must match them by position).
        result_filter: When set, every result file download (OpenAI output and error files,
            Anthropic results) serves ``result_filter(content)`` instead of the content.
        results_base: When set, the Anthropic ``results_url`` starts with this origin (e.g.
            another server's ``url``) instead of this server's.
        created: Every batch created so far, as ``(batch id, custom ids)`` in order.
        polls: Retrievals of any batch so far.
        downloads: Result file downloads so far.
    """

    def __init__(self, single: Single, base: Callable[[], str]) -> None:
        self._single = single
        self._base = base
        self._ids = itertools.count(1)
        self._files: dict[str, tuple[str, str, bytes]] = {}  # id -> (filename, purpose, data)
        self._batches: dict[str, _Batch] = {}
        self.complete_after = 1
        self.expire: set[str] = set()
        self.fail: set[str] = set()
        self.fail_batch: str | None = None
        self.echo_keys = True
        self.result_filter: Callable[[bytes], bytes] | None = None
        self.results_base: str | None = None
        self.created: list[tuple[str, list[str]]] = []
        self.polls = 0
        self.downloads = 0
        self._created_event: anyio.Event | None = None

    async def wait_created(self, count: int = 1) -> None:
        """Return once at least ``count`` batches have been created (for tests)."""
        while len(self.created) < count:
            if self._created_event is None:
                self._created_event = anyio.Event()
            await self._created_event.wait()

    @staticmethod
    def handles(route: str) -> bool:
        """True for the routes of the batch APIs."""
        if _GEMINI_CREATE.match(route) or _GEMINI_BATCH.match(route):
            return True
        return route.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches", *_AZURE_BATCH))

    async def respond(
        self, method: str, route: str, headers: Mapping[str, str], body: bytes, query: str = ""
    ) -> Answer:
        """Answer one request to a batch route (``query``: the target's query string)."""
        if route.startswith(_AZURE_BATCH):
            if "api-version=" not in query:
                return _error(400, "Missing required query parameter: api-version", anthropic=False)
            route = "/v1" + route.removeprefix("/openai")
        if _GEMINI_CREATE.match(route) or _GEMINI_BATCH.match(route):
            return await self._gemini_route(method, route, body)
        parts = route.strip("/").split("/")[1:]  # drop "v1"
        try:
            if parts[0] == "files":
                return self._files_route(method, parts[1:], headers, body)
            if parts[0] == "batches":
                return await self._openai_route(method, parts[1:], body)
            return await self._anthropic_route(method, parts[2:], body)
        except _NotFound as exc:
            return _error(404, str(exc), anthropic=parts[0] == "messages")
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, f"bad request: {exc}", anthropic=parts[0] == "messages")

    # -- OpenAI files -----------------------------------------------------------------------------

    def _files_route(
        self, method: str, parts: list[str], headers: Mapping[str, str], body: bytes
    ) -> Answer:
        if method == "POST" and not parts:
            return _ok(self._upload(headers, body))
        if method == "GET" and len(parts) == 1:
            return _ok(self._file_object(parts[0]))
        if method == "GET" and len(parts) == 2 and parts[1] == "content":
            self._file_object(parts[0])
            _, purpose, data = self._files[parts[0]]
            return 200, self._served(data) if purpose == "batch_output" else data, _JSONL
        raise _NotFound(f"no route for {method} /v1/files/{'/'.join(parts)}")

    def _upload(self, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
        form = _multipart(headers.get("content-type", ""), body)
        if "file" not in form or form.get("purpose", (None, b""))[1] != b"batch":
            raise ValueError("expected multipart fields 'file' and purpose='batch'")
        filename, data = form["file"]
        file_id = f"file-fake{next(self._ids)}"
        self._files[file_id] = (filename or "input.jsonl", "batch", data)
        return self._file_object(file_id)

    def _file_object(self, file_id: str) -> dict[str, Any]:
        if file_id not in self._files:
            raise _NotFound(f"no such file: {file_id}")
        filename, purpose, data = self._files[file_id]
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }

    def _store(self, filename: str, purpose: str, lines: list[dict[str, Any]]) -> str:
        file_id = f"file-fake{next(self._ids)}"
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        self._files[file_id] = (filename, purpose, data)
        return file_id

    # -- OpenAI batches ---------------------------------------------------------------------------

    async def _openai_route(self, method: str, parts: list[str], body: bytes) -> Answer:
        if method == "POST" and not parts:
            return _ok(self._openai_view(self._openai_create(json.loads(body))))
        batch = self._get(parts[0] if parts else "", "openai")
        if method == "GET" and len(parts) == 1:
            await self._poll(batch)
            return _ok(self._openai_view(batch))
        if method == "POST" and parts[1:] == ["cancel"]:
            await self._finish(batch, cancelled=True)
            return _ok(self._openai_view(batch))
        raise _NotFound(f"no route for {method} /v1/batches/{'/'.join(parts)}")

    def _openai_create(self, data: dict[str, Any]) -> _Batch:
        file_id = data["input_file_id"]
        if file_id not in self._files:
            raise _NotFound(f"no such file: {file_id}")
        endpoint = data["endpoint"]
        items = []
        for number, line in enumerate(self._files[file_id][2].decode().splitlines(), 1):
            if line.strip():
                item = json.loads(line)
                if item.get("url") != endpoint or not isinstance(item.get("body"), dict):
                    raise ValueError(f"line {number}: url must be {endpoint} with a JSON body")
                items.append((str(item["custom_id"]), item["body"]))
        batch = self._new("openai", endpoint, items)
        batch.info = {
            "input_file_id": file_id,
            "completion_window": data.get("completion_window", "24h"),
            "metadata": data.get("metadata"),
        }
        if self.fail_batch is not None:
            batch.failure, self.fail_batch = self.fail_batch, None
        return batch

    def _openai_view(self, batch: _Batch) -> dict[str, Any]:
        status = batch.status
        if status == "ended":
            status = "failed" if batch.failure else batch.info.get("final", "completed")
        ok = sum(1 for r in batch.results if r["response"]["status_code"] == 200)
        view: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": None,
            "input_file_id": batch.info["input_file_id"],
            "completion_window": batch.info["completion_window"],
            "status": status,
            "output_file_id": batch.info.get("output_file_id"),
            "error_file_id": batch.info.get("error_file_id"),
            "created_at": batch.created_at,
            "in_progress_at": batch.created_at,
            "expires_at": batch.created_at + _DAY,
            "completed_at": batch.ended_at if status == "completed" else None,
            "failed_at": batch.ended_at if status == "failed" else None,
            "cancelled_at": batch.ended_at if status == "cancelled" else None,
            "request_counts": {
                "total": len(batch.items),
                "completed": ok,
                "failed": len(batch.results) + len(batch.errors) - ok,
            },
            "metadata": batch.info.get("metadata"),
        }
        if batch.failure:
            error = {"code": "invalid_request", "message": batch.failure, "line": None}
            view["errors"] = {"object": "list", "data": [error]}
        return view

    # -- Anthropic message batches ----------------------------------------------------------------

    async def _anthropic_route(self, method: str, parts: list[str], body: bytes) -> Answer:
        if method == "POST" and not parts:
            data = json.loads(body)
            items = [(str(r["custom_id"]), dict(r["params"])) for r in data["requests"]]
            return _ok(self._anthropic_view(self._new("anthropic", "/v1/messages", items)))
        batch = self._get(parts[0] if parts else "", "anthropic")
        if method == "GET" and len(parts) == 1:
            await self._poll(batch)
            return _ok(self._anthropic_view(batch))
        if method == "GET" and parts[1:] == ["results"] and batch.status == "ended":
            data = b"".join(json.dumps(r).encode() + b"\n" for r in batch.results)
            return 200, self._served(data), _JSONL
        if method == "POST" and parts[1:] == ["cancel"]:
            await self._finish(batch, cancelled=True)
            return _ok(self._anthropic_view(batch))
        raise _NotFound(f"no route for {method} /v1/messages/batches/{'/'.join(parts)}")

    def _anthropic_view(self, batch: _Batch) -> dict[str, Any]:
        counts = dict.fromkeys(("succeeded", "errored", "canceled", "expired"), 0)
        for result in batch.results:
            counts[result["result"]["type"]] += 1
        ended = batch.status == "ended"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else len(batch.items), **counts},
            "created_at": _iso(batch.created_at),
            "expires_at": _iso(batch.created_at + _DAY),
            "ended_at": _iso(batch.ended_at) if batch.ended_at else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.results_base or self._base()}/v1/messages/batches/"
            f"{batch.id}/results"
            if ended
            else None,
        }

    def _served(self, data: bytes) -> bytes:
        """A result file as downloaded: counted, and rewritten by ``result_filter``."""
        self.downloads += 1
        return self.result_filter(data) if self.result_filter is not None else data

    # -- Gemini batch mode ------------------------------------------------------------------------

    async def _gemini_route(self, method: str, route: str, body: bytes) -> Answer:
        create, named = _GEMINI_CREATE.match(route), _GEMINI_BATCH.match(route)
        try:
            if method == "POST" and create is not None:
                batch = self._gemini_create(create["model"], json.loads(body))
                return _ok(self._gemini_view(batch))
            if named is None or self._batches.get(named["name"], None) is None:
                raise _NotFound(f"no such batch or route: {method} {route}")
            batch = self._get(named["name"], "gemini")
            if method == "GET" and not named["cancel"]:
                await self._poll(batch)
            elif method == "POST" and named["cancel"]:
                await self._finish(batch, cancelled=True)
            else:
                raise _NotFound(f"no route for {method} {route}")
            return _ok(self._gemini_view(batch))
        except _NotFound as exc:
            return _google_error(404, str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            return _google_error(400, f"bad request: {exc}")

    def _gemini_create(self, model: str, data: dict[str, Any]) -> _Batch:
        inline = data["batch"]["inputConfig"]["requests"]["requests"]
        keys = [(r.get("metadata") or {}).get("key") for r in inline]  # metadata is optional
        items = [
            (str(key) if key is not None else f"#{i}", dict(r["request"]))
            for i, (key, r) in enumerate(zip(keys, inline, strict=True))
        ]
        batch = self._new("gemini", f"/v1beta/models/{model}:generateContent", items)
        batch.info = {"model": model, "displayName": data["batch"].get("displayName")}
        batch.info["unkeyed"] = {f"#{i}" for i, key in enumerate(keys) if key is None}
        if self.fail_batch is not None:
            batch.failure, self.fail_batch = self.fail_batch, None
        return batch

    def _gemini_view(self, batch: _Batch) -> dict[str, Any]:
        ended = batch.status == "ended"
        state = "BATCH_STATE_RUNNING"
        if ended:
            state = "BATCH_STATE_SUCCEEDED"
            if batch.failure:
                state = "BATCH_STATE_FAILED"
            elif batch.info.get("final") == "cancelled":
                state = "BATCH_STATE_CANCELLED"
        kind = "type.googleapis.com/google.ai.generativelanguage.v1beta."
        view: dict[str, Any] = {
            "name": batch.id,
            "metadata": {
                "@type": kind + "GenerateContentBatch",
                "model": f"models/{batch.info['model']}",
                "displayName": batch.info.get("displayName"),
                "createTime": _iso(batch.created_at),
                "state": state,
                "name": batch.id,
            },
            "done": ended,
        }
        if ended and batch.failure:
            view["error"] = {"code": 3, "message": batch.failure}
        elif ended:
            unkeyed = batch.info.get("unkeyed", set())
            responses = [
                r
                if self.echo_keys and r["metadata"]["key"] not in unkeyed
                else {k: v for k, v in r.items() if k != "metadata"}
                for r in batch.results
            ]
            output = {"inlinedResponses": {"inlinedResponses": responses}}
            view["metadata"]["output"] = output  # where the google-genai SDK reads it
            view["response"] = {"@type": kind + "GenerateContentBatchOutput", **output}
        return view

    # -- progression ------------------------------------------------------------------------------

    def _new(self, provider: str, endpoint: str, items: list[tuple[str, dict[str, Any]]]) -> _Batch:
        ids = [custom_id for custom_id, _ in items]
        if not items or len(set(ids)) != len(ids):
            raise ValueError("a batch needs at least one request and unique custom_id values")
        prefix = {"openai": "batch_fake", "gemini": "batches/fake"}.get(provider, "msgbatch_fake")
        number = next(self._ids)
        name = f"fakejob{number:05d}" if provider == "bedrock" else f"{prefix}{number}"
        batch = _Batch(name, provider, endpoint, items, int(time.time()))
        self._batches[batch.id] = batch
        self.created.append((batch.id, ids))
        if self._created_event is not None:
            self._created_event.set()
            self._created_event = None
        return batch

    def _get(self, batch_id: str, provider: str) -> _Batch:
        batch = self._batches.get(batch_id)
        if batch is None or batch.provider != provider:
            raise _NotFound(f"no such batch: {batch_id}")
        return batch

    async def _poll(self, batch: _Batch) -> None:
        self.polls += 1
        batch.polls += 1
        if batch.status != "ended" and batch.polls >= self.complete_after:
            await self._finish(batch, cancelled=False)

    async def _finish(self, batch: _Batch, *, cancelled: bool) -> None:
        if batch.status == "ended":
            return
        if batch.failure is None:
            for custom_id, body in batch.items:
                if cancelled:
                    outcome: tuple[str, Any] = ("canceled", None)
                else:
                    outcome = await self._answer(batch, custom_id, body)
                self._record(batch, custom_id, *outcome)
        batch.status, batch.ended_at = "ended", int(time.time())
        if cancelled:
            batch.info["final"] = "cancelled"
        if batch.provider == "openai" and batch.failure is None:
            self._publish(batch)

    async def _answer(self, batch: _Batch, custom_id: str, body: dict[str, Any]) -> tuple[str, Any]:
        if custom_id in self.expire:
            return "expired", None
        if custom_id in self.fail:
            return "errored", (500, {"error": {"type": "api_error", "message": "server error"}})
        path = batch.endpoint if batch.endpoint.startswith("/v1") else "/v1" + batch.endpoint
        answer = await self._single("POST", path, {}, json.dumps(body).encode())
        if answer is None:  # a hanging answer: the item never finishes in time
            return "expired", None
        status, payload, _ = answer
        data = json.loads(payload)
        return ("succeeded" if status == 200 else "errored"), (status, data)

    def _record(self, batch: _Batch, custom_id: str, kind: str, answer: Any) -> None:
        if batch.provider == "bedrock":  # written to S3 by _fake_bedrock_batch
            record: dict[str, Any] = {"recordId": custom_id, "kind": kind}
            if kind == "succeeded":
                record["modelOutput"] = answer[1]
            elif kind == "errored":
                error = answer[1].get("error", answer[1])
                message = error.get("message") if isinstance(error, dict) else error
                record["error"] = {"errorCode": answer[0], "errorMessage": message}
            batch.results.append(record)
            return
        if batch.provider == "gemini":
            entry: dict[str, Any] = {"metadata": {"key": custom_id}}
            if kind == "succeeded":
                entry["response"] = answer[1]
            else:
                number, text = {"canceled": (1, "CANCELLED"), "expired": (4, "expired")}.get(
                    kind, (13, "internal error")
                )
                entry["error"] = {"code": number, "message": text}
            batch.results.append(entry)
            return
        if batch.provider == "anthropic":
            result: dict[str, Any] = {"type": kind}
            if kind == "succeeded":
                result["message"] = answer[1]
            elif kind == "errored":
                result["error"] = {"type": "error", "error": answer[1].get("error", answer[1])}
            batch.results.append({"custom_id": custom_id, "result": result})
            return
        line: dict[str, Any] = {"id": f"batch_req_fake{next(self._ids)}", "custom_id": custom_id}
        if kind in ("succeeded", "errored"):
            status, data = answer
            line["response"] = {"status_code": status, "request_id": line["id"], "body": data}
            line["error"] = None
            (batch.results if status == 200 else batch.errors).append(line)
            return
        code = "batch_expired" if kind == "expired" else "batch_cancelled"
        message = {
            "batch_expired": "This request could not be executed before the completion "
            "window expired.",
            "batch_cancelled": "This request was cancelled before it was executed.",
        }[code]
        line.update(response=None, error={"code": code, "message": message})
        batch.errors.append(line)

    def _publish(self, batch: _Batch) -> None:
        if batch.results:
            batch.info["output_file_id"] = self._store(
                f"{batch.id}_output.jsonl", "batch_output", batch.results
            )
        if batch.errors:
            batch.info["error_file_id"] = self._store(
                f"{batch.id}_error.jsonl", "batch_output", batch.errors
            )


class _NotFound(Exception):
    pass


def _ok(data: dict[str, Any]) -> Answer:
    return 200, json.dumps(data).encode(), {}


def _error(status: int, message: str, *, anthropic: bool) -> Answer:
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    error = {"type": kind, "message": message}
    body = {"type": "error", "error": error} if anthropic else {"error": error}
    return status, json.dumps(body).encode(), {}


def _google_error(status: int, message: str) -> Answer:
    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}
    error = {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
    return status, json.dumps({"error": error}).encode(), {}


def _iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a ``multipart/form-data`` body: name -> (filename, data)."""
    if not content_type.startswith("multipart/form-data"):
        raise ValueError(f"expected multipart/form-data, got {content_type or 'none'!r}")
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts() if hasattr(message, "iter_parts") else []:
        assert isinstance(part, Message)
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (part.get_filename(), payload)
    return fields

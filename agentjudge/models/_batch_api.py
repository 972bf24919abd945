"""The provider batch APIs behind `BatchCollector`: OpenAI Batches, Anthropic Message Batches.

Each adapter submits a list of ``(custom_id, request body)``, tells whether a batch has ended
and downloads its results as ``custom_id -> completion body`` or ``custom_id -> ModelError``
(the provider's reason: expired, errored, cancelled, failed validation).

Result files are read line by line: a line that is not a JSON object with a ``custom_id`` (garbage,
or a file cut mid-line) is counted in `Results.unreadable` and skipped, so it fails only the
requests that have no other line; a ``custom_id`` reported twice keeps its success line. Every
request goes only to the client's own ``base_url`` (the Anthropic results too: the batch's
``results_url`` is not followed, so the API key never travels to another origin).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import httpx

from agentjudge.exceptions import ModelError, ModelHTTPError
from agentjudge.models._secrets import Secrets

if TYPE_CHECKING:
    from agentjudge.models._http import HTTPModelClient

__all__ = [
    "AnthropicBatchAPI",
    "BatchAPI",
    "OpenAIBatchAPI",
    "Outcome",
    "PollResult",
    "Results",
]

Outcome = dict[str, Any] | ModelError
"""A completion body (the provider's single-request answer), or why there is none."""


class Results:
    """The outcomes read from an ended batch's result files.

    Attributes:
        outcomes: ``custom_id -> outcome``; a success line wins over an error line for the
            same ``custom_id``, whichever came first.
        unreadable: Lines that were not a JSON object with a ``custom_id`` (skipped).
    """

    __slots__ = ("outcomes", "unreadable")

    def __init__(self) -> None:
        self.outcomes: dict[str, Outcome] = {}
        self.unreadable = 0

    def add(self, cid: str, outcome: Outcome) -> None:
        """Record ``outcome`` for ``cid`` unless a success is already recorded for it."""
        if not isinstance(self.outcomes.get(cid), dict):
            self.outcomes[cid] = outcome

    def lines(self, text: str, key: str = "custom_id") -> list[tuple[str, dict[str, Any]]]:
        """The ``(id, line)`` pairs of a JSONL text; unusable lines are counted.

        ``key`` names the member holding each line's id (Bedrock: ``recordId``).
        """
        found = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            cid = value.get(key) if isinstance(value, dict) else None
            if isinstance(cid, str) and cid:
                found.append((cid, value))
            else:
                self.unreadable += 1
        return found


class PollResult:
    """What one poll of a batch said.

    Attributes:
        ended: The batch will not change any more (results can be downloaded).
        status: The provider's status word, e.g. ``"in_progress"``, ``"completed"``.
        info: The provider's batch object.
    """

    __slots__ = ("ended", "info", "status")

    def __init__(self, ended: bool, status: str, info: dict[str, Any]) -> None:
        self.ended = ended
        self.status = status
        self.info = info


class BatchAPI:
    """One provider's batch endpoints, spoken over an `httpx.AsyncClient`.

    A provider's ``batch_api()`` returns one (usually ``SomeBatchAPI.of(self)``); a new
    provider's adapter subclasses it and defines `submit`, `poll` and `results` (and
    `sample_body` / `missing_reason` / `min_items` where the defaults do not fit).

    Args:
        name: The model client name (in error texts).
        base_url: The API root, e.g. ``https://api.openai.com/v1``.
        headers: Authentication and version headers of the model client.
        secrets: What to redact from error texts.
    """

    min_items = 1
    """The fewest requests the provider takes in one batch: `BatchCollector` sends fewer
    online (Bedrock batch inference has a minimum of records per job)."""

    def __init__(
        self, name: str, base_url: str, headers: Mapping[str, str], secrets: Secrets
    ) -> None:
        self.name = name
        self.base_url = base_url
        self.headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        self.secrets = secrets

    @classmethod
    def of(cls, client: HTTPModelClient) -> Self:
        """The adapter for ``client``: its name, ``base_url``, request headers and secrets."""
        return cls(client.name, client.base_url, client.request_headers, client.secrets)

    async def submit(self, http: httpx.AsyncClient, items: list[tuple[str, dict[str, Any]]]) -> str:
        """Create a batch of ``items`` and return its id."""
        raise NotImplementedError

    async def poll(self, http: httpx.AsyncClient, batch_id: str) -> PollResult:
        """Retrieve the batch once."""
        raise NotImplementedError

    async def results(
        self,
        http: httpx.AsyncClient,
        batch_id: str,
        info: dict[str, Any],
        custom_ids: Sequence[str] = (),
    ) -> Results:
        """The outcome of every request of an ended batch that the provider reports.

        ``custom_ids`` are the batch's items in the order they were submitted (for a provider
        that answers by position).
        """
        raise NotImplementedError

    def sample_body(self, body: dict[str, Any], sample_index: int) -> dict[str, Any]:
        """The batch body of repeated sample ``sample_index`` of a request (as is here)."""
        return body

    def missing_reason(self, status: str, info: dict[str, Any]) -> str:
        """Why a request of an ended batch (status ``status``) has no result."""
        return f"the batch ended {status!r} without a result for this request"

    async def _call(
        self, http: httpx.AsyncClient, method: str, url: str, **kwargs: Any
    ) -> httpx.Response:
        headers = kwargs.pop("headers", self.headers)
        response = await http.request(method, url, headers=headers, **kwargs)
        if not 200 <= response.status_code < 300:
            excerpt = self.secrets.redact(response.text[:500])
            hint = f"the batch API refused {method} {url.split('?', 1)[0]}"
            raise ModelHTTPError(response.status_code, self.name, excerpt, hint)
        return response

    async def _json(
        self, http: httpx.AsyncClient, method: str, url: str, **kwargs: Any
    ) -> dict[str, Any]:
        response = await self._call(http, method, url, **kwargs)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ModelError(f"{self.name}: the batch API answered {url} with a non-object body")
        return data

    def _error(self, batch_id: str, custom_id: str, reason: str) -> ModelError:
        return ModelError(f"{self.name}: batch {batch_id}, request {custom_id}: {reason}")


class OpenAIBatchAPI(BatchAPI):
    """``POST /files`` (JSONL upload) + ``POST /batches``; results from the output/error files.

    Azure OpenAI speaks the same API at other paths: it overrides `url` and `endpoint`.
    """

    endpoint = "/v1/chat/completions"
    """The batch's ``endpoint`` and each line's ``url``."""

    def url(self, path: str) -> str:
        """The URL of ``path`` (``/files``, ``/batches/{id}``...) of this API."""
        return f"{self.base_url}{path}"

    async def submit(self, http: httpx.AsyncClient, items: list[tuple[str, dict[str, Any]]]) -> str:
        """Upload the requests as JSONL with their custom ids, then create the batch."""
        lines = [
            {"custom_id": cid, "method": "POST", "url": self.endpoint, "body": body}
            for cid, body in items
        ]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        uploaded = await self._json(
            http,
            "POST",
            self.url("/files"),
            files={"file": ("agentjudge-batch.jsonl", data, "application/jsonl")},
            data={"purpose": "batch"},
        )
        batch = await self._json(
            http,
            "POST",
            self.url("/batches"),
            json={
                "input_file_id": uploaded["id"],
                "endpoint": self.endpoint,
                "completion_window": "24h",
            },
        )
        return str(batch["id"])

    async def poll(self, http: httpx.AsyncClient, batch_id: str) -> PollResult:
        """``GET /batches/{id}``: ended when completed, failed, expired or cancelled."""
        info = await self._json(http, "GET", self.url(f"/batches/{batch_id}"))
        status = str(info.get("status"))
        return PollResult(status in ("completed", "failed", "expired", "cancelled"), status, info)

    async def results(
        self,
        http: httpx.AsyncClient,
        batch_id: str,
        info: dict[str, Any],
        custom_ids: Sequence[str] = (),
    ) -> Results:
        """Read the output file (answers) and the error file (reasons)."""
        results = Results()
        for key in ("output_file_id", "error_file_id"):
            file_id = info.get(key)
            if not file_id:
                continue
            response = await self._call(http, "GET", self.url(f"/files/{file_id}/content"))
            for cid, line in results.lines(response.text):
                results.add(cid, self._outcome(batch_id, cid, line))
        return results

    def sample_body(self, body: dict[str, Any], sample_index: int) -> dict[str, Any]:
        """Sample ``i > 0`` asks for ``seed = i`` (unless the client's extra body sets one)."""
        if sample_index == 0 or "seed" in body:
            return body
        return {**body, "seed": sample_index}

    def missing_reason(self, status: str, info: dict[str, Any]) -> str:
        """Why a request has no result; a failed batch gives its validation errors."""
        if status != "failed":
            return super().missing_reason(status, info)
        errors = info.get("errors")
        data = errors.get("data") if isinstance(errors, dict) else None
        found = [str(e.get("message")) for e in data or [] if isinstance(e, dict)]
        return f"the batch failed validation: {'; '.join(found) or 'no reason given'}"

    def _outcome(self, batch_id: str, cid: str, line: dict[str, Any]) -> Outcome:
        response = line.get("response")
        error = line.get("error")
        if isinstance(response, dict) and response.get("status_code") == 200:
            body = response.get("body")
            if isinstance(body, dict):
                return body
        if isinstance(error, dict):
            return self._error(batch_id, cid, f"{error.get('code')}: {error.get('message')}")
        if isinstance(response, dict):
            body = response.get("body")
            detail = body.get("error", body) if isinstance(body, dict) else body
            message = detail.get("message") if isinstance(detail, dict) else detail
            return self._error(batch_id, cid, f"HTTP {response.get('status_code')}: {message}")
        return self._error(batch_id, cid, "the provider reported neither a response nor an error")


class AnthropicBatchAPI(BatchAPI):
    """``POST /messages/batches``; results streamed as JSONL from the batch's ``results_url``."""

    async def submit(self, http: httpx.AsyncClient, items: list[tuple[str, dict[str, Any]]]) -> str:
        """Create the message batch with one ``{custom_id, params}`` per request."""
        requests = [{"custom_id": cid, "params": body} for cid, body in items]
        batch = await self._json(
            http, "POST", f"{self.base_url}/messages/batches", json={"requests": requests}
        )
        return str(batch["id"])

    async def poll(self, http: httpx.AsyncClient, batch_id: str) -> PollResult:
        """``GET /messages/batches/{id}``: ended when ``processing_status`` is ``ended``."""
        info = await self._json(http, "GET", f"{self.base_url}/messages/batches/{batch_id}")
        status = str(info.get("processing_status"))
        return PollResult(status == "ended", status, info)

    async def results(
        self,
        http: httpx.AsyncClient,
        batch_id: str,
        info: dict[str, Any],
        custom_ids: Sequence[str] = (),
    ) -> Results:
        """Read the results: succeeded answers, or errored/expired/canceled reasons.

        The URL is built from ``base_url`` (as the official SDK does), never taken from the
        batch's ``results_url``: the ``x-api-key`` header goes to the client's own origin only.
        """
        url = f"{self.base_url}/messages/batches/{batch_id}/results"
        response = await self._call(http, "GET", url)
        results = Results()
        for cid, line in results.lines(response.text):
            result = line.get("result")
            result = result if isinstance(result, dict) else {}
            kind = result.get("type")
            message = result.get("message")
            if kind == "succeeded" and isinstance(message, dict):
                results.add(cid, message)
                continue
            reason = f"the request {kind or 'has no result'}"
            error = result.get("error")
            if isinstance(error, dict):
                inner = error.get("error", error)
                if isinstance(inner, dict):
                    reason += f": {inner.get('type')}: {inner.get('message')}"
            results.add(cid, self._error(batch_id, cid, reason))
        return results

"""`BatchCollector`: send the model calls of many judges through a provider's batch API.

A `BatchCollector` wraps a model client whose provider has a batch API (its ``batch_api()``, part
of the provider protocol, see `agentjudge.models._provider`: OpenAI, Anthropic, presets with
``batch=True``, third-party providers that define one) and is itself a model client (same
``name``, so judges and Evaluator limits see the same resource). Its `complete`
does not call the model: it adds the request to the next batch and waits for the answer.

- **Flushing**: the collected requests are submitted as one provider batch (OpenAI and Azure
  ``/files`` + ``/batches``; Anthropic Message Batches; Gemini ``batchGenerateContent``)
  when ``max_batch_size`` are waiting, when no new request arrived for ``linger`` seconds, or
  when `BatchCollector.flush` is called. A provider with a minimum of requests per batch
  (Bedrock batch inference: 100 records per job) gets no batch smaller than that: when fewer
  calls are waiting at a flush, they are sent online through the wrapped client (a warning
  says so) and priced as online calls.
- **One item per call**: every `complete` call is its own batch item, as it is its own HTTP
  request online. The ``custom_id`` hashes the request body, its ``sample_index`` and how many
  identical calls came before it in this collector, so the samples of `SelfConsistency` (and a
  judge retried by the Evaluator after an error) are separate items with separate answers; a
  call retried after its attempt was cancelled (a timeout) takes over the item it left. OpenAI
  items of sample ``i > 0`` also carry ``seed = i`` in the body (unless the client's
  ``extra_body`` sets a seed); the Anthropic Messages API has no seed parameter, so there the
  ``custom_id`` alone keeps samples apart and the provider samples each item on its own.
- **Polling**: each batch is polled with exponential backoff (``poll_interval`` doubling up to
  ``max_poll_interval``). When it ends, its result files are downloaded once and each answer
  goes back to the call waiting for it by ``custom_id``. A result line that cannot be read
  fails only the requests without another line (the error says how many lines were
  unreadable); a ``custom_id`` reported twice keeps its success line.
- **Failures are data**: an expired, errored or cancelled request, a batch that failed
  validation, a submission the provider refused, or ``max_poll_errors`` failed polls in a row
  raise `ModelError` in the waiting call with the provider's reason (redacted like online error
  bodies: the client's secrets become ``[REDACTED]``), so the judge becomes an ERROR result.
  With ``retry_online=True`` such a request is sent once more through the wrapped client.
- **Resume**: batch ids and their custom ids are written to ``state_path`` (JSON) as soon as a
  batch is created. A new collector given the same file polls those batches again instead of
  resubmitting: a request whose ``custom_id`` is in a saved batch waits for that batch.
- **Cost**: every answer carries ``ModelResponse.batch=True`` (and ``metadata["batch"]`` in
  the judgment) so cost accounting uses batch prices. The time from `complete` to the answer
  is reported as queueing (``JudgeResult.queued_s``), not as the judge's working time.
- **TLS**: the collectors of a process share one TLS context (`_tls_context`, httpx's default
  trust: ``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's bundle), made at the first
  collector's start: loading the CA bundle costs ~50 ms of CPU, once per collector before.

Structured output is asked for exactly as online, but an answer that does not follow the
schema is not re-asked (there is no conversation to continue inside a batch): it comes back
with ``parsed=None`` and ``schema_error`` set, like an online answer whose re-asks ran out.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import ssl
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import anyio
import httpx
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentjudge.exceptions import ModelError, ModelHTTPError, ModelResponseError
from agentjudge.judging import add_queued, spend_gate
from agentjudge.models._batch_api import BatchAPI, Outcome, Results
from agentjudge.models._failures import RETRYABLE_STATUSES
from agentjudge.models._http import HTTPModelClient
from agentjudge.models._schema import SchemaViolation, plain_json
from agentjudge.models._spend import Reservation, reserve
from agentjudge.models._types import ModelRequest, ModelResponse

__all__ = ["BatchCollector"]

logger = logging.getLogger("agentjudge.models")


class _SavedBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    custom_ids: list[str]
    status: str = "submitted"
    polls: int = Field(default=0, ge=0)


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    client: str
    batches: list[_SavedBatch] = Field(default_factory=list)


class _Online(ModelError):
    """The outcome of a call sent online: fewer were waiting than the provider's minimum."""


class _Waiting:
    """A request in the collector: its body, and an event set when its outcome is known."""

    __slots__ = ("body", "done")

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.done = anyio.Event()


def custom_id(body: dict[str, Any], sample_index: int = 0, repeat: int = 0) -> str:
    """The batch ``custom_id`` of a call: stable across runs (the resume key).

    Args:
        body: The request body as sent.
        sample_index: The request's ``sample_index`` (repeated samples are separate items).
        repeat: How many identical calls (same body and sample index) came before this one.
    """
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if sample_index or repeat:  # the first call of a request keeps the id it always had
        canonical += f"\n{sample_index}\n{repeat}"
    return "aj-" + hashlib.sha256(canonical.encode()).hexdigest()[:40]


def _positive(name: str, value: float, *, integer: bool = False) -> None:
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or not math.isfinite(value) or value <= 0 or (integer and not isinstance(value, int)):
        kind = "an integer >= 1" if integer else "a finite number > 0"
        raise ValueError(f"{name} must be {kind}, got {value!r}")


def _final(exc: Exception) -> bool:
    """A poll failure that polling again cannot fix (404 unknown batch, 401 bad key...)."""
    if not isinstance(exc, ModelHTTPError):
        return False
    return exc.status_code not in RETRYABLE_STATUSES and exc.status_code < 500


_TLS_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}
_TLS_LOCK = threading.Lock()


def _tls_context() -> ssl.SSLContext:
    """The default TLS context of httpx for this process's trust settings, made once and shared.

    The settings are ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` as httpx reads them (else certifi's
    bundle); a change to either gets a new context. Loading a CA bundle costs ~50 ms of CPU and
    a run makes one collector per batch client, all trusting the same certificates.
    """
    key = (os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)
    with _TLS_LOCK:
        context = _TLS_CONTEXTS.get(key)
        if context is None:
            context = _TLS_CONTEXTS[key] = httpx.create_ssl_context()
        return context


class BatchCollector:
    """A model client that answers `complete` through the provider's batch API.

    Use it as an async context manager around the evaluation; judges take it in place of the
    wrapped client::

        model = OpenAIChat("gpt-4o-mini")
        async with BatchCollector(model, state_path="run/batches.json") as batched:
            judge = LLMJudge("correct", batched, TEMPLATE)
            results = await Evaluator(judge, max_concurrency=10_000, timeout=None).run(cases)

    Batches take minutes to hours: give the Evaluator a timeout at least as long as you are
    willing to wait (or none), and enough concurrency that every case's call is waiting at once.

    Args:
        client: The model client (an `HTTPModelClient` whose ``batch_api()`` is not None)
            whose model, base URL, key and request format are used.
        state_path: The JSON file holding the submitted batches (created if missing; its
            folder too). A collector given a file from an earlier, interrupted run resumes
            polling those batches instead of resubmitting.
        max_batch_size: Requests per batch at most (OpenAI allows 50,000, Anthropic 100,000).
        linger: Seconds without a new request after which the waiting ones are submitted.
        poll_interval: Seconds before the second poll of a batch (the first is immediate);
            doubles after each poll.
        max_poll_interval: The longest wait between polls.
        max_poll_errors: Failed polls (or result downloads) in a row after which the batch's
            requests fail with the last error.
        retry_online: Send a request that failed inside the batch (expired, errored) once
            more through ``client`` instead of failing it.

    Raises:
        TypeError: ``client`` is not an `HTTPModelClient`, or its provider has no batch API
            (``batch_api()`` is None: most presets; Bedrock without an S3 location and a role,
            or for a model other than Claude), the message giving ``no_batch_reason()``.
        ValueError: A bad number, a ``max_batch_size`` below the provider's minimum per batch,
            or a ``state_path`` that is not a state file of this client (on entering the
            context; the message names the file and the field).
    """

    def __init__(
        self,
        client: HTTPModelClient,
        *,
        state_path: str | os.PathLike[str],
        max_batch_size: int = 10_000,
        linger: float = 2.0,
        poll_interval: float = 5.0,
        max_poll_interval: float = 300.0,
        max_poll_errors: int = 10,
        retry_online: bool = False,
    ) -> None:
        if not isinstance(client, HTTPModelClient):
            raise TypeError(f"BatchCollector wraps an HTTPModelClient, got {client!r}")
        api = client.batch_api()
        if api is None:
            raise TypeError(
                f"{client.name}: {client.no_batch_reason()} "
                "(see docs/how-to/providers.md); run without --batch"
            )
        _positive("max_batch_size", max_batch_size, integer=True)
        _positive("linger", linger)
        _positive("poll_interval", poll_interval)
        _positive("max_poll_interval", max_poll_interval)
        _positive("max_poll_errors", max_poll_errors, integer=True)
        if max_batch_size < api.min_items:
            raise ValueError(
                f"max_batch_size is {max_batch_size}, but {client.name} takes at least "
                f"{api.min_items} requests per batch"
            )
        self.client = client
        self.name = client.name
        self.state_path = Path(state_path)
        self.max_batch_size = max_batch_size
        self.linger = float(linger)
        self.poll_interval = float(poll_interval)
        self.max_poll_interval = float(max(max_poll_interval, poll_interval))
        self.max_poll_errors = max_poll_errors
        self.retry_online = retry_online
        self._api: BatchAPI = api
        self._send_online = client.complete  # taken now: --batch routes client.complete here
        self._task_group: TaskGroup | None = None
        self._http: httpx.AsyncClient | None = None
        self._state = _State(client=client.name)
        self._save_lock: anyio.Lock  # these two belong to the loop: made in __aenter__
        self._waiting: dict[str, _Waiting] = {}
        self._pending: dict[str, _Waiting] = {}
        self._submitted: set[str] = set()
        self._outcomes: dict[str, Outcome] = {}
        self._calls: Counter[str] = Counter()  # calls so far per (body, sample index)
        self._released: dict[str, list[str]] = {}  # items of identical calls that gave up
        self._changed: anyio.Event
        self._flush_requested = False

    def __repr__(self) -> str:
        return f"BatchCollector({self.client!r}, state_path={str(self.state_path)!r})"

    # -- lifecycle --------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise RuntimeError("BatchCollector is already running")
        self._save_lock = anyio.Lock()
        self._changed = anyio.Event()
        self._state = await anyio.to_thread.run_sync(self._load_state)
        self._submitted = {cid for saved in self._state.batches for cid in saved.custom_ids}
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(self.client.timeout), verify=_tls_context()
        )
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        task_group.start_soon(self._flush_loop)
        for saved in self._state.batches:
            task_group.start_soon(self._watch, saved)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        task_group = self._task_group
        assert task_group is not None
        task_group.cancel_scope.cancel()
        try:
            return await task_group.__aexit__(exc_type, exc, tb)
        finally:
            self._task_group = None
            for cid in list(self._waiting):
                self._resolve(cid, ModelError(f"{self.name}: the BatchCollector was closed"))
            if self._http is not None:
                with anyio.CancelScope(shield=True):
                    await self._http.aclose()
            self._http = None

    # -- the model-client protocol ----------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Add ``request`` to the next batch and wait for its answer.

        Raises:
            ModelError: The provider could not answer this request in the batch (the message
                has the provider's reason), or the collector was closed first.
            RuntimeError: The collector is not running (``async with`` it).
        """
        if not isinstance(request, ModelRequest):
            raise TypeError(f"complete() takes a ModelRequest, got {type(request).__name__}")
        if self._task_group is None:
            raise RuntimeError("BatchCollector is not running: use `async with BatchCollector()`")
        wanted = request.response_schema
        schema = plain_json(wanted) if wanted is not None else None
        body = self.client.request_body(request, list(request.messages), schema)
        body = self._api.sample_body(body, request.sample_index)
        held = await self._reserve(request, schema)  # a Budget's hold; None without one
        try:
            outcome, waited = await self._outcome(body, request.sample_index)
            response = None
            if not isinstance(outcome, ModelError):
                answer = self._response(outcome, schema, waited)
                response = self.client.finish_response(request, answer)
        except BaseException:
            if held is not None:
                held.release()
            raise
        if held is not None and response is not None:
            held.settle(response)
        elif held is not None:  # released before an online retry, which reserves its own
            held.release()
        if response is not None:
            return response
        assert isinstance(outcome, ModelError)
        if isinstance(outcome, _Online):
            return await self._send_online(request)
        if self.retry_online:
            logger.warning("%s; retrying it online", outcome)
            return await self.client.complete(request)
        raise ModelError(str(outcome))

    async def _reserve(
        self, request: ModelRequest, schema: dict[str, Any] | None
    ) -> Reservation | None:
        """Hold the bound of ``request`` at batch prices on the attempt's budget, if any."""
        gate = spend_gate.get()
        if gate is None:
            return None
        pricing = self.client.pricing(request, list(request.messages), schema)
        return await reserve(gate, replace(pricing, batch=True))

    async def _outcome(self, body: dict[str, Any], sample_index: int) -> tuple[Outcome, float]:
        """Wait for the batch's answer to this call's item (it goes out with the next batch)."""
        first, cid = self._claim(body, sample_index)
        started = anyio.current_time()
        try:
            if cid not in self._outcomes:
                waiting = self._waiting.get(cid)
                if waiting is None:
                    waiting = self._waiting[cid] = _Waiting(body)
                    if cid not in self._submitted:
                        self._pending[cid] = waiting
                        self._notify()
                await waiting.done.wait()
        except BaseException:  # cancelled (a timeout): a retry of this call takes its item over
            self._released.setdefault(first, []).append(cid)
            raise
        waited = anyio.current_time() - started
        add_queued(waited)
        return self._outcomes[cid], waited

    def _claim(self, body: dict[str, Any], sample_index: int) -> tuple[str, str]:
        """This call's item: ``(first call's custom_id, this call's custom_id)``.

        Each call gets an item of its own, except that an item left by an identical call that
        was cancelled while waiting (an attempt timed out) is taken over, not paid twice.
        """
        first = custom_id(body, sample_index)
        left = self._released.get(first)
        if left:
            cid = left.pop()
            if not left:
                del self._released[first]
            return first, cid
        repeat = self._calls[first]
        self._calls[first] += 1
        return first, custom_id(body, sample_index, repeat)

    async def flush(self) -> None:
        """Submit the waiting requests now instead of after ``linger`` seconds."""
        self._flush_requested = True
        self._notify()

    def _response(
        self, body: dict[str, Any], schema: dict[str, Any] | None, waited: float
    ) -> ModelResponse:
        try:
            reply = self.client.parse_reply(body)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            reason = self._api.secrets.redact(str(exc))
            raise ModelResponseError(
                f"{self.name}: a batch answer is not a {self.client.provider} completion ({reason})"
            ) from None
        parsed: dict[str, Any] | None = None
        problem: str | None = None
        if schema is not None:
            try:
                parsed = self.client.structured_answer(reply, schema)
            except SchemaViolation as exc:
                problem = self._api.secrets.redact(str(exc))
        return ModelResponse(
            text=reply.text,
            parsed=parsed,
            model=reply.model,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            raw=reply.raw,
            queued_s=waited,
            schema_error=problem,
            warnings=reply.warnings,
            batch=True,
        )

    # -- submitting -------------------------------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _flush_loop(self) -> None:
        while True:
            if not self._pending:
                self._flush_requested = False
                await self._changed.wait()
                continue
            if self._flush_requested or len(self._pending) >= self.max_batch_size:
                await self._submit_next()
                continue
            with anyio.move_on_after(self.linger) as quiet:
                await self._changed.wait()
            if quiet.cancelled_caught:
                await self._submit_next()

    async def _submit_next(self) -> None:
        cids = list(self._pending)[: self.max_batch_size]
        if len(cids) < self._api.min_items:
            logger.warning(
                "%s: %d requests are fewer than the %d the provider takes in one batch; "
                "sending them online",
                self.name,
                len(cids),
                self._api.min_items,
            )
            for cid in cids:
                self._resolve(cid, _Online(f"{self.name}: sent online"))
            return
        items = [(cid, self._pending.pop(cid).body) for cid in cids]
        assert self._http is not None and self._task_group is not None
        # Shielded: once the provider may have created the batch, its id must reach the state
        # file, or a cancelled (Ctrl-C) run would pay for the same requests twice on resume.
        with anyio.CancelScope(shield=True):
            try:
                batch_id = await self._api.submit(self._http, items)
            except Exception as exc:  # the provider refused it: every request of it fails
                for cid in cids:
                    error = ModelError(f"{self.name}: submitting a batch failed: {exc}")
                    self._resolve(cid, error)
                return
            saved = _SavedBatch(id=batch_id, custom_ids=cids)
            self._state.batches.append(saved)
            self._submitted.update(cids)
            await self._save()
        logger.info("%s: submitted batch %s with %d requests", self.name, batch_id, len(cids))
        self._task_group.start_soon(self._watch, saved)

    # -- polling ----------------------------------------------------------------------------------

    async def _watch(self, saved: _SavedBatch) -> None:
        assert self._http is not None
        interval = self.poll_interval
        errors = 0
        while True:
            try:
                polled = await self._api.poll(self._http, saved.id)
                if polled.ended:
                    results = await self._api.results(
                        self._http, saved.id, polled.info, saved.custom_ids
                    )
                    break
            except Exception as exc:
                errors += 1
                if errors >= self.max_poll_errors or _final(exc):
                    reason = f"{errors} polls of batch {saved.id} failed in a row, the last: {exc}"
                    self._fail(saved, reason)
                    return
            else:
                errors = 0
                saved.polls += 1
                if polled.status != saved.status:
                    saved.status = polled.status
                    await self._save()
            await anyio.sleep(interval)
            interval = min(interval * 2, self.max_poll_interval)
        saved.status = polled.status
        saved.polls += 1
        for cid in saved.custom_ids:
            outcome = results.outcomes.get(cid)
            if outcome is None:
                outcome = self._missing(saved, cid, polled.status, polled.info, results)
            self._resolve(cid, outcome)
        await self._save()

    def _missing(
        self, saved: _SavedBatch, cid: str, status: str, info: dict[str, Any], results: Results
    ) -> ModelError:
        reason = self._api.missing_reason(status, info)
        if results.unreadable:
            reason += f" ({results.unreadable} result lines could not be read)"
        return ModelError(f"{self.name}: batch {saved.id}, request {cid}: {reason}")

    def _fail(self, saved: _SavedBatch, reason: str) -> None:
        for cid in saved.custom_ids:
            self._resolve(cid, ModelError(f"{self.name}: {reason}"))

    def _resolve(self, cid: str, outcome: Outcome) -> None:
        """Give ``cid`` its outcome; every error text passes the client's redaction here."""
        if isinstance(outcome, ModelError):
            outcome = self._api.secrets.scrub(outcome)
        self._outcomes[cid] = outcome
        self._pending.pop(cid, None)
        waiting = self._waiting.pop(cid, None)
        if waiting is not None:
            waiting.done.set()

    # -- the state file ---------------------------------------------------------------------------

    def _load_state(self) -> _State:
        path = self.state_path
        if not path.exists():
            return _State(client=self.name)
        try:
            state = _State.model_validate_json(path.read_bytes())
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ValueError(f"{path}: not a BatchCollector state file: {problems}") from None
        if state.client != self.name:
            raise ValueError(
                f"{path}: field 'client' is {state.client!r}, but this collector wraps "
                f"{self.name!r}; give each model client its own state file"
            )
        return state

    async def _save(self) -> None:
        async with self._save_lock:
            text = self._state.model_dump_json(indent=1)
            await anyio.to_thread.run_sync(self._write, text)

    def _write(self, text: str) -> None:
        path = self.state_path
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)

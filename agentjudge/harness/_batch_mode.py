"""Batch mode of a run (``agentjudge run --batch``, ``batch = true``): judges' calls in batches.

Every model client found in the suite's judges (`find_model_clients`; also in judges passed as
objects to ``run_suite``) whose provider has a batch API (its ``batch_api()`` is not None: see the
provider protocol in `agentjudge.models._provider`) gets a `BatchCollector` whose state file is
``<out>/batches-<client name>.json``. For the duration of the run the client's ``complete`` is
routed through its collector: the harness sets an instance attribute ``complete`` on the client
object and removes it afterwards. The judges keep the very same client object, so judges of
any shape (classes, closures, juries, cascades) take part without being rebuilt. With
``batch_retry_online`` the route itself sends a call the batch could not answer once more
through the client's own ``complete`` (the collector is not given a client to call).

What batch mode changes in a run (`batch_settings`, `case_slots`):

- **One process.** Collectors hold the run's pending batches and cannot be shared with worker
  processes, so ``workers`` is set to 1 and the summary says so in a warning.
- **Everything in flight.** Every pending case runs at once (at most `MAX_IN_FLIGHT`; beyond
  that cases go in waves), and the Evaluator gets `JUDGE_SLOTS` slots, so one batch holds
  every case's call. The collectors submit when no new call arrived for the suite's
  ``batch_linger`` seconds (`LINGER` by default).
- **Long timeouts.** A judge attempt may wait as long as a provider batch may take:
  ``judge_timeout`` is raised to `JUDGE_TIMEOUT` (unless it is None). The task keeps its own
  ``task_timeout`` and concurrency limits (the task runs online).
- Cascades go tier by tier by themselves: only escalated cases call the next tier's model, so
  the next tier's batch holds only them.

Clients of other kinds (no batch API) keep answering online; the summary warns about each.
The per-resource ``limits`` still cap calls in flight, so they cap the size of each batch.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from agentjudge.exceptions import ModelError
from agentjudge.harness._clients import find_model_clients
from agentjudge.harness._suite import Suite

if TYPE_CHECKING:  # the model clients (httpx, aiohttp) load only when a run uses batch mode
    from agentjudge.models import BatchCollector, ModelRequest

__all__ = [
    "JUDGE_SLOTS",
    "JUDGE_TIMEOUT",
    "LINGER",
    "MAX_IN_FLIGHT",
    "BatchMode",
    "batch_mode",
    "batch_settings",
    "case_slots",
    "online_resume_warnings",
    "remove_state_files",
]

LINGER = 1.0
"""Seconds without a new call after which a collector submits the calls waiting (the default
of the suite's ``batch_linger``)."""
MAX_IN_FLIGHT = 50_000
"""Cases in flight at most in batch mode (OpenAI's limit of requests per batch)."""
JUDGE_SLOTS = 1_000_000
"""The Evaluator's ``max_concurrency`` in batch mode (every waiting call holds a slot)."""
JUDGE_TIMEOUT = 26 * 3600.0
"""Seconds per judge attempt in batch mode: the providers' 24 h completion window, plus margin."""
STATE_PREFIX = "batches-"

logger = logging.getLogger("agentjudge.harness")


def batch_settings(suite: Suite) -> tuple[Suite, list[str]]:
    """The suite as batch mode runs it, and warnings saying what was changed.

    A suite without ``batch`` comes back unchanged.
    """
    if not suite.batch:
        return suite, []
    warnings = []
    if suite.workers > 1:
        warnings.append(
            f"batch mode runs in one process: workers = {suite.workers} was ignored "
            "(the batch collectors cannot be shared with worker processes)"
        )
    if suite.limits:
        warnings.append(
            f"batch mode: limits {suite.limits} cap the judge calls in flight, "
            "so each batch holds at most that many calls"
        )
    timeout = suite.judge_timeout
    changed = suite.with_overrides(
        workers=1,
        judge_concurrency=max(suite.judge_concurrency, JUDGE_SLOTS),
        judge_timeout=None if timeout is None else max(timeout, JUDGE_TIMEOUT),
    )
    return changed, warnings


def case_slots(suite: Suite, pending: int) -> int:
    """Cases in flight: ``concurrency``, or in batch mode every pending case (bounded)."""
    if not suite.batch:
        return suite.concurrency
    return max(suite.concurrency, min(pending, MAX_IN_FLIGHT))


def state_file_name(client_name: str, taken: set[str]) -> str:
    """``batches-<name>.json`` with the name made file-safe, unique among ``taken``."""
    stem = STATE_PREFIX + (re.sub(r"[^A-Za-z0-9._-]+", "_", client_name).strip("._") or "model")
    name, number = f"{stem}.json", 1
    while name in taken:
        number += 1
        name = f"{stem}-{number}.json"
    taken.add(name)
    return name


def remove_state_files(folder: Path) -> None:
    """Delete the batch state files of an earlier run in ``folder`` (for ``--overwrite``)."""
    if not folder.is_dir():
        return
    for path in folder.glob(f"{STATE_PREFIX}*.json*"):
        path.unlink(missing_ok=True)


def online_resume_warnings(suite: Suite, folder: Path) -> list[str]:
    """A warning when a run resumed without batch mode finds an earlier run's batches."""
    if suite.batch or not any(folder.glob(f"{STATE_PREFIX}*.json")):
        return []
    return [
        f"{folder} holds batches of an earlier --batch run ({STATE_PREFIX}*.json), but this "
        "run sent its calls online; resume with --batch to collect those batches' answers"
    ]


def _route(
    client: Any, collector: BatchCollector, *, retry_online: bool
) -> Callable[[ModelRequest], Awaitable[Any]]:
    """A ``complete`` for ``client`` that goes through ``collector``.

    With ``retry_online``, a call the batch could not answer (expired, errored, a batch the
    provider refused or that could not be polled) is sent once more through the client's own
    ``complete``, as `BatchCollector` does with its ``retry_online``.
    """
    online = client.complete

    async def complete(request: ModelRequest) -> Any:
        try:
            return await collector.complete(request)
        except ModelError as exc:
            if not retry_online:
                raise
            logger.warning("%s; retrying it online", exc)
        return await online(request)

    return complete


def _restore(client: Any, previous: Any) -> None:
    """Undo `_route`: the client's ``complete`` is what it was before the run."""
    if previous is None:
        vars(client).pop("complete", None)
    else:
        vars(client)["complete"] = previous


def _has_batch_api(client: Any) -> bool:
    """The client's provider has a batch API (the provider protocol's ``batch_api()``)."""
    from agentjudge.models._http import HTTPModelClient

    return isinstance(client, HTTPModelClient) and client.batch_api() is not None


class BatchMode:
    """The collectors of one run's model clients; ``async with`` it around the cases.

    Args:
        clients: The model clients found in the judges.
        folder: The run's output folder (the state files go there).
        retry_online: Send a request that failed inside a batch once more online.
        poll_interval: Seconds before a batch's second poll.
    """

    def __init__(
        self,
        clients: list[Any],
        folder: Path,
        *,
        retry_online: bool,
        poll_interval: float,
        linger: float = LINGER,
    ) -> None:
        from agentjudge.models import BatchCollector

        self.pairs: list[tuple[Any, BatchCollector]] = []
        self.warnings: list[str] = []
        taken: set[str] = set()
        for client in clients:
            if not _has_batch_api(client):
                name = getattr(client, "name", type(client).__name__)
                why = getattr(client, "no_batch_reason", None)
                reason = why() if callable(why) else "it has no batch API"
                self.warnings.append(
                    f"batch mode: model client {name!r} ({type(client).__name__}): {reason}; "
                    "its calls were sent online"
                )
                continue
            collector = BatchCollector(
                client,
                state_path=folder / state_file_name(client.name, taken),
                linger=linger,
                poll_interval=poll_interval,
            )
            self.pairs.append((client, collector))
        self.retry_online = retry_online
        self._stack: AsyncExitStack | None = None

    def check_state_files(self) -> None:
        """Read the state files of an earlier run now, so a damaged one stops the run early.

        Raises:
            ValueError: A state file is not one of its client (the file and field named).
        """
        for _, collector in self.pairs:
            collector._load_state()

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            for client, collector in self.pairs:
                await stack.enter_async_context(collector)
                stack.callback(_restore, client, vars(client).get("complete"))
                route = _route(client, collector, retry_online=self.retry_online)
                vars(client)["complete"] = route
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        assert stack is not None
        return await stack.__aexit__(exc_type, exc, tb)


def batch_mode(suite: Suite, judges: Any, folder: Path) -> BatchMode | None:
    """The `BatchMode` of a run of ``suite`` over ``judges``, or None when not batching."""
    if not suite.batch:
        return None
    return BatchMode(
        find_model_clients(judges),
        folder,
        retry_online=suite.batch_retry_online,
        poll_interval=suite.batch_poll_interval,
        linger=suite.batch_linger,
    )

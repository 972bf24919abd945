"""Running a suite's cases on Ray actors (``backend = "ray"``): past one machine.

The Ray backend is a `CasePool` like the local worker processes (`WorkerPool`), with one Ray
actor per worker slot instead of one process:

* each actor runs `serve_channel`, the very function a local worker process runs (the same
  task, judges, Evaluator, timeouts and retries, ``concurrency`` cases at once), on a thread
  of its own; its `Channel` is a pair of queues the driver fills (`CaseActor.push`) and
  drains (`CaseActor.poll`, finished rows in batches with their aggregates);
* the driver (this process) alone reads the dataset and writes ``results.jsonl`` and
  ``summary.json``, so rows, aggregates, gates and exit codes are those of a local run;
* the driver remembers which chunks each actor holds and which case ids came back. When an
  actor dies (killed, its node lost, the process crashed) a new actor takes its slot and gets
  the chunks again with every id already written marked done: unfinished cases run again,
  finished ones do not. A slot whose actors keep dying (a case that kills its worker) ends
  the run after `MAX_DEATHS` deaths in all, like a worker process that dies;
* a driver that dies leaves a valid results file: ``--resume`` continues it, on this or
  another cluster.

``limits`` and ``max_cost`` hold cluster-wide through a broker actor's leases of tokens
(`_ray_limits`) and dollars (`_ray_budget`); it also holds the model clients' shared rate
controllers (`_ray_rates`). A run without ``limits`` or ``max_cost`` starts it only when an
actor's model client first needs it (the actor asks with a ``("broker",)`` message).

``ray`` is an optional extra (``agentjudge[ray]``), imported here only, when a run asks for it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import queue
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType
from typing import Any

import anyio
import anyio.to_thread

from agentjudge.harness._pipe import Pipe
from agentjudge.harness._processes import (
    Batch,
    WorkerFailed,
    WorkerSpec,
    serve_channel,
    worker_error,
)
from agentjudge.harness._ray_limits import LimitBroker, LimitKeeper
from agentjudge.harness._ray_rates import BrokerPromise
from agentjudge.harness._resolve import RunConfigError
from agentjudge.harness._suite import Suite

__all__ = ["CaseActor", "RayMissing", "RayPool", "import_ray"]

LOCAL_OBJECT_STORE = 100 * 1024 * 1024
"""Bytes of object store a local Ray instance gets (messages are small: rows in batches)."""
POLL_SECONDS = 1.0
"""How long one `CaseActor.poll` call waits for a message."""
START_SECONDS = 120.0
"""How long an actor may take to answer first (scheduling, runtime_env set-up, imports)."""
MAX_DEATHS = 3
"""Actor deaths per worker slot (summed over the run) before the run fails."""
NO_PRESTART: Mapping[str, Any] = MappingProxyType({"prestart_worker_first_driver": False})
"""Ray system config of a local instance: no idle workers started for the first driver
(pass a copy: ``ray.init`` adds its own keys to the dict it is given)."""
ACTOR_THREADS = 4
"""Concurrent method calls per actor (`CaseActor.poll` blocks while chunks are pushed)."""

_Chunk = list[tuple[int, bytes]]


class RayMissing(RunConfigError, ImportError):
    """``backend = "ray"`` was asked for and Ray is not installed."""


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        RayMissing: Ray is not installed; the message says how to install it.
    """
    try:
        import ray
    except ImportError as exc:
        raise RayMissing(
            f'backend = "ray" needs Ray, which is not installed ({exc}): '
            "pip install 'agentjudge[ray]' (or run without --backend ray)"
        ) from exc
    return ray


# ----------------------------------------------------------------------------- actor side
class _Queues:
    """The `Channel` of a worker running in an actor: the driver's pushes and polls."""

    def __init__(self) -> None:
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.outbox: queue.Queue[Any] = queue.Queue()

    def send(self, obj: Any) -> None:
        self.outbox.put(obj)

    def recv(self) -> Any:
        return self.inbox.get()


class CaseActor:
    """One worker slot on Ray (made a Ray actor class by `RayPool`).

    Method calls of a threaded actor may run out of order, so each pushed item carries a
    sequence number and reaches the worker in that order (the spec first).
    """

    def __init__(self, paths: list[str]) -> None:
        sys.path.extend(p for p in paths if p not in sys.path)  # the driver's, on one machine
        self._queues = _Queues()
        self._broker = BrokerPromise(partial(self._queues.send, ("broker",)))
        self._lock = threading.Lock()
        self._next = 0
        self._early: dict[int, Any] = {}
        self._thread = threading.Thread(
            target=serve_channel, args=(self._queues,), name="agentjudge-ray-worker", daemon=True
        )
        self._thread.start()

    def push(self, seq: int, item: Any) -> None:
        """Item ``seq`` for the worker: the spec (0), then chunks, then None (no more)."""
        if seq == 0 and item.keeper is not None:  # it asks for the broker through this actor
            item = replace(item, keeper=item.keeper.on_actor(self._broker))
        with self._lock:
            self._early[seq] = item
            while self._next in self._early:
                self._queues.inbox.put(self._early.pop(self._next))
                self._next += 1

    def poll(self, timeout: float) -> list[Any]:
        """The worker's messages, waiting up to ``timeout`` seconds for the first."""
        outbox = self._queues.outbox
        try:
            messages = [outbox.get(timeout=timeout)]
        except queue.Empty:
            return []
        with contextlib.suppress(queue.Empty):
            while True:
                messages.append(outbox.get_nowait())
        return messages

    def set_broker(self, broker: Any) -> None:
        """The run's broker actor, which this actor asked for (or another one did)."""
        self._broker.deliver(broker)

    def pid(self) -> int:
        """The actor's process id (tests, diagnostics)."""
        return os.getpid()


# ----------------------------------------------------------------------------- driver side
@dataclass
class _Shared:
    """What the slots of one run share: the chunk source and the ids written."""

    chunks: Iterator[_Chunk]
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    exhausted: bool = False
    finished: set[str] = field(default_factory=set)
    deaths: int = 0


@dataclass
class _Held:
    """The chunks one slot holds (across its actors) and their ids not yet back."""

    chunks: dict[int, tuple[_Chunk, set[str]]] = field(default_factory=dict)
    owner: dict[str, int] = field(default_factory=dict)
    count: int = 0

    def add(self, chunk: _Chunk, ids: list[str]) -> None:
        self.count += 1
        self.chunks[self.count] = (chunk, set(ids))
        for case_id in ids:
            self.owner[case_id] = self.count

    def finish(self, case_id: str) -> None:
        key = self.owner.pop(case_id, None)
        if key is None:
            return
        ids = self.chunks[key][1]
        ids.discard(case_id)
        if not ids:
            del self.chunks[key]


class _Slot:
    """The actor currently serving one worker slot, and what it was sent."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.seq = 0
        self.ended = False
        self.started = False

    def push(self, item: Any) -> None:
        self.handle.push.remote(self.seq, item)
        self.seq += 1


class RayPool:
    """The Ray actors of one run (one per worker slot); joins or starts Ray.

    Args:
        suite: The suite (``workers``, ``ray_address``, ``ray_num_cpus``, ``ray_num_gpus``,
            ``ray_runtime_env``).

    Raises:
        RayMissing: Ray is not installed.
    """

    def __init__(self, suite: Suite) -> None:
        ray = import_ray()
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            _init_ray(ray, suite)
            self._owns = True
        options: dict[str, Any] = {
            "num_cpus": suite.ray_num_cpus,
            "num_gpus": suite.ray_num_gpus,
            "max_concurrency": ACTOR_THREADS,
            "max_restarts": 0,
        }
        if suite.ray_runtime_env is not None:
            options["runtime_env"] = suite.ray_runtime_env
        self._paths = local_paths(suite)
        self._options = options
        self._actor_class = ray.remote(CaseActor).options(**options)
        # One small actor holds the cluster's tokens, dollars and rate controllers: from the
        # start when there are leases, else once a model client asks (`_broker_handle`).
        self._limits = (suite.limits, suite.max_cost)
        self._leases = bool(suite.limits) or suite.max_cost is not None
        self._broker: Any = None
        self._broker_lock = threading.Lock()  # two actors may ask at once (worker threads)
        if self._leases:
            self._broker_handle()
        self._born = 0
        self._handles = [self._actor_class.remote(self._paths) for _ in range(suite.workers)]
        self._slots: list[_Slot] = []
        self.cases_in = 0
        """Distinct pending cases handed out (counted here: a dead actor cannot say)."""

    @property
    def handles(self) -> list[Any]:
        """The Ray actor handles now serving the slots (tests kill them)."""
        return [slot.handle for slot in self._slots] or list(self._handles)

    async def run(self, spec: WorkerSpec, chunks: Iterator[_Chunk], batches: Pipe[Batch]) -> None:
        """Hand ``chunks`` out until they run out and every actor is done; closes ``batches``.

        Raises:
            WorkerFailed: an actor's worker raised, or actors kept dying (or `DatasetError` /
                `TaskInterrupted`, re-raised as such).
        """
        shared = _Shared(chunks)
        self._slots = [_Slot(handle) for handle in self._handles]
        try:
            async with anyio.create_task_group() as tg:
                for k in range(len(self._slots)):
                    tg.start_soon(self._serve, k, spec, shared, batches)
        finally:
            batches.close()

    async def _serve(self, k: int, spec: WorkerSpec, shared: _Shared, batches: Pipe[Batch]) -> None:
        held = _Held()
        slot = self._slots[k]
        slot.push(replace(spec, keeper=self._keeper()))
        while True:
            # Until an actor has answered once it may be waiting for resources the cluster
            # does not have: that is an error after START_SECONDS, not a silent hang.
            wait = None if slot.started else START_SECONDS
            get = partial(self._ray.get, slot.handle.poll.remote(POLL_SECONDS), timeout=wait)
            try:
                messages = await anyio.to_thread.run_sync(get, abandon_on_cancel=True)
            except self._ray.exceptions.RayActorError as exc:
                slot = await self._replace(k, spec, shared, held, exc)
                continue
            except self._ray.exceptions.GetTimeoutError:
                raise WorkerFailed(self._not_started(k)) from None
            slot.started = True
            for message in messages:
                if await self._on_message(k, message, spec, shared, held, batches):
                    return

    def _broker_handle(self) -> Any:
        """The run's broker actor, started on first use."""
        with self._broker_lock:
            if self._broker is None:
                broker_class = self._ray.remote(LimitBroker).options(num_cpus=0, max_restarts=0)
                self._broker = broker_class.remote(*self._limits)
            return self._broker

    def _keeper(self) -> LimitKeeper:
        """A lease keeper with a holder name of its own (one per actor)."""
        self._born += 1
        return LimitKeeper(self._broker, f"actor-{self._born}", self._leases)

    def _not_started(self, k: int) -> str:
        options = self._options
        return (
            f"the Ray actor of worker slot {k + 1} did not start within {START_SECONDS:g} s: "
            f"the cluster may lack what one actor reserves (num_cpus={options['num_cpus']:g}, "
            f"num_gpus={options['num_gpus']:g}) or cannot set up its runtime_env; lower "
            "ray_num_cpus / ray_num_gpus or add nodes"
        )

    async def _on_message(
        self,
        k: int,
        message: tuple[Any, ...],
        spec: WorkerSpec,
        shared: _Shared,
        held: _Held,
        batches: Pipe[Batch],
    ) -> bool:
        kind = message[0]
        if kind == "rows":
            for line in message[1].splitlines():
                case_id = json.loads(line)["id"]
                held.finish(case_id)
                shared.finished.add(case_id)
            await batches.put((message[1], message[2]))
        elif kind == "more":
            for _ in range(message[1]):
                await self._hand_out(self._slots[k], spec, shared, held)
        elif kind == "broker":  # a model client of this actor needs the shared controllers
            broker = await anyio.to_thread.run_sync(self._broker_handle)
            self._slots[k].handle.set_broker.remote(broker)
        elif kind == "done":
            return True
        else:
            raise worker_error(message[1], message[2], f"Ray actor of worker slot {k + 1}")
        return False

    async def _hand_out(self, slot: _Slot, spec: WorkerSpec, shared: _Shared, held: _Held) -> None:
        if slot.ended:
            return
        async with shared.lock:
            chunk = (
                None
                if shared.exhausted
                else await anyio.to_thread.run_sync(next, shared.chunks, None)
            )
            shared.exhausted = chunk is None
            if chunk is not None:
                done = spec.done
                ids = [c.id for c in spec.dataset.parse_chunk(chunk) if c.id not in done]
                self.cases_in += len(ids)
                held.add(chunk, ids)
        slot.push(chunk)
        slot.ended = chunk is None

    async def _replace(
        self, k: int, spec: WorkerSpec, shared: _Shared, held: _Held, exc: BaseException
    ) -> _Slot:
        """A new actor for slot ``k``, given the chunks the dead one had not finished."""
        shared.deaths += 1
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if shared.deaths > MAX_DEATHS * len(self._slots):
            raise WorkerFailed(
                f"Ray actor of worker slot {k + 1} died, the {shared.deaths}th actor death of "
                f"this run ({cause}); the run stops (run again with --resume to continue)"
            )
        handle = await anyio.to_thread.run_sync(self._actor_class.remote, self._paths)
        slot = _Slot(handle)
        self._slots[k] = slot
        # Every id written so far counts as done for the new actor, so a chunk it gets again
        # runs only the cases whose rows never came back.
        slot.push(replace(spec, done=spec.done | frozenset(shared.finished), keeper=self._keeper()))
        for chunk, _ in list(held.chunks.values()):
            slot.push(chunk)
        return slot

    def close(self) -> None:
        """Kill the actors, and shut down the local Ray instance this pool started."""
        ray = self._ray
        handles = [
            *self._handles,
            *self.handles,
            *([self._broker] if self._broker is not None else []),
        ]
        for handle in {id(h): h for h in handles}.values():
            with contextlib.suppress(Exception):
                ray.kill(handle)
        if self._owns:
            ray.shutdown()


def local_paths(suite: Suite) -> list[str]:
    """This process's ``sys.path`` for actors on this machine (no ``ray_address``), else [].

    The actors add it to theirs, so they import what a local worker process would; on a
    cluster, ship code with ``ray_runtime_env`` instead.
    """
    if suite.ray_address is not None:
        return []
    return list(dict.fromkeys(os.path.abspath(p or os.curdir) for p in sys.path))


def _init_ray(ray: Any, suite: Suite) -> None:
    """Join the cluster at ``suite.ray_address``, or start a local Ray instance."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray's own log lines (instance started, handlers) stay out of the run's stderr: a run on
    # Ray reads like a local one. Its errors still show.
    quiet = {"log_to_driver": False, "logging_level": logging.ERROR}
    if suite.ray_address is not None:
        ray.init(address=suite.ray_address, **quiet)
        return
    cpus = max(os.cpu_count() or 1, math.ceil(suite.workers * suite.ray_num_cpus))
    ray.init(
        num_cpus=cpus,
        include_dashboard=False,
        object_store_memory=LOCAL_OBJECT_STORE,
        # Asked for loopback; Ray 2.60 still registers the interface address and listens on
        # every interface (docs/how-to/scale-out.md says so)
        _node_ip_address="127.0.0.1",
        # Ray would start an idle interpreter per CPU (up to the core count) for the first
        # driver; the actors start their own. 8 CPUs: 11.5 -> 8.2 s of CPU for a 2-actor run.
        _system_config=dict(NO_PRESTART),
        **quiet,
    )

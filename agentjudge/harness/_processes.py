"""Parallel runs: cases run in worker processes, the results file is written by this one.

With ``workers = N > 1`` the run starts N worker processes (``multiprocessing`` "spawn": a
fresh interpreter each, safe with threads and event loops) as soon as the run is configured,
so their start-up overlaps the dataset's validation pass. Then:

* this process reads the dataset in raw chunks (as an in-process run does) and hands them out
  on demand: each worker asks for its next chunk when it has parsed one, with two chunks in
  flight per worker, so a fast worker takes more chunks than a slow one;
* each worker parses its chunks, runs every pending case through its own task and Evaluator
  (``concurrency`` cases at once, the same pipeline as an in-process run, `CaseRunner`) and
  sends back batches of encoded results lines together with the aggregates of those rows;
* this process appends each batch to ``results.jsonl`` (flushed at once, as always) and folds
  its aggregates in, so the summary covers exactly the rows in the file;
* each worker's last message says how many cases it took in: the run compares their sum with
  the rows it wrote (`WorkerPool.cases_in`), so a case that vanished is never passed over.

Messages travel over one `multiprocessing.connection.Connection` per worker, received on a
worker thread so the event loop never blocks. A worker that fails (an exception, or a process
that dies) aborts the run like a failure in-process would: the results file keeps every row
received so far and ``--resume`` continues. Workers that are still running when the run ends
or is cancelled are terminated.

The task and the judges reach the workers by reference (the suite's ``module:attr``), or
pickled when they were passed as objects (module-level functions and classes pickle by name;
closures and lambdas do not, which is a configuration error naming what to change). Per-case
telemetry (spans, metrics) is recorded only by in-process runs.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

import anyio
import anyio.to_thread

from agentjudge._compat import ANYIO_ASYNCIO_BACKEND
from agentjudge.exceptions import AgentJudgeError, DatasetError
from agentjudge.harness._clients import close_model_clients, find_model_clients
from agentjudge.harness._dataset import Dataset
from agentjudge.harness._pipe import Pipe
from agentjudge.harness._pipeline import CaseRunner, JudgeInterrupted, fold_rows, new_pipes
from agentjudge.harness._pricing import prices_applied, run_budget, suite_price_table
from agentjudge.harness._resolve import build_evaluator, resolve_judges, resolve_task
from agentjudge.harness._suite import Suite
from agentjudge.harness._summary import RunAggregate
from agentjudge.harness._task import TaskInterrupted, TaskRunner, describe_error
from agentjudge.models._adaptive import share_controllers

__all__ = [
    "Batch",
    "CasePool",
    "Channel",
    "WorkerFailed",
    "WorkerPool",
    "WorkerSpec",
    "pickled",
    "serve_channel",
    "worker_error",
]

CHUNKS_IN_FLIGHT = 2
"""Dataset chunks a worker holds at once (one being run, one ready)."""

Batch = tuple[str, RunAggregate]
"""What a worker sends back: results lines (concatenated) and the aggregates of those rows."""

_Chunk = list[tuple[int, bytes]]


class WorkerFailed(AgentJudgeError):
    """A worker process failed or died; the message says which and why."""


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs, sent to it once the run is set up."""

    suite: Suite
    dataset: Dataset
    task: bytes | None
    """The pickled task object, or None to resolve ``suite.task``."""
    judges: bytes | None
    """The pickled judges, or None to resolve ``suite.judges``."""
    done: frozenset[str]
    """Ids already in the results file (resume)."""
    judge_names: tuple[str, ...]
    keeper: Any = None
    """Makes the budget and sizes it and the Evaluator's resource limiters while cases run
    (``_ray_limits.LimitKeeper``: cluster-wide limits and ``max_cost`` on Ray), or None."""


def pickled(obj: Any, what: str, workers: int, *, ray: bool = False) -> bytes:
    """``obj`` pickled for the worker processes (``ray``: for the Ray actors).

    Raises:
        ValueError: it cannot be pickled; the message says what to pass instead.
    """
    where = 'backend = "ray"' if ray else f"workers = {workers}"
    workers_are = "Ray actors" if ray else "worker processes"
    one = 'workers = 1 without backend = "ray"' if ray else "workers = 1"
    advice = (
        f"Define the {what} at module level in an importable module or script (closures and "
        f"lambdas cannot be pickled), or name it by reference in the suite (module:attr), or "
        f"use {one}"
    )
    try:
        blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ValueError(
            f"{where} runs cases in {workers_are}, which receive the {what} "
            f"pickled, and it cannot be: {type(exc).__name__}: {exc}. {advice}"
        ) from exc
    main = sys.modules.get("__main__")
    if b"__main__" in blob and ray:
        # A Ray actor never imports the driver's script (a spawned process re-runs it).
        raise ValueError(
            f"{where}: the {what} is defined in __main__ (the script or session that runs the "
            f"suite), which Ray actors cannot import. Define it in an importable module "
            f"(shipped with ray_runtime_env) or name it by reference in the suite (module:attr)"
        )
    if b"__main__" in blob and getattr(main, "__file__", None) is None:
        # Pickled by reference to __main__, which a spawned worker cannot import when it is
        # an interactive session (a notebook, the REPL, python -c).
        raise ValueError(
            f"{where}: the {what} is defined in an interactive session (__main__ "
            f"has no file), which worker processes cannot import. {advice}"
        )
    return blob


# ----------------------------------------------------------------------------- worker side
class Channel(Protocol):
    """Where a worker receives its spec and chunks and sends its messages.

    A `Connection` (a local worker process) or the queues of a Ray actor (``_ray``).
    """

    def send(self, obj: Any) -> None:
        """Send one message (blocking)."""

    def recv(self) -> Any:
        """Receive the next message (blocking)."""


def worker_main(conn: Connection, environ: dict[str, str] | None = None) -> None:
    """Entry point of a worker process: wait for the spec, run chunks until told to stop.

    ``environ`` is the run's environment when the worker started: a worker forked from the
    forkserver would otherwise see the environment the forkserver started with.
    """
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    # Ctrl-C reaches the whole process group: the run's own process handles it (and stops the
    # workers), so a worker ignores it instead of dying mid-batch with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not serve_channel(conn):
        raise SystemExit(1)


def serve_channel(conn: Channel) -> bool:
    """The worker side of a parallel run: receive the spec, run chunks until told to stop.

    Every worker (a local process or a Ray actor) runs cases through this one function.
    Returns False after reporting a failure as an ``("error", name, text)`` message.
    """
    try:
        spec = conn.recv()
        anyio.run(_serve, conn, spec)
    except BaseException as exc:  # report everything, KeyboardInterrupt included
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        with contextlib.suppress(OSError, ValueError, pickle.PicklingError):
            conn.send(("error", type(exc).__name__, describe_error(exc)))
        return False
    return True


async def _serve(conn: Channel, spec: WorkerSpec) -> None:
    with prices_applied(suite_price_table(spec.suite)):
        await _serve_cases(conn, spec)


async def _serve_cases(conn: Channel, spec: WorkerSpec) -> None:
    suite = spec.suite
    task = pickle.loads(spec.task) if spec.task is not None else resolve_task(suite)
    judges = pickle.loads(spec.judges) if spec.judges is not None else resolve_judges(suite)
    keeper = spec.keeper
    budget = run_budget(suite) if keeper is None else keeper.budget(suite.max_cost)
    runner = CaseRunner(
        TaskRunner(task, timeout=suite.task_timeout, threads=suite.concurrency),
        build_evaluator(suite, judges, budget=budget),
        None,
    )
    lock = anyio.Lock()

    async def send(message: tuple[Any, ...]) -> None:
        async with lock:
            await anyio.to_thread.run_sync(conn.send, message)

    cases, rows = new_pipes(suite.concurrency)
    taken = 0

    async def feed() -> None:
        nonlocal taken
        done, parse = spec.done, spec.dataset.parse_chunk
        try:
            await send(("more", CHUNKS_IN_FLIGHT))
            while True:
                chunk = await anyio.to_thread.run_sync(conn.recv, abandon_on_cancel=True)
                if chunk is None:
                    return
                for case in parse(chunk):
                    if case.id not in done:
                        taken += 1
                        try:  # noqa: SIM105 - free in this hot loop, unlike suppress()
                            await cases.put(case)
                        except anyio.ClosedResourceError:
                            pass  # the case workers are gone: keep counting (accounting)
                await send(("more", 1))
        finally:
            cases.close()

    async def ship() -> None:
        while (first := await rows.get()) is not None:
            batch = [first, *rows.take_all()]
            aggregate = RunAggregate(spec.judge_names, seed=suite.seed)
            fold_rows(aggregate, batch)
            await send(("rows", "".join([item[0] for item in batch]), aggregate))

    if keeper is not None:  # the model clients obey the cluster's rate controllers
        share_controllers(keeper.controller)
    try:
        async with anyio.create_task_group() as outer:
            if keeper is not None:  # limiters and budget sized before the first case starts
                await outer.start(keeper.keep, runner.evaluator)
            async with anyio.create_task_group() as tg:
                tg.start_soon(feed)
                tg.start_soon(ship)
                await runner.run_workers(cases, rows, suite.concurrency)
            outer.cancel_scope.cancel()
    finally:
        share_controllers(None)
        await runner.close_task()
        for warning in await close_model_clients(find_model_clients(judges)):  # its own copies
            print(f"agentjudge: warning: worker: {warning}", file=sys.stderr)
    await send(("done", taken))


# ----------------------------------------------------------------------------- run side
_ERRORS: dict[str, Callable[[str], AgentJudgeError]] = {
    "DatasetError": DatasetError,
    "TaskInterrupted": TaskInterrupted,
    "JudgeInterrupted": JudgeInterrupted,
}
"""Failures re-raised as themselves (message unchanged), as an in-process run raises them."""


def worker_error(name: str, text: str, who: str) -> AgentJudgeError:
    """The error an ``("error", name, text)`` message from worker ``who`` stands for."""
    error = _ERRORS.get(name)
    if error is not None:
        return error(text.removeprefix(f"{name}: "))
    return WorkerFailed(f"{who} failed: {text}")


class CasePool(Protocol):
    """Where a parallel run's cases run: `WorkerPool`, or ``_ray.RayPool``."""

    cases_in: int
    """Cases the workers took in (known once `run` returned)."""

    async def run(self, spec: WorkerSpec, chunks: Iterator[_Chunk], batches: Pipe[Batch]) -> None:
        """Hand ``chunks`` out until they run out and every worker is done; closes ``batches``."""

    def close(self) -> None:
        """Stop the workers (blocking)."""


# What a worker imports before its first case, imported once by the forkserver: the harness,
# and what its first ``anyio.run`` and thread call import (anyio's asyncio backend, ``queue``;
# ~50 ms of CPU in each worker otherwise).
_WORKER_PRELOAD = [
    "agentjudge.harness._processes",
    "agentjudge.harness._run",
    ANYIO_ASYNCIO_BACKEND,
    "queue",
]


def _worker_context() -> Any:
    """Where worker processes come from: forked from a forkserver that imported the harness.

    A spawned worker starts an interpreter and imports the harness itself (about 0.5 s of CPU
    each); forked from the forkserver it starts in milliseconds with the harness imported, and,
    unlike a plain fork of the run's process, without its threads and event loop. The user's
    modules (task, judges, suite references) are imported in each worker, as with spawn.
    Platforms without a forkserver (Windows) spawn.
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_WORKER_PRELOAD)
    return context


class WorkerPool:
    """The worker processes of one parallel run.

    Args:
        count: How many workers.
    """

    def __init__(self, count: int) -> None:
        context = _worker_context()
        self._conns: list[Connection] = []
        self._procs: list[BaseProcess] = []
        for k in range(count):
            mine, theirs = context.Pipe(duplex=True)
            proc = context.Process(
                target=worker_main,
                args=(theirs, dict(os.environ)),
                name=f"agentjudge-worker-{k + 1}",
                daemon=True,
            )
            proc.start()
            theirs.close()
            self._conns.append(mine)
            self._procs.append(proc)
        self._done: set[int] = set()
        self.cases_in = 0
        """Cases the workers took in (summed from their last messages)."""

    async def run(
        self,
        spec: WorkerSpec,
        chunks: Iterator[_Chunk],
        batches: Pipe[Batch],
    ) -> None:
        """Hand ``chunks`` out until they run out and every worker is done; closes ``batches``.

        Raises:
            WorkerFailed: a worker raised or died (or `DatasetError` / `TaskInterrupted`,
                re-raised as such).
        """
        lock = anyio.Lock()
        exhausted = False

        async def next_chunk() -> _Chunk | None:
            nonlocal exhausted
            async with lock:
                if exhausted:
                    return None
                chunk = await anyio.to_thread.run_sync(next, chunks, None)
                exhausted = chunk is None
                return chunk

        async def serve(k: int, conn: Connection) -> None:
            # Chunks are sent by a task of their own: a send blocks until the worker reads,
            # and meanwhile the worker's results must still be received.
            requests: Pipe[int] = Pipe(64)

            async def hand_out() -> None:
                try:
                    await anyio.to_thread.run_sync(conn.send, spec, abandon_on_cancel=True)
                    while (count := await requests.get()) is not None:
                        for _ in range(count):
                            chunk = await next_chunk()
                            await anyio.to_thread.run_sync(conn.send, chunk, abandon_on_cancel=True)
                            if chunk is None:
                                return
                except OSError:  # BrokenPipeError: the worker is gone; say so, not the pipe
                    raise await self._died(k) from None

            async with anyio.create_task_group() as tg:
                tg.start_soon(hand_out)
                try:
                    await receive(k, conn, requests)
                finally:
                    requests.close()

        async def receive(k: int, conn: Connection, requests: Pipe[int]) -> None:
            while True:
                try:
                    message = await anyio.to_thread.run_sync(conn.recv, abandon_on_cancel=True)
                except (EOFError, OSError):
                    raise await self._died(k) from None
                if await self._on_message(k, message, requests, batches):
                    return

        try:
            async with anyio.create_task_group() as tg:
                for k, conn in enumerate(self._conns):
                    tg.start_soon(serve, k, conn)
        finally:
            batches.close()

    async def _died(self, k: int) -> WorkerFailed:
        """The error for worker ``k`` whose pipe broke: it exited (waited for up to 1 s)."""
        proc = self._procs[k]
        await anyio.to_thread.run_sync(proc.join, 1.0, abandon_on_cancel=True)
        return WorkerFailed(
            f"worker process {k + 1} exited unexpectedly (exit code {proc.exitcode})"
        )

    async def _on_message(
        self, k: int, message: tuple[Any, ...], requests: Pipe[int], batches: Pipe[Batch]
    ) -> bool:
        """Act on one message from worker ``k``; True when it said it is done.

        Raises:
            WorkerFailed: the worker reported a failure (or the error it names, re-raised).
        """
        kind = message[0]
        if kind == "rows":
            await batches.put((message[1], message[2]))
        elif kind == "more":
            await requests.put(message[1])
        elif kind == "done":
            self.cases_in += message[1]
            self._done.add(k)
            return True
        else:
            raise worker_error(message[1], message[2], f"worker process {k + 1}")
        return False

    def close(self) -> None:
        """Let finished workers exit and terminate the others (blocking, about a second)."""
        for k, proc in enumerate(self._procs):
            if k in self._done:
                proc.join(2.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(1.0)
            if proc.is_alive():  # pragma: no cover - our workers do not ignore SIGTERM
                proc.kill()
                proc.join()
        for conn in self._conns:
            conn.close()

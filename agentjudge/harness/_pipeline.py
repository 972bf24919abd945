"""The per-case pipeline shared by an in-process run and each worker process of a parallel run.

A `CaseRunner` owns the task, the Evaluator and the telemetry recorder; `CaseRunner.work`
is one worker: it takes cases from a `Pipe`, runs the task, judges the output and puts the
encoded results line (with the verdict, for the aggregates) on another pipe.

A judge raising KeyboardInterrupt or SystemExit stops the run as `JudgeInterrupted`, an ordinary
exception: left as they are, asyncio lets those two escape the event loop without unwinding the
other tasks, so rows already finished would never be written and the process could hang.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import anyio
import anyio.lowlevel

from agentjudge.core import (
    Context,
    ExecutionStatus,
    Message,
    TrajectoryError,
    Verdict,
    as_trajectory,
)
from agentjudge.engine import Evaluator
from agentjudge.exceptions import AgentJudgeError
from agentjudge.harness._case import Case, TaskOutput
from agentjudge.harness._pipe import Pipe
from agentjudge.harness._results import encode_case
from agentjudge.harness._summary import RunAggregate
from agentjudge.harness._task import TaskError, TaskRunner, describe_error
from agentjudge.harness._telemetry import Telemetry

__all__ = [
    "YIELD_EVERY",
    "CaseRunner",
    "Finished",
    "JudgeInterrupted",
    "case_context",
    "case_messages",
    "fold_rows",
    "new_pipes",
]

YIELD_EVERY = 0.002
"""Seconds a worker runs cases that never suspend before it lets other tasks in."""

Finished = tuple[str, Verdict | None, str | None, Any]
"""A finished case: its results line, its verdict (None for an error row), the task error,
its human label (None: unlabelled)."""
CASE_BUFFER = 1024
"""Parsed cases waiting for a worker (at least 2 x concurrency)."""
ROW_BUFFER = 2048
"""Finished rows waiting for the writer (at least 4 x concurrency)."""


class JudgeInterrupted(AgentJudgeError):
    """A judge raised KeyboardInterrupt or SystemExit: the run stops (chained as the cause)."""


def _interrupted(exc: BaseException, case_id: str) -> JudgeInterrupted | None:
    """`JudgeInterrupted` when ``exc`` is (or a group holding) KeyboardInterrupt / SystemExit."""
    if isinstance(exc, BaseExceptionGroup):
        match = exc.subgroup((KeyboardInterrupt, SystemExit))
        if match is None:
            return None
        exc = match
        while isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
    if not isinstance(exc, KeyboardInterrupt | SystemExit):
        return None
    error = JudgeInterrupted(f"a judge raised {describe_error(exc)} on case {case_id!r}")
    error.__cause__ = exc
    return error


def new_pipes(concurrency: int) -> tuple[Pipe[Case], Pipe[Finished]]:
    """The case pipe and the row pipe around ``concurrency`` workers.

    Generous bounds: a hop to a worker thread (reading a chunk, writing a batch, a message to
    or from a worker process) can take a GIL switch interval (5 ms) while the loop is busy; the
    pipes keep the workers fed meanwhile. Memory stays bounded: ~1 KiB per waiting case,
    ~2 KiB per waiting row.
    """
    return Pipe(max(2 * concurrency, CASE_BUFFER)), Pipe(max(4 * concurrency, ROW_BUFFER))


def fold_rows(aggregate: RunAggregate, batch: list[Finished]) -> None:
    """Fold finished cases into ``aggregate`` (what the rows they are written as amount to)."""
    add = aggregate.add_case
    for _, verdict, error, human in batch:
        add(verdict, error, human)


def case_messages(case: Case, output: Any) -> tuple[Message, ...]:
    """The trajectory judges see: the one the task returned, else the row's ``messages``.

    The task's output holds a trajectory when it is a list of messages, a mapping with
    ``"messages"`` or a `TaskOutput` with messages. One that cannot be read is left out here
    (judges reading ``ctx.output`` report it, naming the message); the row's own messages were
    checked when the dataset was read.
    """
    if type(output) is not str:
        try:
            found = as_trajectory(output)
        except TrajectoryError:
            found = None
        if found:
            return found
    extra = case.model_extra
    if extra and "messages" in extra:
        return as_trajectory(extra["messages"]) or ()
    return ()


def case_context(
    case: Case, output: Any, status: ExecutionStatus, started: datetime, duration: float
) -> Context:
    """The `Context` judges see for one case (``metadata`` gains ``case_id``).

    Built without validation: every value is already valid (a case's metadata is a JSON
    object, so its keys are strings); equal to ``Context(...)`` with the same values.
    """
    metadata = dict(case.metadata)
    metadata["case_id"] = case.id
    return Context.fast(
        input=case.input,
        output=output,
        expected=case.expected,
        messages=case_messages(case, output),
        workspace=None,
        status=status,
        started_at=started,
        duration=timedelta(seconds=duration),
        error=None,
        metadata=MappingProxyType(metadata),
    )


class CaseRunner:
    """Runs cases: task, judges, encoded results line.

    Args:
        task: The system under test.
        evaluator: The judges.
        telemetry: Span/metric recorder (None: none).
    """

    def __init__(self, task: TaskRunner, evaluator: Evaluator, telemetry: Telemetry | None) -> None:
        self.task = task
        self.evaluator = evaluator
        self.telemetry = telemetry
        self._next_yield = 0.0

    async def finish_case(
        self,
        case: Case,
        span: Any,
        output: Any,
        error: str | None,
        started: datetime,
        duration: float,
    ) -> Finished:
        """Judge a case whose task has finished and encode its results line."""
        telemetry = self.telemetry
        head: dict[str, Any] = {
            "input": case.input,
            "output": output,
            "expected": case.expected,
            "metadata": case.metadata,
        }
        extra = case.model_extra
        if extra:
            head["extra"] = extra
        if case.human is not None:  # the person's label, for agreement (judges never see it)
            head["human"] = case.human
        verdict = None
        if error is None:
            status = ExecutionStatus.SUCCESS
            if isinstance(output, TaskOutput) and output.refused:
                status = ExecutionStatus.REFUSED
            ctx = case_context(case, output, status, started, duration)
            try:
                verdict = await self.evaluator.verdict(ctx)
            except (KeyboardInterrupt, SystemExit, BaseExceptionGroup) as exc:
                interrupted = _interrupted(exc, case.id)
                if interrupted is None:
                    raise
                raise interrupted from exc
        if telemetry is not None:
            telemetry.end_case(span, verdict, error)
        frames = error.traceback if isinstance(error, TaskError) else None
        line = encode_case(case.id, head, verdict, duration, error, frames)
        return line, verdict, error, case.human

    async def work(self, cases: Pipe[Case], rows: Pipe[Finished]) -> None:
        """Run cases until the pipe is drained.

        The cases run inside one scope, ``guard``, that carries the running task's timeout
        (`TaskRunner.call_guarded`): a scope per case would cost more than an instant case.
        When a task times out, the guard catches the cancellation, the case is written as a
        timeout error row and a new guard takes over. Workers whose cases never suspend would
        keep the loop to themselves until a pipe blocks them: they yield every few
        milliseconds (one turn for all of them) so the feeder, the writer and the progress
        display keep up.
        """
        task, telemetry = self.task, self.telemetry
        while True:
            with anyio.CancelScope() as guard:
                while (case := await cases.get()) is not None:
                    span = None if telemetry is None else telemetry.start_case(case.id)
                    started = datetime.now(UTC)
                    t0 = time.perf_counter()
                    output, error = await task.call_guarded(case, guard)
                    duration = time.perf_counter() - t0
                    if guard.cancel_called:
                        break  # the task returned after its timeout struck
                    await rows.put(
                        await self.finish_case(case, span, output, error, started, duration)
                    )
                    # One deadline for all workers: the next one to run takes over the rest of
                    # the turn instead of yielding after a single case of its own.
                    if (now := time.perf_counter()) >= self._next_yield:
                        self._next_yield = now + YIELD_EVERY
                        await anyio.lowlevel.checkpoint()
                else:
                    return
            # Only reached when the task of ``case`` timed out.
            assert case is not None
            duration = time.perf_counter() - t0
            await rows.put(
                await self.finish_case(case, span, None, task.timeout_error(), started, duration)
            )

    async def run_workers(self, cases: Pipe[Case], rows: Pipe[Finished], count: int) -> None:
        """``count`` workers until the cases are drained; closes both pipes when they end."""
        try:
            async with anyio.create_task_group() as workers:
                for _ in range(count):
                    workers.start_soon(self.work, cases, rows)
        finally:
            rows.close()
            cases.close()

    async def close_task(self) -> None:
        """Await the task's ``aclose()`` if it has one (shielded: runs even when cancelled)."""
        close = getattr(self.task.fn, "aclose", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await close()

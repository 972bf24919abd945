"""Running a suite: dataset -> task -> judges -> results file -> summary, gates, baseline.

The pipeline is a fixed pool of ``concurrency`` worker tasks (no task per case): a feeder reads
raw chunks of the dataset on a worker thread, parses them and hands cases over a bounded
`Pipe`; each worker runs the task, builds the `Context`, awaits ``Evaluator.verdict`` inline
and passes the encoded row to the one writer, which appends whatever has finished in one
write + flush on a worker thread and folds those rows into the aggregates. Memory stays flat
however long the dataset is (apart from the set of ids, kept for duplicate checks and resume).

Nothing is lost silently: the run counts the cases it hands out and the rows it writes, and a
run where they differ ends "aborted" naming the missing ids (`CasesLost`), never "completed".
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

import anyio
import anyio.to_thread

from agentjudge.exceptions import AgentJudgeError
from agentjudge.harness._accounting import CasesLost, lost_message, missing_ids
from agentjudge.harness._agreement import jury_groups
from agentjudge.harness._baseline import check_baseline, load_summary
from agentjudge.harness._batch_mode import (
    batch_mode,
    batch_settings,
    case_slots,
    online_resume_warnings,
    remove_state_files,
)
from agentjudge.harness._case import Case
from agentjudge.harness._clients import close_model_clients, find_model_clients
from agentjudge.harness._cost import budget_outcome, rerun_for_budget
from agentjudge.harness._dataset import Dataset, display_path, limit_rows
from agentjudge.harness._gates import Gate, conclude, parse_gate, resolve_gate_subjects
from agentjudge.harness._pipe import Pipe
from agentjudge.harness._pipeline import CaseRunner, Finished, case_context, fold_rows, new_pipes
from agentjudge.harness._pricing import prices_applied, run_budget, suite_price_table
from agentjudge.harness._progress import ProgressState, render_progress
from agentjudge.harness._resolve import (
    RunConfigError,
    build_evaluator,
    check_model_keys,
    resolve_judges,
    resolve_task,
    root_jury_name,
)
from agentjudge.harness._results import scan_results
from agentjudge.harness._suite import Suite
from agentjudge.harness._summary import DatasetInfo, RunAggregate, RunSummary, resume_warnings
from agentjudge.harness._task import TaskRunner
from agentjudge.harness._telemetry import Telemetry
from agentjudge.harness._text import plural
from agentjudge.harness._writer import (
    RESERVE_FILE,
    ResultsWriter,
    SpaceReserve,
    SummaryFile,
    WriteFailed,
    drop_rows,
)

if TYPE_CHECKING:  # worker processes: imported by the parallel runs that start them
    from agentjudge.harness._processes import Batch, CasePool, WorkerSpec

__all__ = [
    "CasesLost",
    "RunAborted",
    "RunConfigError",
    "build_evaluator",
    "case_context",
    "resolve_judges",
    "resolve_task",
    "run_suite",
]

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
BATCH_BUFFER = 8
"""Batches of results lines from worker processes waiting for the writer."""


class RunAborted(AgentJudgeError):
    """The run started and then failed; the cause is chained (``__cause__``).

    The results file holds every case finished before the failure and ``summary.json`` says
    ``"status": "aborted"``; run again with ``resume=True`` to continue.
    """


# ----------------------------------------------------------------------------- the run
def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id(moment: datetime) -> str:
    """``YYYYmmddTHHMMSSZ-<8 hex>``: sortable, and unique even for runs in the same second."""
    return f"{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


class _Run:
    """State of one invocation."""

    def __init__(
        self,
        suite: Suite,
        *,
        out: Path,
        resume: bool,
        overwrite: bool,
        progress: Literal["auto", "rich", "plain", "off"],
        progress_interval: float,
        progress_stream: TextIO | None,
        telemetry: Telemetry | None,
        optional_gates: Collection[str] = (),
    ) -> None:
        self.suite = suite
        self.optional_gates = optional_gates
        self.out = out
        self.results_path = out / RESULTS_FILE
        self.summary_path = out / SUMMARY_FILE
        self.resume = resume
        self.overwrite = overwrite
        self.progress_mode = progress
        self.progress_interval = progress_interval
        self.progress_stream = progress_stream
        self.telemetry = telemetry
        self.started = _now()
        self.run_id = new_run_id(self.started)
        self.cases_in = 0
        """Cases handed out by this invocation (the accounting's "in")."""
        self.reserve = SpaceReserve(out / RESERVE_FILE)
        """Space for the summary on a full disk (held from `prepare_files` to the end)."""
        self.summary_file = SummaryFile(self.summary_path, self.reserve)

    # ------------------------------------------------------------------ setup
    def prepare_config(self, task: Any = None, judges: Any = None) -> None:
        """Settings, imports and the Evaluator: everything that can fail before I/O starts."""
        suite = self.suite
        if suite.dataset is None:
            raise RunConfigError(
                'no dataset given: set dataset = "file.jsonl" in the suite file or pass --dataset'
            )
        self.gates: list[Gate] = [parse_gate(g) for g in suite.gates]
        self.baseline = None
        if suite.baseline is not None:
            try:
                self.baseline = load_summary(suite.path(suite.baseline))
            except ValueError as exc:
                raise RunConfigError(f"baseline: {exc}") from exc
        elif suite.max_regression is not None or suite.max_flips is not None:
            raise RunConfigError(
                "max_regression / max_flips need a baseline: pass --baseline SUMMARY "
                '(or set baseline = "..." in the suite file)'
            )
        # A parallel run's workers resolve the suite's references themselves; objects given
        # here reach them pickled (checked now, so an unpicklable one is a config error).
        self.task_blob = self.judges_blob = None
        if judges is not None and suite.calibrated:  # the suite's settings apply to them too
            from agentjudge.harness._calibrate import cascade_settings  # calibrated suites only

            judges = cascade_settings(suite, judges)
        try:
            if suite.out_of_process:  # parallel runs only: loads the worker processes' module
                from agentjudge.harness._processes import pickled

                ray = suite.backend == "ray"
                if task is not None:
                    self.task_blob = pickled(task, "task", suite.workers, ray=ray)
                if judges is not None:
                    self.judges_blob = pickled(judges, "judges", suite.workers, ray=ray)
        except ValueError as exc:
            raise RunConfigError(str(exc)) from exc
        if task is None:
            task = resolve_task(suite)
        self.task = TaskRunner(task, timeout=suite.task_timeout, threads=suite.concurrency)
        self.clients: list[Any] = []  # model clients of judges the harness built: it closes them
        if judges is None:
            judges = resolve_judges(suite)
            self.clients = find_model_clients(judges)
        check_model_keys(task, judges)
        try:
            self.price_table = suite_price_table(suite)
        except ValueError as exc:
            raise RunConfigError(str(exc)) from exc
        self.budget = None if suite.out_of_process else run_budget(suite)
        self.evaluator = build_evaluator(suite, judges, self.telemetry, budget=self.budget)
        self.runner = CaseRunner(self.task, self.evaluator, self.telemetry)
        self.judge_names = list(self.evaluator.judge_names)
        root_jury = root_jury_name(judges)
        juries = jury_groups(
            zip(self.judge_names, self.evaluator.judge_tiers, strict=True),
            self.judge_names,
            root_jury,
        )
        try:
            self.gates, gate_notes = resolve_gate_subjects(
                self.gates,
                self.judge_names,
                baseline=self.baseline is not None,
                juries=juries,
                optional=self.optional_gates,
            )
        except ValueError as exc:
            raise RunConfigError(str(exc)) from exc
        self.aggregate = RunAggregate(self.judge_names, seed=suite.seed)
        self.aggregate.root_jury = root_jury
        self.done_ids: set[str] = set()
        self.rerun_ids: set[str] = set()
        """Cases of the results file whose judgments a budget refused: they run again."""
        self.cost_before = 0.0
        """Dollars of the rows kept from an earlier invocation (resume)."""
        self.resumed = False
        self.warnings: list[str] = [*gate_notes]
        self.batch = batch_mode(suite, judges, self.out)  # None unless suite.batch
        self.warnings += [] if self.batch is None else self.batch.warnings

    def prepare_files(self) -> None:
        """Validate the dataset and set up the output folder (blocking: run on a thread)."""
        suite = self.suite
        assert suite.dataset is not None
        self.dataset = Dataset.open(suite.path(suite.dataset), format=suite.dataset_format)
        self.dataset.require_cases()
        if suite.calibration:  # a calibration run needs human labels
            from agentjudge.harness._calibrate import check_labelled

            check_labelled(suite, self.dataset)
        if self.out.exists() and not self.out.is_dir():
            raise RunConfigError(f"output path exists and is not a folder: {self.out}")
        if self.results_path.exists():
            if self.resume:
                self._load_existing()
                self.warnings += online_resume_warnings(self.suite, self.out)
            elif self.overwrite:
                self.results_path.unlink()
                self.summary_path.unlink(missing_ok=True)
                remove_state_files(self.out)  # an earlier --batch run's batches
            else:
                raise RunConfigError(
                    f"{self.results_path} already exists: pass --resume to continue that run "
                    "or --overwrite to start over (or choose another --out)"
                )
        self.out.mkdir(parents=True, exist_ok=True)
        try:
            if self.batch is not None:
                self.batch.check_state_files()
        except ValueError as exc:
            raise RunConfigError(f"cannot run in batch mode: {exc}") from exc
        self.reserve.hold()  # released by _execute_run, whatever happens

    def _load_existing(self) -> None:
        done = self.done_ids
        aggregate = self.aggregate
        rerun = self.rerun_ids

        def on_row(row: dict[str, Any]) -> None:
            if rerun_for_budget(row):
                rerun.add(row["id"])
                return
            done.add(row["id"])
            aggregate.add_row(row)

        try:
            scan = scan_results(self.results_path, on_row, repair=True)
        except ValueError as exc:
            raise RunConfigError(f"cannot resume: {exc}") from exc
        self.resumed = True
        self.cost_before = aggregate.cost.total.usd
        if rerun:
            drop_rows(self.results_path, rerun)
            self.warnings.append(
                f"{plural(len(rerun), 'case')} whose judgments the budget refused "
                "(BudgetExhausted): removed from the results file, run again"
            )
        if scan.torn_line is not None:
            self.warnings.append(
                f"{self.results_path} line {scan.torn_line} was cut short (a crash?); "
                "it was removed and that case runs again"
            )
        try:
            previous = load_summary(self.summary_path)
        except ValueError:
            return
        self.warnings += resume_warnings(
            previous, self.dataset.sha256, self.suite.task, self.task.name
        )

    # ------------------------------------------------------------------ pipeline
    def pending_total(self) -> int:
        """Cases this invocation will run."""
        rows = (
            self.dataset.rows
            if self.suite.limit is None
            else min(self.suite.limit, self.dataset.rows)
        )
        return max(0, rows - len(self.done_ids))

    async def _feed(self, cases: Pipe[Case]) -> None:
        """Read raw chunks on a worker thread, parse here, hand pending cases to the workers."""
        limit = self.suite.limit
        done = self.done_ids
        seen = 0
        chunks = self.dataset.iter_raw()
        try:
            while limit is None or seen < limit:
                chunk = await anyio.to_thread.run_sync(next, chunks, None)
                if chunk is None:
                    return
                for case in self.dataset.parse_chunk(chunk):
                    seen += 1
                    if limit is not None and seen > limit:
                        return
                    if case.id not in done:
                        self.cases_in += 1
                        try:  # noqa: SIM105 - free in this hot loop, unlike suppress()
                            await cases.put(case)
                        except anyio.ClosedResourceError:
                            # The workers are gone although the run was not cancelled: keep
                            # counting, so that the accounting names every case not run.
                            pass
        finally:
            cases.close()

    async def _write(self, rows: Pipe[Any], fold: Callable[[list[Any]], None]) -> None:
        """Append finished rows in batches until the row pipe is closed and drained.

        Each item's first element is its text (one or more results lines); ``fold`` then
        folds a written batch into the aggregates and the progress counts. Shielded from
        cancellation: it ends when the row pipe is closed and drained (the workers close it
        when they are done, normally or because the run is aborting), so every finished case
        is written, and folded into the aggregates, even on Ctrl-C.
        """
        with anyio.CancelScope(shield=True):
            writer = await anyio.to_thread.run_sync(ResultsWriter, self.results_path)
            try:
                while (first := await rows.get()) is not None:
                    batch = [first, *rows.take_all()]
                    await anyio.to_thread.run_sync(writer.write, [item[0] for item in batch])
                    fold(batch)
            finally:
                await anyio.to_thread.run_sync(writer.close)

    def _fold_rows(self, batch: list[Finished]) -> None:
        aggregate, state = self.aggregate, self.state
        errors = aggregate.errors
        fold_rows(aggregate, batch)
        state.errors += aggregate.errors - errors
        state.done += len(batch)

    def _fold_batches(self, batch: list[Batch]) -> None:
        state = self.state
        for _, aggregate in batch:
            self.aggregate.merge(aggregate)
            state.errors += aggregate.errors
            state.done += aggregate.total

    def worker_spec(self) -> WorkerSpec:
        """What the worker processes of a parallel run need (after `prepare_files`)."""
        from agentjudge.harness._processes import WorkerSpec

        return WorkerSpec(
            suite=self.suite,
            dataset=self.dataset,
            task=self.task_blob,
            judges=self.judges_blob,
            done=frozenset(self.done_ids),
            judge_names=tuple(self.judge_names),
        )

    async def execute(self, pool: CasePool | None = None) -> None:
        """Run every pending case, here or (``pool``) in worker processes.

        Raises:
            CasesLost: fewer rows were written than cases were handed out.
        """
        state = ProgressState(self.pending_total())
        self.state = state
        finished = anyio.Event()
        async with anyio.create_task_group() as outer:
            outer.start_soon(
                lambda: render_progress(
                    state,
                    finished,
                    mode=self.progress_mode,
                    stream=self.progress_stream,
                    interval=self.progress_interval,
                )
            )
            try:
                if pool is None:
                    await self._run_here()
                else:
                    await self._run_in(pool)
            finally:
                finished.set()
                if pool is None:
                    await self.runner.close_task()
                self.warnings += await close_model_clients(self.clients)
        await self.check_accounting()

    async def _run_here(self) -> None:
        slots = case_slots(self.suite, self.pending_total())  # batch mode: every case at once
        cases, rows = new_pipes(slots)
        async with self.batch or contextlib.nullcontext(), anyio.create_task_group() as tg:
            tg.start_soon(self._feed, cases)
            tg.start_soon(self._write, rows, self._fold_rows)
            await self.runner.run_workers(cases, rows, slots)

    async def _run_in(self, pool: CasePool) -> None:
        batches: Pipe[Batch] = Pipe(BATCH_BUFFER)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write, batches, self._fold_batches)
            chunks = limit_rows(self.dataset.iter_raw(), self.suite.limit, self.dataset.label)
            await pool.run(self.worker_spec(), chunks, batches)
        self.cases_in = pool.cases_in

    async def check_accounting(self) -> None:
        """Compare the cases handed out with the rows written.

        Raises:
            CasesLost: they differ; the message names the missing ids.
        """
        rows_out = self.state.done
        if rows_out == self.cases_in:
            return
        missing = await anyio.to_thread.run_sync(
            missing_ids, self.results_path, self.dataset, self.suite.limit
        )
        raise CasesLost(lost_message(self.cases_in, rows_out, missing, self.results_path), missing)

    # ------------------------------------------------------------------ summary
    def final_status(self) -> Literal["completed", "aborted"]:
        """The final status: ``aborted`` when the budget refused some judgment."""
        exhausted = self.suite.max_cost is not None and self.aggregate.cost.refused > 0
        return "aborted" if exhausted else "completed"

    def summary(self, status: Literal["running", "completed", "aborted"]) -> RunSummary:
        """The summary of everything in the results file so far."""
        suite = self.suite
        judges = self.aggregate.judge_summaries()
        verdict = self.aggregate.verdict_summary()
        cases = self.aggregate.cases_summary()
        config = suite.model_dump(mode="json")
        config["suite"] = None if suite.source is None else str(suite.source)
        config["judge_names"] = self.judge_names
        config["task_name"] = self.task.name
        config["out"] = str(self.out)
        summary = RunSummary(
            run_id=self.run_id,
            status=status,
            started_at=_iso(self.started),
            completed_at=None if status == "running" else _iso(_now()),
            dataset=DatasetInfo(
                path=display_path(self.dataset.path),
                sha256=self.dataset.sha256,
                rows=self.dataset.rows,
            ),
            config=config,
            judges=judges,
            verdict=verdict,
            juries=self.aggregate.jury_summaries(),
            cases=cases,
            resumed=self.resumed,
            warnings=self.warnings,
            cost=self.aggregate.cost_summary(),
            budget=None
            if suite.max_cost is None
            else budget_outcome(
                suite.max_cost,
                1 if suite.backend == "ray" else suite.workers,  # Ray: one budget, leased
                self.aggregate.cost,
                self.cost_before,
                cases.total,
            ),
        )
        if suite.thresholds is not None and status != "running":  # coverage, agreement
            from agentjudge.harness._calibrate import with_provenance

            block = self.aggregate.cascade.summary()
            summary.cascade = with_provenance(block, suite.path(suite.thresholds))
        if status != "completed":
            return summary
        if self.baseline is not None and suite.baseline is not None:
            summary.baseline = check_baseline(
                suite.path(suite.baseline),
                self.baseline,
                judges,
                self.results_path,
                max_regression=suite.max_regression,
                max_flips=suite.max_flips,
            )
        conclude(  # gates, trust checks, passed
            summary, self.gates, judged=self.aggregate.judged, allow_errors=suite.allow_errors
        )
        return summary

    async def write_summary(self, summary: RunSummary) -> None:
        """Write ``summary.json`` atomically (never a half-written file).

        On a full disk the space reserve is given up and the summary written into it.
        """
        text = summary.model_dump_json(indent=2) + "\n"
        file = self.summary_file
        await anyio.to_thread.run_sync(file.write, text, file.ask())


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc`` (nested exception groups flattened), or ``[exc]``."""
    if not isinstance(exc, BaseExceptionGroup):
        return [exc]
    return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]


def _leading_error(exc: BaseException) -> tuple[BaseException, int]:
    """What to report for ``exc``, and how many more errors it held.

    A (nested) group of one exception is that exception; a group of several ordinary errors
    (e.g. two workers that failed at once) is its first, with the count of the others; a group
    holding KeyboardInterrupt, SystemExit or a cancellation among several stays as it is.
    """
    leaves = _leaves(exc)
    if len(leaves) == 1:
        return leaves[0], 0
    if all(isinstance(leaf, Exception) for leaf in leaves):
        return leaves[0], len(leaves) - 1
    return exc, 0


def default_out(suite: Suite) -> Path:
    """``suite.out`` (relative to the suite file) or ``.agentjudge/<label>`` in the cwd."""
    if suite.out is not None:
        return suite.path(suite.out)
    return Path(".agentjudge") / suite.label


async def run_suite(
    suite: Suite,
    *,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: Literal["auto", "rich", "plain", "off"] = "off",
    progress_interval: float = 5.0,
    progress_stream: TextIO | None = None,
    telemetry: Telemetry | None = None,
    task: Callable[[Case], Any] | None = None,
    judges: Any = None,
    optional_gates: Collection[str] = (),
    backend: Literal["local", "ray"] | None = None,
    ray_address: str | None = None,
) -> RunSummary:
    """Run a suite end to end and return its summary (also written to ``out/summary.json``).

    Args:
        suite: What to run.
        out: Output folder (default `default_out`).
        resume: Continue an existing ``results.jsonl``: ids already there are skipped, a torn
            last line is cut off, and the summary covers every row of the file.
        overwrite: Delete an existing ``results.jsonl`` / ``summary.json`` first.
        progress: ``"auto"``, ``"rich"``, ``"plain"`` or ``"off"``.
        progress_interval: Seconds between plain progress lines.
        progress_stream: Where progress goes (default stderr).
        telemetry: OpenTelemetry recorder (default: `Telemetry.create`, i.e. the global SDK
            providers when one is installed).
        task: The task object itself, instead of ``suite.task`` (a reference).
        judges: The judge(s) themselves (a judge, list, dict, Jury or Cascade), instead of
            ``suite.judges``.
        optional_gates: Gates of ``suite.gates`` (as written) skipped with a warning, instead
            of refused, when the run has no judge or jury they name (the CLI passes the suite
            file's gates when ``--judges`` replaces its judges).
        backend: ``"ray"`` runs the cases on Ray actors (``suite.backend`` when None).
        ray_address: The Ray cluster to join (``suite.ray_address`` when None; neither:
            a local Ray instance).

    Returns:
        The summary; ``summary.passed`` is False when a gate or the baseline check failed.
        When ``suite.max_cost`` ran out it says ``"status": "aborted"`` with
        ``summary.budget.exhausted`` True (``passed`` None; the CLI exits 3).

    Raises:
        RunConfigError: a missing or invalid setting, or an output folder that is in the way.
        DatasetError: a malformed dataset row (file, line and field named).
        RunAborted: the run failed after it started (the cause is chained); the results file
            stays valid and ``summary.json`` says ``"status": "aborted"``.
        KeyboardInterrupt: likewise, after Ctrl-C (cancellation propagates unchanged).
    """
    if resume and overwrite:
        raise RunConfigError("--resume and --overwrite exclude each other")
    if backend is not None or ray_address is not None:
        suite = suite.with_overrides(backend=backend, ray_address=ray_address)
    suite, batch_warnings = batch_settings(suite)  # batch mode: one process, long timeouts
    if telemetry is None:
        telemetry = Telemetry.create()
    run = _Run(
        suite,
        out=Path(out) if out is not None else default_out(suite),
        resume=resume,
        overwrite=overwrite,
        progress=progress,
        progress_interval=progress_interval,
        progress_stream=progress_stream,
        telemetry=telemetry,
        optional_gates=optional_gates,
    )
    run.prepare_config(task, judges)
    run.warnings += batch_warnings
    with prices_applied(run.price_table):
        if not suite.out_of_process:
            return await _execute_run(run, telemetry, None)
        # Started before the dataset's validation pass, so their start-up overlaps it.
        pool = await anyio.to_thread.run_sync(_start_pool, suite)
        try:
            return await _execute_run(run, telemetry, pool)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(pool.close)


def _start_pool(suite: Suite) -> CasePool:
    """The worker processes, or (``backend = "ray"``) the Ray actors, of a parallel run."""
    if suite.backend == "ray":
        from agentjudge.harness._ray import RayPool  # imports ray lazily

        return RayPool(suite)
    from agentjudge.harness._processes import WorkerPool

    return WorkerPool(suite.workers)


async def _execute_run(run: _Run, telemetry: Telemetry | None, pool: CasePool | None) -> RunSummary:
    await anyio.to_thread.run_sync(run.prepare_files)
    try:
        return await _run_prepared(run, telemetry, pool)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(run.reserve.release)


async def _run_prepared(
    run: _Run, telemetry: Telemetry | None, pool: CasePool | None
) -> RunSummary:
    if pool is not None and telemetry is not None:
        run.warnings.append(
            "per-case and per-judge telemetry is recorded only with workers = 1 "
            "(this run's span is recorded)"
        )
    try:
        await run.write_summary(run.summary("running"))
    except WriteFailed as exc:
        raise RunAborted(f"run aborted: {exc}") from exc
    except anyio.get_cancelled_exc_class():  # stopped before the first case: say so too
        await _record_abort(run, None)
        raise
    if telemetry is not None:
        telemetry.start_run(
            {"agentjudge.run.id": run.run_id, "agentjudge.dataset.rows": run.dataset.rows}
        )
    try:
        await run.execute(pool)
        summary = await anyio.to_thread.run_sync(run.summary, run.final_status())
        await run.write_summary(summary)
    except BaseException as exc:
        note = await _record_abort(run, telemetry)
        leaf, more = _leading_error(exc)
        if more:
            note = f" (and {more} more error{'s' if more > 1 else ''} at the same time){note}"
        if isinstance(leaf, WriteFailed):
            raise RunAborted(f"run aborted: {leaf}{note}") from leaf
        if isinstance(leaf, Exception):
            raise RunAborted(f"run aborted: {type(leaf).__name__}: {leaf}{note}") from leaf
        if leaf is not exc and not isinstance(leaf, anyio.get_cancelled_exc_class()):
            raise leaf from None
        raise
    if telemetry is not None:
        telemetry.end_run(
            {
                "agentjudge.run.status": summary.status,
                "agentjudge.cases.total": summary.cases.total,
                "agentjudge.cases.errors": summary.cases.errors,
            }
        )
    return summary


async def _record_abort(run: _Run, telemetry: Telemetry | None) -> str:
    """Write the "aborted" summary (shielded); returns "" or a note on why it could not be."""
    note = ""
    with anyio.CancelScope(shield=True):
        try:
            await run.write_summary(run.summary("aborted"))
        except WriteFailed as exc:
            note = f"; {SUMMARY_FILE} could not be updated: {exc}"
        if telemetry is not None:
            telemetry.end_run({"agentjudge.run.status": "aborted"})
    return note

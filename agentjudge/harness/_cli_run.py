"""``agentjudge run``: the suite from the flags, the run, and what an aborted run prints.

The flags override the suite file's settings (``./agentjudge.toml`` unless one is named);
without a suite file they must name the dataset, the task and the judges. Exit codes are
`agentjudge.harness._cli_args`'s (see `agentjudge.harness._cli`).

Ctrl-C (SIGINT) and SIGTERM stop a run the same way: the signal handler only notes the signal
and cancels the run's scope from the event loop, so every shielded step (the writer draining
finished rows, the summary being written) completes, the summary says "aborted" and the exit
code is 3. A signal noted before the run wrote its final summary aborts it; one that comes
later changes nothing (the run completed; its summary and exit code stand). A second signal
gets the handler that was there before (Ctrl-C: stop now). A SIGINT that the process
inherited as ignored (a background job of a non-interactive shell, ``nohup``) stays ignored.
"""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from agentjudge.harness._cli_args import (
    EXIT_ABORTED,
    EXIT_FAILED,
    EXIT_OK,
    freeze_loaded,
    usage_error,
)

__all__ = ["SUITE_FILE", "run_command"]

SUITE_FILE = "agentjudge.toml"
"""The suite file ``agentjudge run`` reads when none is named and it exists."""


def _cwd_path(value: str | None) -> Path | None:
    return None if value is None else Path(value).resolve()


def _suite_from_args(args: argparse.Namespace) -> Any:
    from agentjudge.harness._suite import Suite, load_suite

    if args.suite is not None:
        suite = load_suite(args.suite)
    elif Path(SUITE_FILE).is_file():
        suite = load_suite(SUITE_FILE)
    else:
        suite = None
    if suite is not None and args.calibration:  # a calibration run ignores its thresholds
        suite = suite.model_copy(update={"thresholds": None})
    merged = (suite or Suite()).with_overrides(
        calibration=args.calibration or None,
        thresholds=_cwd_path(args.thresholds),
        dataset=_cwd_path(args.dataset),
        dataset_format=args.format,
        task=args.task,
        task_url=args.task_url,
        judges=args.judges,
        concurrency=args.concurrency,
        workers=args.workers,
        backend=args.backend,
        ray_address=args.ray_address,
        task_timeout=args.task_timeout,
        judge_timeout=args.judge_timeout,
        gates=[*(suite.gates if suite else ()), *args.gate] if args.gate else None,
        baseline=_cwd_path(args.baseline),
        max_regression=args.max_regression,
        max_flips=args.max_flips,
        allow_errors=args.allow_errors,
        limit=args.limit,
        seed=args.seed,
        max_cost=args.max_cost,
        prices=_cwd_path(args.prices),
        batch=True if args.batch or args.batch_retry_online else None,
        batch_retry_online=args.batch_retry_online,
    )
    if suite is None:
        _require_without_suite(merged)
    return merged


def _require_without_suite(suite: Any) -> None:
    """Without a suite file, the flags must name the dataset, the task and the judges.

    Raises:
        ValueError: saying that no ``./agentjudge.toml`` was found and which flags are missing.
    """
    wanted = {
        "--dataset FILE": suite.dataset,
        "--task M:F": suite.task,
        "--judges M:A": suite.judges,
    }
    missing = [flag for flag, value in wanted.items() if value is None]
    if missing:
        raise ValueError(
            f"no suite: ./{SUITE_FILE} was not found in {Path.cwd()} and none was named; "
            f"pass one (agentjudge run path/to/{SUITE_FILE}) or {', '.join(missing)}"
        )


def _gates_to_skip(args: argparse.Namespace, suite: Any) -> tuple[str, ...]:
    """With ``--judges``, the suite file's own gates may name judges that are gone."""
    if args.judges is None:
        return ()
    flagged = set(args.gate)
    return tuple(gate for gate in suite.gates if gate not in flagged)


def _check_prices_flag(value: str | None) -> None:
    """Read a ``--prices`` file now, so that its error names the flag (not the suite).

    Raises:
        ValueError: the file cannot be read or holds an invalid price.
    """
    if value is None:
        return
    from agentjudge.models import PriceTable

    try:
        PriceTable.load(Path(value).resolve())
    except ValueError as exc:
        raise ValueError(f"--prices {value}: {exc}") from None


def run_command(args: argparse.Namespace) -> int:
    """``agentjudge run``: the suite from the flags, run to the end; returns the exit code."""
    import anyio
    from pydantic import ValidationError

    from agentjudge.harness._run import RunAborted, default_out
    from agentjudge.harness._suite import describe_validation_error

    freeze_loaded()  # the run's own modules; the suite's (the user's code) load after this
    try:
        _check_prices_flag(args.prices)
        suite = _suite_from_args(args)
    except ValidationError as exc:
        return usage_error(describe_validation_error(exc, "command line"))
    except ValueError as exc:
        return usage_error(str(exc))
    if args.dry_run:
        return _dry_run(suite, args.json)
    out = Path(args.out) if args.out is not None else default_out(suite)
    run = _Invocation(suite, out, args)
    try:
        summary = anyio.run(run.go)
    except (KeyboardInterrupt, SystemExit) as exc:
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else "SystemExit raised"
        return _aborted(f"run aborted ({why})", out)
    except RunAborted as exc:
        if run.stopped_by is not None:
            return _aborted(f"run aborted ({run.stopped_by})", out)
        return _crash(exc, out)
    except ValueError as exc:  # RunConfigError, DatasetError: raised before any case ran
        return usage_error(str(exc))
    if summary is None:  # a signal cancelled the run
        return _aborted(f"run aborted ({run.stopped_by})", out)
    if run.stopped_by is not None:
        print(
            f"agentjudge: the run had completed when it was {run.stopped_by}; its summary stands",
            file=sys.stderr,
        )
    for warning in summary.warnings:
        print(f"agentjudge: warning: {warning}", file=sys.stderr)
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        if not args.quiet:
            _print_report(summary, out, args.cases)
        print(f"results: {out / 'results.jsonl'}\nsummary: {out / 'summary.json'}")
    if summary.budget is not None and summary.budget.exhausted:
        return _aborted(f"run aborted ({summary.budget.message})", out)
    return EXIT_OK if summary.passed else EXIT_FAILED


def _print_report(summary: Any, out: Path, cases: int) -> None:
    """The summary table, then the cases needing attention (the report is imported here only)."""
    from agentjudge.harness._report import cases_text, format_summary

    print(format_summary(summary, cases) + "\n")
    if cases != 0 and (listed := cases_text(out, summary, cases)):
        print(listed + "\n")


def _dry_run(suite: Any, as_json: bool) -> int:
    """``run --dry-run``: print the estimate; exit 0 (2 on a configuration error)."""
    import anyio

    from agentjudge.harness._dryrun import dry_run_suite, format_dry_run

    try:
        estimate = anyio.run(dry_run_suite, suite)
    except ValueError as exc:  # RunConfigError, DatasetError
        return usage_error(str(exc))
    print(estimate.model_dump_json(indent=2) if as_json else format_dry_run(estimate))
    return EXIT_OK


class _Invocation:
    """One ``agentjudge run``: `run_suite`, stopped by Ctrl-C (SIGINT) or SIGTERM.

    Attributes:
        stopped_by: Why a signal stopped the run ("interrupted", "terminated by SIGTERM"),
            None while no signal came.
    """

    def __init__(self, suite: Any, out: Path, args: argparse.Namespace) -> None:
        self.suite = suite
        self.out = out
        self.args = args
        self.stopped_by: str | None = None

    async def go(self) -> Any:
        """The run's summary, or None when a signal cancelled it (rows and summary written)."""
        import anyio

        from agentjudge.harness._run import run_suite

        args = self.args
        summary = None
        with anyio.CancelScope() as scope, _StopSignals(self, scope):
            summary = await run_suite(
                self.suite,
                out=self.out,
                resume=args.resume,
                overwrite=args.overwrite,
                progress=args.progress,
                progress_interval=args.progress_interval,
                optional_gates=_gates_to_skip(args, self.suite),
            )
        return summary


class _StopSignals:
    """While entered: SIGINT and SIGTERM note why the run stops and cancel ``scope``.

    The handler runs in the main thread between two bytecodes, so it does no more than that:
    the cancellation itself is scheduled on the event loop (`anyio.CancelScope.cancel` there,
    not ``Task.cancel``, which would cut shielded steps short: the summary being written, the
    rows being flushed). Asyncio's own Ctrl-C handler is replaced while the run lasts and put
    back on exit. After the first signal, a second one is handled as by default: Ctrl-C
    raises KeyboardInterrupt at once, SIGTERM gets its previous handler. An ignored SIGINT is
    left ignored; where signals cannot be handled (not the main thread), nothing is installed.
    """

    REASONS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated by SIGTERM"}

    def __init__(self, invocation: _Invocation, scope: Any) -> None:
        self.invocation = invocation
        self.scope = scope
        self.loop: Any = None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> None:
        import asyncio

        self.loop = asyncio.get_running_loop()
        for signum in self.REASONS:
            current = signal.getsignal(signum)
            if current is None or (signum == signal.SIGINT and current == signal.SIG_IGN):
                continue  # not set from Python (cannot be put back), or an ignored Ctrl-C
            try:
                signal.signal(signum, self._on_signal)
            except ValueError:  # not the main thread: no signal handling here
                return
            self.previous[signum] = current

    def __exit__(self, *exc_info: object) -> None:
        self._restore()

    def _restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous.clear()

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.invocation.stopped_by is None:
            self.invocation.stopped_by = self.REASONS[signal.Signals(signum)]
        took_sigint = signal.SIGINT in self.previous
        self._restore()
        if took_sigint:  # a second Ctrl-C stops at once, whatever asyncio would do
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self.loop.call_soon_threadsafe(self.scope.cancel)


def _aborted(headline: str, out: Path) -> int:
    print(
        f"agentjudge: {headline}; finished cases are kept in {out / 'results.jsonl'}; "
        "continue with --resume",
        file=sys.stderr,
    )
    return EXIT_ABORTED


def _crash(exc: BaseException, out: Path) -> int:
    """Report an aborted run: one line for our own errors, a traceback for anything else."""
    from agentjudge.exceptions import AgentJudgeError

    cause = exc.__cause__
    if cause is not None and not isinstance(cause, AgentJudgeError):
        traceback.print_exception(cause, file=sys.stderr)
    print(
        f"agentjudge: {exc}\n"
        f"agentjudge: finished cases are kept in {out / 'results.jsonl'}; "
        "continue with --resume",
        file=sys.stderr,
    )
    return EXIT_ABORTED

"""The ``agentjudge`` command line (also ``python -m agentjudge``).

Exit codes: 0 every gate passed (or none was set); 1 a gate, the baseline check or a trust
check failed (no case judged PASS/FAIL, or a judge that errored on every case);
2 a usage, configuration or dataset error (the message names the setting, file, line or field);
3 the run was aborted (Ctrl-C, SIGTERM, a crash, a full disk, cases lost, or the
``--max-cost`` budget ran out) - the results file stays valid, ``--resume`` goes on.
``run --dry-run`` exits 0 after printing its estimate (2 on a configuration error).
``agentjudge report``, ``compare``, ``schema`` and ``calibrate`` exit 0 (2 when their input is
unusable).

As a program (`cli`, ``python -m agentjudge``) the process exits as soon as its output is
flushed: threads a timed-out sync task or judge left running do not keep it alive (`exit_now`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import logging
import os
import platform
import re
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from agentjudge.harness._cli_args import (
    add_cases_flag,
    fraction,
    int_at_least,
    non_negative_int,
    positive_int,
    seconds,
)
from agentjudge.harness._formats import DATASET_FORMATS
from agentjudge.harness._text import did_you_mean

__all__ = ["EXIT_ABORTED", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "cli", "exit_now", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ABORTED = 3

_SUITE_FILE = "agentjudge.toml"
THREAD_GRACE = 1.0
"""Seconds `exit_now` lets other threads finish before it ends the process without them."""


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<word>[^']*)' \(choose from (?P<choices>.*)\)")


class _Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for an unknown flag, command or choice."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and ``message`` (plus a suggestion) to stderr; exit 2."""
        super().error(message + self._suggestion(message))

    def _suggestion(self, message: str) -> str:
        choice = _INVALID_CHOICE.search(message)
        if choice is not None:
            return did_you_mean(choice["word"], re.findall(r"'([^']*)'", choice["choices"]))
        unknown = message.removeprefix("unrecognized arguments: ")
        if unknown == message:
            return ""
        flags = [flag for action in self._actions for flag in action.option_strings]
        for word in unknown.split():
            flag = word.partition("=")[0]
            hint = did_you_mean(flag, flags) if flag.startswith("-") else ""
            if hint:
                return hint
        return ""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the CLI reference docs)."""
    parser = _Parser(
        prog="agentjudge",
        description="Offline evaluation: run a dataset through a task and judges, gate on it.",
        epilog="Exit codes: 0 gates passed, 1 a gate, baseline or trust check failed, "
        "2 usage/configuration/dataset error, 3 run aborted (or --max-cost budget exhausted).",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser(
        "run",
        help="run a suite and write results.jsonl + summary.json",
        description="Run a suite: each case goes through the task, then the judges; every "
        "finished case is appended to OUT/results.jsonl at once.",
    )
    run.add_argument(
        "suite",
        nargs="?",
        help=f"suite file (default: ./{_SUITE_FILE} when present); flags override its settings",
    )
    run.add_argument("--dataset", metavar="FILE", help="dataset file (JSONL, CSV, JSON, YAML)")
    run.add_argument(
        "--format",
        choices=DATASET_FORMATS,
        help="how to read the dataset (default: by its extension; anything but .csv, .json, "
        ".yaml/.yml is JSONL)",
    )
    run.add_argument("--task", metavar="MODULE:FUNC", help="the task, or openai:<model>")
    run.add_argument("--task-url", metavar="URL", help="base URL of the OpenAI-compatible endpoint")
    run.add_argument("--judges", metavar="MODULE:ATTR", help="judge, list, dict, Jury or Cascade")
    run.add_argument("--concurrency", type=positive_int, metavar="N", help="cases in flight")
    run.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="worker processes running cases (default 1: this process)",
    )
    run.add_argument(
        "--backend",
        choices=("local", "ray"),
        help="where worker slots run: local processes, or one Ray actor each (agentjudge[ray])",
    )
    run.add_argument(
        "--ray-address", metavar="ADDRESS", help="Ray cluster to join (default: a local instance)"
    )
    run.add_argument("--task-timeout", type=seconds, metavar="S", help="seconds per case")
    run.add_argument("--judge-timeout", type=seconds, metavar="S", help="seconds per judge attempt")
    run.add_argument("--out", metavar="DIR", help="output folder (default .agentjudge/<suite>)")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume", action="store_true", help="continue OUT/results.jsonl, skipping done ids"
    )
    mode.add_argument(
        "--overwrite", action="store_true", help="delete an existing OUT/results.jsonl first"
    )
    run.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="EXPR",
        help="e.g. 'correctness.mean>=0.9' or 'errors.rate<=0.02' (repeatable; added to the "
        "suite's gates)",
    )
    run.add_argument("--baseline", metavar="SUMMARY", help="a previous run's summary.json")
    run.add_argument(
        "--max-regression",
        type=fraction,
        metavar="X",
        help="fail when a judge's mean drops by more than X against the baseline",
    )
    run.add_argument(
        "--max-flips",
        type=non_negative_int,
        metavar="N",
        help="fail when more than N cases flipped from pass against the baseline",
    )
    run.add_argument(
        "--allow-errors",
        action="store_true",
        default=None,
        help="pass even when no case got a PASS/FAIL or a judge errored on every judgment",
    )
    _add_cost_flags(run)
    run.add_argument(
        "--batch",
        action="store_true",
        default=None,
        help="send the LLM judges' calls through the providers' batch APIs (about half the "
        "price, minutes to hours of latency; one process)",
    )
    run.add_argument(
        "--batch-retry-online",
        action="store_true",
        default=None,
        help="with --batch (implied): send a request that expired or errored in a batch once "
        "more online instead of making its judgment ERROR",
    )
    run.add_argument("--limit", type=non_negative_int, metavar="N", help="first N cases only")
    run.add_argument("--seed", type=int, metavar="N", help="seed for sampling and bootstrap")
    run.add_argument(
        "--progress",
        choices=("auto", "rich", "plain", "off"),
        default="auto",
        help="progress display on stderr (default: a bar on a terminal, lines otherwise)",
    )
    run.add_argument(
        "--progress-interval",
        type=seconds,
        default=5.0,
        metavar="S",
        help="seconds between plain progress lines (default 5)",
    )
    run.add_argument("--json", action="store_true", help="print summary.json instead of a table")
    run.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print no summary table, only warnings, errors and the output files "
        "(`agentjudge report OUT` prints the report)",
    )
    add_cases_flag(run, "cases needing attention printed after the table (and flips listed)")
    _add_calibration_flags(run)

    report = sub.add_parser(
        "report", help="print a run's report (per judge, per tag, the cases needing attention)"
    )
    report.add_argument("run_dir", metavar="DIR", help="a run's output folder")
    report.add_argument(
        "--html", metavar="FILE", help="write the browser report (one self-contained file)"
    )
    report.add_argument(
        "--baseline", metavar="DIR", help="with --html: compare with this earlier run"
    )
    add_cases_flag(report, "cases needing attention to list")
    report.add_argument(
        "--case", metavar="ID", help="print one case in full (input, output, every judgment)"
    )
    report.add_argument(
        "--json", action="store_true", help="print the report (or the --case row) as JSON"
    )
    view = sub.add_parser("view", help="serve a run's browser report on 127.0.0.1")
    view.add_argument("run_dir", metavar="DIR", help="a run's output folder")
    view.add_argument("baseline", metavar="BASELINE", nargs="?", help="an earlier run to compare")
    view.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")

    compare = sub.add_parser("compare", help="per-judge deltas and flipped cases of two runs")
    compare.add_argument("a", metavar="A", help="the first run folder (or its summary.json)")
    compare.add_argument("b", metavar="B", help="the second run folder (or its summary.json)")
    add_cases_flag(compare, "changed cases to list per list, with the reasons before and after")

    schema = sub.add_parser("schema", help="print the JSON schema of a dataset row")
    schema.add_argument(
        "--results",
        action="store_true",
        help="the schema of a results.jsonl row instead (with the judges' results)",
    )
    _add_calibrate_command(sub)
    return parser


def _version() -> str:
    try:
        version = importlib.metadata.version("agentjudge")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        version = "(not installed)"
    return f"agentjudge {version} (Python {platform.python_version()})"


def _add_calibration_flags(run: argparse.ArgumentParser) -> None:
    cascade = run.add_mutually_exclusive_group()
    cascade.add_argument(
        "--calibration",
        action="store_true",
        help="run the suite's Cascade without short-circuiting (every tier judges every "
        "case) on a dataset with human labels, for `agentjudge calibrate`",
    )
    cascade.add_argument(
        "--thresholds",
        metavar="FILE",
        help="run the suite's Cascade with the thresholds `agentjudge calibrate` wrote",
    )


def _add_calibrate_command(sub: Any) -> None:
    calibrate = sub.add_parser(
        "calibrate",
        help="confidence thresholds for a cascade from a `run --calibration` folder",
        description="Fixed-sequence testing (Jung et al., 2024): thresholds such that, with "
        "probability >= 1 - DELTA, the cascade's non-abstaining verdicts agree with the human "
        "labels at a rate >= 1 - ALPHA. That holds when every deciding tier's threshold was "
        "tested and DELTA is split across the tiers (the defaults); the output and "
        "thresholds.json say whether it holds.",
    )
    calibrate.add_argument("run_dir", metavar="RUN_DIR", help="a `run --calibration` folder")
    calibrate.add_argument("--alpha", type=float, required=True, help="tolerated disagreement")
    calibrate.add_argument("--delta", type=float, required=True, help="tolerated failure odds")
    calibrate.add_argument("--out", metavar="FILE", help="default RUN_DIR/thresholds.json")
    calibrate.add_argument(
        "--min-support", type=positive_int, default=30, metavar="N", help="(default 30)"
    )
    calibrate.add_argument(
        "--grid", type=int_at_least(2), default=5000, metavar="G", help="(default 5000)"
    )
    calibrate.add_argument(
        "--untested",
        choices=("escalate", "paper"),
        default="escalate",
        help="a tier without a tested threshold: never decides (escalate, default: the "
        "guarantee holds) or applies the paper's untested fallback (paper: no guarantee)",
    )
    calibrate.add_argument(
        "--split-delta",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="test each of K tiers at DELTA/K, a union bound (default); --no-split-delta tests "
        "each at DELTA as the paper does (the cascade is then covered at 1 - K*DELTA only)",
    )


def _add_cost_flags(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--max-cost",
        type=fraction,
        metavar="USD",
        help="stop starting judge model calls once this many US dollars would be exceeded "
        "(refused judgments are ERROR BudgetExhausted; exit 3; --resume continues)",
    )
    run.add_argument(
        "--prices",
        metavar="FILE",
        help="model prices (JSON/TOML, the shape of agentjudge/models/prices.json) for this run",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="render every judge prompt and print estimated calls, tokens and cost; "
        "call no model, run no task, write nothing",
    )


def _error(message: str) -> int:
    for line in message.splitlines() or [""]:
        print(f"agentjudge: error: {line}", file=sys.stderr)
    return EXIT_USAGE


def _cwd_path(value: str | None) -> Path | None:
    return None if value is None else Path(value).resolve()


def _suite_from_args(args: argparse.Namespace) -> Any:
    from agentjudge.harness._suite import Suite, load_suite

    if args.suite is not None:
        suite = load_suite(args.suite)
    elif Path(_SUITE_FILE).is_file():
        suite = load_suite(_SUITE_FILE)
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
            f"no suite: ./{_SUITE_FILE} was not found in {Path.cwd()} and none was named; "
            f"pass one (agentjudge run path/to/{_SUITE_FILE}) or {', '.join(missing)}"
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


def _run(args: argparse.Namespace) -> int:
    import anyio
    from pydantic import ValidationError

    from agentjudge.harness._report import cases_text, format_summary
    from agentjudge.harness._run import RunAborted, default_out
    from agentjudge.harness._suite import describe_validation_error

    try:
        _check_prices_flag(args.prices)
        suite = _suite_from_args(args)
    except ValidationError as exc:
        return _error(describe_validation_error(exc, "command line"))
    except ValueError as exc:
        return _error(str(exc))
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
        if run.terminated:
            return _aborted("run aborted (terminated by SIGTERM)", out)
        return _crash(exc, out)
    except ValueError as exc:  # RunConfigError, DatasetError: raised before any case ran
        return _error(str(exc))
    if summary is None:  # SIGTERM cancelled the run
        return _aborted("run aborted (terminated by SIGTERM)", out)
    for warning in summary.warnings:
        print(f"agentjudge: warning: {warning}", file=sys.stderr)
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        if not args.quiet:
            print(format_summary(summary, args.cases) + "\n")
            if args.cases != 0 and (listed := cases_text(out, summary, args.cases)):
                print(listed + "\n")
        print(f"results: {out / 'results.jsonl'}\nsummary: {out / 'summary.json'}")
    if summary.budget is not None and summary.budget.exhausted:
        return _aborted(f"run aborted ({summary.budget.message})", out)
    return EXIT_OK if summary.passed else EXIT_FAILED


def _dry_run(suite: Any, as_json: bool) -> int:
    """``run --dry-run``: print the estimate; exit 0 (2 on a configuration error)."""
    import anyio

    from agentjudge.harness._dryrun import dry_run_suite, format_dry_run

    try:
        estimate = anyio.run(dry_run_suite, suite)
    except ValueError as exc:  # RunConfigError, DatasetError
        return _error(str(exc))
    print(estimate.model_dump_json(indent=2) if as_json else format_dry_run(estimate))
    return EXIT_OK


class _Invocation:
    """One ``agentjudge run``: `run_suite`, stopped like Ctrl-C when SIGTERM arrives."""

    def __init__(self, suite: Any, out: Path, args: argparse.Namespace) -> None:
        self.suite = suite
        self.out = out
        self.args = args
        self.terminated = False

    async def go(self) -> Any:
        """The run's summary, or None when SIGTERM cancelled it (rows and summary written)."""
        import anyio

        from agentjudge.harness._run import run_suite

        args = self.args
        summary = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_sigterm, tg.cancel_scope)
                summary = await run_suite(
                    self.suite,
                    out=self.out,
                    resume=args.resume,
                    overwrite=args.overwrite,
                    progress=args.progress,
                    progress_interval=args.progress_interval,
                    optional_gates=_gates_to_skip(args, self.suite),
                )
                tg.cancel_scope.cancel()  # the run is over: stop watching
        except BaseExceptionGroup as group:
            if len(group.exceptions) != 1:
                raise
            raise group.exceptions[0]  # as run_suite raised it (its cause chained)  # noqa: B904
        return summary

    async def _watch_sigterm(self, scope: Any) -> None:
        import anyio

        try:
            receiver = anyio.open_signal_receiver(signal.SIGTERM)
        except (NotImplementedError, ValueError):  # no signal support here (Windows, a thread)
            return
        with receiver as signals:
            async for _ in signals:
                self.terminated = True
                scope.cancel()
                return


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


def _report(args: argparse.Namespace) -> int:
    from agentjudge.harness import _report as report

    if args.baseline is not None and args.html is None:
        return _error("--baseline needs --html (for the text comparison use `agentjudge compare`)")
    try:
        if args.html is not None:
            from agentjudge.harness._html import write_html

            size = write_html(args.run_dir, args.html, args.baseline)
            text = f"html report: {args.html} ({size:,} bytes)"
        elif args.case is not None and args.json:
            text = json.dumps(report.case_row(args.run_dir, args.case), indent=2)
        elif args.case is not None:
            text = report.render_case(args.run_dir, args.case)
        elif args.json:
            text = json.dumps(report.report_data(args.run_dir, args.cases), indent=2)
        else:
            text = report.render_report(args.run_dir, args.cases)
        print(text)
    except ValueError as exc:
        return _error(str(exc))
    return EXIT_OK


def _view(args: argparse.Namespace) -> int:
    from agentjudge.harness._html import serve_report

    try:
        serve_report(args.run_dir, args.baseline, args.port)
    except ValueError as exc:
        return _error(str(exc))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from agentjudge.harness._report import render_compare

    try:
        print(render_compare(args.a, args.b, args.cases))
    except ValueError as exc:
        return _error(str(exc))
    return EXIT_OK


def _calibrate(args: argparse.Namespace) -> int:
    from agentjudge.harness._calibrate import calibrate_run, format_calibration

    try:
        written = calibrate_run(
            args.run_dir,
            alpha=args.alpha,
            delta=args.delta,
            min_support=args.min_support,
            grid=args.grid,
            untested=args.untested,
            split_delta=args.split_delta,
            out=args.out,
        )
    except ValueError as exc:
        return _error(str(exc))
    print(format_calibration(written))
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from agentjudge.harness._case import Case
    from agentjudge.harness._row_schema import results_row_schema

    schema = results_row_schema() if args.results else Case.model_json_schema()
    print(json.dumps(schema, indent=2))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    words = sys.argv[1:] if argv is None else list(argv)
    if not words:  # a usage error like any missing command, but with the whole help
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args, unknown = parser.parse_known_args(words)
    if unknown:  # blamed on the command's own parser: its usage and its flags
        command = _subparsers(parser).get(args.command, parser)
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    handlers = {
        "run": _run,
        "report": _report,
        "view": _view,
        "compare": _compare,
        "schema": _schema,
        "calibrate": _calibrate,
    }
    try:
        return handlers[args.command](args)
    except BrokenPipeError:  # e.g. `agentjudge report DIR | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flush_telemetry() -> None:
    """Flush OpenTelemetry's global providers, if the program set some up (best effort)."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from opentelemetry import metrics, trace

    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        flush = getattr(provider, "force_flush", None)
        if callable(flush):
            with contextlib.suppress(Exception):
                flush(timeout_millis=5000)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code``, without waiting for threads a run abandoned.

    A sync task or judge past its timeout keeps its worker thread until it returns (Python
    cannot stop a thread), and the interpreter waits for such threads at exit: for a
    deadlocked task, forever. Once everything is written (the results and summary files are
    synced when they are closed), this flushes stdout, stderr, logging and OpenTelemetry, and
    when other threads are still running after `THREAD_GRACE` seconds it ends the process at
    once with ``os._exit`` (``atexit`` handlers do not run then); otherwise it exits normally.
    """
    from agentjudge.harness._task import lingering_threads

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if not lingering_threads(THREAD_GRACE):
        raise SystemExit(code)
    _flush_telemetry()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
            os.fsync(stream.fileno())
    os._exit(code)


def cli() -> NoReturn:
    """The ``agentjudge`` program: `main` on ``sys.argv``, then `exit_now` with its code."""
    exit_now(main())

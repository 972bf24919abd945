"""The ``agentjudge`` command line (also ``python -m agentjudge``).

Exit codes: 0 every gate passed (or none was set); 1 a gate, the baseline check or a trust
check failed (no case judged PASS/FAIL, or a judge that errored on every case);
2 a usage, configuration or dataset error (the message names the setting, file, line or field);
3 the run was aborted (Ctrl-C, SIGTERM, a crash, a full disk, cases lost, or the
``--max-cost`` budget ran out) - the results file stays valid, ``--resume`` goes on.
``run --dry-run`` exits 0 after printing its estimate (2 on a configuration error).
``agentjudge report``, ``compare``, ``schema`` and ``calibrate`` exit 0 (2 when their input is
unusable).

The ``run`` subcommand is `agentjudge.harness._cli_run`; the exit codes, the argument types
and the usage-error line shared by every subcommand are `agentjudge.harness._cli_args`.

As a program (`cli`, ``python -m agentjudge``) the process exits as soon as its output is
flushed: threads a timed-out sync task or judge left running do not keep it alive (`exit_now`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import re
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from agentjudge.harness._cli_args import (
    EXIT_ABORTED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_cases_flag,
    as_program,
    fraction,
    freeze_loaded,
    int_at_least,
    non_negative_int,
    positive_int,
    seconds,
    usage_error,
)
from agentjudge.harness._cli_run import SUITE_FILE, run_command
from agentjudge.harness._formats import DATASET_FORMATS
from agentjudge.harness._text import did_you_mean

__all__ = ["EXIT_ABORTED", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "cli", "exit_now", "main"]

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
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show program's version number and exit"
    )
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
        help=f"suite file (default: ./{SUITE_FILE} when present); flags override its settings",
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


class _Version(argparse.Action):
    """``--version``: the installed version, looked up (importlib.metadata) only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        """Print the version line and exit 0."""
        print(_version())
        parser.exit()


def _version() -> str:
    import importlib.metadata

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


def _report(args: argparse.Namespace) -> int:
    from agentjudge.harness import _report as report

    if args.baseline is not None and args.html is None:
        return usage_error(
            "--baseline needs --html (for the text comparison use `agentjudge compare`)"
        )
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
        return usage_error(str(exc))
    return EXIT_OK


def _view(args: argparse.Namespace) -> int:
    from agentjudge.harness._html import serve_report

    try:
        serve_report(args.run_dir, args.baseline, args.port)
    except ValueError as exc:
        return usage_error(str(exc))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from agentjudge.harness._report import render_compare

    try:
        print(render_compare(args.a, args.b, args.cases))
    except ValueError as exc:
        return usage_error(str(exc))
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
        return usage_error(str(exc))
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
        "run": run_command,
        "report": _report,
        "view": _view,
        "compare": _compare,
        "schema": _schema,
        "calibrate": _calibrate,
    }
    try:
        code = handlers[args.command](args)
    except BrokenPipeError:  # e.g. `agentjudge report DIR | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = EXIT_OK
    if args.command != "run":  # no user code ran (a run froze before loading the suite's)
        freeze_loaded()
    return code


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


def lingering_threads(grace: float) -> list[threading.Thread]:
    """Non-daemon threads (other than the main thread) still running after ``grace`` seconds.

    A sync task or judge abandoned at its timeout keeps its thread until it returns, which may
    be never (a deadlock); the interpreter waits for such threads before it exits. Threads that
    are only winding down (idle worker threads told to stop) are given ``grace`` to finish.
    """
    deadline = time.monotonic() + grace
    skip = {threading.main_thread(), threading.current_thread()}
    left = []
    for thread in threading.enumerate():
        if thread in skip or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            left.append(thread)
    return left


def exit_now(code: int) -> NoReturn:
    """End the process with ``code``, without waiting for threads a run abandoned.

    A sync task or judge past its timeout keeps its worker thread until it returns (Python
    cannot stop a thread), and the interpreter waits for such threads at exit: for a
    deadlocked task, forever. Once everything is written (the results and summary files are
    synced when they are closed), this flushes stdout, stderr, logging and OpenTelemetry, and
    when other threads are still running after `THREAD_GRACE` seconds it ends the process at
    once with ``os._exit`` (``atexit`` handlers do not run then); otherwise it exits normally.
    """
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
    as_program()
    exit_now(main())

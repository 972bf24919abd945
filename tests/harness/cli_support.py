"""Run the real ``agentjudge`` CLI in its own process, for harness tests.

Each call is a separate process running the program's entry point
(`agentjudge.harness._cli.cli`: its own pid, signals, exit code, stdout and stderr), forked from
a ``multiprocessing`` forkserver that imported the CLI once. Starting ``python -m agentjudge``
costs about 0.4 s of CPU in imports and the harness tests start hundreds of runs; a fork from
the preloaded server costs a few milliseconds. What differs from ``python -m agentjudge`` is
only how the process started: the working directory is put first on ``sys.path`` as ``-m`` does,
the environment is the given one (its ``PYTHONWARNINGS`` sets the run's warning filters, as at
start-up), stdin is empty, and Ctrl-C (SIGINT) raises KeyboardInterrupt as in a program started
in the foreground (the test session may have inherited SIGINT as ignored, e.g. when a non-
interactive shell started it in the background, and every child would inherit that too: its
Ctrl-C tests would then see runs that are never interrupted, exit 0 instead of 3). The program
as started from a shell is still tested as such (README commands,
``test_calibrate_command_as_a_program``, the kill -9 test with workers, the killed batch run, an
LLM-judge suite's run in test_harness_model_clients). What a shell sets up before it starts a
program (``ulimit -f``, SIGINT ignored in a background job) the child sets up just before the
entry point (``prepare``). A run's workers are forked from this module's forkserver (below),
whose warning filters are the defaults whatever the run's ``PYTHONWARNINGS``.

A run with ``--workers`` N starts its worker processes from a forkserver, an interpreter that
imports the harness first (~0.5 s of CPU per run). A run started here forks its workers from
this module's forkserver instead, which has imported the harness already (`share_forkserver`):
they are the same `worker_main` processes with the run's environment and ``sys.path``, siblings
of the run's process rather than its grandchildren. The product's own start-up of worker
processes is still run by the in-process parallel-run tests and the programs started as a shell
would (the kill -9 test with workers).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import resource
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable, Mapping
from multiprocessing import spawn
from pathlib import Path
from typing import Any

import anyio
from output_files import OutputFiles

from agentjudge.models import _registry

__all__ = ["cli", "cli_async", "ignore_sigint", "limit_file_size", "start_cli"]

TIMEOUT = 60.0
"""Seconds a run may take before it is killed (a bound for a hang, as before)."""

# What a run imports (the harness, the model clients, the built-in judges, the default aiohttp
# transport, the OpenTelemetry API the run span uses), imported once by the forkserver: a run
# with an LLM judge then costs ~0.08 s of CPU instead of ~0.35 s (judges, aiohttp, otel). The
# worker processes' module too: runs with --workers fork their workers from it. Also what every
# run imports on its first await, else paid again in each child (~25 ms of a ~70 ms run): anyio's
# asyncio backend, and OpenTelemetry's metrics API (a run imports it when the trace API is
# imported, as here, since a global provider may then be set). "__main__" is multiprocessing's
# own entry: the forkserver imports the test process's main script once (under ``pytest -n 0``
# that is pytest's script, which imports pytest) instead of each child re-running it (~50 ms a
# run; see `_main_path_for_the_forkserver`); under xdist the main script has no file and nothing
# is imported.
PRELOAD = [
    "__main__",
    "agentjudge.harness._cli",
    "agentjudge.harness._processes",
    "agentjudge.harness._run",
    "agentjudge.harness._report",
    "agentjudge.models._openai",
    "agentjudge.models._anthropic",
    "agentjudge.judges",
    "aiohttp",
    "opentelemetry.trace",
    "opentelemetry.metrics",
    "anyio._backends._asyncio",
    # Last: first-use imports, warm caches, gc.freeze (see there). By its dotted name: the
    # forkserver's sys.path is that of a fresh interpreter (Python 3.11 ignores the test
    # process's), where the project folder (the editable install) is, but not tests/harness.
    "tests.harness.cli_preload",
]
_context: Any = None


def _main_path_for_the_forkserver() -> None:
    """Let the forkserver preload ``__main__`` (Python < 3.13.2: CPython issue gh-126631).

    The forkserver is given the ``main_path`` of `multiprocessing.spawn.get_preparation_data`,
    which names the main script ``init_main_from_path`` instead: the ``"__main__"`` preload
    never happens, and every child runs the main script again before its target (pytest's
    script under ``pytest -n 0``: ~50 ms of CPU per CLI run or worker). The data gets the key
    under both names (the children's preparation reads only the second). Installed for this
    process, since a parallel run of the tests may start the shared forkserver first.
    """
    real = spawn.get_preparation_data
    if getattr(real, "adds_main_path", False):
        return

    def with_main_path(name: str) -> dict[str, Any]:
        data: dict[str, Any] = real(name)
        if "init_main_from_path" in data:
            data.setdefault("main_path", data["init_main_from_path"])
        return data

    with_main_path.adds_main_path = True  # type: ignore[attr-defined]
    spawn.get_preparation_data = with_main_path


_main_path_for_the_forkserver()


def _forkserver() -> Any:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    multiprocessing.forkserver.ensure_running()  # its address is passed to each child
    return _context


def share_forkserver(address: str) -> None:
    """In a child: start processes (a run's workers) from this module's running forkserver.

    A process the forkserver forked holds the write end of its "alive" pipe and the resource
    tracker's pipe (multiprocessing passed both); only the server's address is missing, and the
    child must not start a forkserver of its own (``ensure_running``).
    """
    from multiprocessing import resource_tracker

    server = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
    server._forkserver_address = address
    server.ensure_running = resource_tracker.ensure_running


def limit_file_size(limit: int) -> None:
    """A ``prepare`` for `start_cli`: ``ulimit -f`` as a shell sets it (writes past ``limit``
    bytes fail with EFBIG instead of killing the process with SIGXFSZ, as Python ignores it)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def ignore_sigint() -> None:
    """A ``prepare`` for `start_cli`: SIGINT ignored, as a shell starts a background job."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _main(
    cwd: str,
    args: list[str],
    env: dict[str, str],
    out: str,
    err: str,
    forkserver: str,
    prepare: Callable[[], object] | None = None,
    providers: dict[Any, Any] | None = None,
) -> None:
    """The child: become ``python -m agentjudge ARGS`` in ``cwd`` and run the entry point."""
    share_forkserver(forkserver)
    _registry._folder_cache.update(providers or {})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    if env.get("PYTHONWARNINGS"):  # the warning filters an interpreter started with it has
        options = env["PYTHONWARNINGS"].split(",")
        sys.warnoptions.extend(options)
        warnings._processoptions(options)  # type: ignore[attr-defined]
    sys.path.insert(0, cwd)
    sys.argv = ["agentjudge", *args]
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(handle, fd)
        os.close(handle)
    if prepare is not None:
        prepare()
    from agentjudge.harness._cli import cli as program

    program()


def _installed_providers() -> dict[Any, Any]:
    """The provider entry points found in this process's ``sys.path`` folders, per folder.

    Every run asks whether its task's ``module:function`` names a model provider, which reads
    the entry points of every installed distribution (~17 ms of a ~70 ms run). A child is given
    what this process read (keyed by each folder's modification time, so a folder changed since
    is read again), as a forkserver that had read them would pass them on: it reads only the
    folders it puts on ``sys.path`` itself (its project's).
    """
    if _registry._plugin_cache is None:
        _registry._plugins()
    return dict(_registry._folder_cache)


class CliRun:
    """A started CLI process: wait for it, then read its exit code and output."""

    def __init__(
        self,
        cwd: Path,
        args: tuple[str, ...],
        env: Mapping[str, str] | None,
        prepare: Callable[[], object] | None = None,
    ) -> None:
        self.args = ["agentjudge", *args]
        self._files = OutputFiles(prefix="cli-")
        environment = dict(os.environ if env is None else env)
        context = _forkserver()
        address = multiprocessing.forkserver._forkserver._forkserver_address  # type: ignore
        self.process = context.Process(
            target=_main,
            args=(
                str(Path(cwd).resolve()),
                list(args),
                environment,
                self._files.out,
                self._files.err,
                address,
                prepare,
                _installed_providers(),
            ),
        )
        self.process.start()

    def wait(self, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Join the process (killed past ``timeout``) and collect what it wrote."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
            raise subprocess.TimeoutExpired(self.args, timeout)
        out, err = self._files.read_and_remove()
        return subprocess.CompletedProcess(self.args, self.process.exitcode, out, err)


def start_cli(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    prepare: Callable[[], object] | None = None,
) -> CliRun:
    """Start ``agentjudge ARGS`` in ``cwd`` (with ``env``, else this process's environment).

    ``prepare`` (picklable: a module-level function or a `functools.partial` of one, such as
    `limit_file_size` or `ignore_sigint`) runs in the child just before the program, as a
    shell's ``ulimit`` or ``trap`` sets up the process it starts.
    """
    return CliRun(cwd, args, env, prepare)


def cli(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    prepare: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``agentjudge ARGS`` in ``cwd`` in its own process (a 60 s bound for a hang)."""
    return start_cli(cwd, *args, env=env, prepare=prepare).wait()


async def cli_async(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    prepare: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`cli` without blocking the event loop (for tests that serve a fake model meanwhile)."""
    run = start_cli(cwd, *args, env=env, prepare=prepare)
    return await anyio.to_thread.run_sync(run.wait)

"""Run Python programs as ``python -c CODE`` would, forked from one preloaded interpreter.

The docs' examples each run "standalone": a fresh ``__main__`` namespace, an empty working
folder, their own process and exit code. Starting ``python`` for each costs about 0.5-4 s of CPU
in interpreter start-up and imports (agentjudge, pydantic, httpx, the SDKs an example uses),
and the docs have dozens of examples. A `Zygote` is one interpreter that imported the common
modules once and forks a child per program; the child sets up what ``python -c`` would (a new
``__main__``, ``sys.argv == ["-c"]``, the folder first on ``sys.path``, the environment, stdin
empty, stdout and stderr to files), runs the code and exits with the code ``python`` would
(0, the ``SystemExit`` code, or 1 after printing the traceback of an uncaught exception).

The tests that run programs this way (the docs examples, the README's example, the trust page's
examples) are one ``xdist_group``, so one worker's zygote serves them all.

What differs from ``python -c``: modules the zygote preloaded are already imported (an example
that forgets an import still fails: its namespace is new), and the child does not join
non-daemon threads at exit. Tests that check what importing loads keep using ``sys.executable``.

`python_c_here` runs the same child forked from the pytest process itself, for programs whose
imports the tests of that worker make anyway (the bridges page's examples import the SDKs that
the "sdk" tests import: ~9 s of CPU a zygote would spend a second time). The fork first undoes
what pytest set up that ``python -c`` would not have (`_as_a_fresh_interpreter`: signal
handlers, the ``error`` warning filter, log handlers, hooks, tracing, pytest's import hook and
the test folders on ``sys.path``); what remains different is that more modules are imported.
"""

from __future__ import annotations

import ast
import faulthandler
import gc
import importlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from output_files import OutputFiles

__all__ = ["Zygote", "python_c", "python_c_here"]

# What a forked child does (in the zygote, and in `python_c_here`'s fork of this process).
_CHILD = r"""
import gc, json, os, signal, sys, traceback, types

def child(request):
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((0, os.devnull), (1, request["out"]), (2, request["err"])):
        handle = os.open(path, os.O_RDONLY if fd == 0 else os.O_WRONLY | os.O_TRUNC)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    signal.alarm(int(request["timeout"]))  # a hang is killed (SIGALRM's default action)
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    sys.argv = ["-c"]
    sys.path.insert(0, "")
    code = 0
    try:
        exec(compile(request["code"], "<string>", "exec"), main.__dict__)
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)
"""

_SERVER = (
    _CHILD
    + r"""
def preload(names):
    for name in names:
        try:
            __import__(name)
        except ImportError:
            pass  # an optional SDK that is not installed: the example needing it says so itself
    # The preloaded objects move to the collector's permanent generation: a child's
    # collections then skip them instead of walking (and so copying, page by page) the
    # parent's whole heap.
    gc.freeze()

preload(sys.argv[1:])

for line in sys.stdin:
    request = json.loads(line)
    preload(request["imports"])  # those already imported cost nothing
    pid = os.fork()
    if pid == 0:
        child(request)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
"""
)


class Zygote:
    """One preloaded interpreter that forks a child per program (one program at a time).

    Args:
        preload: Modules the interpreter imports once, before any program runs.
    """

    def __init__(self, preload: Sequence[str]) -> None:
        self._preload = list(preload)
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def _server(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _SERVER, *self._preload],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        return self._process

    def run(
        self,
        code: str,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout: int = 120,
        imports: Sequence[str] = (),
    ) -> subprocess.CompletedProcess[str]:
        """Run ``code`` as ``python -c code`` in ``cwd`` (killed by SIGALRM past ``timeout``).

        ``imports`` are modules the interpreter imports (once, if not yet) before forking: the
        programs that share them pay for them once, and the others not at all.
        """
        files = OutputFiles(prefix="zygote-")
        request = {"imports": list(imports), **_request(code, cwd, env, files, timeout)}
        with self._lock:
            server = self._server()
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
            reply = server.stdout.readline()
        if not reply:
            raise RuntimeError("the zygote interpreter died")
        status = json.loads(reply)["status"]
        out, err = files.read_and_remove()
        return subprocess.CompletedProcess(["python", "-c", code], status, out, err)

    def close(self) -> None:
        """Stop the interpreter."""
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            self._process.wait()
            self._process = None


# What the docs' programs import, once: also what they load on first use (anyio's asyncio
# backend on the first anyio.run, aiohttp, the default transport, on a client's first request;
# the LLM and pairwise judges' modules behind agentjudge.judges' names; the report a run
# prints), which each child imported again (~0.1 s of CPU for an example calling a model).
_DEFAULT = Zygote(
    [
        "anyio",
        "anyio._backends._asyncio",
        "pydantic",
        "aiohttp",
        "agentjudge",
        "agentjudge.judges",
        "agentjudge.judges._llm",  # the package's names load on first use
        "agentjudge.judges._pairwise",
        "agentjudge.testing._assertions",
        "agentjudge.testing._fake_server",
        "agentjudge.testing._scripted",
        "agentjudge.models._openai",
        "agentjudge.models._anthropic",
        "agentjudge.harness._run",
        "agentjudge.harness._report",
    ]
)


def python_c(
    code: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: int = 120,
    imports: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in ``cwd``, forked from the shared preloaded interpreter (after it
    imported ``imports``)."""
    return _DEFAULT.run(code, cwd, env, timeout, imports)


_HERE: dict[str, Any] = {}
exec(compile(_CHILD, "<zygote child>", "exec"), _HERE)  # the zygote's very `child`

# `python -c`'s warning filters (CPython's defaults); the pytest process's (``error``) differ.
_DEFAULT_FILTERS: tuple[tuple[Literal["default", "ignore"], type[Warning], str], ...] = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)


_ROOT = Path(__file__).resolve().parent.parent
_INSTALLED = (
    sys.prefix,
    sys.base_prefix,
    str(_ROOT / "agentjudge"),
    str(_ROOT / "_agentjudge_pytest"),
)
"""Where the modules a ``python -c`` could import come from: the interpreter and the package."""


def _request(
    code: str, cwd: Path, env: Mapping[str, str] | None, files: OutputFiles, timeout: float
) -> dict[str, Any]:
    """What a child needs to run ``code`` as ``python -c`` would (see the server's `child`)."""
    return {
        "code": code,
        "cwd": str(Path(cwd).resolve()),
        "env": dict(os.environ if env is None else env),
        "out": files.out,
        "err": files.err,
        "timeout": timeout,
    }


def _imported_modules(code: str) -> list[str]:
    """The absolute imports of ``code`` (``import a.b``, ``from a.b import c``)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _as_a_fresh_interpreter() -> None:
    """In a fork of the pytest process: undo what pytest set that ``python -c`` would not have
    (signal handlers, warning filters, log handlers, hooks, tracing, its import hook and test
    folders on ``sys.path``); the zygote's `child` then sets up the rest."""
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        if callable(signal.getsignal(number)):
            signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    importlib.reload(warnings)  # pytest's catch_warnings(record=True) replaced how they show
    warnings.resetwarnings()
    for action, category, module in reversed(_DEFAULT_FILTERS):
        warnings.filterwarnings(action, category=category, module=module)
    logging.root.handlers.clear()
    logging.root.setLevel(logging.WARNING)
    logging.disable(logging.NOTSET)
    sys.excepthook, sys.unraisablehook = sys.__excepthook__, sys.__unraisablehook__
    threading.excepthook = threading.__excepthook__
    sys.settrace(None)
    sys.setprofile(None)
    threading.settrace(None)
    threading.setprofile(None)
    faulthandler.disable()
    socket.setdefaulttimeout(None)
    tests = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if not os.path.abspath(p or ".").startswith(tests)]
    for name, module in list(sys.modules.items()):  # the tests' modules, and modules of theirs
        where = getattr(module, "__file__", None)
        if where and not os.path.abspath(where).startswith(_INSTALLED):
            del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_pytest")]
    gc.freeze()  # as in the zygote: the child's collections skip the parent's heap


def python_c_here(
    code: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: int = 120
) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in ``cwd``, forked from this (the pytest) process, which imports the
    modules ``code`` imports first (kept for the next program and the next test).

    For programs whose imports the tests of the same worker import anyway (the SDK bridges'
    examples and the "sdk" tests): a zygote would import them a second time. The child undoes
    what pytest set (`_as_a_fresh_interpreter`) and runs as a zygote child does.
    """
    for name in _imported_modules(code):
        try:
            importlib.import_module(name)
        except Exception:  # not importable here: the program imports it itself (or fails)
            continue
    files = OutputFiles(prefix="fork-")
    request = _request(code, cwd, env, files, timeout)
    pid = os.fork()
    if pid == 0:
        try:
            _as_a_fresh_interpreter()
            _HERE["child"](request)  # exits
        finally:
            os._exit(70)
    _, status = os.waitpid(pid, 0)
    out, err = files.read_and_remove()
    return subprocess.CompletedProcess(
        ["python", "-c", code], os.waitstatus_to_exitcode(status), out, err
    )

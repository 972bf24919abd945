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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from output_files import OutputFiles

__all__ = ["Zygote", "python_c"]

_SERVER = r"""
import gc, json, os, signal, sys, traceback, types

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

for line in sys.stdin:
    request = json.loads(line)
    preload(request["imports"])  # those already imported cost nothing
    pid = os.fork()
    if pid == 0:
        child(request)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
"""


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
        request = {
            "imports": list(imports),
            "code": code,
            "cwd": str(Path(cwd).resolve()),
            "env": dict(os.environ if env is None else env),
            "out": files.out,
            "err": files.err,
            "timeout": timeout,
        }
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


_DEFAULT = Zygote(
    [
        "anyio",
        "pydantic",
        "agentjudge",
        "agentjudge.judges",
        "agentjudge.testing._assertions",  # the package's names load on first use
        "agentjudge.testing._fake_server",
        "agentjudge.testing._scripted",
        "agentjudge.models._openai",
        "agentjudge.models._anthropic",
        "agentjudge.harness._run",
    ]
)

SDKS = ("openai", "anthropic", "pydantic_ai", "agents")
"""The SDKs the bridges' examples call (each costs 1-3 s of CPU to import; the last three
import much of the first and of each other, so importing them once is cheaper than in each
example). Programs that need none of them (the README's, the trust page's) do not ask."""


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

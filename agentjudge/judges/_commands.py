"""Command judges: `CommandJudge` and `BuildSuccess` (maven, gradle, pytest, uv).

Processes run through `agentjudge.judges._process.run_command` (shared with
`agentjudge.bridges.run_cli_agent`) in their own session (a new process group), so a timeout --
or the caller's cancellation -- kills the command together with its session, its process group
and every descendant (see `agentjudge.judges._proctree` for the exact guarantee). On Linux the
command runs under a small launcher process (`agentjudge.judges._launcher`, this interpreter)
that makes itself a child subreaper, so even a daemon the command orphaned stays a descendant
and is killed; this process itself is never made a subreaper. POSIX only (process groups and
``os.killpg``).

Commands get a scrubbed environment by default: the variables named in `INHERITED_ENV` (and the
``LC_*`` / ``UV_*`` families), minus anything that looks like a secret; ``env=`` adds variables
and ``inherit_env=True`` passes the whole environment.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from agentjudge.core import Check, Context, Judgment
from agentjudge.judges._paths import DeterministicJudge, WorkspaceError, workspace_of
from agentjudge.judges._process import Command, last_lines, run_command

__all__ = ["DEFAULT_OUTPUT_LIMIT", "INHERITED_ENV", "BuildSuccess", "CommandJudge"]

DEFAULT_OUTPUT_LIMIT = 64 * 1024
"""Bytes of merged output kept (the last ones) in ``metadata["output"]``."""

INHERITED_ENV = (
    # system and locale
    *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM"),
    *("TMPDIR", "TMP", "TEMP", "CI", "SSL_CERT_FILE", "SSL_CERT_DIR"),
    *("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"),
    *("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"),
    # Python
    *("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONIOENCODING", "PYTHONUTF8"),
    # Java, Maven, Gradle
    *("JAVA_HOME", "JDK_HOME", "JAVA_OPTS", "JAVA_TOOL_OPTIONS", "MAVEN_HOME", "M2_HOME"),
    *("MAVEN_OPTS", "MAVEN_ARGS", "GRADLE_HOME", "GRADLE_USER_HOME", "GRADLE_OPTS"),
)
"""Variables a command inherits by default (plus the ``LC_*`` and ``UV_*`` families).

Even these are dropped when the name looks like a secret (it contains KEY, TOKEN, SECRET,
PASSWORD, PASSWD, CREDENTIAL, AUTH or COOKIE) or the value carries one: a password in a URL
(``scheme://user:password@host``) or a ``password=`` / ``secret=`` / ``token=`` / ``api_key=``
setting (as in ``MAVEN_OPTS="-Drepo.password=..."``)."""

_INHERITED_PREFIXES = ("LC_", "UV_")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW(?:OR)?D|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]*@"  # a URL with a password
    r"|(?:passw(?:or)?d|secret|token|api[_-]?key)\s*[=:]",  # -Drepo.password=..., token: ...
    re.IGNORECASE,
)


def _scrubbed_environment(source: Mapping[str, str]) -> dict[str, str]:
    """The part of ``source`` a command inherits by default (see `INHERITED_ENV`)."""
    allowed = set(INHERITED_ENV)
    return {
        name: value
        for name, value in source.items()
        if (name in allowed or name.startswith(_INHERITED_PREFIXES))
        and not _SECRET_NAME.search(name)
        and not _SECRET_VALUE.search(value)
    }


_SHELL_REASONS = {126: "command not executable", 127: "command not found"}

Resolver = Callable[[Path], Awaitable[Command]]


class _Tail:
    """Keeps the last ``limit`` bytes of a stream and counts all of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if not self.limit:
            return  # keep none (``del buffer[:-0]`` would keep everything)
        self.buffer += chunk
        if len(self.buffer) > 2 * self.limit:
            del self.buffer[: len(self.buffer) - self.limit]

    def text(self) -> tuple[str, bool]:
        truncated = self.total > self.limit
        data = bytes(self.buffer[-self.limit :]) if self.limit else b""
        text = data.decode("utf-8", errors="replace")
        if truncated:
            text = f"[output truncated: last {len(data)} of {self.total} bytes]\n" + text
        return text, truncated


def _display(command: Command) -> str:
    return command if isinstance(command, str) else shlex.join(command)


def _validate_command(command: object) -> Command:
    if isinstance(command, str):
        if not command.strip():
            raise ValueError("command must be non-blank")
        return command
    if isinstance(command, bytes) or not isinstance(command, Sequence):
        raise ValueError(
            f"command must be a str or a sequence of str, got {type(command).__name__}"
        )
    items = list(command)
    if not items:
        raise ValueError("command sequence must not be empty")
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"command items must be str, got {type(item).__name__}: {item!r}")
    return tuple(items)


class CommandJudge(DeterministicJudge):
    """Runs a command in the workspace; PASS iff it exits with ``expected_exit_code``.

    A ``str`` command runs through the shell (``/bin/sh -c``); a sequence runs directly. The
    working folder is `Context.workspace`. Standard output and standard error are merged.

    Metadata: ``command``, ``exit_code``, ``expected_exit_code``, ``output`` (the last
    ``output_limit`` bytes, decoded as UTF-8 with replacement, prefixed with a marker line when
    truncated), ``output_truncated`` and ``elapsed_ms``. A timeout kills the command's session,
    process group and descendants (on Linux also the daemons it orphaned) and is ERROR
    (``exit_code`` is then absent and ``timed_out`` is true). A program that does not exist is
    FAIL (a sequence whose program is not found; shell exit code 127).

    The command does not see the whole environment: only `INHERITED_ENV` (with the ``LC_*`` and
    ``UV_*`` families) minus secret-looking names and values, plus ``env``. API keys, tokens and
    passwords in this process's environment therefore do not reach the command through its
    environment, nor its stored output that way.

    Args:
        command: Shell string or argument sequence.
        expected_exit_code: Exit code that means success.
        timeout: Seconds before the process group is killed; None waits forever.
        env: Variables added to (or overriding) the inherited environment.
        name: Judge name; defaults to the class name.
        output_limit: Bytes of output kept in the metadata (0 keeps none).
        exit_code_reasons: Explanations of particular exit codes, used in the reasoning.
        inherit_env: Pass the whole environment of this process (then ``env`` on top).

    Raises:
        ValueError: invalid command, timeout, env or output_limit.
    """

    def __init__(
        self,
        command: Command,
        expected_exit_code: int = 0,
        timeout: float | None = 120.0,
        env: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        exit_code_reasons: Mapping[int, str] | None = None,
        description: str | None = None,
        inherit_env: bool = False,
    ) -> None:
        self.command: Command = _validate_command(command)
        if isinstance(expected_exit_code, bool) or not isinstance(expected_exit_code, int):
            raise ValueError(f"expected_exit_code must be an int, got {expected_exit_code!r}")
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float):
                raise ValueError(f"timeout must be a number of seconds or None, got {timeout!r}")
            if not math.isfinite(timeout) or timeout <= 0:
                raise ValueError(f"timeout must be finite and > 0, got {timeout!r}")
        if env is not None:
            for key, value in env.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    raise ValueError(f"env entries must be str -> str, got {key!r}: {value!r}")
        if isinstance(output_limit, bool) or not isinstance(output_limit, int) or output_limit < 0:
            raise ValueError(f"output_limit must be an int >= 0, got {output_limit!r}")
        self.expected_exit_code = expected_exit_code
        self.timeout = None if timeout is None else float(timeout)
        self.env = dict(env) if env is not None else None
        if not isinstance(inherit_env, bool):
            raise ValueError(f"inherit_env must be a bool, got {inherit_env!r}")
        self.inherit_env = inherit_env
        self.output_limit = output_limit
        self.exit_code_reasons = dict(exit_code_reasons or {})
        super().__init__(
            name,
            description
            or f"Runs {_display(self.command)} (expects exit code {expected_exit_code})",
        )

    async def _command_for(self, workspace: Path) -> Command:
        """The command to run for this workspace (subclasses detect wrappers here)."""
        return self.command

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        try:
            workspace = workspace_of(ctx)
        except WorkspaceError as exc:
            return Judgment.errored(str(exc), metadata={"command": _display(self.command)})
        if not await anyio.Path(workspace).is_dir():
            return Judgment.errored(
                f"workspace {str(workspace)!r} is not an existing folder",
                metadata={"command": _display(self.command)},
            )
        command = await self._command_for(workspace)
        return await self._run(command, workspace)

    def _environment(self) -> dict[str, str]:
        base = dict(os.environ) if self.inherit_env else _scrubbed_environment(os.environ)
        return {**base, **(self.env or {})}

    async def _run(self, command: Command, workspace: Path) -> Judgment:
        shown = _display(command)
        meta: dict[str, Any] = {"command": shown}
        started = time.monotonic()
        tail = _Tail(self.output_limit)
        done = await run_command(
            command, cwd=workspace, env=self._environment(), timeout=self.timeout, stdout=tail.feed
        )
        if done.not_started is not None:
            return self._not_started(done.not_started, command, meta)
        timed_out = done.timed_out
        elapsed_ms = max(0, round((time.monotonic() - started) * 1000))
        output, truncated = tail.text()
        if timed_out:
            meta.update(
                expected_exit_code=self.expected_exit_code,
                output=output,
                output_truncated=truncated,
                elapsed_ms=elapsed_ms,
                timed_out=True,
                timeout_s=self.timeout,
            )
            return Judgment.errored(
                f"Command timed out after {self.timeout:g} s and its process group was killed: "
                f"{shown}",
                checks=(Check.fail("exit_code", f"timed out after {self.timeout:g} s"),),
                metadata=meta,
            )
        code = done.exit_code
        assert code is not None
        meta.update(
            exit_code=code,
            expected_exit_code=self.expected_exit_code,
            output=output,
            output_truncated=truncated,
            elapsed_ms=elapsed_ms,
        )
        if code == self.expected_exit_code:
            return Judgment.passed(
                f"Command succeeded with exit code {code}: {shown}",
                checks=(Check.ok("exit_code", f"exit code {code}"),),
                metadata=meta,
            )
        why = self._explain(code, command)
        excerpt = last_lines(output)
        reasoning = f"Command exited with {code}, expected {self.expected_exit_code}{why}: {shown}"
        if excerpt:
            reasoning += f"\nlast output:\n{excerpt}"
        return Judgment.failed(
            reasoning,
            checks=(
                Check.fail(
                    "exit_code", f"exit code {code}, expected {self.expected_exit_code}{why}"
                ),
            ),
            metadata=meta,
        )

    def _not_started(self, exc: OSError, command: Command, meta: dict[str, Any]) -> Judgment:
        """The judgment of a command that could not be started."""
        shown = meta["command"]
        if isinstance(exc, FileNotFoundError):
            program = command if isinstance(command, str) else command[0]
            return Judgment.failed(
                f"Program not found: {program!r} (running {shown})",
                checks=(Check.fail("exit_code", f"program not found: {program}"),),
                metadata={**meta, "expected_exit_code": self.expected_exit_code},
            )
        if isinstance(exc, PermissionError):
            return Judgment.failed(
                f"Program not executable: {shown} ({exc.strerror or exc})",
                checks=(Check.fail("exit_code", "program not executable"),),
                metadata={**meta, "expected_exit_code": self.expected_exit_code},
            )
        return Judgment.errored(f"Cannot start {shown}: {exc}", metadata=meta)

    def _explain(self, code: int, command: Command) -> str:
        if code in self.exit_code_reasons:
            return f" ({self.exit_code_reasons[code]})"
        if isinstance(command, str) and code in _SHELL_REASONS:
            return f" ({_SHELL_REASONS[code]})"
        if code < 0:
            try:
                return f" (terminated by {signal.Signals(-code).name})"
            except ValueError:
                return f" (terminated by signal {-code})"
        return ""


async def _executable(path: Path) -> bool:
    apath = anyio.Path(path)
    return await apath.is_file() and os.access(path, os.X_OK)


def _strings(kind: str, values: Sequence[str]) -> tuple[str, ...]:
    for value in values:
        if not isinstance(value, str) or not value:
            raise ValueError(f"{kind} must be non-empty strings, got {value!r}")
    return tuple(values)


_PYTEST_REASONS = {
    1: "tests failed",
    2: "test run interrupted",
    3: "pytest internal error",
    4: "pytest usage error",
    5: "pytest collected no tests",
}


class BuildSuccess(CommandJudge):
    """A build or test command that must exit 0; factories detect wrappers and lock files.

    ``BuildSuccess(command)`` is a `CommandJudge` with a ten-minute timeout. The factories pick
    the command at judge time from the workspace:

    - `maven`: ``./mvnw`` when present and executable, else ``mvn``.
    - `gradle`: ``./gradlew`` when present and executable, else ``gradle``.
    - `pytest`: the workspace's ``.venv`` interpreter when present, else ``uv run pytest`` when
      ``uv.lock`` exists, else the current interpreter (``sys.executable -m pytest``). Exit code
      5 (no tests collected) is FAIL with that reason.
    - `uv`: ``uv <args>``.

    Arguments are passed without a shell, so they need no quoting. Every factory takes
    ``timeout``, ``env``, ``name`` and ``inherit_env`` (see `CommandJudge`).
    """

    def __init__(
        self,
        command: Command,
        *,
        timeout: float | None = 600.0,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        exit_code_reasons: Mapping[int, str] | None = None,
        description: str | None = None,
        resolver: Resolver | None = None,
        inherit_env: bool = False,
    ) -> None:
        super().__init__(
            command,
            0,
            timeout,
            env,
            name=name,
            output_limit=output_limit,
            exit_code_reasons=exit_code_reasons,
            description=description,
            inherit_env=inherit_env,
        )
        self._resolver = resolver

    async def _command_for(self, workspace: Path) -> Command:
        if self._resolver is None:
            return self.command
        return await self._resolver(workspace)

    @classmethod
    def maven(
        cls,
        *goals: str,
        timeout: float | None = 600.0,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        inherit_env: bool = False,
    ) -> BuildSuccess:
        """Run Maven goals (default ``package``) with ``./mvnw`` when the workspace has one."""
        args = _strings("goals", goals) or ("package",)

        async def resolve(workspace: Path) -> Command:
            if await _executable(workspace / "mvnw"):
                return ("./mvnw", *args)
            return ("mvn", *args)

        return cls(
            ("mvn", *args),
            timeout=timeout,
            env=env,
            name=name,
            inherit_env=inherit_env,
            description=f"Runs mvn {' '.join(args)} (./mvnw when present)",
            resolver=resolve,
        )

    @classmethod
    def gradle(
        cls,
        *tasks: str,
        timeout: float | None = 600.0,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        inherit_env: bool = False,
    ) -> BuildSuccess:
        """Run Gradle tasks (default ``build``) with ``./gradlew`` when the workspace has one."""
        args = _strings("tasks", tasks) or ("build",)

        async def resolve(workspace: Path) -> Command:
            if await _executable(workspace / "gradlew"):
                return ("./gradlew", *args)
            return ("gradle", *args)

        return cls(
            ("gradle", *args),
            timeout=timeout,
            env=env,
            name=name,
            inherit_env=inherit_env,
            description=f"Runs gradle {' '.join(args)} (./gradlew when present)",
            resolver=resolve,
        )

    @classmethod
    def pytest(
        cls,
        *args: str,
        timeout: float | None = 600.0,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        inherit_env: bool = False,
    ) -> BuildSuccess:
        """Run pytest with the workspace's environment; no tests collected (exit 5) is FAIL."""
        extra = _strings("pytest arguments", args)

        async def resolve(workspace: Path) -> Command:
            for candidate in (
                workspace / ".venv" / "bin" / "python",
                workspace / ".venv" / "Scripts" / "python.exe",
            ):
                if await _executable(candidate):
                    return (str(candidate), "-m", "pytest", *extra)
            if await anyio.Path(workspace / "uv.lock").is_file():
                return ("uv", "run", "pytest", *extra)
            return (sys.executable, "-m", "pytest", *extra)

        return cls(
            ("pytest", *extra),
            timeout=timeout,
            env=env,
            name=name,
            inherit_env=inherit_env,
            exit_code_reasons=_PYTEST_REASONS,
            description="Runs pytest in the workspace's environment (exit 5 is FAIL)",
            resolver=resolve,
        )

    @classmethod
    def uv(
        cls,
        *args: str,
        timeout: float | None = 600.0,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        inherit_env: bool = False,
    ) -> BuildSuccess:
        """Run ``uv <args>``, e.g. ``BuildSuccess.uv("build")``."""
        extra = _strings("uv arguments", args)
        if not extra:
            raise ValueError('uv needs at least one argument, e.g. BuildSuccess.uv("build")')
        return cls(("uv", *extra), timeout=timeout, env=env, name=name, inherit_env=inherit_env)

from __future__ import annotations

import stat
import sys
from pathlib import Path

import anyio
import pytest
from process_support import has_text, past_timeout, wait_for_file, wait_until_gone

from agentjudge.core import Context, Status
from agentjudge.judges import BuildSuccess, CommandJudge


def ctx_for(workspace: Path) -> Context:
    return Context(workspace=workspace)


def script(path: Path, body: str, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    mode = path.stat().st_mode
    path.chmod(mode | stat.S_IXUSR if executable else mode & ~stat.S_IXUSR & ~stat.S_IXGRP)
    return path


async def test_command_success_records_metadata(tmp_path: Path) -> None:
    """A shell command runs in the workspace; metadata has the pinned keys."""
    (tmp_path / "marker.txt").write_text("here")
    result = await CommandJudge("cat marker.txt; echo oops >&2")(ctx_for(tmp_path))
    assert result.status is Status.PASS
    meta = result.metadata
    assert meta["command"] == "cat marker.txt; echo oops >&2"
    assert meta["exit_code"] == 0 and meta["expected_exit_code"] == 0
    assert meta["output"] == "hereoops\n"
    assert isinstance(meta["elapsed_ms"], int) and meta["elapsed_ms"] >= 0
    assert meta["output_truncated"] is False


async def test_command_wrong_exit_code_fails_with_output_excerpt(tmp_path: Path) -> None:
    """A different exit code is FAIL; the reasoning quotes the last output lines."""
    result = await CommandJudge("echo compiling; echo broken >&2; exit 3")(ctx_for(tmp_path))
    assert result.status is Status.FAIL
    assert result.metadata["exit_code"] == 3
    assert "exited with 3, expected 0" in result.reasoning and "broken" in result.reasoning
    assert [(c.name, c.passed) for c in result.checks] == [("exit_code", False)]


async def test_command_expected_nonzero_exit_passes(tmp_path: Path) -> None:
    """expected_exit_code can require failure."""
    assert (await CommandJudge("exit 2", expected_exit_code=2)(ctx_for(tmp_path))).is_pass


async def test_sequence_runs_without_shell(tmp_path: Path) -> None:
    """A sequence is not shell-interpreted: metacharacters reach the program as is."""
    judge = CommandJudge([sys.executable, "-c", "import sys; print(sys.argv[1])", "$HOME; x"])
    result = await judge(ctx_for(tmp_path))
    assert result.is_pass
    assert result.metadata["output"].strip() == "$HOME; x"
    assert result.metadata["command"].startswith(sys.executable)


async def test_missing_program_is_fail_in_both_forms(tmp_path: Path) -> None:
    """A missing program is FAIL: FileNotFoundError (sequence) or exit 127 (shell)."""
    exec_form = await CommandJudge(["definitely-not-a-program-xyz"])(ctx_for(tmp_path))
    assert exec_form.status is Status.FAIL
    assert "not found" in exec_form.reasoning
    shell_form = await CommandJudge("definitely-not-a-program-xyz")(ctx_for(tmp_path))
    assert shell_form.status is Status.FAIL
    assert shell_form.metadata["exit_code"] == 127
    assert "command not found" in shell_form.reasoning


async def test_output_is_truncated_to_last_bytes(tmp_path: Path) -> None:
    """Only the last output_limit bytes are kept, with a marker line."""
    code = "import sys; sys.stdout.write('a' * 100000 + 'END')"
    result = await CommandJudge([sys.executable, "-c", code], output_limit=1000)(ctx_for(tmp_path))
    output = result.metadata["output"]
    assert result.metadata["output_truncated"] is True
    assert output.startswith("[output truncated: last 1000 of 100003 bytes]\n")
    assert output.endswith("END")
    assert len(output.split("\n", 1)[1]) == 1000


async def test_output_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    """Undecodable output bytes become replacement characters."""
    code = "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end')"
    result = await CommandJudge([sys.executable, "-c", code])(ctx_for(tmp_path))
    assert result.metadata["output"] == "ok \ufffd\ufffd end"


async def test_env_is_added_to_the_inherited_environment(tmp_path: Path) -> None:
    """env entries override or extend the inherited environment (PATH stays)."""
    result = await CommandJudge('echo "$AJ_FLAG"; command -v sh', env={"AJ_FLAG": "on"})(
        ctx_for(tmp_path)
    )
    assert result.is_pass
    assert result.metadata["output"].startswith("on\n")


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """A timeout is ERROR and kills the shell and the child it spawned."""
    command = "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; wait"
    with anyio.fail_after(30):
        result, workspace, _ = await past_timeout(
            lambda timeout, ws: CommandJudge(command, timeout=timeout)(ctx_for(ws)),
            lambda _, ws: has_text(ws / "shell.pid"),  # the timeout fired after both started
            tmp_path,
        )
    assert result.status is Status.ERROR
    assert "timed out" in result.reasoning
    assert result.metadata["timed_out"] is True
    assert "exit_code" not in result.metadata
    child = int((workspace / "child.pid").read_text())
    shell = int((workspace / "shell.pid").read_text())
    assert await wait_until_gone(child)
    assert await wait_until_gone(shell)


async def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    """Cancelling the caller kills the process group and propagates the cancellation."""
    judge = CommandJudge("sleep 30 & echo $! > child.pid; wait", timeout=None)
    finished = False
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            nonlocal finished
            await judge(ctx_for(tmp_path))
            finished = True

        tg.start_soon(run)
        await wait_for_file(tmp_path / "child.pid")
        tg.cancel_scope.cancel()
    assert not finished
    child = int((tmp_path / "child.pid").read_text())
    assert await wait_until_gone(child)


async def test_command_without_workspace_is_error() -> None:
    """No workspace means ERROR with a reason."""
    result = await CommandJudge("true")(Context())
    assert result.status is Status.ERROR and "workspace" in result.reasoning


def test_command_validation() -> None:
    """Blank commands, empty sequences and bad timeouts are ValueError."""
    for kwargs in ({"command": " "}, {"command": []}, {"command": "x", "timeout": 0}):
        with pytest.raises(ValueError):
            CommandJudge(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CommandJudge("x", env={"A": 1})  # type: ignore[dict-item]


# ----------------------------------------------------------------------------- BuildSuccess
async def test_maven_uses_executable_wrapper(tmp_path: Path) -> None:
    """BuildSuccess.maven runs ./mvnw with the goals when it is executable."""
    script(tmp_path / "mvnw", 'echo "$@" > mvnw-args.txt\necho "[INFO] BUILD SUCCESS"\n')
    judge = BuildSuccess.maven("clean", "verify")
    result = await judge(ctx_for(tmp_path))
    assert result.is_pass, result.reasoning
    assert (tmp_path / "mvnw-args.txt").read_text().strip() == "clean verify"
    assert result.metadata["command"] == "./mvnw clean verify"
    assert judge.name == "BuildSuccess"


async def test_maven_wrapper_failure_is_fail(tmp_path: Path) -> None:
    """A failing wrapper build is FAIL with the build output."""
    script(tmp_path / "mvnw", 'echo "[ERROR] COMPILATION ERROR"\nexit 1\n')
    result = await BuildSuccess.maven("package")(ctx_for(tmp_path))
    assert result.status is Status.FAIL
    assert "COMPILATION ERROR" in result.reasoning


async def test_maven_non_executable_wrapper_falls_back_to_mvn(tmp_path: Path) -> None:
    """A non-executable mvnw is ignored; mvn from PATH runs instead."""
    ws = tmp_path / "ws"
    script(ws / "mvnw", "exit 9\n", executable=False)
    bin_dir = tmp_path / "bin"
    script(bin_dir / "mvn", 'echo "$@" > mvn-args.txt\n')
    judge = BuildSuccess.maven("test", env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    result = await judge(ctx_for(ws))
    assert result.is_pass, result.reasoning
    assert (ws / "mvn-args.txt").read_text().strip() == "test"
    assert result.metadata["command"] == "mvn test"


async def test_gradle_wrapper_detection(tmp_path: Path) -> None:
    """BuildSuccess.gradle prefers ./gradlew, default task build."""
    script(tmp_path / "gradlew", 'echo "$@" > gradle-args.txt\n')
    result = await BuildSuccess.gradle()(ctx_for(tmp_path))
    assert result.is_pass
    assert (tmp_path / "gradle-args.txt").read_text().strip() == "build"


async def test_pytest_no_tests_collected_is_fail(tmp_path: Path) -> None:
    """pytest exit code 5 (no tests collected) is FAIL with that reason."""
    judge = BuildSuccess.pytest(
        "-q", "-p", "no:cacheprovider", env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    )
    result = await judge(ctx_for(tmp_path))
    assert result.status is Status.FAIL
    assert result.metadata["exit_code"] == 5
    assert "no tests" in result.reasoning
    assert result.metadata["command"].startswith(sys.executable)


async def test_pytest_prefers_workspace_venv(tmp_path: Path) -> None:
    """A workspace .venv interpreter runs pytest when present."""
    script(tmp_path / ".venv" / "bin" / "python", 'echo "$@" > venv-args.txt\n')
    result = await BuildSuccess.pytest("-x")(ctx_for(tmp_path))
    assert result.is_pass
    assert (tmp_path / "venv-args.txt").read_text().strip() == "-m pytest -x"


async def test_pytest_uses_uv_run_with_lock_file(tmp_path: Path) -> None:
    """Without .venv but with uv.lock, pytest runs through `uv run`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "uv.lock").write_text("version = 1\n")
    bin_dir = tmp_path / "bin"
    script(bin_dir / "uv", 'echo "$@" > uv-args.txt\n')
    judge = BuildSuccess.pytest(env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    result = await judge(ctx_for(ws))
    assert result.is_pass
    assert (ws / "uv-args.txt").read_text().strip() == "run pytest"


async def test_uv_factory(tmp_path: Path) -> None:
    """BuildSuccess.uv runs uv with the arguments and needs at least one."""
    bin_dir = tmp_path / "bin"
    script(bin_dir / "uv", 'echo "$@" > uv-args.txt\nexit 1\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    result = await BuildSuccess.uv("build", env={"PATH": f"{bin_dir}:/usr/bin:/bin"})(ctx_for(ws))
    assert result.status is Status.FAIL
    assert (ws / "uv-args.txt").read_text().strip() == "build"
    with pytest.raises(ValueError):
        BuildSuccess.uv()

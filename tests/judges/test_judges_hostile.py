"""Workspace files written by a hostile agent: pipes, racing links, huge and deeply nested files."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
import pytest

from agentjudge.core import Context, Judgment, Status
from agentjudge.judges import (
    CoveragePreservation,
    FileComparison,
    FileContent,
    FileExists,
    MatchMode,
    SupersetDiff,
    parse_coverage,
)
from agentjudge.judges._compare import DEFAULT_COMPARE_MAX_BYTES
from agentjudge.judges._compare_json import diff_values
from agentjudge.judges._safeio import (
    DEFAULT_MAX_BYTES,
    NotRegularFileError,
    PathEscapeError,
    open_regular,
    run_blocking,
)
from agentjudge.judging import Judge

T = TypeVar("T")

WATCHDOG_S = 10
"""Upper bound for a read blocked on a pipe (the bug): the watchdog then opens the pipe's write
end so the blocked read ends and the test fails instead of hanging the suite."""


def ctx_for(workspace: Path, **metadata: object) -> Context:
    return Context(workspace=workspace, metadata=metadata)


def _release(fifo: Path) -> None:
    with contextlib.suppress(OSError):  # ENXIO: nobody is blocked reading it
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


async def unblocked(fifo: Path, run: Callable[[], Awaitable[T]]) -> T:
    """Await ``run()``; should it block on ``fifo`` for WATCHDOG_S, release the pipe."""
    results: list[T] = []
    async with anyio.create_task_group() as tg:

        async def watchdog() -> None:
            await anyio.sleep(WATCHDOG_S)  # upper bound, not ordering: see WATCHDOG_S
            _release(fifo)

        tg.start_soon(watchdog)
        results.append(await run())
        tg.cancel_scope.cancel()
    return results[0]


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that costs no disk (a hole) and is never read by the fix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


# ----------------------------------------------------------------------------- pipes (item 8)
async def test_file_content_refuses_a_named_pipe_without_waiting(tmp_path: Path) -> None:
    """FileContent on a FIFO is ERROR 'not a regular file' at once, never a blocked read."""
    os.mkfifo(tmp_path / "answer.txt")
    judge = FileContent("answer.txt", "")
    result = await unblocked(tmp_path / "answer.txt", lambda: judge(ctx_for(tmp_path)))
    assert result.status is Status.ERROR
    assert "a named pipe (FIFO), not a regular file" in result.reasoning
    assert [(c.name, c.passed) for c in result.checks] == [
        ("file_exists", True),
        ("file_readable", False),
    ]


@pytest.mark.parametrize("judge_type", [SupersetDiff, FileComparison])
async def test_walking_judges_name_a_pipe_in_the_workspace(
    judge_type: type[SupersetDiff | FileComparison], tmp_path: Path
) -> None:
    """A FIFO where a reference file is expected is a failing check naming what it is."""
    ref, ws = tmp_path / "ref", tmp_path / "ws"
    ref.mkdir()
    ws.mkdir()
    (ref / "a.txt").write_text("a")
    os.mkfifo(ws / "a.txt")
    result: Judgment = await unblocked(
        ws / "a.txt", lambda: judge_type()(ctx_for(ws, expected_dir=ref))
    )
    assert result.status is Status.FAIL
    assert result.checks[0].message == "Not a regular file: a.txt (a named pipe (FIFO))"


async def test_coverage_report_pipe_is_refused(tmp_path: Path) -> None:
    """A coverage report that is a FIFO is ERROR naming it, read directly or by a judge."""
    fifo = tmp_path / "coverage.json"
    os.mkfifo(fifo)
    judge = CoveragePreservation(report="coverage.json")
    result = await judge(ctx_for(tmp_path, baseline_coverage=50.0))
    assert result.status is Status.ERROR
    assert "coverage.json: a named pipe (FIFO), not a regular file" in result.reasoning

    async def parse() -> str:
        try:
            await anyio.to_thread.run_sync(parse_coverage, fifo, abandon_on_cancel=True)
        except ValueError as exc:
            return str(exc)
        return "parsed"

    assert await unblocked(fifo, parse) == f"{fifo}: a named pipe (FIFO), not a regular file"


def test_open_regular_refuses_special_files_before_reading(tmp_path: Path) -> None:
    """open_regular refuses a FIFO and a folder (confined or not) and opens regular files."""
    os.mkfifo(tmp_path / "pipe")
    for within in (None, tmp_path):
        with pytest.raises(NotRegularFileError, match="named pipe"):
            open_regular(tmp_path / "pipe", within=within)
        with pytest.raises(NotRegularFileError, match="a folder"):
            open_regular(tmp_path, within=within)
    (tmp_path / "ok.txt").write_text("ok")
    fd = open_regular(tmp_path / "ok.txt", within=tmp_path)
    try:
        assert os.read(fd, 10) == b"ok"
    finally:
        os.close(fd)


async def test_a_stuck_blocking_read_does_not_hold_up_cancellation() -> None:
    """Work run through run_blocking is abandoned when the caller's scope is cancelled."""
    started, release = threading.Event(), threading.Event()

    def stuck() -> None:
        started.set()
        release.wait(30)  # stands for a read that never returns

    finished = False
    try:
        with anyio.fail_after(10):  # upper bound for the regression: not ordering
            async with anyio.create_task_group() as tg:

                async def read() -> None:
                    nonlocal finished
                    await run_blocking(stuck)
                    finished = True

                tg.start_soon(read)
                await anyio.to_thread.run_sync(started.wait)
                tg.cancel_scope.cancel()
        assert not finished and not release.is_set()
    finally:
        release.set()


# ----------------------------------------------------------------------------- links (item 12)
SWAP_PAUSE = 0.0001
"""Seconds the swapper rests after each swap. Swapping flat out, the thread mostly waited for
the interpreter lock and got it only between the judge's reads, so the walking judges' window
(name check, then open) was caught in about 1 read of 400 and the race ran all ROUNDS; resting,
it wakes at any moment of a read and catches the window in about 1 read of 7 for every judge
(measured at load average 12 on 2 cores). Nothing waits for it: it only paces the swaps."""


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace whose a.txt flips between a file saying 'inside' and a link to a secret."""
    ws, ref = tmp_path / "ws", tmp_path / "ref"
    ws.mkdir()
    ref.mkdir()
    (ref / "a.txt").write_text("inside\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET root:x:0:0\n")
    (ws / "a.txt").write_text("inside\n")
    inside = tmp_path / "inside.txt"
    inside.write_text("inside\n")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.symlink(secret, ws / ".link")
            os.replace(ws / ".link", ws / "a.txt")
            time.sleep(SWAP_PAUSE)  # pacing the swapper, not ordering: see SWAP_PAUSE
            os.link(inside, ws / ".file")  # a second name for 'inside': as quick as the link
            os.replace(ws / ".file", ws / "a.txt")
            time.sleep(SWAP_PAUSE)

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield ws, ref
    finally:
        stop.set()
        thread.join()


ROUNDS = 2000
"""Most reads raced per judge: the unfixed judges leaked in about 1 % of them on 2 cores."""

RACE_HITS = 20
"""A race ends once this many reads were caught in the window itself: the judge's name check saw
the file and its open then met the link (refused by the confined walk). Each such read is one the
unfixed judges leaked through, so 20 of them are 20 chances to catch the bug. Every race must
catch at least one, or it tests nothing."""


async def race(judge: Judge, ctx: Context, check: Callable[[Judgment], None]) -> int:
    """Call ``judge`` up to ROUNDS times while the link swaps, ``check`` each result; return the
    number of reads caught in the window (stopping at RACE_HITS)."""
    hits = 0
    for _ in range(ROUNDS):
        result = await judge(ctx)
        check(result)
        if result.status is Status.ERROR and "leads outside the workspace" in result.reasoning:
            hits += 1  # the name check passed, the confined open then met the link and refused
            if hits == RACE_HITS:
                break
    return hits


async def test_file_content_never_reads_through_a_swapped_link(
    swapping: tuple[Path, Path],
) -> None:
    """Racing a file against a link out of the workspace never makes FileContent read outside."""
    ws, _ = swapping

    def check(result: Judgment) -> None:
        assert result.status in {Status.FAIL, Status.ERROR}, "read the file outside the workspace"

    hits = await race(FileContent("a.txt", "TOPSECRET", MatchMode.CONTAINS), ctx_for(ws), check)
    assert hits > 0, "the race was never hit: the test no longer tests anything"


@pytest.mark.parametrize("judge_type", [FileComparison, SupersetDiff])
async def test_walking_judges_never_quote_through_a_swapped_link(
    judge_type: type[FileComparison | SupersetDiff], swapping: tuple[Path, Path]
) -> None:
    """Racing a workspace file against a link out never lets a walking judge read outside."""
    ws, ref = swapping

    def check(result: Judgment) -> None:
        shown = result.reasoning + "".join(c.message for c in result.checks)
        assert "TOPSECRET" not in shown
        if result.status is not Status.ERROR:  # ERROR: the escaping link was seen and refused
            assert result.status is Status.PASS, shown  # else it read 'inside', never the secret

    hits = await race(judge_type(), ctx_for(ws, expected_dir=ref), check)
    assert hits > 0, "the race was never hit: the test no longer tests anything"


def test_confined_open_refuses_a_folder_link_out(tmp_path: Path) -> None:
    """A path through a folder that links outside is refused by the confined walk itself."""
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    outside.mkdir()
    ws.mkdir()
    (outside / "a.txt").write_text("secret")
    (ws / "sub").symlink_to(outside, target_is_directory=True)
    (ws / "up").symlink_to("../outside", target_is_directory=True)
    for path in (ws / "sub" / "a.txt", ws / "up" / "a.txt", Path("sub/a.txt")):
        with pytest.raises(PathEscapeError, match="leads outside the workspace"):
            open_regular(path, within=ws)


def test_confined_open_follows_links_that_stay_inside(tmp_path: Path) -> None:
    """Relative and absolute links that stay inside the workspace are followed."""
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    (ws / "real" / "a.txt").write_text("inside")
    (ws / "rel").symlink_to("real", target_is_directory=True)
    (ws / "abs").symlink_to(ws / "real", target_is_directory=True)
    (ws / "real" / "back.txt").symlink_to("../real/./a.txt")
    for path in ("rel/a.txt", "abs/a.txt", "abs/back.txt", "real/../rel/back.txt"):
        fd = open_regular(ws / path, within=ws)
        try:
            assert os.read(fd, 100) == b"inside", path
        finally:
            os.close(fd)


async def test_judges_refuse_a_folder_link_out_and_keep_inside_links(tmp_path: Path) -> None:
    """FileExists/FileContent: a link component out is ERROR; links staying inside work."""
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    outside.mkdir()
    (ws / "real").mkdir(parents=True)
    (outside / "a.txt").write_text("secret")
    (ws / "real" / "a.txt").write_text("inside")
    (ws / "sub").symlink_to(outside, target_is_directory=True)
    (ws / "in").symlink_to("real", target_is_directory=True)
    for judge in (FileExists("sub/a.txt"), FileContent("sub/a.txt", "secret")):
        result = await judge(ctx_for(ws))
        assert result.status is Status.ERROR and "symbolic link" in result.reasoning
    assert (await FileExists("in/a.txt")(ctx_for(ws))).is_pass
    assert (await FileContent("in/a.txt", "inside")(ctx_for(ws))).is_pass
    assert (await FileExists("in/nothing.txt")(ctx_for(ws))).status is Status.FAIL


# ----------------------------------------------------------------------------- sizes (item 14)
async def test_file_content_refuses_files_over_the_default_cap(tmp_path: Path) -> None:
    """A file over 64 MiB is ERROR naming its size and the limit, without reading it."""
    sparse(tmp_path / "big.txt", DEFAULT_MAX_BYTES + 1)
    result = await FileContent("big.txt", "x", MatchMode.CONTAINS)(ctx_for(tmp_path))
    assert result.status is Status.ERROR
    assert result.reasoning == (
        f"Cannot read big.txt as UTF-8 text: too large ({DEFAULT_MAX_BYTES + 1} bytes; "
        f"the limit is max_bytes={DEFAULT_MAX_BYTES})"
    )
    assert [c.name for c in result.checks] == ["file_exists", "file_readable"]


async def test_file_content_max_bytes_is_configurable(tmp_path: Path) -> None:
    """max_bytes sets the cap: at the cap the file is read, one byte over it is refused."""
    (tmp_path / "a.txt").write_text("0123456789")
    assert (await FileContent("a.txt", "0123456789", max_bytes=10)(ctx_for(tmp_path))).is_pass
    over = await FileContent("a.txt", "0123456789", max_bytes=9)(ctx_for(tmp_path))
    assert over.status is Status.ERROR and "too large (10 bytes" in over.reasoning
    with pytest.raises(ValueError, match="max_bytes"):
        FileContent("a.txt", "x", max_bytes=-1)


async def test_file_comparison_caps_both_sides(tmp_path: Path) -> None:
    """An oversized workspace file is a failing check naming it; an oversized reference, ERROR."""
    ref, ws = tmp_path / "ref", tmp_path / "ws"
    (ref / "small.json").parent.mkdir()
    (ref / "small.json").write_text("[1]")
    (ws / "small.json").parent.mkdir()
    (ws / "small.json").write_text("[" + "1, " * 100 + "1]")
    judge = FileComparison(max_bytes=100)
    result = await judge(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.FAIL
    assert result.checks[0].message == (
        "small.json is too large to compare (303 bytes; the limit is max_bytes=100)"
    )
    sparse(ref / "huge.bin", DEFAULT_MAX_BYTES + 1)
    broken = await FileComparison()(ctx_for(ws, expected_dir=ref))
    assert broken.status is Status.ERROR
    assert "Reference file huge.bin is too large to compare" in broken.reasoning


async def test_file_comparison_refuses_a_workspace_file_over_the_default_cap(
    tmp_path: Path,
) -> None:
    """A workspace file over 8 MiB is a failing check naming it and its size, never read."""
    ref, ws = tmp_path / "ref", tmp_path / "ws"
    ref.mkdir()
    (ref / "data.txt").write_text("small\n")
    sparse(ws / "data.txt", DEFAULT_COMPARE_MAX_BYTES + 1)
    result = await FileComparison()(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.FAIL
    assert result.checks[0].message == (
        f"data.txt is too large to compare ({DEFAULT_COMPARE_MAX_BYTES + 1} bytes; "
        f"the limit is max_bytes={DEFAULT_COMPARE_MAX_BYTES})"
    )


async def test_coverage_report_over_the_cap_is_error(tmp_path: Path) -> None:
    """A coverage report over 64 MiB is ERROR saying it is too large."""
    sparse(tmp_path / "coverage.json", DEFAULT_MAX_BYTES + 1)
    result = await CoveragePreservation()(ctx_for(tmp_path, baseline_coverage=50.0))
    assert result.status is Status.ERROR
    assert f"coverage.json: too large ({DEFAULT_MAX_BYTES + 1} bytes" in result.reasoning


# ----------------------------------------------------------------------------- nesting (item 13)
DEEP = {
    "config.json": "[" * 100_000 + "]" * 100_000,
    "settings.toml": "a = " + "[" * 5_000 + "]" * 5_000 + "\n",
    "module.py": "x = " + "-" * 200_000 + "1\n",
}


@pytest.mark.parametrize("name", sorted(DEEP))
async def test_deeply_nested_workspace_file_is_a_failing_check(name: str, tmp_path: Path) -> None:
    """A workspace file nested past the recursion limit is FAIL naming it, not a judge crash."""
    ref, ws = tmp_path / "ref", tmp_path / "ws"
    ref.mkdir()
    ws.mkdir()
    (ref / name).write_text(
        "x = 1\n" if name.endswith(".py") else "[]" if ".json" in name else "a = []\n"
    )
    (ref / "other.txt").write_text("same")
    (ws / "other.txt").write_text("same")
    (ws / name).write_text(DEEP[name])
    result = await FileComparison()(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.FAIL
    assert result.score == 0.5
    failing = [c for c in result.checks if not c.passed]
    assert [c.name for c in failing] == [name]
    assert (
        failing[0].message.startswith(f"{name} is ") and "nested too deeply" in failing[0].message
    )


async def test_deeply_nested_reference_file_is_error_naming_it(tmp_path: Path) -> None:
    """A reference file nested past the recursion limit is ERROR naming the reference file."""
    ref, ws = tmp_path / "ref", tmp_path / "ws"
    ref.mkdir()
    ws.mkdir()
    (ref / "config.json").write_text(DEEP["config.json"])
    (ws / "config.json").write_text("[]")
    result = await FileComparison()(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.ERROR
    assert result.reasoning == "Reference file config.json is JSON nested too deeply to parse"


def test_a_value_too_deep_to_show_is_named_not_raised() -> None:
    """diff_values names a value too deep to print instead of raising RecursionError."""
    deep: list[object] = []
    for _ in range(5_000):
        deep = [deep]
    assert diff_values({"k": 1}, {"k": deep}) == [
        "$.k: expected int '1', got list <list nested too deeply to show>"
    ]


async def test_a_link_loop_is_an_error_naming_it_not_a_crash(tmp_path: Path) -> None:
    """A symbolic link loop in the workspace is ERROR naming the loop, not a judge crash."""
    (tmp_path / "loop").symlink_to("loop")
    content = await FileContent("loop", "x")(ctx_for(tmp_path))
    assert content.status is Status.ERROR
    assert "too many symbolic links" in content.reasoning
    assert (await FileExists("loop")(ctx_for(tmp_path))).status is Status.ERROR

"""On a full disk the summary still says "aborted": a space reserve (issue 19, item 23).

A real full disk needs root (a small tmpfs) or a device like /dev/full that refuses every
write; the run here instead writes through a model of a disk (`FullDisk`) that fills up after a
few results lines. From then on every write fails with ENOSPC unless it fits in space freed
since (the ballast file deleted). Without a reserve nothing is ever freed, so the summary would
keep saying "running".
"""

from __future__ import annotations

import errno
import json
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.harness import RunAborted, _writer, iter_rows, load_suite, run_suite
from agentjudge.harness._cli import main
from agentjudge.harness._writer import (
    RESERVE_BYTES,
    RESERVE_FILE,
    ResultsWriter,
    SpaceReserve,
    write_failed,
    write_json_atomic,
)

N = 20
ROOM = 5
"""Results lines that fit before the disk is full."""


class FullDisk:
    """A disk with room for `ROOM` results lines; then only space freed later can be used."""

    def __init__(self, out: Path) -> None:
        self.reserve = out / RESERVE_FILE
        self.lines = 0
        self.held_when_full: int | None = None
        """Bytes of the reserve when the disk filled up (None: not full yet)."""

    def freed(self) -> int:
        """Bytes freed since the disk filled: the reserve's, once it is deleted."""
        if self.held_when_full is None or self.reserve.exists():
            return 0
        return self.held_when_full

    def no_space(self, path: Path) -> Exception:
        if self.held_when_full is None:
            held = self.reserve.stat().st_size if self.reserve.exists() else 0
            self.held_when_full = held
        return write_failed(OSError(errno.ENOSPC, "No space left on device"), path)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        disk = self
        real_write = ResultsWriter.write

        def write(writer: ResultsWriter, lines: list[str]) -> None:
            if disk.held_when_full is not None or disk.lines + len(lines) > ROOM:
                raise disk.no_space(writer.path)
            disk.lines += len(lines)
            real_write(writer, lines)

        def write_json(path: Path, text: str) -> None:
            if disk.held_when_full is not None and len(text.encode()) > disk.freed():
                raise disk.no_space(path)
            write_json_atomic(path, text)

        monkeypatch.setattr(ResultsWriter, "write", write)
        monkeypatch.setattr(_writer, "write_json_atomic", write_json)


def make_project(folder: Path) -> Path:
    rows = [{"id": f"c{i:02d}", "input": f"w{i}"} for i in range(N)]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "task.py").write_text("def echo(case):\n    return case.input\n")
    (folder / "judges.py").write_text("def fine(ctx):\n    return True\n")
    (folder / "agentjudge.toml").write_text(
        textwrap.dedent("""
        dataset = "data.jsonl"
        task = "task:echo"
        judges = "judges:fine"
        concurrency = 1
        """)
    )
    return folder


def summary_of(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "summary.json").read_text()))


def test_a_full_disk_still_writes_the_aborted_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The results file fills the disk: the reserve takes the summary, which says aborted."""
    out = make_project(tmp_path) / "out"
    FullDisk(out).install(monkeypatch)
    suite = load_suite(tmp_path / "agentjudge.toml")
    with pytest.raises(RunAborted, match=r"no space left writing .*results\.jsonl"):
        anyio.run(lambda: run_suite(suite, out=out))
    summary = summary_of(out)
    assert summary["status"] == "aborted"
    # The writer appends whatever has finished in one batch and this disk refuses a whole batch
    # that does not fit, so how many rows fit depends on how cases finished together: on a
    # loaded machine the first batch held more than ROOM rows and none fit (a fresh-clone CI
    # run, 2026-11-26). What must hold either way: the summary counts exactly the rows written.
    written = len(list(iter_rows(out / "results.jsonl")))
    assert summary["cases"]["total"] == written and 0 <= written <= ROOM
    assert not (out / RESERVE_FILE).exists()


def test_the_program_exits_3_with_the_summary_aborted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """agentjudge run on a disk that fills up: exit 3, one line, summary.json aborted."""
    monkeypatch.chdir(make_project(tmp_path))
    FullDisk(tmp_path / "out").install(monkeypatch)
    code = main(["run", "--out", "out", "--progress", "off"])
    assert code == 3
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "agentjudge: run aborted: no space left writing out/results.jsonl"
    assert "could not be updated" not in err
    assert summary_of(tmp_path / "out")["status"] == "aborted"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "results.jsonl",
        "summary.json",
    ]


def test_a_completed_run_leaves_no_reserve_behind(tmp_path: Path) -> None:
    """The ballast is held while the cases run and removed when the run ends."""
    out = make_project(tmp_path) / "out"
    seen: list[int] = []

    def fine(ctx: object) -> bool:
        seen.append((out / RESERVE_FILE).stat().st_size)
        return True

    suite = load_suite(tmp_path / "agentjudge.toml")
    summary = anyio.run(lambda: run_suite(suite, out=out, judges=fine))
    assert summary.status == "completed"
    assert seen == [RESERVE_BYTES] * N
    assert not (out / RESERVE_FILE).exists()


def test_a_reserve_that_cannot_be_written_leaves_nothing(tmp_path: Path) -> None:
    """hold() on a folder that is not there fails quietly: not held, no file, release False."""
    reserve = SpaceReserve(tmp_path / "missing" / RESERVE_FILE)
    assert reserve.hold() is False
    assert reserve.release() is False
    held = SpaceReserve(tmp_path / RESERVE_FILE, size=1024)
    assert held.hold() and (tmp_path / RESERVE_FILE).stat().st_size == 1024
    assert held.release() and not (tmp_path / RESERVE_FILE).exists()

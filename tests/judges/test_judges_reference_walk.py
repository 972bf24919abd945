from __future__ import annotations

from pathlib import Path

import pytest

from agentjudge.core import Context, Judgment, Status
from agentjudge.judges._deterministic import FileComparison, SupersetDiff

JUDGES = [SupersetDiff, FileComparison]


def ctx_for(workspace: Path | None, **metadata: object) -> Context:
    return Context(workspace=workspace, metadata=metadata)


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    ref = tmp_path / "ref"
    ws = tmp_path / "ws"
    ref.mkdir()
    ws.mkdir()
    return ref, ws


@pytest.mark.parametrize("judge_type", JUDGES)
async def test_walk_refuses_symlink_out_of_workspace(
    judge_type: type[SupersetDiff | FileComparison], folders: tuple[Path, Path], tmp_path: Path
) -> None:
    """A workspace file linking out of the workspace is ERROR naming the file, with expected_dir."""
    ref, ws = folders
    (ref / "a.txt").write_text("same")
    (tmp_path / "secret.txt").write_text("same")
    (ws / "a.txt").symlink_to(tmp_path / "secret.txt")
    result: Judgment = await judge_type()(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.ERROR
    root = ws.resolve()
    real = (tmp_path / "secret.txt").resolve()
    assert result.reasoning == (
        f"refused 'a.txt': it resolves to {str(real)!r}, outside the workspace "
        f"{str(root)!r} through a symbolic link"
    )
    assert dict(result.metadata) == {"expected_dir": str(ref)}


@pytest.mark.parametrize("judge_type", JUDGES)
async def test_walk_abstains_and_errors_before_comparing(
    judge_type: type[SupersetDiff | FileComparison], folders: tuple[Path, Path]
) -> None:
    """Missing/empty reference folders abstain; a missing workspace is ERROR without metadata."""
    ref, ws = folders
    empty = await judge_type()(ctx_for(ws, expected_dir=ref))
    assert empty.status is Status.ABSTAIN
    assert empty.reasoning == f"No files in reference folder {ref}"
    assert dict(empty.metadata) == {"expected_dir": str(ref)}
    (ref / "a.txt").write_text("x")
    gone = ws / "gone"
    no_ws = await judge_type()(ctx_for(gone, expected_dir=ref))
    assert no_ws.status is Status.ERROR
    assert no_ws.reasoning == f"workspace {str(gone)!r} is not an existing folder"
    assert dict(no_ws.metadata) == {}
    unset = await judge_type()(ctx_for(None, expected_dir=ref))
    assert unset.status is Status.ERROR and "Context.workspace is not set" in unset.reasoning


@pytest.mark.parametrize("judge_type", JUDGES)
async def test_walk_reports_counts_in_metadata(
    judge_type: type[SupersetDiff | FileComparison], folders: tuple[Path, Path]
) -> None:
    """One check per reference file in sorted order; metadata counts matched and total files."""
    ref, ws = folders
    (ref / "b.txt").write_text("b")
    (ref / "a.txt").write_text("a")
    (ref / "skip").mkdir()
    (ref / "skip" / "c.txt").write_text("c")
    (ws / "a.txt").write_text("a")
    result = await judge_type(exclude=["skip/"])(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.FAIL
    assert [c.name for c in result.checks] == ["a.txt", "b.txt"]
    assert [c.passed for c in result.checks] == [True, False]
    assert result.checks[1].message == "Missing file: b.txt"
    assert dict(result.metadata) == {"expected_dir": str(ref), "matched_files": 1, "total_files": 2}
    assert result.score == 0.5

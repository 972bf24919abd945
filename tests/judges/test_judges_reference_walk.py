from __future__ import annotations

from pathlib import Path

import pytest

from agentjudge.core import Context, Judgment, Status
from agentjudge.judges import FileComparison, SupersetDiff
from agentjudge.judges._paths import first_names

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


async def test_superset_diff_names_at_most_ten_files(folders: tuple[Path, Path]) -> None:
    """The FAIL reasoning names the first ten missing files, then ' ...'."""
    ref, ws = folders
    for i in range(12):
        (ref / f"f{i:02}.txt").write_text("x")
    result = await SupersetDiff()(ctx_for(ws, expected_dir=ref))
    names = ", ".join(f"f{i:02}.txt" for i in range(10))
    assert result.reasoning == f"0 of 12 reference files matched (missing: {names} ...)"


async def test_file_comparison_names_at_most_ten_files(folders: tuple[Path, Path]) -> None:
    """FileComparison's FAIL reasoning names ten differing files with '; ', then ' ...'."""
    ref, ws = folders
    for i in range(11):
        (ref / f"f{i:02}.txt").write_text("x")
    result = await FileComparison()(ctx_for(ws, expected_dir=ref))
    names = "; ".join(f"f{i:02}.txt" for i in range(10))
    assert result.reasoning == f"11 of 11 files differ: {names} ..."
    (ref / "f10.txt").unlink()
    result = await FileComparison()(ctx_for(ws, expected_dir=ref))
    names = "; ".join(f"f{i:02}.txt" for i in range(10))
    assert result.reasoning == f"10 of 10 files differ: {names}"


def test_first_names_shows_ten_then_an_ellipsis() -> None:
    """first_names joins up to ten names and marks a longer list with ' ...'."""
    assert first_names([], ", ") == ""
    assert first_names([str(i) for i in range(10)], ",") == "0,1,2,3,4,5,6,7,8,9"
    assert first_names([str(i) for i in range(11)], ",") == "0,1,2,3,4,5,6,7,8,9 ..."

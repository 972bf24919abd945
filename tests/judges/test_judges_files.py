from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentjudge.core import Context, Status
from agentjudge.judges import FileContent, FileExists, MatchMode, SupersetDiff


def ctx_for(workspace: Path, **metadata: object) -> Context:
    return Context(workspace=workspace, metadata=metadata)


# ----------------------------------------------------------------------------- FileExists
async def test_file_exists_passes_for_file_and_folder(tmp_path: Path) -> None:
    """FileExists passes for an existing file and for an existing folder."""
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "sub").mkdir()
    assert (await FileExists("a.txt")(ctx_for(tmp_path))).status is Status.PASS
    result = await FileExists("sub")(ctx_for(tmp_path))
    assert result.status is Status.PASS
    assert [c.name for c in result.checks] == ["file_exists"]


async def test_file_exists_fails_when_missing(tmp_path: Path) -> None:
    """A missing path is FAIL with a failing file_exists check."""
    result = await FileExists("nope.txt")(ctx_for(tmp_path))
    assert result.status is Status.FAIL
    assert result.checks[0].name == "file_exists" and not result.checks[0].passed
    assert "nope.txt" in result.reasoning


async def test_file_exists_errors_without_workspace() -> None:
    """Without a workspace the judge is ERROR, not a silent FAIL."""
    result = await FileExists("a.txt")(Context())
    assert result.status is Status.ERROR
    assert "workspace" in result.reasoning


def test_judge_attributes_and_name_override() -> None:
    """Judges carry the protocol attributes; name defaults to the class name."""
    judge = FileExists("a.txt")
    assert judge.name == "FileExists"
    assert judge.kind == "deterministic"
    assert judge.resource is None and judge.sampling_rate is None
    assert FileExists("a.txt", name="readme").name == "readme"
    with pytest.raises(ValueError):
        FileExists("a.txt", name=" ")


# ----------------------------------------------------------------------------- FileContent
async def test_file_content_missing_file_has_single_check(tmp_path: Path) -> None:
    """A missing file is FAIL with exactly one failing check, file_exists."""
    result = await FileContent("out.txt", "hi")(ctx_for(tmp_path))
    assert result.status is Status.FAIL
    assert [(c.name, c.passed) for c in result.checks] == [("file_exists", False)]


async def test_file_content_modes(tmp_path: Path) -> None:
    """EXACT compares whole text, CONTAINS a substring, REGEX searches anywhere."""
    (tmp_path / "out.txt").write_text("hello world\n")
    ctx = ctx_for(tmp_path)
    assert (await FileContent("out.txt", "hello world\n")(ctx)).status is Status.PASS
    exact_fail = await FileContent("out.txt", "hello world")(ctx)
    assert exact_fail.status is Status.FAIL
    assert [c.name for c in exact_fail.checks] == ["file_exists", "file_readable", "content_match"]
    assert [c.passed for c in exact_fail.checks] == [True, True, False]
    assert "character 11" in exact_fail.reasoning
    assert (await FileContent("out.txt", "lo wo", MatchMode.CONTAINS)(ctx)).is_pass
    assert not (await FileContent("out.txt", "bye", "contains")(ctx)).is_pass
    assert (await FileContent("out.txt", r"w\w+d", MatchMode.REGEX)(ctx)).is_pass
    assert not (await FileContent("out.txt", r"^world", MatchMode.REGEX)(ctx)).is_pass


def test_file_content_invalid_regex_is_rejected_at_construction() -> None:
    """An invalid regular expression raises ValueError naming the pattern."""
    with pytest.raises(ValueError, match=r"\(unclosed"):
        FileContent("a.txt", "(unclosed", MatchMode.REGEX)
    with pytest.raises(ValueError, match="mode"):
        FileContent("a.txt", "x", "fuzzy")


async def test_file_content_binary_and_invalid_utf8_are_errors(tmp_path: Path) -> None:
    """Binary content and invalid UTF-8 are ERROR with the file and the reason."""
    (tmp_path / "bin.dat").write_bytes(b"abc\x00def")
    (tmp_path / "latin.txt").write_bytes("caf\u00e9".encode("latin-1"))
    binary = await FileContent("bin.dat", "abc", MatchMode.CONTAINS)(ctx_for(tmp_path))
    assert binary.status is Status.ERROR
    assert "bin.dat" in binary.reasoning and "NUL byte at offset 3" in binary.reasoning
    assert [(c.name, c.passed) for c in binary.checks] == [
        ("file_exists", True),
        ("file_readable", False),
    ]
    latin = await FileContent("latin.txt", "caf", MatchMode.CONTAINS)(ctx_for(tmp_path))
    assert latin.status is Status.ERROR
    assert "UTF-8" in latin.reasoning and "byte 3" in latin.reasoning


async def test_file_content_folder_is_error(tmp_path: Path) -> None:
    """A folder where a file is expected is ERROR (unreadable), not FAIL."""
    (tmp_path / "dir").mkdir()
    result = await FileContent("dir", "x")(ctx_for(tmp_path))
    assert result.status is Status.ERROR
    assert "folder" in result.reasoning


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
async def test_file_content_permission_denied_is_error(tmp_path: Path) -> None:
    """A file without read permission is ERROR."""
    path = tmp_path / "secret.txt"
    path.write_text("x")
    path.chmod(0)
    try:
        result = await FileContent("secret.txt", "x")(ctx_for(tmp_path))
    finally:
        path.chmod(0o600)
    assert result.status is Status.ERROR


# ----------------------------------------------------------------------------- escapes
async def test_dotdot_escape_is_refused(tmp_path: Path) -> None:
    """A path climbing out of the workspace with '..' is ERROR unless allow_outside."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    refused = await FileContent("../outside.txt", "secret")(ctx_for(workspace))
    assert refused.status is Status.ERROR
    assert "outside the workspace" in refused.reasoning and "allow_outside" in refused.reasoning
    allowed = await FileContent("../outside.txt", "secret", allow_outside=True)(ctx_for(workspace))
    assert allowed.status is Status.PASS


async def test_symlink_escape_is_refused(tmp_path: Path) -> None:
    """A symbolic link pointing out of the workspace is refused with ERROR."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    (workspace / "inner.txt").write_text("fine")
    (workspace / "ok-link.txt").symlink_to(workspace / "inner.txt")
    result = await FileExists("link.txt")(ctx_for(workspace))
    assert result.status is Status.ERROR
    assert "symbolic link" in result.reasoning
    assert (await FileContent("ok-link.txt", "fine")(ctx_for(workspace))).is_pass


async def test_absolute_path_outside_is_refused(tmp_path: Path) -> None:
    """An absolute path elsewhere is refused; inside the workspace it is fine."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    assert (await FileExists(str(tmp_path / "b.txt"))(ctx_for(workspace))).status is Status.ERROR
    assert (await FileExists(str(workspace / "a.txt"))(ctx_for(workspace))).is_pass


# ----------------------------------------------------------------------------- SupersetDiff
def make_tree(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


async def test_superset_diff_scores_and_names_files(tmp_path: Path) -> None:
    """One sorted check per reference file; missing and differing files named with the byte."""
    ref = make_tree(
        tmp_path / "ref",
        {"b.txt": b"same", "a/x.txt": b"abcdef", "c.txt": b"gone", "d.txt": b"short"},
    )
    ws = make_tree(
        tmp_path / "ws",
        {"b.txt": b"same", "a/x.txt": b"abcXef", "d.txt": b"short and longer", "extra": b"1"},
    )
    result = await SupersetDiff()(ctx_for(ws, expected_dir=str(ref)))
    assert result.status is Status.FAIL
    assert [c.name for c in result.checks] == ["a/x.txt", "b.txt", "c.txt", "d.txt"]
    by_name = {c.name: c for c in result.checks}
    assert by_name["a/x.txt"].message == "Content differs at byte 3: a/x.txt"
    assert by_name["c.txt"].message == "Missing file: c.txt"
    assert by_name["d.txt"].message == "Content differs at byte 5: d.txt"
    assert by_name["b.txt"].passed
    assert result.score == pytest.approx(0.25)
    assert result.metadata["matched_files"] == 1 and result.metadata["total_files"] == 4
    assert "missing: c.txt" in result.reasoning and "differing: a/x.txt, d.txt" in result.reasoning


async def test_superset_diff_finds_difference_past_first_chunk(tmp_path: Path) -> None:
    """The first differing byte is found beyond the comparison chunk size."""
    data = bytes(range(256)) * 1000
    changed = bytearray(data)
    changed[200_001] ^= 0xFF
    ref = make_tree(tmp_path / "ref", {"big.bin": data})
    ws = make_tree(tmp_path / "ws", {"big.bin": bytes(changed)})
    result = await SupersetDiff()(ctx_for(ws, expected_dir=ref))
    assert result.checks[0].message == "Content differs at byte 200001: big.bin"


async def test_superset_diff_passes_when_all_match(tmp_path: Path) -> None:
    """All reference files present and identical is PASS with score 1.0."""
    ref = make_tree(tmp_path / "ref", {"a.txt": b"1", "s/b.txt": b"2"})
    ws = make_tree(tmp_path / "ws", {"a.txt": b"1", "s/b.txt": b"2", "more.txt": b"3"})
    result = await SupersetDiff()(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.PASS and result.score == 1.0


async def test_superset_diff_exclude_is_segment_based(tmp_path: Path) -> None:
    """'mvnw' excludes only mvnw (not mvnw.cmd); 'target/' excludes the folder."""
    ref = make_tree(
        tmp_path / "ref",
        {"mvnw": b"x", "mvnw.cmd": b"y", "target/a.class": b"z", "targets.txt": b"t"},
    )
    ws = make_tree(tmp_path / "ws", {})
    result = await SupersetDiff(exclude=["mvnw", "target/"])(ctx_for(ws, expected_dir=ref))
    assert [c.name for c in result.checks] == ["mvnw.cmd", "targets.txt"]


def test_superset_diff_rejects_bad_excludes() -> None:
    """Absolute, parent-relative and backslash exclude entries are ValueError."""
    for bad in (["/abs"], ["../x"], ["a\\b"], [""]):
        with pytest.raises(ValueError):
            SupersetDiff(exclude=bad)
    with pytest.raises(ValueError):
        SupersetDiff(exclude="target/")


async def test_superset_diff_abstains_without_reference(tmp_path: Path) -> None:
    """No expected_dir, a missing folder or an empty folder is ABSTAIN."""
    assert (await SupersetDiff()(ctx_for(tmp_path))).status is Status.ABSTAIN
    missing = await SupersetDiff()(ctx_for(tmp_path, expected_dir=str(tmp_path / "nope")))
    assert missing.status is Status.ABSTAIN and "does not exist" in missing.reasoning
    (tmp_path / "empty").mkdir()
    empty = await SupersetDiff()(ctx_for(tmp_path, expected_dir=tmp_path / "empty"))
    assert empty.status is Status.ABSTAIN


async def test_superset_diff_refuses_symlink_out_of_workspace(tmp_path: Path) -> None:
    """A workspace file that links outside the workspace makes the judgment ERROR."""
    ref = make_tree(tmp_path / "ref", {"a.txt": b"secret"})
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").symlink_to(ref / "a.txt")
    result = await SupersetDiff()(ctx_for(ws, expected_dir=ref))
    assert result.status is Status.ERROR and "a.txt" in result.reasoning


async def test_file_judges_resolve_and_read_in_one_worker_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FileExists and FileContent hand one job to a worker thread per judgment, not two.

    Each hand-off costs the event loop a thread wake-up; 1,000 file judgments spent a third of
    their CPU on the second one (resolving the name, then reading the file).
    """
    import anyio.to_thread

    hops: list[object] = []
    real = anyio.to_thread.run_sync

    async def counting(func: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    (tmp_path / "a.txt").write_text("hello")
    assert (await FileExists("a.txt")(ctx_for(tmp_path))).status is Status.PASS
    assert len(hops) == 1
    assert (await FileContent("a.txt", "hell", "contains")(ctx_for(tmp_path))).status is Status.PASS
    assert len(hops) == 2
    escaped = await FileContent("../a.txt", "x")(ctx_for(tmp_path))
    assert escaped.status is Status.ERROR and "outside the workspace" in escaped.reasoning

from __future__ import annotations

import importlib.util
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentjudge.core import Context, Status
from agentjudge.judges import PYC_MAGIC_NUMBERS, ClassVersionJudge, PycVersionJudge
from agentjudge.judges._bytecode import pyc_magic_for

RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"


def class_file(path: Path, major: int, magic: bytes = b"\xca\xfe\xba\xbe") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(magic + (0).to_bytes(2, "big") + major.to_bytes(2, "big") + b"\x00" * 16)
    return path


def ctx_for(workspace: Path, **metadata: object) -> Context:
    return Context(workspace=workspace, metadata=metadata)


# ----------------------------------------------------------------------------- classes
async def test_class_versions_all_match(tmp_path: Path) -> None:
    """All class files at the target major version is PASS, one check each."""
    classes = tmp_path / "target" / "classes"
    class_file(classes / "com" / "A.class", 61)
    class_file(classes / "com" / "B.class", 61)
    (classes / "app.properties").write_text("x=1")
    result = await ClassVersionJudge()(ctx_for(tmp_path, target_class_version=61))
    assert result.status is Status.PASS
    assert [c.name for c in result.checks] == ["com/A.class", "com/B.class"]
    assert "Java 17" in result.reasoning


async def test_class_versions_mismatch_and_bad_magic(tmp_path: Path) -> None:
    """A wrong major version and a bad magic number are failing checks named by file."""
    classes = tmp_path / "target" / "classes"
    class_file(classes / "Good.class", 61)
    class_file(classes / "Old.class", 52)
    class_file(classes / "Junk.class", 61, magic=b"\xde\xad\xbe\xef")
    result = await ClassVersionJudge()(ctx_for(tmp_path, target_class_version=17))
    assert result.status is Status.FAIL
    by_name = {c.name: c for c in result.checks}
    assert by_name["Good.class"].passed
    assert "major version 52 (Java 8), expected 61 (Java 17)" in by_name["Old.class"].message
    assert "bad magic number 0xDEADBEEF" in by_name["Junk.class"].message
    assert "2 of 3" in result.reasoning
    assert list(result.metadata["versions_found"]) == [52, 61]


async def test_class_version_target_handling(tmp_path: Path) -> None:
    """Missing target or classes folder is ABSTAIN; a non-int target is ERROR."""
    assert (await ClassVersionJudge()(ctx_for(tmp_path))).status is Status.ABSTAIN
    no_dir = await ClassVersionJudge()(ctx_for(tmp_path, target_class_version=61))
    assert no_dir.status is Status.ABSTAIN
    (tmp_path / "target" / "classes").mkdir(parents=True)
    empty = await ClassVersionJudge()(ctx_for(tmp_path, target_class_version=61))
    assert empty.status is Status.ABSTAIN and ".class" in empty.reasoning
    bad = await ClassVersionJudge()(ctx_for(tmp_path, target_class_version="61"))
    assert bad.status is Status.ERROR and "target_class_version" in bad.reasoning
    with pytest.raises(ValueError):
        ClassVersionJudge(target=True)


async def test_class_dir_symlink_escape_is_error(tmp_path: Path) -> None:
    """A classes folder linking outside the workspace is refused."""
    outside = tmp_path / "outside"
    class_file(outside / "A.class", 61)
    ws = tmp_path / "ws"
    (ws / "target").mkdir(parents=True)
    (ws / "target" / "classes").symlink_to(outside, target_is_directory=True)
    result = await ClassVersionJudge()(ctx_for(ws, target_class_version=61))
    assert result.status is Status.ERROR


@pytest.mark.skipif(shutil.which("javac") is None, reason="javac not installed")
async def test_real_javac_output(tmp_path: Path) -> None:
    """Class files compiled by javac --release 11 are recognised as major 55."""
    src = tmp_path / "src" / "Hello.java"
    src.parent.mkdir()
    src.write_text("public class Hello { public static void main(String[] a) {} }\n")
    out = tmp_path / "target" / "classes"
    # The JVM's quick compiler only (-XX:TieredStopAtLevel=1): the same class file for half the
    # CPU of javac's start-up (1.7 -> 0.9 s), which the optimising compiler never pays back here.
    javac = ["javac", "-J-XX:TieredStopAtLevel=1", "--release", "11"]
    subprocess.run([*javac, "-d", str(out), str(src)], check=True)
    ok = await ClassVersionJudge(target=11)(ctx_for(tmp_path))
    assert ok.status is Status.PASS
    wrong = await ClassVersionJudge(target=17)(ctx_for(tmp_path))
    assert wrong.status is Status.FAIL
    assert "major version 55 (Java 11)" in wrong.checks[0].message


# ----------------------------------------------------------------------------- pyc
def compile_module(workspace: Path, rel: str) -> Path:
    src = workspace / rel
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text("VALUE = 1\n")
    cfile = importlib.util.cache_from_source(str(src))
    py_compile.compile(str(src), cfile=cfile, doraise=True)
    return Path(cfile)


def test_magic_table() -> None:
    """Known magic numbers, including the running interpreter's own."""
    assert pyc_magic_for("3.11") == 3495
    assert pyc_magic_for("3.12") == 3531
    assert pyc_magic_for("3.13") == 3571
    running = int.from_bytes(importlib.util.MAGIC_NUMBER[:2], "little")
    assert pyc_magic_for(RUNNING) == running
    assert PYC_MAGIC_NUMBERS[(3, 8)] == 3413
    with pytest.raises(ValueError, match=r"3\.99"):
        pyc_magic_for("3.99")
    with pytest.raises(ValueError):
        pyc_magic_for("three")


async def test_real_pyc_files_match_running_interpreter(tmp_path: Path) -> None:
    """py_compile output matches the running version and fails another version."""
    compile_module(tmp_path, "pkg/mod.py")
    compile_module(tmp_path, "top.py")
    ok = await PycVersionJudge(RUNNING)(ctx_for(tmp_path))
    assert ok.status is Status.PASS
    assert len(ok.checks) == 2
    other = "3.12" if RUNNING != "3.12" else "3.11"
    wrong = await PycVersionJudge()(ctx_for(tmp_path, target_python=other))
    assert wrong.status is Status.FAIL
    assert f"Python {RUNNING}" in wrong.checks[0].message


async def test_pyc_version_identifies_foreign_and_bad_files(tmp_path: Path) -> None:
    """A 3.13 magic is named; a file without the \\r\\n marker is a bad header."""
    cfile = compile_module(tmp_path, "a.py")
    data = bytearray(cfile.read_bytes())
    data[:2] = (3571).to_bytes(2, "little")
    cfile.write_bytes(bytes(data))
    (tmp_path / "junk.pyc").write_bytes(b"nope")
    result = await PycVersionJudge(RUNNING)(ctx_for(tmp_path))
    assert result.status is Status.FAIL
    messages = {c.name: c.message for c in result.checks}
    assert "Python 3.13" in next(m for n, m in messages.items() if n.endswith(".pyc") and "a." in n)
    assert "bad header" in messages["junk.pyc"]


async def test_pyc_venv_excluded_and_targets(tmp_path: Path) -> None:
    """.venv is skipped by default; missing target ABSTAINs; unknown target is ERROR."""
    compile_module(tmp_path, ".venv/lib/x.py")
    assert (await PycVersionJudge(RUNNING)(ctx_for(tmp_path))).status is Status.ABSTAIN
    compile_module(tmp_path, "b.py")
    assert (await PycVersionJudge()(ctx_for(tmp_path))).status is Status.ABSTAIN
    unknown = await PycVersionJudge()(ctx_for(tmp_path, target_python="3.99"))
    assert unknown.status is Status.ERROR and "3.99" in unknown.reasoning
    not_str = await PycVersionJudge()(ctx_for(tmp_path, target_python=3.11))
    assert not_str.status is Status.ERROR
    with pytest.raises(ValueError):
        PycVersionJudge("3.99")
    included = await PycVersionJudge(RUNNING, exclude=())(ctx_for(tmp_path))
    assert len(included.checks) == 2

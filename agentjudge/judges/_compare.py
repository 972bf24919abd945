"""Semantic file comparison: `FileComparison` and its per-type comparators.

Every comparator takes the reference and the actual bytes and returns a list of differences
(empty when the files match). A reference file that cannot be parsed makes the judgment ERROR
(the reference is broken); an actual file that cannot be parsed is a failing check for that
file; XML with entity declarations or external references is refused (ERROR) on either side.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from agentjudge.core import Check, Context, Judgment
from agentjudge.judges._compare_base import TOO_DEEP, ParseFailure, Unsafe
from agentjudge.judges._compare_java import compare_java
from agentjudge.judges._compare_json import compare_json
from agentjudge.judges._compare_pom import compare_pom
from agentjudge.judges._compare_python import compare_python
from agentjudge.judges._compare_requirements import (
    compare_pyproject,
    compare_requirements_txt,
    compare_toml,
    normalize_requirement,
)
from agentjudge.judges._compare_text import compare_text
from agentjudge.judges._compare_xml import compare_xml
from agentjudge.judges._paths import (
    DeterministicJudge,
    check_reference_files,
    first_names,
    normalise_excludes,
)
from agentjudge.judges._safeio import (
    FileTooLargeError,
    NotRegularFileError,
    PathEscapeError,
    read_file,
)

__all__ = [
    "DEFAULT_COMPARE_MAX_BYTES",
    "FileComparison",
    "comparator_for",
    "compare_contents",
    "normalize_requirement",
]

DEFAULT_COMPARE_MAX_BYTES = 8 * 1024 * 1024
"""Largest file (8 MiB) `FileComparison` reads by default: comparing parses or normalises whole
files, which peaks at about 25 times the file size (two 8 MiB files: about 210 MiB)."""

MAX_DIFFERENCES = 20
"""Differences listed per file (the rest are counted)."""


Comparator = Callable[[bytes, bytes], list[str]]


def comparator_for(path: str) -> tuple[str, Comparator]:
    """The comparator for a file, chosen by its name: ``(kind, function)``."""
    name = path.rsplit("/", 1)[-1]
    lower = name.lower()
    if name == "pom.xml":
        return "pom", compare_pom
    if name == "pyproject.toml":
        return "pyproject", compare_pyproject
    if lower.startswith("requirements") and lower.endswith(".txt"):
        return "requirements", compare_requirements_txt
    suffix = lower.rsplit(".", 1)[-1] if "." in lower else ""
    if suffix == "xml":
        return "xml", compare_xml
    if suffix == "json":
        return "json", compare_json
    if suffix == "toml":
        return "toml", compare_toml
    if suffix in ("py", "pyi"):
        return "python", compare_python
    if suffix == "java":
        return "java", compare_java
    return "text", compare_text


def compare_contents(path: str, expected: bytes, actual: bytes) -> list[str]:
    """Compare two versions of the file ``path`` with the comparator its name selects.

    Returns the differences (empty when they match). Unparsable input raises ``ValueError``
    naming the side; unsafe XML too; Java without the extra raises ``ImportError``.
    """
    _, comparator = comparator_for(path)
    try:
        return comparator(expected, actual)
    except (ParseFailure, Unsafe) as exc:
        raise ValueError(f"{exc.side} {path}: {exc.message}") from None


class FileComparison(DeterministicJudge):
    """PASS when every reference file has a semantically equal counterpart in the workspace.

    Walks the folder in ``ctx.metadata["expected_dir"]`` (sorted; missing folder -> ABSTAIN)
    and compares each file with the same relative path in the workspace, choosing a comparator
    by file name: ``pom.xml`` (Maven), ``pyproject.toml`` and ``requirements*.txt``
    (requirements as normalised sets), ``*.xml``, ``*.json``, ``*.toml``, ``*.py``, ``*.java``
    (tree-sitter-java, the ``java`` extra) and whitespace-normalised text for the rest. One check
    per file; the score is matched / total; a missing actual file is a failing check. A
    reference file that cannot be parsed, unsafe XML, or a workspace path escaping through a
    symbolic link is ERROR.

    A workspace file that is not a regular file (a pipe, a folder), larger than ``max_bytes`` or
    nested too deeply for Python's recursion limit is a failing check naming the file; the same
    about a reference file is ERROR. Workspace files are opened confined to the workspace, without
    following links out of it and without blocking.

    Args:
        exclude: Relative POSIX paths to skip (as in `SupersetDiff`).
        name: Judge name; defaults to ``"FileComparison"``.
        max_bytes: Largest file read on either side (default 8 MiB,
            `DEFAULT_COMPARE_MAX_BYTES`; peak memory is about 25 times the files' size).

    Raises:
        ValueError: a bad ``exclude`` entry or a negative ``max_bytes``.
    """

    def __init__(
        self,
        exclude: Sequence[str] = (),
        *,
        name: str | None = None,
        max_bytes: int = DEFAULT_COMPARE_MAX_BYTES,
    ) -> None:
        self.exclude = normalise_excludes(exclude)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        super().__init__(name, "Compares workspace files with the reference folder semantically")

    async def __call__(self, ctx: Context) -> Judgment:
        """Judge one context."""
        check = functools.partial(_compare_file, limit=self.max_bytes)
        walked = await check_reference_files(ctx, self.exclude, check)
        if isinstance(walked, Judgment):
            return walked
        checks, meta = walked
        matched, total = meta["matched_files"], meta["total_files"]
        if matched == total:
            return Judgment.passed(
                f"All {total} files match", score=1.0, checks=tuple(checks), metadata=meta
            )
        failing = [c.name for c in checks if not c.passed]
        shown_names = first_names(failing, "; ")
        return Judgment.failed(
            f"{len(failing)} of {total} files differ: {shown_names}",
            score=matched / total,
            checks=tuple(checks),
            metadata=meta,
        )


def _read_pair(
    rel: str, expected_path: Path, root: Path, limit: int
) -> tuple[bytes, bytes] | Check | str:
    """Both versions of ``rel``, a failing check for the workspace's, or the reason for ERROR."""
    try:
        expected = read_file(expected_path, None, limit)
    except FileTooLargeError as exc:
        return (
            f"Reference file {rel} is too large to compare ({exc.size} bytes; "
            f"the limit is max_bytes={limit})"
        )
    except OSError as exc:
        return f"Cannot read reference file {rel}: {exc.strerror or exc}"
    try:
        actual = read_file(root / rel, root, limit)
    except (FileNotFoundError, NotADirectoryError):
        return Check.fail(rel, f"Missing file: {rel}")
    except NotRegularFileError as exc:
        return Check.fail(rel, f"Not a regular file: {rel} ({exc.kind})")
    except FileTooLargeError as exc:
        return Check.fail(
            rel, f"{rel} is too large to compare ({exc.size} bytes; the limit is max_bytes={limit})"
        )
    except PathEscapeError as exc:
        return str(exc)
    except OSError as exc:
        return Check.fail(rel, f"Cannot read {rel}: {exc.strerror or exc}")
    return expected, actual


def _compare_file(rel: str, expected_path: Path, root: Path, limit: int) -> Check | str:
    pair = _read_pair(rel, expected_path, root, limit)
    if not isinstance(pair, tuple):
        return pair
    kind, comparator = comparator_for(rel)
    try:
        diffs = comparator(*pair)
    except Unsafe as exc:
        return f"{exc.side} file {rel}: {exc.message}"
    except ParseFailure as exc:
        if exc.side == "expected":
            return f"Reference file {rel} is {exc.message}"
        return Check.fail(rel, f"{rel} is {exc.message}")
    except ImportError as exc:
        return f"Cannot compare {rel}: {exc}"
    except RecursionError:
        return Check.fail(rel, f"{rel} is {TOO_DEEP} to compare ({kind})")
    if not diffs:
        return Check.ok(rel, f"matches ({kind})")
    shown = diffs[:MAX_DIFFERENCES]
    if len(diffs) > MAX_DIFFERENCES:
        shown.append(f"... and {len(diffs) - MAX_DIFFERENCES} more differences")
    return Check.fail(rel, f"{kind} differences:\n" + "\n".join(shown))

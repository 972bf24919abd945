from __future__ import annotations

from pathlib import Path

import pytest

from agentjudge.judges import FileContent, FileExists


@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_paths_are_refused(blank: str) -> None:
    """FileExists and FileContent refuse a blank path with the same ValueError."""
    with pytest.raises(ValueError, match=r"^path must be non-blank$"):
        FileExists(blank)
    with pytest.raises(ValueError, match=r"^path must be non-blank$"):
        FileContent(blank, "x")


def test_path_like_is_kept_as_text(tmp_path: Path) -> None:
    """A path-like argument is stored as its text."""
    assert FileExists(tmp_path / "a.txt").path == str(tmp_path / "a.txt")
    assert FileContent(Path("b/c.txt"), "x").path == "b/c.txt"

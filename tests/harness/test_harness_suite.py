"""Suite files: TOML parsing, validation messages, paths relative to the file, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentjudge.harness import Suite, load_suite
from agentjudge.harness._loading import load_object


def test_suite_file_paths_resolve_against_its_folder(tmp_path: Path) -> None:
    """dataset/baseline/out resolve relative to the suite file, not the working directory."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "agentjudge.toml").write_text(
        'dataset = "data/rows.jsonl"\ntask = "t:f"\njudges = ["j:a", "j:b"]\n'
        'concurrency = 4\ngates = ["a.mean>=0.5"]\n',
        encoding="utf-8",
    )
    suite = load_suite(folder)  # a folder means its agentjudge.toml
    assert suite.base_dir == folder.resolve()
    assert suite.dataset is not None
    assert suite.path(suite.dataset) == folder.resolve() / "data" / "rows.jsonl"
    assert suite.judges == ["j:a", "j:b"]
    assert suite.concurrency == 4
    assert suite.label == "suite"


def test_unknown_setting_lists_the_valid_ones(tmp_path: Path) -> None:
    """A misspelt key names its TOML line, the closest setting and the settings that exist."""
    path = tmp_path / "agentjudge.toml"
    path.write_text('name = "x"\n\nconcurency = 4\n', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load_suite(path)
    message = str(info.value)
    assert message.startswith(
        f"{path} line 3: unknown setting 'concurency' (did you mean 'concurrency'?) "
        "(valid settings: name, "
    )


def test_invalid_values_name_the_setting(tmp_path: Path) -> None:
    """Out-of-range values and malformed gates name the setting."""
    path = tmp_path / "agentjudge.toml"
    path.write_text('concurrency = 0\ngates = ["x.mean>>1"]\n', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load_suite(path)
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{path} line 1: setting 'concurrency': Input should be greater")
    assert lines[1].startswith(f"{path} line 2: setting 'gates': gate 'x.mean>>1'")


def test_invalid_toml_names_line_and_column(tmp_path: Path) -> None:
    """TOML syntax errors carry the parser's line and column."""
    path = tmp_path / "agentjudge.toml"
    path.write_text('dataset = "a.jsonl"\ntask = \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"invalid TOML: .*line 2"):
        load_suite(path)
    with pytest.raises(ValueError, match="suite file not found"):
        load_suite(tmp_path / "missing.toml")


def test_overrides_replace_only_given_values(tmp_path: Path) -> None:
    """with_overrides applies non-None values and validates again."""
    suite = Suite(task="a:b", concurrency=3, base_dir=tmp_path)
    changed = suite.with_overrides(concurrency=7, task=None, limit=5)
    assert (changed.task, changed.concurrency, changed.limit) == ("a:b", 7, 5)
    assert changed.base_dir == tmp_path
    with pytest.raises(ValueError, match="concurrency"):
        suite.with_overrides(concurrency=0)


def test_load_object_resolves_modules_files_and_dotted_attributes(tmp_path: Path) -> None:
    """module:attr, file.py:attr and dotted attributes resolve; failures say which part."""
    (tmp_path / "suite_mod_a.py").write_text(
        "class K:\n    value = 41\n\ndef f(case):\n    return 1\n", encoding="utf-8"
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tool.py").write_text("def g(case):\n    return 2\n", encoding="utf-8")
    assert load_object("suite_mod_a:K.value", what="task", base_dir=tmp_path) == 41
    assert load_object("sub/tool.py:g", what="task", base_dir=tmp_path)(None) == 2
    with pytest.raises(ValueError, match="expected 'module:attribute'"):
        load_object("suite_mod_a.f", what="task", base_dir=tmp_path)
    with pytest.raises(ValueError, match=r"has no attribute 'K\.nope'"):
        load_object("suite_mod_a:K.nope", what="task", base_dir=tmp_path)
    with pytest.raises(ValueError, match="cannot import module 'no_such_mod_xyz'"):
        load_object("no_such_mod_xyz:f", what="task", base_dir=tmp_path)
    with pytest.raises(ValueError, match="file not found"):
        load_object("sub/none.py:g", what="task", base_dir=tmp_path)


def test_load_object_reports_errors_raised_while_importing(tmp_path: Path) -> None:
    """A user module that raises on import is reported with the exception type."""
    (tmp_path / "suite_mod_broken.py").write_text("raise RuntimeError('nope')\n", encoding="utf-8")
    with pytest.raises(ValueError, match="raised RuntimeError: nope"):
        load_object("suite_mod_broken:f", what="judges", base_dir=tmp_path)


def test_two_suites_with_same_named_modules_each_get_their_own(tmp_path: Path) -> None:
    """A second suite's 'task:answer' loads its own task.py, not the first suite's module."""
    import sys

    name = "suite_same_named_task"
    for label in ("first", "second"):
        folder = tmp_path / label
        folder.mkdir()
        (folder / f"{name}.py").write_text(f"def answer(case):\n    return {label!r}\n")
    try:
        first = load_object(f"{name}:answer", what="task", base_dir=tmp_path / "first")
        second = load_object(f"{name}:answer", what="task", base_dir=tmp_path / "second")
        again = load_object(f"{name}:answer", what="task", base_dir=tmp_path / "first")
        assert (first(None), second(None), again(None)) == ("first", "second", "first")
    finally:
        sys.modules.pop(name, None)
        for folder in ("first", "second"):
            entry = str((tmp_path / folder).resolve())
            if entry in sys.path:
                sys.path.remove(entry)

"""`agentjudge calibrate` on hand-made results rows: unusable inputs exit 2, named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentjudge.harness._cli import main


def _row(i: int, **extra: Any) -> dict[str, Any]:
    tiers = [
        {"name": "cheap", "status": "pass", "confidence": 0.9, "label": None},
        {"name": "strong", "status": "pass", "confidence": 0.95, "label": None},
    ]
    verdict = {"status": "pass", "score": 1.0}
    return {"id": f"c{i}", "verdict": verdict, "tiers": tiers, "human": True, **extra}


def _calibrate(run: Path, rows: list[dict[str, Any]]) -> int:
    run.mkdir()
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (run / "results.jsonl").write_text(text, encoding="utf-8")
    return main(["calibrate", str(run), "--alpha", "0.1", "--delta", "0.1", "--min-support", "2"])


@pytest.mark.parametrize(
    ("human", "problem"),
    [(None, "human is null"), ({"label": "pass"}, "got dict"), ("  ", "non-blank")],
)
def test_an_unusable_human_label_exits_2_naming_file_row_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], human: Any, problem: str
) -> None:
    """`"human": null` (or a non-label) is exit 2 naming the file, row and field, no traceback."""
    rows = [_row(i) for i in range(5)]
    rows[3]["human"] = human
    assert _calibrate(tmp_path / "run", rows) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "AssertionError" not in err
    assert f"{tmp_path / 'run' / 'results.jsonl'}: row 4 (id 'c3'): field 'human': " in err
    assert problem in err


def test_rows_without_human_are_still_skipped_as_unlabelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Leaving 'human' out is an unlabelled case (skipped), not an error."""
    rows = [_row(i) for i in range(5)]
    del rows[2]["human"]
    assert _calibrate(tmp_path / "run", rows) == 0, capsys.readouterr().err
    written = json.loads((tmp_path / "run" / "thresholds.json").read_text("utf-8"))
    assert written["skipped"]["unlabelled"] == 1

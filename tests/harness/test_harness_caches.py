"""Process-global memo caches of the harness stay within their bounds and never change output.

Each cache is filled well past its real bound (no monkeypatched limits) and the output is
compared with the uncached reference: `encode_row` of the row dict for the results memos,
`Case.model_validate` for the dataset's row shapes.
"""

from __future__ import annotations

import json
from typing import Any

from agentjudge import Judgment, Verdict
from agentjudge.core import JudgeResult
from agentjudge.core import _rows as _results
from agentjudge.harness import _case
from agentjudge.harness._case import Case, case_from_row
from agentjudge.harness._results import encode_case, encode_row, judge_result_dict, judgment_dict

HEAD: dict[str, Any] = {"input": "q", "output": "a", "expected": None, "metadata": {"k": [1]}}


def reference(verdict: Verdict) -> str:
    """The line `encode_row` writes for ``verdict``'s row dict (no memo involved)."""
    row: dict[str, Any] = {"id": "case", **HEAD}
    row["results"] = [judge_result_dict(r) for r in verdict.results]
    row["verdict"] = judgment_dict(verdict.judgment)
    row["duration_s"] = 0.25
    row["error"] = None
    return encode_row(row)


def check(verdict: Verdict) -> None:
    """`encode_case` of ``verdict`` equals the reference line."""
    assert encode_case("case", HEAD, verdict, 0.25, None) == reference(verdict)


def test_judgment_texts_stay_bounded_and_lines_identical() -> None:
    """Thousands of distinct judgments, each seen twice (so memoised as frozen), stay in bound."""
    limit = _results._JUDGMENT_MEMO_LIMIT
    kept = []  # alive, so no id is reused: every judgment is a genuinely new key
    for i in range(4 * limit):
        judgment = Judgment.passed(f"case {i}", score=i / (4 * limit), metadata={"i": i})
        kept.append(judgment)
        result = JudgeResult(name="j", judgment=judgment, sampled=True)
        check(Verdict(judgment=judgment, results=(result,)))
        check(Verdict(judgment=judgment, results=(result,)))
        assert len(_results._JUDGMENT_TEXTS) <= limit
    for judgment in kept[::97]:  # evicted long ago: encoded afresh, same text
        check(Verdict(judgment=judgment))


def test_long_judgment_texts_never_enter_the_memo() -> None:
    """A judgment whose text is over the size bound is encoded every time, never kept."""
    big = Judgment.failed("x" * (_results._JUDGMENT_MEMO_CHARS + 1))
    for _ in range(3):
        check(Verdict(judgment=big))
    assert id(big) not in _results._JUDGMENT_TEXTS
    chars = sum(len(text) for _, text, _ in _results._JUDGMENT_TEXTS.values())
    assert chars <= _results._JUDGMENT_MEMO_LIMIT * _results._JUDGMENT_MEMO_CHARS


def test_result_parts_stay_bounded_and_lines_identical() -> None:
    """Thousands of distinct judge names and error types keep the result memo within bound."""
    limit = _results._RESULT_MEMO_LIMIT
    judgment = Judgment.passed("ok")
    for i in range(4 * limit):
        results = (
            JudgeResult(name=f"judge-{i}", judgment=judgment, sampled=True, metric_key=f"m{i}"),
            JudgeResult(name="j", judgment=None, sampled=False, error_type=f"Error{i}"),
        )
        check(Verdict(judgment=judgment, results=results))
        assert len(_results._RESULT_PARTS) <= limit
    first = JudgeResult(name="judge-0", judgment=judgment, sampled=True, metric_key="m0")
    check(Verdict(judgment=judgment, results=(first,)))  # evicted: rebuilt, same text


def test_case_shapes_never_grow() -> None:
    """Rows of many distinct shapes leave the shape table as built and equal validated cases."""
    built = dict(_case._SHAPES)
    assert len(built) == 4  # (id, input), + expected, + metadata, + human: one per prefix
    rows: list[dict[str, Any]] = []
    for i in range(2000):
        row: dict[str, Any] = {"id": f"c{i}", "input": i}
        if i % 2:
            row["metadata"] = {"n": i}
        if i % 3:
            row["expected"] = str(i)
        row[f"extra_{i}"] = i  # a new shape every row
        if i % 5 == 0:
            row = dict(reversed(list(row.items())))  # keys out of declaration order
        rows.append(row)
    rows += [{"id": "a", "input": 1}, {"id": "b", "input": 2, "expected": 3, "metadata": {}}]
    for row in rows:
        expected = Case.model_validate(json.loads(json.dumps(row)))
        case = case_from_row(json.loads(json.dumps(row)))
        assert case == expected
        assert case.model_fields_set == expected.model_fields_set
        assert case.model_dump() == expected.model_dump()
    assert built == _case._SHAPES

"""A case's results hold no list until the first lands (issue 19.11: objects alive in flight).

`RunState.results` starts as one tuple of Nones shared by every evaluation of a plan of that
size and becomes the case's own list at its first `add`. The property pins it to the list the
state used to make up front: any order of results gives the same slots, completions and verdict.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge import Context, Judgment
from agentjudge.core import JudgeResult
from agentjudge.engine._state import RunState

CTX = Context(input="q", output="a")


def _result(index: int) -> JudgeResult:
    return JudgeResult(name=f"j{index}", judgment=Judgment.passed(f"ok {index}"))


def test_waiting_cases_share_one_tuple_and_own_a_list_once_a_result_lands() -> None:
    first, second = RunState(CTX, (True, True)), RunState(CTX, (True, False))
    assert first.results is second.results == (None, None)
    first.add(1, _result(1))
    assert first.results == [None, _result(1)]
    assert second.results == (None, None)  # the shared tuple did not change
    assert RunState(CTX, (True, True)).results == (None, None)


@settings(max_examples=60)
@given(
    count=st.integers(1, 5),
    order=st.lists(st.integers(0, 4), max_size=6, unique=True),
)
def test_results_equal_a_list_made_up_front(count: int, order: list[int]) -> None:
    order = [i for i in order if i < count]
    run = RunState(CTX, (True,) * count)
    model: list[JudgeResult | None] = [None] * count
    for index in order:
        result = _result(index)
        run.add(index, result)
        model[index] = result
        assert list(run.results) == model
    assert list(run.results) == model
    assert list(run.completed) == [_result(i) for i in order]
    verdict = run.verdict_of(Judgment.passed("v"))
    assert verdict.results == tuple(r for r in model if r is not None)

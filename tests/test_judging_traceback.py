"""Short tracebacks: the last frames of a judge's or task's exception, user frames marked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentjudge import Context, Evaluator, Judgment, Verdict
from agentjudge.core import JudgeResult
from agentjudge.harness._results import encode_case, encode_row, judge_result_dict, judgment_dict
from agentjudge.judging import USER_MARK, short_traceback
from agentjudge.judging._traceback import GAP, TRACEBACK_FRAMES

SECRET = "sk-live-0123456789abcdef"


def _raise_with_secret() -> None:
    api_key = SECRET  # a local holding a secret must never reach the traceback
    raise RuntimeError(f"bad key {api_key}")


def _caught(fn: Any, *args: Any) -> BaseException:
    try:
        fn(*args)
    except Exception as exc:
        return exc
    raise AssertionError("did not raise")


def test_frames_are_file_line_function_with_user_code_marked() -> None:
    """Each frame reads 'path:line in qualname'; this test file's frames carry the user mark."""
    frames = short_traceback(_caught(_raise_with_secret))
    assert frames is not None
    assert frames[-1].startswith(USER_MARK)
    assert frames[-1].endswith(" in _raise_with_secret")
    assert "tests/test_judging_traceback.py:" in frames[-1]
    assert all(SECRET not in frame and "api_key" not in frame for frame in frames)


def test_an_exception_never_raised_has_no_traceback() -> None:
    """An exception never raised has no frames: None."""
    assert short_traceback(TimeoutError("judge timed out")) is None


def _library_chain(depth: int) -> Any:
    """A function whose frames live in a third-party package: ``depth`` nested calls, then raise."""
    source = "def call(n):\n    if n == 0:\n        raise ValueError('deep')\n    call(n - 1)\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, "/opt/env/site-packages/somelib/core.py", "exec"), namespace)
    return lambda: namespace["call"](depth)


def _user_entry(fn: Any) -> None:
    fn()


def test_deep_library_frames_keep_the_innermost_user_frame() -> None:
    """Library frames deeper than the limit: the user's frame is kept first, then a gap."""
    frames = short_traceback(_caught(_user_entry, _library_chain(TRACEBACK_FRAMES + 5)))
    assert frames is not None
    assert len(frames) == TRACEBACK_FRAMES + 1  # the user frame, the gap, the innermost frames
    assert frames[0].startswith(USER_MARK)
    assert frames[0].endswith(" in _library_chain.<locals>.<lambda>")
    assert frames[1] == GAP
    assert frames[-1] == "/opt/env/site-packages/somelib/core.py:3 in call"
    assert not any(f.startswith(USER_MARK) for f in frames[2:])


async def test_a_raising_judge_records_its_traceback_and_a_timeout_none() -> None:
    """The engine keeps the judge's traceback on its ERROR result; a timeout has none."""

    def broken(ctx: Context) -> Judgment:
        _raise_with_secret()
        return Judgment.passed()

    results = await Evaluator([broken]).evaluate(input="q", output="a")
    frames = results[0].traceback
    assert results[0].error_type == "RuntimeError"
    assert frames is not None
    assert frames[-1].startswith(USER_MARK) and frames[-1].endswith("in _raise_with_secret")
    assert frames[-2].startswith(USER_MARK) and "broken" in frames[-2]

    async def hangs(ctx: Context) -> Judgment:
        import anyio

        await anyio.sleep_forever()
        raise AssertionError

    timed_out = await Evaluator([hangs], timeout=0.01).evaluate(input="q", output="a")
    assert timed_out[0].error_type == "TimeoutError"
    assert timed_out[0].traceback is None


@pytest.mark.parametrize("task_frames", [None, ("> task.py:3 in answer",)])
def test_tracebacks_round_trip_through_a_results_line(task_frames: Any) -> None:
    """The judge's and the task's tracebacks survive encoding: the same text as `encode_row`,
    read back into equal `JudgeResult`s."""
    frames = short_traceback(_caught(_raise_with_secret))
    result = JudgeResult(
        name="j",
        judgment=Judgment.errored("RuntimeError: boom"),
        error_type="RuntimeError",
        traceback=frames,
    )
    verdict = Verdict(judgment=result.judgment, results=(result,))  # type: ignore[arg-type]
    head: dict[str, Any] = {"input": "q", "output": "a", "expected": None, "metadata": {}}
    line = encode_case("c", head, verdict, 0.5, "E: x", task_frames)
    row: dict[str, Any] = {"id": "c", **head}
    row["results"] = [judge_result_dict(result)]
    row["verdict"] = judgment_dict(verdict.judgment)
    row["duration_s"] = 0.5
    row["error"] = "E: x"
    if task_frames is not None:
        row["traceback"] = list(task_frames)
    assert line == encode_row(row)
    back = json.loads(line)
    assert JudgeResult.model_validate(back["results"][0]) == result
    assert back.get("traceback") == (None if task_frames is None else list(task_frames))

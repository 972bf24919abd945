"""`assert_passes` / `assert_eval`: when they pass, what a failure says, what they record."""

from __future__ import annotations

from typing import Any

import pytest

import _agentjudge_pytest
from agentjudge import Check, Context, Evaluator, JudgeResult, Judgment, Verdict, judge
from agentjudge.testing import ScriptedJudge, assert_eval, assert_passes, describe_outcome


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    """What the plugin is handed (instead of this test session's own tally)."""
    seen: list[tuple[Any, Any]] = []
    monkeypatch.setattr(_agentjudge_pytest, "record_outcome", lambda *a: seen.append(a))
    return seen


def _result(name: str, judgment: Judgment | None, **extra: Any) -> JudgeResult:
    return JudgeResult(name=name, judgment=judgment, sampled=judgment is not None, **extra)


FAILED = Judgment.failed(
    "the answer names Lyon\nnot Paris",
    score=0.2,
    checks=(Check(name="mentions_paris", passed=False, message="no 'Paris'"),),
)


def test_passing_verdict_passes(recorded: list[tuple[Any, Any]]) -> None:
    """A PASS verdict passes and is recorded once with its results and aggregate."""
    ok = _result("correctness", Judgment.passed("fine"))
    verdict = Verdict(judgment=Judgment.passed("all good"), results=(ok,))
    assert_passes(verdict)
    assert recorded == [((ok,), verdict.judgment)]


def test_failure_message_lists_every_judge(recorded: list[tuple[Any, Any]]) -> None:
    """The message gives why, then each judge's status, score, reasoning and failed checks."""
    results = (
        _result("correctness", FAILED),
        _result("tone", Judgment.passed("polite", score=1.0)),
        _result("safety", Judgment.errored("ConnectError: refused"), error_type="ConnectError"),
        _result("costly", None),
    )
    verdict = Verdict(judgment=Judgment.failed("1 of 2 passed"), results=results)
    with pytest.raises(AssertionError) as info:
        assert_passes(verdict)
    assert str(info.value) == (
        "agentjudge: the verdict is FAIL\n"
        "verdict FAIL - 1 of 2 passed\n"
        "judges:\n"
        "  correctness: FAIL score=0.200 - the answer names Lyon\n"
        "      not Paris\n"
        "      failed check 'mentions_paris': no 'Paris'\n"
        "  tone: PASS score=1.000 - polite\n"
        "  safety: ERROR (ConnectError) - ConnectError: refused\n"
        "  costly: not sampled"
    )
    assert len(recorded) == 1, "a failing outcome is recorded too"


def test_bare_results_need_every_sampled_judge_to_pass(recorded: list[tuple[Any, Any]]) -> None:
    """A list of results passes when every sampled one passes; unsampled ones are skipped."""
    assert_passes([_result("a", Judgment.passed()), _result("b", None)])
    with pytest.raises(AssertionError, match=r"^agentjudge: a is FAIL\njudges:\n  a: FAIL"):
        assert_passes([_result("a", Judgment.failed("no"))])
    with pytest.raises(AssertionError, match="no judge judged"):
        assert_passes([_result("b", None)])
    assert recorded[0][1] is None, "bare results have no aggregate"


def test_named_judges_are_checked_instead_of_the_verdict(recorded: list[tuple[Any, Any]]) -> None:
    """With judges=..., only those results count; an unknown name fails, listing the judges."""
    verdict = Verdict(
        judgment=Judgment.failed("majority fail"),
        results=(_result("a", Judgment.passed()), _result("b", FAILED)),
    )
    assert_passes(verdict, judges=["a"])
    assert_passes(verdict, judges="a")
    with pytest.raises(AssertionError, match="agentjudge: b is FAIL"):
        assert_passes(verdict, judges=["a", "b"])
    with pytest.raises(AssertionError, match=r"no result from 'c' \(judges: 'a', 'b'\)"):
        assert_passes(verdict, judges=["c"])


def test_long_reasoning_is_cut() -> None:
    """A judge's reasoning beyond MAX_REASONING characters is cut, saying how much."""
    verdict = Verdict(judgment=Judgment.failed("x" * 2500))
    assert describe_outcome(verdict).endswith("... (500 more characters)\njudges: none")


def test_wrong_type_is_a_type_error() -> None:
    """Anything but verdicts and results is refused, naming the type."""
    with pytest.raises(TypeError, match="got str"):
        assert_passes("pass")  # type: ignore[arg-type]


async def test_assert_eval_builds_evaluates_and_asserts(recorded: list[tuple[Any, Any]]) -> None:
    """assert_eval takes judges or an Evaluator and returns the passing verdict."""

    @judge
    def exact(ctx: Any) -> bool:
        return bool(ctx.output == ctx.expected)

    verdict = await assert_eval(exact, output="Paris", expected="Paris")
    assert verdict.judgment.is_pass
    with pytest.raises(AssertionError, match="exact: FAIL"):
        await assert_eval(Evaluator(exact), output="Lyon", expected="Paris")
    with pytest.raises(AssertionError, match="the verdict is FAIL"):
        await assert_eval(ScriptedJudge(Judgment.failed("no"), name="s"), input="q")
    assert len(recorded) == 3


async def test_case_results_of_a_run_are_accepted(recorded: list[tuple[Any, Any]]) -> None:
    """A CaseResult from Evaluator.run is checked by its verdict."""
    evaluator = Evaluator(ScriptedJudge([True, False], name="s"))
    statuses = []
    async for case in evaluator.run([Context(input=1), Context(input=2)], concurrency=1):
        try:
            assert_passes(case)
            statuses.append("pass")
        except AssertionError as exc:
            statuses.append(str(exc).splitlines()[0])
    assert statuses == ["pass", "agentjudge: the verdict is FAIL"]
    assert len(recorded) == 2

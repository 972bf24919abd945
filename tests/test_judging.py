"""Judges: @judge, named, judge_name, JudgeKind, the call adapter, all_of and any_of."""

from __future__ import annotations

import functools
import math
import threading
from typing import Any

import pytest

from agentjudge import (
    Context,
    Evaluator,
    FunctionJudge,
    Judge,
    JudgeKind,
    Judgment,
    Status,
    all_of,
    any_of,
    judge,
    judge_name,
    named,
)
from agentjudge.testing import ScriptedJudge

CTX = Context(input="q", output="a")


# --------------------------------------------------------------------------- @judge / named


def test_judge_bare_decorator_names_after_function() -> None:
    """Bare @judge names the judge after the function, kind DETERMINISTIC."""

    @judge
    async def exact_match(ctx: Context) -> Judgment:
        return Judgment.passed()

    assert isinstance(exact_match, FunctionJudge)
    assert exact_match.name == "exact_match"
    assert judge_name(exact_match) == "exact_match"
    assert exact_match.kind is JudgeKind.DETERMINISTIC
    assert exact_match.resource is None and exact_match.metric_key is None


async def test_judge_with_arguments_sets_every_attribute() -> None:
    """@judge("name", kind=..., description=..., resource=..., metric_key=...) sets them all."""

    @judge(
        "relevance",
        kind=JudgeKind.LLM,
        description="Is it on topic?",
        resource="openai",
        metric_key="relevance_score",
    )
    async def check(ctx: Context) -> Judgment:
        return Judgment.failed("off topic")

    assert check.name == "relevance"
    assert check.kind is JudgeKind.LLM
    assert check.description == "Is it on topic?"
    assert check.resource == "openai"
    assert check.metric_key == "relevance_score"
    assert (await check(CTX)).reasoning == "off topic"


def test_judge_empty_parentheses_uses_function_name_and_docstring() -> None:
    """@judge() names after the function and takes the docstring's first line as description."""

    @judge()
    def not_empty(ctx: Context) -> bool:
        """Output is not empty.

        More detail.
        """
        return bool(ctx.output)

    assert not_empty.name == "not_empty"
    assert not_empty.description == "Output is not empty."


def test_judge_accepts_name_as_keyword() -> None:
    """@judge(name="x") works as the contract's signature says."""

    @judge(name="x")
    def j(ctx: Context) -> bool:
        return True

    assert j.name == "x"


@pytest.mark.parametrize("name", ["", "   "])
def test_judge_blank_name_rejected(name: str) -> None:
    """A blank judge name is a ValueError at decoration time."""
    with pytest.raises(ValueError, match="name"):
        judge(name)(lambda ctx: True)


def test_judge_kind_values() -> None:
    """JudgeKind has DETERMINISTIC, LLM, HYBRID and AGENT."""
    assert [k.value for k in JudgeKind] == ["deterministic", "llm", "hybrid", "agent"]
    assert JudgeKind("llm") is JudgeKind.LLM


async def test_named_wraps_under_a_new_name() -> None:
    """named(fn, name, description) renames; kind defaults to DETERMINISTIC; calls go through."""
    inner = ScriptedJudge(Judgment.failed("no"), name="inner", resource="db", metric_key="m")
    wrapped = named(inner, "renamed", "what it checks")
    assert judge_name(wrapped) == "renamed"
    assert wrapped.description == "what it checks"
    assert wrapped.kind is JudgeKind.DETERMINISTIC
    assert (wrapped.resource, wrapped.metric_key) == ("db", "m")
    assert (await wrapped(CTX)).reasoning == "no"
    assert inner.calls == 1


def test_named_with_kind_and_blank_name() -> None:
    """named() takes a kind; a blank name is a ValueError."""
    assert named(lambda ctx: True, "x", kind=JudgeKind.AGENT).kind is JudgeKind.AGENT
    with pytest.raises(ValueError, match="name"):
        named(lambda ctx: True, " ")


def test_judge_name_prefers_name_attribute() -> None:
    """judge_name uses the `name` attribute when set."""

    class Scorer:
        name = "my-scorer"

        async def __call__(self, ctx: Context) -> Judgment:
            return Judgment.passed()

    assert judge_name(Scorer()) == "my-scorer"


def test_judge_name_falls_back_to_function_name_then_class_name() -> None:
    """Without a `name` attribute: a function's __name__, else the class name."""

    async def length_ok(ctx: Context) -> Judgment:
        return Judgment.passed()

    class Scorer:
        async def __call__(self, ctx: Context) -> Judgment:
            return Judgment.passed()

    assert judge_name(length_ok) == "length_ok"
    assert judge_name(Scorer()) == "Scorer"
    assert judge_name(lambda ctx: True) == "<lambda>"
    assert judge_name(functools.partial(length_ok)) == "length_ok"


def test_judge_name_ignores_blank_name_attribute() -> None:
    """A blank or non-string `name` attribute does not count as a name."""

    class Scorer:
        def __init__(self, name: object) -> None:
            self.name = name

        async def __call__(self, ctx: Context) -> Judgment:
            return Judgment.passed()

    assert judge_name(Scorer("")) == "Scorer"
    assert judge_name(Scorer(None)) == "Scorer"


def test_judge_protocol_is_runtime_checkable() -> None:
    """Function judges and objects with an async __call__ satisfy the Judge protocol."""

    @judge
    async def j(ctx: Context) -> Judgment:
        return Judgment.passed()

    assert isinstance(j, Judge)
    assert isinstance(ScriptedJudge(), Judge)


# --------------------------------------------------------------------------- calling judges


async def test_sync_judge_runs_on_a_worker_thread_in_the_evaluator() -> None:
    """A sync judge never runs on the event loop thread when the Evaluator calls it."""
    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}

    def sync_judge(ctx: Context) -> Judgment:
        seen["sync"] = threading.get_ident()
        return Judgment.passed("sync")

    async def async_judge(ctx: Context) -> Judgment:
        seen["async"] = threading.get_ident()
        return Judgment.passed("async")

    results = await Evaluator([sync_judge, async_judge]).evaluate(CTX)
    assert [r.status for r in results] == [Status.PASS, Status.PASS]
    assert seen["sync"] != loop_thread
    assert seen["async"] == loop_thread


async def test_sync_decorated_and_callable_objects_run_on_worker_threads() -> None:
    """@judge on a sync function and a sync callable object are both offloaded to a thread."""
    loop_thread = threading.get_ident()
    seen: list[int] = []

    @judge
    def decorated(ctx: Context) -> bool:
        seen.append(threading.get_ident())
        return True

    class SyncObject:
        def __call__(self, ctx: Context) -> bool:
            seen.append(threading.get_ident())
            return False

    assert (await decorated(CTX)).status is Status.PASS
    results = await Evaluator(SyncObject()).evaluate(CTX)
    assert results[0].status is Status.FAIL
    assert len(seen) == 2
    assert all(ident != loop_thread for ident in seen)


async def test_async_callable_object_is_awaited_in_place() -> None:
    """An object with an async __call__ is awaited on the loop thread."""
    loop_thread = threading.get_ident()
    seen: list[int] = []

    class AsyncObject:
        async def __call__(self, ctx: Context) -> float:
            seen.append(threading.get_ident())
            return 0.9

    results = await Evaluator(AsyncObject()).evaluate(CTX)
    assert results[0].score == pytest.approx(0.9)
    assert seen == [loop_thread]


@pytest.mark.parametrize(
    ("value", "status", "score"),
    [
        (True, Status.PASS, None),
        (False, Status.FAIL, None),
        (0.7, Status.PASS, 0.7),
        (0.5, Status.PASS, 0.5),
        (0.49, Status.FAIL, 0.49),
        (0.0, Status.FAIL, 0.0),
        (1.0, Status.PASS, 1.0),
    ],
)
async def test_bool_and_float_returns_become_judgments(
    value: bool | float, status: Status, score: float | None
) -> None:
    """bool -> PASS/FAIL; float in [0, 1] -> that score, PASS iff >= 0.5."""

    async def returns(ctx: Context) -> Any:
        return value

    results = await Evaluator(returns).evaluate(CTX)
    assert results[0].status is status
    assert results[0].score == score
    assert results[0].error_type is None


@pytest.mark.parametrize(
    ("value", "described"),
    [
        ("pass", "returned str"),
        (None, "returned NoneType"),
        ({"status": "pass"}, "returned dict"),
        (1.5, "returned score 1.5"),
        (-0.1, "returned score -0.1"),
        (math.nan, "returned score nan"),
        (math.inf, "returned score inf"),
    ],
)
async def test_garbage_return_becomes_error_with_clear_reason(value: Any, described: str) -> None:
    """A judge returning garbage (or a float outside [0, 1]) yields ERROR saying what it got."""

    async def garbage(ctx: Context) -> Any:
        return value

    result = (await Evaluator(garbage, retry=None).evaluate(CTX))[0]
    assert result.status is Status.ERROR
    assert result.error_type == "JudgeReturnError"
    assert result.reasoning is not None
    assert "garbage" in result.reasoning
    assert described in result.reasoning
    assert result.attempts == 1


async def test_sync_garbage_return_becomes_error() -> None:
    """Garbage from a sync judge is an ERROR too (not a crash)."""

    def sync_garbage(ctx: Context) -> Any:
        return ["x"]

    result = (await Evaluator(sync_garbage).evaluate(CTX))[0]
    assert result.status is Status.ERROR
    assert result.error_type == "JudgeReturnError"


# --------------------------------------------------------------------------- all_of / any_of


async def test_all_of_returns_first_non_pass_unchanged_and_stops() -> None:
    """all_of runs in order; the first non-PASS judgment is returned as is; later not called."""
    first = ScriptedJudge(Judgment.passed("one"), name="first")
    failing = Judgment.failed("two failed", score=0.2, metadata={"k": 1})
    second = ScriptedJudge(failing, name="second")
    third = ScriptedJudge(True, name="third")
    combined = all_of(first, second, third)
    result = await combined(CTX)
    assert result is failing
    assert (first.calls, second.calls, third.calls) == (1, 1, 0)


@pytest.mark.parametrize(
    "stopper", [Judgment.abstained("n/a"), Judgment.errored("crashed")], ids=["abstain", "error"]
)
async def test_all_of_short_circuits_on_abstain_and_error(stopper: Judgment) -> None:
    """ABSTAIN and ERROR are non-PASS: all_of returns them unchanged."""
    later = ScriptedJudge(True, name="later")
    assert await all_of(ScriptedJudge(stopper, name="s"), later)(CTX) is stopper
    assert later.calls == 0


async def test_all_of_all_pass_gives_new_pass() -> None:
    """All PASS gives a new PASS "All checks passed" (children's details dropped)."""
    a = ScriptedJudge(Judgment.passed("a", score=0.9), name="a")

    def b(ctx: Context) -> bool:
        return True

    result = await all_of(a, b)(CTX)
    assert result.status is Status.PASS
    assert result.reasoning == "All checks passed"
    assert result.score is None


async def test_all_of_empty_passes() -> None:
    """all_of() with no judges is PASS."""
    result = await all_of()(CTX)
    assert (result.status, result.reasoning) == (Status.PASS, "All checks passed")


async def test_any_of_returns_first_pass_unchanged_and_stops() -> None:
    """any_of returns the first PASS as is; later judges are not called."""
    a = ScriptedJudge(False, name="a")
    passing = Judgment.passed("b passed", label="yes")
    b = ScriptedJudge(passing, name="b")
    c = ScriptedJudge(True, name="c")
    assert await any_of(a, b, c)(CTX) is passing
    assert (a.calls, b.calls, c.calls) == (1, 1, 0)


async def test_any_of_none_passing_gives_new_fail() -> None:
    """No PASS (FAIL, ABSTAIN, ERROR alike) gives a new FAIL "All checks failed"."""
    judges = [
        ScriptedJudge(False, name="f"),
        ScriptedJudge(Judgment.abstained("n/a"), name="a"),
        ScriptedJudge(Judgment.errored("boom"), name="e"),
    ]
    result = await any_of(*judges)(CTX)
    assert (result.status, result.reasoning) == (Status.FAIL, "All checks failed")
    assert [j.calls for j in judges] == [1, 1, 1]


async def test_any_of_empty_fails() -> None:
    """any_of() with no judges is FAIL."""
    result = await any_of()(CTX)
    assert (result.status, result.reasoning) == (Status.FAIL, "All checks failed")


async def test_composition_names_and_use_in_evaluator() -> None:
    """all_of/any_of are named after their members and run as judges in an Evaluator."""
    a = ScriptedJudge(True, name="a")
    b = ScriptedJudge(False, name="b")
    both, either = all_of(a, b), any_of(a, b)
    assert judge_name(both) == "all_of(a, b)"
    assert judge_name(either) == "any_of(a, b)"
    results = await Evaluator([both, either]).evaluate(CTX)
    assert [(r.name, r.status) for r in results] == [
        ("all_of(a, b)", Status.FAIL),
        ("any_of(a, b)", Status.PASS),
    ]


async def test_composition_exception_becomes_error_in_evaluator() -> None:
    """An exception from a member propagates out of all_of; the Evaluator records ERROR."""

    def boom(ctx: Context) -> bool:
        raise LookupError("no such key")

    with pytest.raises(LookupError):
        await all_of(boom)(CTX)
    result = (await Evaluator(all_of(ScriptedJudge(True), boom)).evaluate(CTX))[0]
    assert result.status is Status.ERROR
    assert result.error_type == "LookupError"
    assert "no such key" in (result.reasoning or "")

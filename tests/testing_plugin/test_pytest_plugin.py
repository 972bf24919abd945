"""The agentjudge pytest plugin, run in-process on small projects (pytester)."""

from __future__ import annotations

import random

import pytest

from agentjudge._pytest._fixtures import EvaluatorFactory
from agentjudge.agreement import wilson_interval
from agentjudge.testing import ScriptedJudge

pytest_plugins = ["pytester"]

DATA = "\n".join(
    [
        '{"id": "paris", "input": "France", "expected": "Paris"}',
        '{"id": "rome", "input": "Italy", "expected": "Rome"}',
        '{"id": "oslo", "input": "Norway", "expected": "Bergen"}',
    ]
)
TESTS = """
import pytest
from agentjudge import Judgment, judge
from agentjudge.testing import assert_passes

ANSWERS = {"France": "Paris", "Italy": "Rome", "Norway": "Oslo"}

@judge(name="correctness")
def correctness(ctx):
    if ctx.output == ctx.expected:
        return Judgment.passed("the capital")
    return Judgment.failed(f"{ctx.output!r} is not {ctx.expected!r}")

@judge(name="tone")
def tone(ctx):
    return Judgment.failed("curt")

@pytest.mark.agentjudge_dataset("data.jsonl")
@pytest.mark.anyio
async def test_capitals(case, agentjudge_evaluator):
    evaluator = agentjudge_evaluator([correctness, tone])
    verdict = await evaluator.verdict(
        input=case.input, output=ANSWERS[case.input], expected=case.expected
    )
    assert_passes(verdict, judges=["correctness"])

@pytest.fixture
def anyio_backend():
    return "asyncio"
"""


@pytest.fixture(autouse=True)
def _quiet_asyncio(pytester: pytest.Pytester) -> None:
    """Inner sessions set pytest-asyncio's loop scope (else it warns, and warnings are errors)."""
    pytester.makeini(INI)


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with a three-row dataset (one wrong answer) and a test over it."""
    pytester.makefile(".jsonl", data=DATA)
    pytester.makepyfile(test_evals=TESTS)
    return pytester


def test_dataset_rows_become_tests_named_by_id(project: pytest.Pytester) -> None:
    """Each row is one test whose id is the row's id; the failure explains the judges."""
    result = project.runpytest("-v", "-p", "no:asyncio")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_capitals?paris? PASSED*",
            "*test_capitals?rome? PASSED*",
            "*test_capitals?oslo? FAILED*",
            "E       AssertionError: agentjudge: correctness is FAIL",
            "E         correctness: FAIL - 'Oslo' is not 'Bergen'",
            "E         tone: FAIL - curt",
        ]
    )


def test_summary_gives_pass_rates_with_n_and_wilson_interval(project: pytest.Pytester) -> None:
    """The session ends with each judge's n, pass rate and Wilson interval."""
    result = project.runpytest("-p", "no:asyncio")
    low, high = wilson_interval(2, 3)
    result.stdout.fnmatch_lines(
        [
            "*= agentjudge =*",
            "3 outcomes checked with assert_passes / assert_eval*",
            "judge *n  pass_rate*ci95 (wilson)*pass  fail  abstain  error",
            f"correctness  3      0.667  [[]{low:.3f}, {high:.3f}[]]     2     1        0      0",
            "tone         3      0.000  *     0     3        0      0",
            "(verdict)    3      0.000*",
        ]
    )


def test_failing_gate_fails_a_passing_session(project: pytest.Pytester) -> None:
    """A gate that does not hold makes the exit status 1 and says why; names match any case."""
    project.makeini(INI + "agentjudge_gates =\n    Correctness.pass_rate>=0.5\n")
    result = project.runpytest("-p", "no:asyncio", "-k", "paris or rome")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["  PASS  Correctness.pass_rate>=0.5  (value 1.0000)"])
    result = project.runpytest(
        "-p", "no:asyncio", "-k", "paris or rome", "--agentjudge-gate", "tone.pass_rate>=0.5"
    )
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "  FAIL  tone.pass_rate>=0.5  (value 0.0000)",
            "agentjudge gates FAILED (1 of 2): the session fails",
        ]
    )


def test_gate_on_an_unknown_judge_fails_naming_the_judges(project: pytest.Pytester) -> None:
    """A gate never passes on a judge that gave nothing; the reason suggests the name."""
    result = project.runpytest("-p", "no:asyncio", "--agentjudge-gate", "corectness.mean>=0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*unknown judge 'corectness' (did you mean 'correctness'?)*"])


def test_malformed_gate_is_a_usage_error(project: pytest.Pytester) -> None:
    """A gate that does not parse stops pytest before any test, with the gate syntax."""
    result = project.runpytest("--agentjudge-gate", "correctness.meen>=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agentjudge: gate 'correctness.meen>=0.1': unknown stat*"])


def test_malformed_dataset_fails_collection_with_the_line(pytester: pytest.Pytester) -> None:
    """A bad row fails collection with the harness's file- and line-precise message."""
    pytester.makefile(".jsonl", data='{"id": "a", "input": 1}\n{"id": "b", "input": }\n')
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.agentjudge_dataset("data.jsonl")
        def test_rows(case):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["@pytest.mark.agentjudge_dataset: data.jsonl line 2, column 22: invalid JSON*"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_marker_needs_the_case_argument(pytester: pytest.Pytester) -> None:
    """A marked test without the argument to receive the rows is told so."""
    pytester.makefile(".csv", data="id,input\na,1\n")
    mark = '@pytest.mark.agentjudge_dataset("data.csv", argname="row")'
    pytester.makepyfile(
        test_wrong=f"import pytest\n\n{mark}\ndef test_rows(case):\n    pass\n",
        test_right=f"import pytest\n\n{mark}\ndef test_csv(row):\n    assert row.id == 'a'\n",
    )
    result = pytester.runpytest("test_wrong.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_rows has no 'row' argument to receive the cases*"])
    result = pytester.runpytest("test_right.py")
    result.assert_outcomes(passed=1)


def test_plugin_is_inert_without_use(pytester: pytest.Pytester) -> None:
    """A session that uses nothing of the plugin prints nothing of it; the flag forces it."""
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*= agentjudge =*")
    result.stdout.no_fnmatch_line("*outcomes checked*")
    result = pytester.runpytest("--agentjudge-summary")
    result.stdout.fnmatch_lines(["*= agentjudge =*", "0 outcomes checked*"])
    result = pytester.runpytest("-p", "no:agentjudge", "--agentjudge-summary")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, "disabled: the option is unknown"


def test_evaluator_fixture_under_pytest_asyncio(pytester: pytest.Pytester) -> None:
    """The fixture's evaluators run in pytest-asyncio's loop, a new one per test."""
    pytester.makeini(INI + "asyncio_mode = auto\n")
    pytester.makepyfile(
        """
        from agentjudge.testing import ScriptedJudge, assert_eval

        seen = []

        async def test_one(agentjudge_evaluator):
            evaluator = agentjudge_evaluator(ScriptedJudge(True, latency=0.001, name="s"))
            seen.append(evaluator)
            await assert_eval(evaluator, input="q")

        async def test_two(agentjudge_evaluator):
            evaluator = agentjudge_evaluator(ScriptedJudge(True, latency=0.001, name="s"))
            assert evaluator is not seen[0]
            await assert_eval(evaluator, input="q")
        """
    )
    result = pytester.runpytest("-p", "no:anyio")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["s * 2 * 1.000 *"])


def test_factory_seeds_sampling_with_the_test_id() -> None:
    """Two factories for the same test id draw the same sample; the rng option wins."""

    async def draws(factory: EvaluatorFactory) -> list[bool]:
        evaluator = factory(ScriptedJudge(True, name="s"), sampling={"s": 0.5})
        return [(await evaluator.evaluate(input=i))[0].sampled for i in range(40)]

    import anyio

    first = anyio.run(draws, EvaluatorFactory("t.py::test_x"))
    again = anyio.run(draws, EvaluatorFactory("t.py::test_x"))
    other = anyio.run(draws, EvaluatorFactory("t.py::test_y"))
    assert first == again
    assert first != other
    factory = EvaluatorFactory("t.py::test_x")
    rng = random.Random(1)
    assert factory(None, rng=rng) in factory.built
    factory.close()
    assert factory.built == []

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from typing import Any

import anyio
import pytest
from llm_judge_fakes import FakeModel, FakeRunner

from agentjudge.core import Context, Message, Status
from agentjudge.engine import Evaluator, Jury
from agentjudge.judges._score import (
    SCORE_SCHEMA,
    ModelRunner,
    Runner,
    RunnerResult,
    ScoreJudge,
    evaluation_input,
    format_messages,
)
from agentjudge.judging import JudgeKind
from agentjudge.models._types import ModelResponse, Usage
from agentjudge.voting import Average

EXACT_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string"},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}


def make(runner: Any, **kwargs: Any) -> ScoreJudge:
    kwargs.setdefault("instructions", "Score the helpfulness.")
    kwargs.setdefault("metric_key", "helpfulness")
    return ScoreJudge("helpful", runner, **kwargs)


# ----------------------------------------------------------------------------- RunnerResult


def test_runner_result_positional_and_defaults() -> None:
    """RunnerResult(content) with success=True, usage/raw/parsed None by default."""
    r = RunnerResult("text")
    assert (r.content, r.success, r.usage, r.raw, r.parsed) == ("text", True, None, None, None)
    assert RunnerResult(None).content == ""
    with pytest.raises(TypeError):
        RunnerResult("a", content="b")


def test_runner_result_parsed_is_copied_and_read_only() -> None:
    """parsed is deep-copied and read-only."""
    source: dict[str, Any] = {"score": 0.5, "nested": {"xs": [1, 2]}}
    r = RunnerResult("x", parsed=source)
    source["score"] = 0.9
    source["nested"]["xs"].append(3)
    assert r.parsed is not None
    assert r.parsed["score"] == 0.5
    assert r.parsed["nested"]["xs"] == (1, 2)
    with pytest.raises(TypeError):
        r.parsed["score"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        r.parsed["nested"]["new"] = 1  # type: ignore[index]
    assert r.model_dump()["parsed"] == {"score": 0.5, "nested": {"xs": [1, 2]}}


def test_runner_result_rejects_non_mapping_parsed() -> None:
    """parsed must be a mapping."""
    with pytest.raises(ValueError):
        RunnerResult("x", parsed=[1, 2])  # type: ignore[arg-type]


def test_fake_runner_is_a_runner() -> None:
    """The Runner protocol is runtime-checkable."""
    assert isinstance(FakeRunner(), Runner)


# ----------------------------------------------------------------------------- input and schema


async def test_runner_receives_exact_input_and_schema() -> None:
    """The runner gets exactly the LaunchDarkly evaluation string and the exact schema."""
    runner = FakeRunner({"score": 0.8, "reasoning": "good"})
    result = await make(runner).evaluate("What is 2+2?", "4")
    assert runner.calls == [
        ("MESSAGE HISTORY:\nWhat is 2+2?\n\nRESPONSE TO EVALUATE:\n4", EXACT_SCHEMA)
    ]
    assert SCORE_SCHEMA == EXACT_SCHEMA
    assert json.dumps(runner.calls[0][1], separators=(",", ":")) == (
        '{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":1},'
        '"reasoning":{"type":"string"}},"required":["score","reasoning"],"additionalProperties":false}'
    )
    assert result.name == "helpful"
    assert result.metric_key == "helpfulness"
    assert result.sampled is True
    assert result.status is Status.PASS
    assert result.score == 0.8
    assert result.reasoning == "good"
    assert result.attempts == 1
    assert result.error_type is None
    assert result.success is True


async def test_schema_copy_is_fresh_each_call() -> None:
    """A runner mutating its schema does not affect the next call."""

    seen: list[bool] = []

    class Mutating(FakeRunner):
        async def run(
            self, input: str, output_schema: dict[str, Any] | None = None
        ) -> RunnerResult:
            seen.append(output_schema == EXACT_SCHEMA)
            assert output_schema is not None
            output_schema["properties"]["score"]["maximum"] = 100
            return await super().run(input, output_schema)

    judge = make(Mutating())
    await judge.evaluate("a", "b")
    await judge.evaluate("a", "b")
    assert seen == [True, True]
    assert SCORE_SCHEMA == EXACT_SCHEMA


async def test_evaluate_messages_format() -> None:
    """evaluate_messages formats 'role: content' lines and evaluates response.content."""
    runner = FakeRunner()
    messages = [Message(role="system", content="be nice"), {"role": "user", "content": "hi"}]
    await make(runner).evaluate_messages(messages, RunnerResult("hello there"))
    assert runner.calls[0][0] == (
        "MESSAGE HISTORY:\nsystem: be nice\nuser: hi\n\nRESPONSE TO EVALUATE:\nhello there"
    )


async def test_evaluate_messages_empty() -> None:
    """No messages and no response give empty sections."""
    runner = FakeRunner()
    await make(runner).evaluate_messages([], None)
    assert runner.calls[0][0] == "MESSAGE HISTORY:\n\n\nRESPONSE TO EVALUATE:\n"


def test_helpers() -> None:
    """evaluation_input renders non-strings; format_messages rejects role-less items."""
    assert (
        evaluation_input(None, {"a": 1}) == 'MESSAGE HISTORY:\n\n\nRESPONSE TO EVALUATE:\n{"a": 1}'
    )
    assert format_messages(None) == ""
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        format_messages([{"content": "x"}])


# ----------------------------------------------------------------------------- construction


@pytest.mark.parametrize("key", ["", "   "])
def test_blank_metric_key_is_value_error(key: str) -> None:
    """A blank metric_key is a ValueError at construction."""
    with pytest.raises(ValueError, match="metric_key"):
        make(FakeRunner(), metric_key=key)


@pytest.mark.parametrize("rate", [-0.1, 1.1, math.nan, True])
def test_bad_sampling_rate(rate: float) -> None:
    """sampling_rate outside [0, 1] (or not a number) is a ValueError."""
    with pytest.raises(ValueError, match="sampling_rate"):
        make(FakeRunner(), sampling_rate=rate)


def test_other_construction_errors() -> None:
    """Blank name, non-runner, blank instructions for a model client are rejected."""
    with pytest.raises(ValueError, match="name"):
        ScoreJudge(" ", FakeRunner(), instructions="i", metric_key="m")
    with pytest.raises(TypeError, match="Runner"):
        make(object())
    with pytest.raises(ValueError, match="instructions"):
        make(FakeModel(), instructions="  ")
    with pytest.raises(ValueError, match="threshold"):
        make(FakeRunner(), threshold=2)


def test_judge_attributes() -> None:
    """ScoreJudge carries name, kind, metric_key, sampling_rate, resource."""
    judge = make(FakeRunner(), sampling_rate=0.25)
    assert (judge.name, judge.kind, judge.metric_key, judge.sampling_rate) == (
        "helpful",
        JudgeKind.LLM,
        "helpfulness",
        0.25,
    )
    assert judge.resource is None
    assert make(FakeModel(name="openai:m")).resource == "openai:m"
    assert judge.instructions == "Score the helpfulness."


# ----------------------------------------------------------------------------- sampling


async def test_rate_zero_never_runs_and_never_draws() -> None:
    """Rate 0: skipped, judgment None, runner never called, rng untouched."""
    rng = random.Random(7)
    state = rng.getstate()
    runner = FakeRunner()
    result = await make(runner, sampling_rate=0.0, rng=rng).evaluate("i", "o")
    assert (result.sampled, result.judgment, result.attempts) == (False, None, 0)
    assert result.metric_key == "helpfulness"
    assert result.success is False
    assert runner.calls == []
    assert rng.getstate() == state


async def test_rate_one_never_draws() -> None:
    """Rate 1 runs without drawing from the rng."""
    rng = random.Random(7)
    state = rng.getstate()
    runner = FakeRunner()
    result = await make(runner, rng=rng).evaluate("i", "o")
    assert result.sampled and len(runner.calls) == 1
    assert rng.getstate() == state


async def test_seeded_sampling_follows_rng() -> None:
    """Otherwise a call is skipped iff rng.random() >= rate, drawn once per call."""
    expected_rng = random.Random(42)
    expected = [expected_rng.random() < 0.3 for _ in range(50)]
    runner = FakeRunner(*[{"score": 1.0, "reasoning": ""}] * 50)
    judge = make(runner, sampling_rate=0.3, rng=random.Random(42))
    got = [(await judge.evaluate("i", "o")).sampled for _ in range(50)]
    assert got == expected
    assert len(runner.calls) == sum(expected)
    assert 0 < sum(expected) < 50


async def test_call_time_rate_overrides() -> None:
    """evaluate(sampling_rate=...) overrides the judge's rate; invalid values are ValueErrors."""
    runner = FakeRunner()
    judge = make(runner, sampling_rate=1.0)
    assert (await judge.evaluate("i", "o", sampling_rate=0.0)).sampled is False
    assert (await judge.evaluate_messages([], RunnerResult("x"), sampling_rate=0)).sampled is False
    assert runner.calls == []
    with pytest.raises(ValueError):
        await judge.evaluate("i", "o", sampling_rate=3)


async def test_boundary_draw_equal_to_rate_skips() -> None:
    """A draw exactly equal to the rate skips (>= rate)."""

    class Fixed(random.Random):
        def random(self) -> float:
            return 0.5

    result = await make(FakeRunner(), sampling_rate=0.5, rng=Fixed()).evaluate("i", "o")
    assert result.sampled is False


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"score": True, "reasoning": "r"}, "invalid score True"),
        ({"score": False, "reasoning": "r"}, "invalid score False"),
        ({"score": math.nan, "reasoning": "r"}, "invalid score nan"),
        ({"score": math.inf, "reasoning": "r"}, "invalid score inf"),
        ({"score": 1.01, "reasoning": "r"}, "invalid score 1.01"),
        ({"score": -0.01, "reasoning": "r"}, "invalid score -0.01"),
        ({"score": "0.5", "reasoning": "r"}, "invalid score '0.5'"),
        ({"score": None, "reasoning": "r"}, "invalid score None"),
        ({"reasoning": "r"}, "invalid score"),
        ({"score": 0.5}, "invalid reasoning"),
        ({"score": 0.5, "reasoning": 3}, "invalid reasoning"),
    ],
)
async def test_invalid_outputs_are_errors(payload: Mapping[str, Any], fragment: str) -> None:
    """Bool, NaN, inf, out of range, non-number scores and non-string reasoning are ERROR."""
    result = await make(FakeRunner(dict(payload))).evaluate("i", "o")
    assert result.sampled is True
    assert result.status is Status.ERROR
    assert fragment in (result.reasoning or "")
    assert result.success is False
    assert result.score is None


async def test_nan_in_json_content_is_rejected() -> None:
    """NaN arriving as JSON text is rejected too."""
    result = await make(FakeRunner('{"score": NaN, "reasoning": "x"}')).evaluate("i", "o")
    assert result.status is Status.ERROR
    assert "invalid score nan" in (result.reasoning or "")


async def test_content_parsed_when_parsed_is_none() -> None:
    """Without parsed, content is parsed as JSON with code fences stripped."""
    fenced = '```json\n{"score": 0.25, "reasoning": "meh"}\n```'
    result = await make(FakeRunner(fenced)).evaluate("i", "o")
    assert (result.status, result.score, result.reasoning) == (Status.FAIL, 0.25, "meh")


@pytest.mark.parametrize("content", ["", "not json", "[1, 2]"])
async def test_unparseable_content_is_error(content: str) -> None:
    """Content that is not a JSON object is ERROR."""
    result = await make(FakeRunner(content)).evaluate("i", "o")
    assert result.status is Status.ERROR
    assert "could not parse" in (result.reasoning or "")


async def test_unsuccessful_runner_result_is_error() -> None:
    """RunnerResult.success=False is ERROR even with a valid score."""
    bad = RunnerResult(
        '{"score": 1, "reasoning": "x"}', success=False, parsed={"score": 1, "reasoning": "x"}
    )
    result = await make(FakeRunner(bad)).evaluate("i", "o")
    assert result.status is Status.ERROR
    assert "unsuccessful" in (result.reasoning or "")


async def test_runner_returning_wrong_type_is_error() -> None:
    """A runner returning something else than a RunnerResult is ERROR."""

    class Odd:
        async def run(self, input: str, output_schema: Any) -> Any:
            return {"score": 1}

    result = await make(Odd()).evaluate("i", "o")
    assert result.status is Status.ERROR
    assert "expected a RunnerResult" in (result.reasoning or "")


async def test_threshold_is_inclusive() -> None:
    """PASS iff score >= threshold."""
    judge = make(
        FakeRunner({"score": 0.7, "reasoning": ""}, {"score": 0.69, "reasoning": ""}), threshold=0.7
    )
    assert (await judge.evaluate("i", "o")).status is Status.PASS
    assert (await judge.evaluate("i", "o")).status is Status.FAIL


async def test_integer_scores_and_usage_metadata() -> None:
    """Integer 0/1 scores are accepted; usage and metric_key land in metadata."""
    runner = FakeRunner(
        RunnerResult("{}", parsed={"score": 1, "reasoning": "x"}, usage=Usage(input_tokens=4))
    )
    result = await make(runner).evaluate("i", "o")
    assert result.score == 1.0
    assert result.judgment is not None
    assert result.judgment.metadata["usage"] == {"input_tokens": 4}
    assert result.judgment.metadata["metric_key"] == "helpfulness"


# ----------------------------------------------------------------------------- failures


async def test_raising_runner_is_error_with_type() -> None:
    """A raising runner gives ERROR with its message and error_type = class name."""
    result = await make(FakeRunner(KeyError("no such model"))).evaluate("i", "o")
    assert result.status is Status.ERROR
    assert result.error_type == "KeyError"
    assert "no such model" in (result.reasoning or "")
    assert result.sampled is True
    assert result.success is False


async def test_raising_runner_without_message() -> None:
    """An exception without a message still gives a non-blank reasoning."""
    result = await make(FakeRunner(RuntimeError())).evaluate_messages([], RunnerResult("x"))
    assert result.error_type == "RuntimeError"
    assert "RuntimeError" in (result.reasoning or "")


async def test_cancellation_propagates() -> None:
    """Cancelling the caller while the runner hangs propagates and records nothing."""
    started = anyio.Event()
    finished: list[object] = []

    class Hanging:
        async def run(self, input: str, output_schema: Any) -> RunnerResult:
            started.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    judge = make(Hanging())

    async def call() -> None:
        finished.append(await judge.evaluate("i", "o"))

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await started.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert finished == []


async def test_timeout_inside_runner_is_error() -> None:
    """A runner's own timeout (TimeoutError) is an ERROR result, not a propagation."""

    class Slow:
        async def run(self, input: str, output_schema: Any) -> RunnerResult:
            with anyio.fail_after(0.01):
                await anyio.sleep_forever()
            raise AssertionError("unreachable")

    result = await make(Slow()).evaluate("i", "o")
    assert result.error_type == "TimeoutError"
    assert result.status is Status.ERROR


# ----------------------------------------------------------------------------- model client


async def test_model_client_adapter_uses_instructions_as_system() -> None:
    """With a ModelClient: system = instructions, user = evaluation input, schema sent."""
    model = FakeModel({"score": 0.9, "reasoning": "great"})
    result = await make(model).evaluate("q", "a")
    request = model.requests[0]
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "Score the helpfulness."),
        ("user", "MESSAGE HISTORY:\nq\n\nRESPONSE TO EVALUATE:\na"),
    ]
    assert request.response_schema == EXACT_SCHEMA
    assert result.status is Status.PASS
    assert result.judgment is not None
    assert result.judgment.metadata["model"] == "fake-1"


async def test_model_runner_text_fallback() -> None:
    """ModelRunner passes text through; the judge parses it when parsed is None."""
    model = FakeModel(ModelResponse(text='{"score": 0.1, "reasoning": "bad"}'))
    runner = ModelRunner(model, instructions="")
    result = await runner.run("x", None)
    assert result.content.startswith("{") and result.parsed is None
    assert [m.role for m in model.requests[0].messages] == ["user"]
    assert runner.name == "fake:judge"


async def test_model_errors_become_error_results() -> None:
    """A model client exception in evaluate() is an ERROR with error_type."""
    result = await make(FakeModel(ConnectionError("refused"))).evaluate("q", "a")
    assert result.error_type == "ConnectionError"
    assert result.status is Status.ERROR


# ----------------------------------------------------------------------------- as a judge


async def test_call_as_judge_uses_messages_or_input_and_never_samples() -> None:
    """__call__ evaluates ctx.messages (or ctx.input) against ctx.output, without sampling."""
    runner = FakeRunner()
    judge = make(runner, sampling_rate=0.0)
    j1 = await judge(Context(input="q", output="a"))
    j2 = await judge(Context(messages=(Message(role="user", content="hi"),), output="yo"))
    assert j1.status is Status.PASS and j2.status is Status.PASS
    assert runner.calls[0][0] == "MESSAGE HISTORY:\nq\n\nRESPONSE TO EVALUATE:\na"
    assert runner.calls[1][0] == "MESSAGE HISTORY:\nuser: hi\n\nRESPONSE TO EVALUATE:\nyo"


async def test_call_as_judge_propagates_runner_exceptions() -> None:
    """As a judge, runner exceptions propagate to the engine's failure boundary."""
    with pytest.raises(ValueError, match="bad"):
        await make(FakeRunner(ValueError("bad")))(Context())


async def test_in_evaluator_jury() -> None:
    """ScoreJudges sit in a Jury under an Evaluator; metric_key reaches the JudgeResult."""
    a = ScoreJudge(
        "a", FakeRunner({"score": 0.9, "reasoning": ""}), instructions="", metric_key="ma"
    )
    b = ScoreJudge("b", FakeRunner(KeyError("x")), instructions="", metric_key="mb")
    async with Evaluator(Jury([a, b], voting=Average()), retry=None) as evaluator:
        verdict = await evaluator.submit(Context(input="q", output="a")).verdict()
    by_name = verdict.by_name
    assert by_name["a"].metric_key == "ma"
    assert by_name["a"].score == 0.9
    assert by_name["b"].status is Status.ERROR
    assert by_name["b"].error_type == "KeyError"


async def test_evaluator_sampling_uses_judge_rate() -> None:
    """The Evaluator samples with the judge's sampling_rate; rate 0 is never called."""
    runner = FakeRunner()
    judge = make(runner, sampling_rate=0.0)
    results = await Evaluator(judge).evaluate(Context(input="q", output="a"))
    assert results[0].sampled is False
    assert runner.calls == []


async def test_evaluate_timeout_is_error() -> None:
    """ScoreJudge(timeout=...) turns a hanging runner into an ERROR TimeoutError result."""

    class Hanging:
        async def run(self, input: str, output_schema: Any) -> RunnerResult:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    result = await make(Hanging(), timeout=0.01).evaluate("i", "o")
    assert result.status is Status.ERROR
    assert result.error_type == "TimeoutError"
    with pytest.raises(ValueError, match="timeout"):
        make(FakeRunner(), timeout=0)

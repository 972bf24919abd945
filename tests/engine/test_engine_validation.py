"""Bad configuration is a ValueError before anything starts, naming the offending value."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from agentjudge import Evaluator, RetryPolicy
from agentjudge.testing import ScriptedJudge


def llm_judge() -> ScriptedJudge:
    """A judge drawing on the "llm" resource, to check it is never called."""
    return ScriptedJudge(True, name="a", resource="llm")


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8", None])
def test_max_concurrency_must_be_a_positive_int(value: object) -> None:
    """max_concurrency < 1 (or not an int) is a ValueError naming the value."""
    judge = llm_judge()
    with pytest.raises(ValueError, match=rf"max_concurrency.*{value!r}"):
        Evaluator(judge, max_concurrency=value)  # type: ignore[arg-type]
    assert judge.calls == 0


def test_limits_naming_an_unknown_resource_rejected() -> None:
    """A limit for a resource no judge uses is a ValueError naming it and the known ones."""
    with pytest.raises(ValueError, match=r"\['gpu'\].*\['llm'\]"):
        Evaluator(llm_judge(), limits={"llm": 2, "gpu": 1})


@pytest.mark.parametrize("value", [0, -3, 1.5, True])
def test_limit_values_must_be_positive_ints(value: object) -> None:
    """A resource limit < 1 (or not an int) is a ValueError naming the resource."""
    with pytest.raises(ValueError, match=r"limits\['llm'\]"):
        Evaluator(llm_judge(), limits={"llm": value})  # type: ignore[dict-item]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1, 0])
def test_timeout_must_be_finite_and_positive(value: float) -> None:
    """Non-finite, negative and zero timeouts are a ValueError naming the value."""
    with pytest.raises(ValueError, match=rf"timeout.*{value!r}"):
        Evaluator(llm_judge(), timeout=value)


@pytest.mark.parametrize("value", ["5", True])
def test_timeout_must_be_a_number(value: object) -> None:
    """A timeout that is not a number of seconds is a ValueError."""
    with pytest.raises(ValueError, match="timeout"):
        Evaluator(llm_judge(), timeout=value)  # type: ignore[arg-type]


def test_timeout_none_disables_it() -> None:
    """timeout=None is accepted (no per-attempt limit)."""
    Evaluator(llm_judge(), timeout=None)


def test_retry_must_be_a_retry_policy() -> None:
    """retry must be a RetryPolicy or None."""
    with pytest.raises(ValueError, match="retry"):
        Evaluator(llm_judge(), retry=3)  # type: ignore[arg-type]
    Evaluator(llm_judge(), retry=None)


@pytest.mark.parametrize("judges", [42, "judge", [42]])
def test_judges_must_be_callable(judges: object) -> None:
    """Something that is not a judge (or a collection of judges) is a ValueError."""
    with pytest.raises(ValueError, match=r"judge|callable"):
        Evaluator(judges)


def test_blank_resource_rejected() -> None:
    """A judge whose resource attribute is blank is a ValueError naming the judge."""
    with pytest.raises(ValueError, match=r"judge 'b'.*resource"):
        Evaluator(ScriptedJudge(name="b", resource=" "))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"initial_delay": -1}, "initial_delay"),
        ({"max_delay": math.inf}, "max_delay"),
        ({"initial_delay": 5, "max_delay": 1}, "max_delay"),
        ({"retry_on": (int,)}, "retry_on"),
    ],
)
def test_retry_policy_validated(kwargs: dict[str, object], field: str) -> None:
    """RetryPolicy refuses attempts < 1, negative/non-finite delays, max < initial, non-errors."""
    with pytest.raises(ValidationError, match=field):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_retry_policy_defaults() -> None:
    """RetryPolicy defaults: 3 attempts, 0.5 s initial, 30 s max, jitter, timeouts retried."""
    policy = RetryPolicy()
    assert (policy.attempts, policy.initial_delay, policy.max_delay, policy.jitter) == (
        3,
        0.5,
        30.0,
        True,
    )
    assert policy.is_retryable(TimeoutError())
    assert not policy.is_retryable(ValueError())

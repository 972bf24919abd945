"""The run's hot path writes rows, aggregates and contexts exactly as the general code would."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import anyio
import pytest

from agentjudge import (
    Cascade,
    Check,
    Context,
    Evaluator,
    ExecutionStatus,
    Judgment,
    Jury,
    Tier,
    TierPolicy,
    Verdict,
)
from agentjudge.engine import await_armed
from agentjudge.harness import Case, TaskOutput
from agentjudge.harness._results import encode_case, encode_row, judge_result_dict, judgment_dict
from agentjudge.harness._results import tier_dict as tier_record
from agentjudge.harness._run import case_context
from agentjudge.harness._summary import RunAggregate

JUDGMENTS = [
    Judgment.passed("ok"),
    Judgment.failed('no "quotes" and ünïcode \u2028'),
    Judgment.from_score(0.125, reasoning="scored"),
    Judgment.abstained("n/a"),
    Judgment.errored("ValueError: boom"),
    Judgment(
        status="pass",
        score=1.0,
        label="good",
        reasoning="with everything",
        checks=[Check(name="c1", passed=True), Check(name="c2", passed=False, message="m")],
        metadata={"nested": {"deep": [1, 2.5, "s", True]}, "text": "x"},
    ),
    Judgment(
        status="fail", reasoning="odd metadata", metadata={"items": ("a", "b"), "\u00e9": "\u00fc"}
    ),
]


def row_dict(
    case: Case, head: dict[str, Any], verdict: Verdict | None, error: str | None
) -> dict[str, Any]:
    """The row as the general code builds it (the reference for `encode_case`)."""
    row: dict[str, Any] = {"id": case.id, **head}
    if verdict is None:
        row["results"], row["verdict"] = [], None
    else:
        row["results"] = [judge_result_dict(r) for r in verdict.results]
        row["verdict"] = judgment_dict(verdict.judgment)
        if verdict.tiers:
            row["tiers"] = [tier_record(t) for t in verdict.tiers]
    row["duration_s"] = 0.25
    row["error"] = error
    return row


def scripted(answers: list[Judgment]) -> list[Any]:
    """Judges answering the given judgments, named j0, j1, ..."""

    def make(i: int, answer: Judgment) -> Any:
        async def judge(ctx: Context) -> Judgment:
            return answer

        judge.__name__ = f"j{i}"
        return judge

    return [make(i, a) for i, a in enumerate(answers)]


def verdicts() -> list[Verdict]:
    """Verdicts covering every judgment shape, unsampled results, metric keys and tiers."""
    ctx = Context(input="q", output="a")
    out: list[Verdict] = []

    async def main() -> None:
        for i in range(len(JUDGMENTS)):
            answers = JUDGMENTS[i:] + JUDGMENTS[:i]
            evaluator = Evaluator(scripted(answers[:3]), sampling={"j1": 0.0} if i % 2 else None)
            out.append(await evaluator.verdict(ctx))
        cascade = Cascade(
            [
                Tier("cheap", Jury(scripted(JUDGMENTS[:2])), TierPolicy.REJECT_ON_ANY_FAIL),
                Tier("final", scripted(JUDGMENTS[2:3])[0], TierPolicy.FINAL),
            ]
        )
        out.append(await Evaluator(cascade).verdict(ctx))

    anyio.run(main)
    return out


CASES = [
    Case("plain", "question", expected="answer", metadata={"tags": ["a"]}),
    Case("extra", {"q": [1, 2]}, expected=None, topic="math", weight=2),
    Case('odd "id" \u00e9', None),
]
OUTPUTS: list[Any] = [
    "text",
    TaskOutput("cited", citations=("d1",), route="rag"),
    {"n": math.inf},
    None,
]


@pytest.mark.parametrize("error", [None, "TimeoutError: slow"])
def test_encode_case_matches_encode_row(error: str | None) -> None:
    """Every verdict shape, case and output encodes to the very line `encode_row` writes."""
    for verdict in verdicts():
        for case in CASES:
            for output in OUTPUTS:
                head: dict[str, Any] = {
                    "input": case.input,
                    "output": output,
                    "expected": case.expected,
                    "metadata": case.metadata,
                }
                if case.model_extra:
                    head["extra"] = case.model_extra
                shown = None if error else verdict
                line = encode_case(case.id, head, shown, 0.25, error)
                assert line == encode_row(row_dict(case, head, shown, error))
                assert line.endswith("\n") and "\n" not in line[:-1]
                json.loads(line)


def test_add_case_matches_add_row() -> None:
    """Folding verdicts in directly gives the same aggregates as folding their rows."""
    live, replayed = RunAggregate(seed=3), RunAggregate(seed=3)
    case = CASES[0]
    for i, verdict in enumerate(verdicts()):
        error = "RuntimeError: x" if i == 2 else None
        shown = None if error else verdict
        live.add_case(shown, error)
        head = {"input": case.input, "output": "o", "expected": None, "metadata": {}}
        replayed.add_row(json.loads(encode_case(case.id, head, shown, 0.1, error)))
    assert live.judge_summaries() == replayed.judge_summaries()
    assert live.verdict_summary() == replayed.verdict_summary()
    assert live.cases_summary() == replayed.cases_summary()
    assert live.cases_summary().errors == 1


def test_case_context_equals_a_validated_context() -> None:
    """The unvalidated context is equal to the one `Context(...)` builds, read-only metadata."""
    started = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    for case in CASES:
        fast = case_context(case, "out", ExecutionStatus.REFUSED, started, 1.5)
        slow = Context(
            input=case.input,
            output="out",
            expected=case.expected,
            metadata={**case.metadata, "case_id": case.id},
            status=ExecutionStatus.REFUSED,
            started_at=started,
            duration=timedelta(seconds=1.5),
        )
        assert fast == slow
        assert fast.model_dump() == slow.model_dump()
        assert isinstance(fast.metadata, MappingProxyType)
        with pytest.raises(TypeError):
            fast.metadata["case_id"] = "changed"  # type: ignore[index]
        assert case.metadata.get("case_id") is None


async def test_await_armed_times_out_only_work_that_suspends() -> None:
    """A coroutine that completes in its first step never gets a deadline; one that waits does."""

    async def instant() -> str:
        return "done"

    async def waits() -> str:
        await anyio.sleep(10)
        return "late"

    with anyio.CancelScope() as scope:
        assert await await_armed(instant(), scope, 0.05) == "done"
    assert scope.deadline == math.inf
    with anyio.CancelScope() as scope:
        await await_armed(waits(), scope, 0.05)
        pytest.fail("should have timed out")
    assert scope.cancelled_caught


async def test_await_armed_counts_time_spent_before_the_first_suspension() -> None:
    """The deadline runs from the call, not from the first suspension."""
    started = anyio.current_time()

    async def busy_then_wait() -> None:
        while anyio.current_time() - started < 0.05:  # CPU work before suspending
            pass
        await anyio.sleep(10)

    with anyio.CancelScope() as scope:
        await await_armed(busy_then_wait(), scope, 0.1)
    assert scope.cancelled_caught
    assert scope.deadline == pytest.approx(started + 0.1, abs=0.02)

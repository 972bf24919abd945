"""One fold path per tally: a live case and the row it is written as fold to the same summary.

Every tally of a run (per judge, verdicts, cost, pairwise, agreement with human labels, jury
agreement, cascade) reads one shape, `FoldCase`; a live verdict and its results row are both
turned into it. These tests fold random cases both ways and compare every summary block.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge import JudgeResult, Judgment, TierPolicy, Verdict
from agentjudge.core import TierAttempt
from agentjudge.harness._fold import case_from_row, case_from_verdict
from agentjudge.harness._results import encode_case, to_jsonable
from agentjudge.harness._summary import RunAggregate

LABELS = st.sampled_from([None, "yes", "no", "A", "B", "tie"])
MODEL_METADATA = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["m1", "m2"]),
        "usage": st.fixed_dictionaries(
            {"input_tokens": st.integers(0, 500), "output_tokens": st.integers(0, 50)}
        ),
        "cached": st.booleans(),
        "calls": st.integers(1, 3),
    },
    optional={
        "client": st.sampled_from(["openai:m1", "anthropic:m2"]),
        "cost_usd": st.floats(0, 0.01),
    },
)
PAIRWISE_METADATA = st.fixed_dictionaries(
    {"pairwise": st.permutations(["s1", "s2", "s3"]).map(lambda s: {"systems": list(s[:2])})},
    optional={"position_bias": st.booleans()},
)
METADATA: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.just({}), MODEL_METADATA, PAIRWISE_METADATA
)


@st.composite
def judgments(draw: st.DrawFn, metadata: bool = True) -> Judgment:
    """A judgment of any status, with the fields that status allows."""
    status = draw(_STATUSES)
    meta = draw(METADATA) if metadata else {}
    if status == "error":
        return Judgment.errored("ValueError: boom", metadata=meta)
    fields: dict[str, Any] = {"label": draw(LABELS), "metadata": meta}
    if status in ("pass", "fail"):
        fields["score"] = draw(_SCORES)
    return Judgment(status=status, reasoning="r", **fields)


# The strategies `judgments` and `verdicts` draw from, built once rather than at every draw
# (hypothesis does not cache a `sampled_from` of a list; building them cost much of this CPU).
_STATUSES = st.sampled_from(["pass", "fail", "abstain", "error"])
_SCORES = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 1.0]))
_MAYBE_JUDGMENTS = st.one_of(st.none(), judgments())
_PLAIN_JUDGMENTS = judgments(metadata=False)
_MAYBE_PLAIN_JUDGMENTS = st.one_of(st.none(), _PLAIN_JUDGMENTS)
_ERROR_TYPES = st.sampled_from([None, None, "BudgetExhausted", "ValueError"])


@st.composite
def verdicts(draw: st.DrawFn) -> Verdict:
    """A verdict of 1-4 judges (some unsampled or refused), maybe through cascade tiers."""
    tiered = draw(st.booleans())
    count = draw(st.integers(1, 4))
    results = []
    for i in range(count):
        judgment = draw(_MAYBE_JUDGMENTS)
        results.append(
            JudgeResult(
                name=f"j{i}",
                judgment=judgment,
                sampled=judgment is not None,
                tier=("cheap" if i < 2 else "strong") if tiered else None,
                error_type=draw(_ERROR_TYPES),
            )
        )
    tiers: tuple[TierAttempt, ...] = ()
    if tiered:
        names = ["cheap", "strong"][: 1 + (count > 2)]
        stop = draw(st.sampled_from([None, *names]))
        tiers = tuple(
            TierAttempt(
                name=n,
                policy=TierPolicy.FINAL,
                judgment=draw(_MAYBE_PLAIN_JUDGMENTS),
                stopped=n == stop,
            )
            for n in names
        )
    return Verdict(judgment=draw(_PLAIN_JUDGMENTS), results=tuple(results), tiers=tiers)


CASES = st.lists(
    st.tuples(
        verdicts(),
        st.sampled_from([None, None, None, "RuntimeError: task"]),
        st.sampled_from([None, True, False, "pass", "yes", "no", 0.25, 1]),
    ),
    min_size=1,
    max_size=8,
)


def _row(verdict: Verdict | None, error: str | None, human: Any) -> dict[str, Any]:
    head: dict[str, Any] = {"input": "q", "output": "a", "expected": None, "metadata": {}}
    if human is not None:
        head["human"] = human
    parsed: dict[str, Any] = json.loads(encode_case("c", head, verdict, 0.1, error))
    return parsed


def _blocks(aggregate: RunAggregate) -> dict[str, Any]:
    return {
        "judges": aggregate.judge_summaries(),
        "verdict": aggregate.verdict_summary(),
        "juries": aggregate.jury_summaries(),
        "cost": aggregate.cost_summary(),
        "cases": aggregate.cases_summary(),
        "judged": aggregate.judged,
        "cascade": aggregate.cascade.summary(),
    }


@settings(max_examples=40, deadline=None)
@given(CASES)
def test_a_live_case_and_its_row_fold_to_the_same_summary(cases: list[Any]) -> None:
    """Every summary block is the same whether cases are folded live or read back as rows."""
    live, replayed = RunAggregate(seed=1), RunAggregate(seed=1)
    for verdict, error, human in cases:
        shown = None if error else verdict
        live.add_case(shown, error, human)
        replayed.add_row(_row(shown, error, human))
    assert _blocks(live) == _blocks(replayed)


@settings(max_examples=30, deadline=None)
@given(verdicts(), st.sampled_from([None, True, "no", 0.25]))
def test_a_verdict_and_its_row_give_the_same_fold_case(verdict: Verdict, human: Any) -> None:
    """The one shape both sources become holds the same fields (metadata as JSON values)."""
    live = case_from_verdict(verdict, None, human)
    row = case_from_row(_row(verdict, None, human))
    assert live._replace(results=(), verdict=None) == row._replace(results=(), verdict=None)
    assert len(live.results) == len(row.results)
    for mine, theirs in zip(live.results, row.results, strict=True):
        assert mine._replace(metadata=None) == theirs._replace(metadata=None)
        shown = json.dumps(dict(mine.metadata or {}), default=to_jsonable)
        assert json.loads(shown) == dict(theirs.metadata or {})
    assert live.verdict is not None and row.verdict is not None
    assert live.verdict._replace(metadata=None) == row.verdict._replace(metadata=None)


def test_a_task_error_counts_once_and_folds_nothing_else() -> None:
    """A task error is one case and one error, from a live case or from its row."""
    for aggregate in (RunAggregate(), RunAggregate()):
        aggregate.add_case(None, "RuntimeError: x", True)
        aggregate.add_row(_row(None, "RuntimeError: x", True))
        assert (aggregate.total, aggregate.errors, aggregate.judged) == (2, 2, 0)
        assert aggregate.judge_summaries() == {} and aggregate.verdict_summary().count == 0


def test_a_jury_seen_only_unsampled_is_listed_live_as_when_reread() -> None:
    """Members only ever unsampled still form their jury, live as from the file (they drifted:
    the live fold learned a jury's members only from a new rating profile)."""
    both = Judgment.passed("ok")

    def verdict(unsampled: bool) -> Verdict:
        results = [
            JudgeResult(name="a", judgment=both, tier="cheap"),
            JudgeResult(name="b", judgment=both, tier="cheap"),
        ]
        if unsampled:
            results += [
                JudgeResult(name=n, judgment=None, sampled=False, tier="strong") for n in "xy"
            ]
        return Verdict(judgment=both, results=tuple(results))

    live, replayed = RunAggregate(), RunAggregate()
    for case in (verdict(False), verdict(True)):
        live.add_case(case, None)
        replayed.add_row(_row(case, None, None))
    assert set(live.jury_summaries()) == {"cheap", "strong"}
    assert live.jury_summaries() == replayed.jury_summaries()

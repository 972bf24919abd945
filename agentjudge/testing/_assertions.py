"""Assertions for evals written as tests: `assert_passes` and `assert_eval`.

A failed assertion raises a plain `AssertionError` whose message lists every judge's status,
score, reasoning and failed checks, so it reads the same under pytest (no assertion rewriting
needed), unittest or a script.

Inside a pytest session with the agentjudge plugin loaded (the ``agentjudge`` ``pytest11``
entry point, module ``_agentjudge_pytest``), every outcome these functions check is also
recorded for the session's per-judge summary and gates, whether the assertion held or not.
Outside pytest nothing is recorded.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from agentjudge.core import CaseResult, Context, JudgeResult, Judgment, Status, Verdict
from agentjudge.engine import Evaluator

__all__ = ["assert_eval", "assert_passes", "describe_outcome"]

PLUGIN_MODULE = "_agentjudge_pytest"
"""The pytest plugin's module (the ``pytest11`` entry point); it records checked outcomes."""
MAX_REASONING = 2000
"""Characters of one judge's reasoning shown in a failure message (the rest is cut)."""

Outcome = Verdict | CaseResult | JudgeResult | Sequence[JudgeResult]
"""What `assert_passes` accepts: a verdict, a case of `Evaluator.run`, or results."""


def _split(outcome: object) -> tuple[tuple[JudgeResult, ...], Judgment | None]:
    """The individual results and the aggregate judgment (None for bare results)."""
    if isinstance(outcome, CaseResult):
        outcome = outcome.verdict
    if isinstance(outcome, Verdict):
        return outcome.results, outcome.judgment
    if isinstance(outcome, JudgeResult):
        return (outcome,), None
    if isinstance(outcome, Sequence) and not isinstance(outcome, str | bytes):
        results = tuple(outcome)
        if all(isinstance(r, JudgeResult) for r in results):
            return results, None
    raise TypeError(
        "assert_passes expects a Verdict, a CaseResult, a JudgeResult or a list of "
        f"JudgeResults, got {type(outcome).__name__}"
    )


def _indented(text: str, prefix: str) -> str:
    if len(text) > MAX_REASONING:
        text = f"{text[:MAX_REASONING]}... ({len(text) - MAX_REASONING} more characters)"
    return text.replace("\n", "\n" + prefix)


def _judgment_line(judgment: Judgment) -> str:
    parts = [judgment.status.value.upper()]
    if judgment.score is not None:
        parts.append(f"score={judgment.score:.3f}")
    if judgment.label is not None:
        parts.append(f"label={judgment.label!r}")
    return " ".join(parts)


def _result_lines(result: JudgeResult) -> list[str]:
    judgment = result.judgment
    if judgment is None:
        return [f"  {result.name}: not sampled"]
    head = f"  {result.name}: {_judgment_line(judgment)}"
    if result.error_type:
        head += f" ({result.error_type})"
    if judgment.reasoning:
        head += f" - {_indented(judgment.reasoning, '      ')}"
    lines = [head]
    for check in judgment.checks:
        if not check.passed:
            message = f": {_indented(check.message, '        ')}" if check.message else ""
            lines.append(f"      failed check {check.name!r}{message}")
    return lines


def describe_outcome(outcome: Outcome) -> str:
    """Every judge's status, score, reasoning and failed checks, one judge per line.

    The first line is the aggregate (``verdict PASS ...``) when the outcome has one.
    """
    results, aggregate = _split(outcome)
    lines = []
    if aggregate is not None:
        reasoning = f" - {_indented(aggregate.reasoning, '  ')}" if aggregate.reasoning else ""
        lines.append(f"verdict {_judgment_line(aggregate)}{reasoning}")
    lines.append("judges:" if results else "judges: none")
    for result in results:
        lines.extend(_result_lines(result))
    return "\n".join(lines)


def _failures(
    results: tuple[JudgeResult, ...], aggregate: Judgment | None, judges: Iterable[str] | None
) -> list[str]:
    """Why the outcome does not pass (empty: it passes)."""
    if judges is not None:
        by_name = {r.name: r for r in results}
        wanted = [judges] if isinstance(judges, str) else list(judges)
        missing = [name for name in wanted if name not in by_name]
        if missing:
            known = ", ".join(map(repr, by_name)) or "none"
            return [f"no result from {', '.join(map(repr, missing))} (judges: {known})"]
        checked = [by_name[name] for name in wanted]
    elif aggregate is not None:
        verdict = aggregate.status
        return [] if verdict is Status.PASS else [f"the verdict is {verdict.value.upper()}"]
    else:
        checked = [r for r in results if r.sampled]
        if not checked:
            return ["no judge judged (no result, or none sampled)"]
    return [
        f"{r.name} is {'not sampled' if r.status is None else r.status.value.upper()}"
        for r in checked
        if r.status is not Status.PASS
    ]


def _record(results: tuple[JudgeResult, ...], aggregate: Judgment | None) -> None:
    """Hand the outcome to the pytest plugin's session tally (when a session is running)."""
    plugin = sys.modules.get(PLUGIN_MODULE)
    record = getattr(plugin, "record_outcome", None)
    if record is not None:
        record(results, aggregate)


def assert_passes(outcome: Outcome, *, judges: Iterable[str] | None = None) -> None:
    """Assert that an evaluation passed; the failure message explains every judge.

    Passing means: the verdict's aggregate judgment is PASS (a `Verdict` or `CaseResult`);
    for bare results (``await evaluator.evaluate(...)``), every sampled result is PASS and
    at least one judge was sampled. With ``judges``, exactly the named judges' results must
    be PASS instead (the aggregate is not looked at).

    Args:
        outcome: A `Verdict`, a `CaseResult`, a `JudgeResult` or a sequence of them.
        judges: Names of the judges that must pass (a name or an iterable of names).

    Raises:
        AssertionError: The outcome did not pass; the message starts with why, then lists
            each judge's status, score, reasoning and failed checks (`describe_outcome`).
        TypeError: ``outcome`` is none of the accepted types.
    """
    __tracebackhide__ = True
    results, aggregate = _split(outcome)
    _record(results, aggregate)
    failures = _failures(results, aggregate, judges)
    if failures:
        raise AssertionError(
            f"agentjudge: {'; '.join(failures)}\n{describe_outcome(outcome)}"
        ) from None


async def assert_eval(
    evaluator: Evaluator | object,
    context: Context | None = None,
    /,
    *,
    judges: Iterable[str] | None = None,
    **context_fields: Any,
) -> Verdict:
    """Evaluate one context and `assert_passes` on its verdict.

    Args:
        evaluator: An `Evaluator`, or judges to build one from (anything `Evaluator` accepts).
        context: The context (or give its fields as keywords: ``input=..., output=...``).
        judges: As for `assert_passes`.
        **context_fields: `Context` fields.

    Returns:
        The verdict, when it passed.

    Raises:
        AssertionError: As `assert_passes`.
    """
    __tracebackhide__ = True
    if not isinstance(evaluator, Evaluator):
        evaluator = Evaluator(evaluator)
    verdict = await evaluator.verdict(context, **context_fields)
    assert_passes(verdict, judges=judges)
    return verdict

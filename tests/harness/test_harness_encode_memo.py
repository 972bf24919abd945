"""Memoised results encoding: repeated Judgment objects are encoded once, lines stay identical.

`encode_case` keeps the text of each frozen Judgment object it has seen (by identity) and the
fixed parts of each judge's result; every line must still equal `encode_row` of the row dict,
however often a judgment repeats, in whatever result, and across evictions.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from pydantic import ConfigDict

from agentjudge import Check, Judgment, Majority, Status, Verdict
from agentjudge.core import JudgeResult
from agentjudge.core import _rows as _results
from agentjudge.harness._results import encode_case, encode_row, judge_result_dict, judgment_dict

HEAD: dict[str, Any] = {"input": "q", "output": "a", "expected": None, "metadata": {}}

VARIANTS = [
    Judgment.passed("ok"),
    Judgment.failed('bad "quote" \u00fc \u2028'),
    Judgment.passed("scored", score=0.1 + 0.2),
    Judgment.failed("labelled", label="wrong", score=0.0),
    Judgment.abstained("n/a"),
    Judgment.errored("ValueError: boom"),
    Judgment(
        status="pass",
        score=1.0,
        label="good",
        reasoning="everything",
        checks=[Check(name="c1", passed=True), Check(name="c2", passed=False, message="m\n")],
        metadata={"nested": {"deep": [1, 2.5, "s", True, {"k": []}]}, "\u00e9": "x"},
    ),
    Majority().aggregate([Judgment.passed("a"), Judgment.failed("b"), Judgment.passed("c")]),
    Majority().decided([Judgment.errored("x" * 300), None]) or Judgment.passed("unreachable"),
]


def reference(verdict: Verdict | None, error: str | None = None) -> str:
    """The line `encode_row` writes for the row dict (what `encode_case` must equal)."""
    row: dict[str, Any] = {"id": "case", **HEAD}
    if verdict is None:
        row["results"], row["verdict"] = [], None
    else:
        row["results"] = [judge_result_dict(r) for r in verdict.results]
        row["verdict"] = judgment_dict(verdict.judgment)
    row["duration_s"] = 0.5
    row["error"] = error
    return encode_row(row)


def result(name: str, judgment: Judgment | None, **fields: Any) -> JudgeResult:
    """A result of judge ``name`` (unsampled when ``judgment`` is None)."""
    return JudgeResult(name=name, judgment=judgment, sampled=judgment is not None, **fields)


def check_line(verdict: Verdict) -> None:
    """`encode_case` of ``verdict`` equals the reference line and is valid JSON."""
    line = encode_case("case", HEAD, verdict, 0.5, None)
    assert line == reference(verdict)
    json.loads(line)


def test_repeated_judgments_in_different_results_match_encode_row() -> None:
    """A judgment repeated across many results, names and extras encodes as encode_row does."""
    extras: list[dict[str, Any]] = [
        {},
        {"metric_key": "m"},
        {"tier": "cheap", "attempts": 3, "duration_s": 1e-7, "queued_s": 12.5},
        {"error_type": "TimeoutError", "attempts": 0},
        {"metric_key": "k\u00e9", "tier": 't"1', "error_type": "E", "duration_s": 2.0},
    ]
    for round_ in range(3):  # the later rounds are memo hits
        for i, judgment in enumerate(VARIANTS):
            for k, extra in enumerate(extras):
                other = VARIANTS[(i + k + round_) % len(VARIANTS)]
                verdict = Verdict(
                    judgment=other,
                    results=(
                        result(f"judge{k}", judgment, **extra),
                        result("same", judgment),
                        result("other", other, **extra),
                        result("skipped", None, attempts=0),
                    ),
                )
                check_line(verdict)
    assert any(entry[2] for entry in _results._JUDGMENT_TEXTS.values())


def test_the_memo_returns_the_text_it_first_built() -> None:
    """A memo hit gives exactly the text a fresh encoding gives."""
    for judgment in VARIANTS:
        fresh = _results._encode_judgment(judgment)
        for _ in range(3):
            assert _results._judgment_json(judgment) == fresh
        assert json.loads(fresh) == json.loads(json.dumps(judgment_dict(judgment), default=dict))


def test_eviction_keeps_lines_right(monkeypatch: pytest.MonkeyPatch) -> None:
    """With tiny memos, constant eviction and reused ids still give the right lines."""
    monkeypatch.setattr(_results, "_JUDGMENT_MEMO_LIMIT", 2)
    monkeypatch.setattr(_results, "_RESULT_MEMO_LIMIT", 2)
    _results._JUDGMENT_TEXTS.clear()
    _results._RESULT_PARTS.clear()
    for i in range(300):
        # Short-lived judgments: once evicted, their ids are free for the next ones.
        fresh = Judgment.passed(f"case {i}", score=(i % 7) / 7, metadata={"i": i})
        constant = VARIANTS[i % len(VARIANTS)]
        verdict = Verdict(
            judgment=constant,
            results=(
                result(f"j{i % 5}", fresh, metric_key=None if i % 2 else "m"),
                result("c", constant, tier="t" if i % 3 else None),
            ),
        )
        check_line(verdict)
        assert len(_results._JUDGMENT_TEXTS) <= 2
        assert len(_results._RESULT_PARTS) <= 2


def test_memo_stays_bounded() -> None:
    """However many judgments pass through, the memo holds at most its limit."""
    for i in range(3 * _results._JUDGMENT_MEMO_LIMIT):
        judgment = Judgment.failed(f"distinct {i}")
        assert encode_case("case", HEAD, Verdict(judgment=judgment), 0.5, None) == reference(
            Verdict(judgment=judgment)
        )
        assert len(_results._JUDGMENT_TEXTS) <= _results._JUDGMENT_MEMO_LIMIT


def test_long_texts_are_not_kept() -> None:
    """A judgment whose text exceeds the memo's size limit is encoded afresh each time."""
    big = Judgment.passed("long", metadata={"blob": "y" * (_results._JUDGMENT_MEMO_CHARS + 1)})
    for _ in range(2):
        check_line(Verdict(judgment=big, results=(result("a", big),)))
    assert id(big) not in _results._JUDGMENT_TEXTS


def test_mutable_judgments_are_encoded_afresh() -> None:
    """Judgments holding mutable values (model_construct) show their changes in each line."""
    listed: list[Any] = [1]
    loose = Judgment.model_construct(
        status=Status.PASS,
        score=None,
        label=None,
        reasoning="r",
        checks=(),
        metadata={"v": listed},
    )
    checks = [Check(name="c", passed=True)]
    listed_checks = Judgment.model_construct(
        status=Status.FAIL, score=None, label=None, reasoning="r", checks=checks, metadata={}
    )
    for step in range(4):
        listed.append(step)
        checks.append(Check(name=f"c{step}", passed=False))
        for judgment in (loose, listed_checks):
            verdict = Verdict.model_construct(judgment=judgment, results=(), tiers=())
            line = encode_case("case", HEAD, verdict, 0.5, None)
            assert line == reference(verdict)
        assert f',"metadata":{{"v":{json.dumps(listed, separators=(",", ":"))}}}' in encode_case(
            "case", HEAD, Verdict.model_construct(judgment=loose, results=(), tiers=()), 0.5, None
        )


class _Loose(Judgment):
    """A Judgment subclass that can be changed after construction."""

    model_config = ConfigDict(frozen=False, extra="forbid", validate_assignment=False)


def test_mutable_subclasses_are_encoded_afresh() -> None:
    """A mutable Judgment subclass changed between lines is written as it is now."""
    judgment = _Loose(status="pass", reasoning="first")
    for text in ("second", "third", "fourth"):
        check_line(Verdict.model_construct(judgment=judgment, results=(), tiers=()))
        judgment.reasoning = text
        line = encode_case(
            "case",
            HEAD,
            Verdict.model_construct(judgment=judgment, results=(), tiers=()),
            0.5,
            None,
        )
        assert f'"reasoning":"{text}"' in line


def test_frozen_check() -> None:
    """Validated judgments count as frozen; mutable stand-ins and subclasses do not."""
    assert all(_results._frozen_judgment(j) for j in VARIANTS)
    assert not _results._frozen_judgment(_Loose(status="pass"))
    assert not _results._frozen_judgment(
        Judgment.model_construct(status="pass", reasoning="", checks=[], metadata={})
    )
    assert not _results._frozen_judgment(
        Judgment.model_construct(
            status="pass",
            reasoning="",
            checks=(Check.model_construct(name="c", passed=True, message=["m"]),),
            metadata={},
        )
    )


def test_result_parts_are_keyed_by_every_fixed_field() -> None:
    """One judge name with different sampled/metric/tier/error fields gets each one's text."""
    judgment = VARIANTS[0]
    for sampled in (True, False):
        for metric_key in (None, "m"):
            for tier in (None, "t"):
                for error_type in (None, "ValueError"):
                    r = JudgeResult(
                        name="judge",
                        judgment=judgment if sampled else None,
                        sampled=sampled,
                        metric_key=metric_key,
                        tier=tier,
                        error_type=error_type,
                        attempts=2,
                        duration_s=0.125,
                        queued_s=0.0,
                    )
                    check_line(Verdict(judgment=judgment, results=(r, r)))


def test_random_verdicts_match_encode_row() -> None:
    """Random verdicts drawn from a pool of repeating judgments all encode as encode_row does."""
    rng = random.Random(5)
    pool = [*VARIANTS, *(Judgment.passed(f"p{i}", score=i / 10) for i in range(11))]
    for _ in range(2000):
        results = tuple(
            result(
                rng.choice(["exact", "length", "always", "j\u00e9"]),
                rng.choice(pool),
                metric_key=rng.choice([None, "m"]),
                tier=rng.choice([None, None, "t"]),
                attempts=rng.randrange(1, 4),
                duration_s=rng.random() / 1000,
                queued_s=rng.choice([0.0, rng.random()]),
                error_type=rng.choice([None, None, "TimeoutError"]),
            )
            for _ in range(rng.randrange(4))
        )
        check_line(Verdict(judgment=rng.choice(pool), results=results))

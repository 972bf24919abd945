"""The judges of the example: a cascade of cheap sanity checks, then the quality metrics.

Tier "sanity" rejects an answer at once when it is empty or still holds a placeholder; only
answers that pass it reach tier "quality", a jury of the four retrieval / routing metrics and a
keyword check, averaged (PASS when the mean score is at least 0.75).
"""

from __future__ import annotations

from agentjudge import Average, Cascade, Context, Judgment, Jury, Tier, TierPolicy, judge
from agentjudge.judges import (
    CitationPrecision,
    CitationRecall,
    RefusalCorrectness,
    RouteAccuracy,
)


@judge("answered")
def answered(ctx: Context) -> Judgment:
    """The answer has text (a refusal counts as an answer)."""
    text = getattr(ctx.output, "text", "")
    if text.strip():
        return Judgment.passed("The answer has text")
    return Judgment.failed("The answer is empty")


@judge("no_placeholder")
def no_placeholder(ctx: Context) -> Judgment:
    """The answer holds no template leftovers."""
    text = getattr(ctx.output, "text", "").lower()
    for marker in ("todo", "lorem ipsum", "{{"):
        if marker in text:
            return Judgment.failed(f"The answer still contains {marker!r}")
    return Judgment.passed("No placeholders")


@judge("keywords")
def keywords(ctx: Context) -> Judgment:
    """Share of the expected keywords the answer mentions."""
    wanted = ctx.expected.get("keywords", []) if isinstance(ctx.expected, dict) else []
    if not wanted:
        return Judgment.abstained("No keywords expected for this case")
    text = getattr(ctx.output, "text", "").lower()
    found = [word for word in wanted if word.lower() in text]
    return Judgment.from_score(
        len(found) / len(wanted),
        threshold=0.5,
        reasoning=f"{len(found)} of {len(wanted)} expected keywords mentioned",
    )


def build() -> Cascade:
    """The suite's judges (a factory: the harness calls it once)."""
    sanity = Jury([answered, no_placeholder], name="sanity")
    quality = Jury(
        [CitationPrecision(), CitationRecall(), RouteAccuracy(), RefusalCorrectness(), keywords],
        voting=Average(threshold=0.75),
        name="quality",
    )
    return Cascade(
        [
            Tier("sanity", sanity, policy=TierPolicy.REJECT_ON_ANY_FAIL),
            Tier("quality", quality, policy=TierPolicy.FINAL),
        ],
        name="rag_qa",
    )

"""Parsing model answers: the exact ``Answer: YES|NO`` verdict parser and JSON helpers."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentjudge.core import Judgment, Status, freeze_metadata, judgment_problem, thaw
from agentjudge.models._types import ModelResponse

__all__ = [
    "EXCERPT_CHARS",
    "excerpt",
    "parse_json_object",
    "parse_verdict",
    "read_verdict",
    "response_metadata",
    "strip_code_fences",
    "verdict_judgment",
    "verdict_with_metadata",
    "with_metadata",
]

EXCERPT_CHARS = 500
"""How much of a model response is quoted in a reasoning message (metadata keeps all of it)."""

_ANSWER = re.compile(r"^\s*answer:\s*(yes|no)\b", re.IGNORECASE | re.MULTILINE)
_REASONING = re.compile(r"reasoning:", re.IGNORECASE)
_FENCE = re.compile(r"\A\s*```[^\n`]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The text, cut to ``limit`` characters with a marker when longer."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def strip_code_fences(text: str) -> str:
    """Remove one Markdown code fence (```` ```json ... ``` ````) around the whole text."""
    match = _FENCE.match(text)
    return match.group("body") if match else text.strip()


def parse_json_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """Parse ``text`` (code fences stripped) as a JSON object.

    Returns:
        ``(object, "")`` on success, else ``(None, reason)`` saying what was wrong.
    """
    body = strip_code_fences(text)
    if not body:
        return None, "the response is empty"
    try:
        value = json.loads(body)
    except ValueError as exc:
        return None, f"the response is not valid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"the response is JSON {type(value).__name__}, expected an object"
    return value, ""


def with_metadata(judgment: Judgment, extra: Mapping[str, Any]) -> Judgment:
    """A copy of ``judgment`` whose metadata also holds ``extra`` (the judgment's own keys win)."""
    if not extra:
        return judgment
    if judgment_problem(judgment) is None:
        # a sound judgment keeps its fields: only the merged metadata needs checking, and a
        # frozen copy of it is what validation would store (~4x cheaper than re-validating)
        try:
            metadata = freeze_metadata({**extra, **judgment.metadata})
        except (TypeError, ValueError):
            pass  # validation below raises the error it always did
        else:
            return Judgment.fast(
                status=judgment.status,
                score=judgment.score,
                label=judgment.label,
                confidence=judgment.confidence,
                reasoning=judgment.reasoning,
                checks=judgment.checks,
                metadata=metadata,
            )
    return Judgment(
        status=judgment.status,
        score=judgment.score,
        label=judgment.label,
        confidence=judgment.confidence,
        reasoning=judgment.reasoning,
        checks=judgment.checks,
        metadata={**dict(extra), **thaw(judgment.metadata)},
    )


def response_metadata(client_name: str, response: ModelResponse) -> dict[str, Any]:
    """Judgment metadata describing one model response.

    Keys: ``model`` (the model the API reported, else the client name), ``client`` (the
    client name, when known), ``cached``, ``usage`` (token counts, when reported),
    ``finish_reason`` (when reported), ``warnings`` (problems the client found in an answer
    it could still use, e.g. a dropped usage count; only when there are some) and
    ``raw_output`` (the response text).
    """
    metadata: dict[str, Any] = {}
    model = response.model or client_name
    if model:
        metadata["model"] = model
    if client_name:
        metadata["client"] = client_name
    metadata["cached"] = response.cached
    if response.batch:  # answered through a provider batch API: batch prices apply
        metadata["batch"] = True
    usage = response.usage.to_portable()
    if usage:
        metadata["usage"] = usage
    if response.finish_reason:
        metadata["finish_reason"] = response.finish_reason
    if response.warnings:
        metadata["warnings"] = list(response.warnings)
    metadata["raw_output"] = response.text
    return metadata


def _reasoning_from_text(text: str) -> str:
    match = _REASONING.search(text)
    if match:
        after = text[match.end() :].strip()
        if after:
            return after
    return text.strip()


def _unparseable(text: str, why: str) -> Judgment:
    shown = excerpt(text.strip()) if text.strip() else "(empty response)"
    return Judgment.abstained(
        f"Could not parse a verdict ({why}): {shown}",
        metadata={"raw_output": text},
    )


Verdict = tuple[Status, str, str | None]
"""A verdict found in an answer: (PASS or FAIL, the reasoning, the label or None)."""


def parse_verdict(text: str, parsed: Mapping[str, Any] | None = None) -> Judgment:
    r"""Read a YES/NO verdict from a model response.

    Structured output wins: when ``parsed`` (or the text itself, parsed as a JSON object) has an
    ``"answer"`` key, its value must be ``"YES"`` or ``"NO"`` (any case, surrounding spaces
    ignored) and ``"reasoning"`` supplies the reasoning. Otherwise the first line matching
    ``^\s*answer:\s*(yes|no)\b`` (case-insensitive) decides, so ``"Answer: Nope"``,
    ``"Answer: Yesterday"`` and a stray "yes" elsewhere never count. The reasoning is the text
    after the first ``Reasoning:``, else the whole response.

    Args:
        text: The response text.
        parsed: The structured output, when the model returned one.

    Returns:
        PASS (YES) or FAIL (NO) with label ``"yes"`` / ``"no"``; ABSTAIN ``"Could not parse ..."``
        with the raw text in ``metadata["raw_output"]`` when no verdict is found.
    """
    found = read_verdict(text, parsed)
    return found if isinstance(found, Judgment) else verdict_judgment(found)


def verdict_judgment(verdict: Verdict) -> Judgment:
    """The PASS or FAIL judgment of a verdict (validated; no label when it has none)."""
    status, reasoning, label = verdict
    fields = {} if label is None else {"label": label}
    if status is Status.PASS:
        return Judgment.passed(reasoning, **fields)
    return Judgment.failed(reasoning, **fields)


def read_verdict(text: str, parsed: Mapping[str, Any] | None = None) -> Verdict | Judgment:
    """What `parse_verdict` reads, before a judgment is built: the verdict, else the ABSTAIN."""
    structured: Mapping[str, Any] | None = parsed
    if structured is None and text.lstrip().startswith(("{", "```")):
        structured, _ = parse_json_object(text)
    if structured is not None and "answer" in structured:
        answer = structured["answer"]
        word = answer.strip().casefold() if isinstance(answer, str) else None
        if word not in ("yes", "no"):
            return _unparseable(text, f'structured "answer" must be "YES" or "NO", got {answer!r}')
        reasoning = structured.get("reasoning")
        if not isinstance(reasoning, str) or not reasoning.strip():
            reasoning = text.strip()
        if word == "yes":
            return Status.PASS, reasoning.strip(), "yes"
        return Status.FAIL, reasoning.strip(), "no"
    match = _ANSWER.search(text)
    if match is None:
        return _unparseable(text, "expected a line 'Answer: YES' or 'Answer: NO'")
    reasoning = _reasoning_from_text(text)
    if match.group(1).casefold() == "yes":
        return Status.PASS, reasoning, "yes"
    return Status.FAIL, reasoning, "no"


def verdict_with_metadata(verdict: Verdict, extra: Mapping[str, Any]) -> Judgment:
    """``with_metadata(verdict_judgment(verdict), extra)``, built once instead of twice.

    A found verdict is always a sound PASS or FAIL without metadata of its own, so the one
    judgment is built without validation; metadata that cannot be frozen goes the general
    way (which raises as it always did). `tests/judges/test_judges_verdict_fused.py` pins it
    to the two builds.
    """
    status, reasoning, label = verdict
    if extra:
        try:
            metadata = freeze_metadata(extra)  # a fresh frozen copy either way
        except (TypeError, ValueError):
            pass  # the general way below raises the error it always did
        else:
            return Judgment.fast(
                status=status,
                score=None,
                label=label,
                confidence=None,
                reasoning=reasoning,
                checks=(),
                metadata=metadata,
            )
    return with_metadata(verdict_judgment(verdict), extra)

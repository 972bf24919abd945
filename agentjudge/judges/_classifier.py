"""`LabelClassifier`: turn a one-word model answer into a `Judgment`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from agentjudge.core import Judgment, Status
from agentjudge.judges._verdict import excerpt, response_metadata, with_metadata
from agentjudge.models._types import ModelResponse

__all__ = ["LabelClassifier"]


def _normalise(label: str) -> str:
    return label.strip().casefold()


class LabelClassifier:
    r"""Match the whole model response against declared labels.

    The response and the labels are compared after ``strip().casefold()``, and the whole
    response must equal a label: there is no substring matching, so ``"irrelevant"`` never
    matches the label ``"relevant"`` and ``"PASS."`` matches nothing.

    Args:
        mapping: Label -> status (PASS, FAIL or ABSTAIN; ERROR is not a verdict a model gives).
        scores: Optional score in [0, 1] per PASS or FAIL label.

    Raises:
        ValueError: an empty mapping, a blank label, two labels equal after normalisation, an
            ERROR status, a score for a label not in the mapping or for an ABSTAIN label, or a
            score that is not a finite number within [0, 1].

    Example:
        >>> from agentjudge.core import Status
        >>> c = LabelClassifier({"relevant": Status.PASS, "irrelevant": Status.FAIL})
        >>> c.classify("  Relevant\n").status
        <Status.PASS: 'pass'>
    """

    def __init__(
        self,
        mapping: Mapping[str, Status],
        *,
        scores: Mapping[str, float] | None = None,
    ) -> None:
        if not isinstance(mapping, Mapping) or not mapping:
            raise ValueError("LabelClassifier needs at least one label mapping")
        statuses: dict[str, Status] = {}
        for label, status in mapping.items():
            if not isinstance(label, str) or not label.strip():
                raise ValueError(f"labels must be non-blank strings, got {label!r}")
            key = _normalise(label)
            if key in statuses:
                raise ValueError(
                    f"label {label!r} duplicates another label after normalisation ({key!r})"
                )
            try:
                resolved = Status(status)
            except ValueError:
                raise ValueError(
                    f"label {label!r}: status must be pass, fail or abstain, got {status!r}"
                ) from None
            if resolved is Status.ERROR:
                raise ValueError(
                    f"label {label!r}: ERROR is not a classification; use pass, fail or abstain"
                )
            statuses[key] = resolved
        label_scores: dict[str, float] = {}
        for label, score in (scores or {}).items():
            key = _normalise(label) if isinstance(label, str) else label
            if key not in statuses:
                raise ValueError(f"scores: label {label!r} is not in the mapping")
            if statuses[key] is Status.ABSTAIN:
                raise ValueError(f"scores: label {label!r} maps to ABSTAIN, which has no score")
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise ValueError(
                    f"scores: label {label!r} needs a number, got {type(score).__name__}"
                )
            if not math.isfinite(score) or not 0.0 <= score <= 1.0:
                raise ValueError(
                    f"scores: label {label!r} needs a finite score in [0, 1], got {score}"
                )
            label_scores[key] = float(score)
        self._statuses = MappingProxyType(statuses)
        self._scores = MappingProxyType(label_scores)

    @classmethod
    def pass_fail(cls, pass_label: str, fail_label: str) -> LabelClassifier:
        """A classifier with one PASS label and one FAIL label.

        Example:
            >>> LabelClassifier.pass_fail("correct", "incorrect").classify("INCORRECT").label
            'incorrect'
        """
        return cls({pass_label: Status.PASS, fail_label: Status.FAIL})

    @property
    def labels(self) -> Mapping[str, Status]:
        """The normalised labels and their statuses (read-only)."""
        return self._statuses

    def score_for(self, label: str) -> float | None:
        """The score declared for ``label`` (normalised before lookup), or None."""
        return self._scores.get(_normalise(label))

    def classify(self, text: str) -> Judgment:
        """Classify a response text.

        Returns:
            For a PASS/FAIL label: that status, the normalised label, the raw text as reasoning
            and the declared score if any. For an ABSTAIN label: ABSTAIN with the label. For no
            match: ABSTAIN naming the labels. ``metadata["raw_output"]`` always holds the text.
        """
        if not isinstance(text, str):
            raise TypeError(f"classify() needs a str, got {type(text).__name__}")
        metadata: dict[str, Any] = {"raw_output": text}
        key = _normalise(text)
        status = self._statuses.get(key)
        if status is None:
            labels = ", ".join(repr(label) for label in self._statuses)
            shown = excerpt(text.strip()) if text.strip() else "(empty response)"
            return Judgment.abstained(
                f"Output did not match any label ({labels}): {shown}", metadata=metadata
            )
        reasoning = text if text.strip() else key
        if status is Status.ABSTAIN:
            return Judgment.abstained(reasoning, label=key, metadata=metadata)
        score = self._scores.get(key)
        if status is Status.PASS:
            return Judgment.passed(reasoning, label=key, score=score, metadata=metadata)
        return Judgment.failed(reasoning, label=key, score=score, metadata=metadata)

    def classify_response(self, response: ModelResponse, *, client: str | None = None) -> Judgment:
        """Classify a model response; adds ``model``, ``usage`` and ``cached`` to the metadata.

        Args:
            response: What the model answered.
            client: The client name (recorded as ``client``; also the fallback ``model``).
        """
        judgment = self.classify(response.text)
        return with_metadata(judgment, response_metadata(client or response.model or "", response))

    def __repr__(self) -> str:
        pairs = ", ".join(f"{k!r}: {v.value}" for k, v in self._statuses.items())
        return f"LabelClassifier({{{pairs}}})"

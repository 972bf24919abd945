"""`ReplayJudge`: answer from a JSONL log of earlier judgments instead of calling a model.

One JSON object per line, one line per case (blank lines and lines starting with ``#`` are
skipped; a UTF-8 byte order mark on line 1 is ignored)::

    {"id": "case-1", "status": "pass", "label": "relevant", "confidence": 0.93,
     "cost_usd": 0.00042, "usage": {"input_tokens": 812, "output_tokens": 3}}

Required keys: ``id`` (the case id, a non-blank string, unique in the file) and ``status``
(``"pass"``, ``"fail"``, ``"abstain"`` or ``"error"``). Optional: ``score``, ``label``,
``confidence``, ``reasoning`` (the `Judgment` fields, with its rules: no score on abstain or
error, no label or confidence on error), ``cost_usd`` (a finite number >= 0), ``usage`` (token
counts, the fields of `agentjudge.models.Usage`), ``model`` (the model that answered),
``cached`` (bool), ``calls`` (whole number >= 1) and ``metadata`` (a JSON object kept in the
judgment's metadata). Any other key is refused: a misspelt ``"confidance"`` would otherwise
vanish and every case would escalate; put extra facts under ``metadata``.

The whole file is read and checked when the judge is built (it is a replay: nothing is
waiting on the network), so a bad row stops before any case is judged, with a
`agentjudge.exceptions.DatasetError` naming the file, the line and the field.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from agentjudge.core import AGGREGATION_KEY, Context, Judgment, Status
from agentjudge.exceptions import DatasetError
from agentjudge.judging import JudgeKind
from agentjudge.models import Usage

__all__ = ["REPLAY_FIELDS", "ReplayJudge"]

REPLAY_FIELDS = frozenset(
    {
        "id",
        "status",
        "score",
        "label",
        "confidence",
        "reasoning",
        "cost_usd",
        "usage",
        "model",
        "cached",
        "calls",
        "metadata",
    }
)
"""Every key a replay row may carry (``id`` and ``status`` are required)."""

_BOM = "\ufeff"
_JUDGMENT_KEYS = ("status", "score", "label", "confidence", "reasoning")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(1-based line number, text)`` of the rows: blank and ``#`` comment lines skipped."""
    try:
        with path.open(encoding="utf-8") as file:
            for lineno, line in enumerate(file, start=1):
                text = line.removeprefix(_BOM) if lineno == 1 else line
                text = text.strip()
                if text and not text.startswith("#"):
                    yield lineno, text
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: replay log is not valid UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read replay log ({exc.strerror or exc})") from None


def _decode(text: str, where: str) -> dict[str, Any]:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    unknown = sorted(set(row) - REPLAY_FIELDS)
    if unknown:
        raise DatasetError(
            f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(REPLAY_FIELDS))}; "
            "put extra facts under 'metadata')"
        )
    for required in ("id", "status"):
        if required not in row:
            raise DatasetError(f"{where}: missing required field {required!r}")
    case_id = row["id"]
    if not isinstance(case_id, str) or not case_id.strip():
        raise DatasetError(f"{where}: field 'id' must be a non-blank string, got {case_id!r:.60}")
    return row


def _cost(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DatasetError(f"{where}: field 'cost_usd' must be a number >= 0, got {value!r:.60}")
    if not math.isfinite(value) or value < 0:
        raise DatasetError(f"{where}: field 'cost_usd' must be finite and >= 0, got {value!r}")
    return float(value)


def _usage(value: object, where: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: field 'usage' must be a JSON object of token counts")
    try:
        return Usage.model_validate(value).to_portable()
    except ValidationError as exc:
        field, message = _first_error(exc, ("usage",))
        raise DatasetError(f"{where}: field {field!r}: {message}") from None


def _call_metadata(row: Mapping[str, Any], model: str, where: str) -> dict[str, Any]:
    """The keys model judges record (see `agentjudge.judges._llm.calls_metadata`)."""
    metadata: dict[str, Any] = {}
    extra = row.get("metadata", {})
    if not isinstance(extra, dict):
        raise DatasetError(f"{where}: field 'metadata' must be a JSON object")
    if AGGREGATION_KEY in extra:
        raise DatasetError(
            f"{where}: field 'metadata.{AGGREGATION_KEY}' is reserved for voting evidence"
        )
    metadata.update(extra)
    answered_by = row.get("model", model)
    if not isinstance(answered_by, str) or not answered_by.strip():
        raise DatasetError(f"{where}: field 'model' must be a non-blank string")
    metadata["model"] = answered_by
    metadata["client"] = model
    cached = row.get("cached", False)
    if not isinstance(cached, bool):
        raise DatasetError(f"{where}: field 'cached' must be true or false, got {cached!r:.60}")
    metadata["cached"] = cached
    calls = row.get("calls", 1)
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise DatasetError(f"{where}: field 'calls' must be a whole number >= 1, got {calls!r:.60}")
    if calls > 1:
        metadata["calls"] = calls
    if "usage" in row:
        metadata["usage"] = _usage(row["usage"], where)
    if "cost_usd" in row:
        metadata["cost_usd"] = _cost(row["cost_usd"], where)
    metadata["replay"] = where
    return metadata


def _judgment(row: Mapping[str, Any], model: str, where: str) -> Judgment:
    fields = {key: row[key] for key in _JUDGMENT_KEYS if key in row}
    status = fields["status"]
    if (
        status in (Status.ABSTAIN.value, Status.ERROR.value)
        and not str(fields.get("reasoning", "")).strip()
    ):
        fields["reasoning"] = f"replayed {status} (the log gives no reasoning)"
    fields["metadata"] = _call_metadata(row, model, where)
    try:
        return Judgment.model_validate(fields)
    except ValidationError as exc:
        field, message = _first_error(exc)
        raise DatasetError(f"{where}: field {field!r}: {message}") from None


def _first_error(exc: ValidationError, prefix: tuple[str, ...] = ()) -> tuple[str, str]:
    """The field and message of a validation error's first problem, for a row message."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in (*prefix, *error["loc"]))
    message = str(error["msg"]).removeprefix("Value error, ")
    if not field:  # a rule across fields: its message starts with the field at fault
        head, sep, rest = message.partition(": ")
        field, message = (head, rest) if sep and head in _JUDGMENT_KEYS else ("status", message)
    return field, message


def _load(path: Path, model: str) -> dict[str, Judgment]:
    judgments: dict[str, Judgment] = {}
    first_line: dict[str, int] = {}
    for lineno, text in _lines(path):
        where = f"{path} line {lineno}"
        row = _decode(text, where)
        case_id = row["id"]
        if case_id in first_line:
            raise DatasetError(
                f"{where}: duplicate id {case_id!r} (first on line {first_line[case_id]})"
            )
        first_line[case_id] = lineno
        judgments[case_id] = _judgment(row, model, where)
    return judgments


def _case_id(ctx: Context) -> object:
    return ctx.metadata.get("case_id")


class ReplayJudge:
    """A judge that answers from a JSONL log of earlier judgments (no model is called).

    Replays your own judge logs (to re-run an evaluation, calibrate a cascade or benchmark
    without network): each case's judgment is the log row whose ``id`` equals the case id.
    The format is in this module's docstring and in docs/how-to/trust.md ("Replay your judge
    logs"). The judgment's metadata has the keys model judges record, so cost accounting and
    budgets see the logged spending: ``model`` (the row's ``model``, else the ``model``
    argument), ``client`` (the ``model`` argument), ``cached``, ``usage`` and ``cost_usd``
    (when logged), ``calls`` (when above 1), plus the row's ``metadata`` and ``replay``
    (``"<file> line <n>"``). The cost is what the logged call cost; replaying spends nothing.

    Args:
        path: The JSONL log; read and checked completely here.
        name: The judge's name (default: the file's stem).
        key: How to find a context's case id (default: ``ctx.metadata["case_id"]``, which the
            harness sets for every case).
        model: The client name recorded in the metadata (default ``"replay:<name>"``).

    Raises:
        DatasetError: the file cannot be read, or a row is malformed (the message names the
            file, the line and the field), or an id repeats.
        ValueError: a blank name or model.

    A case that is not in the log, or a context without a case id, is an ERROR judgment naming
    the case and the file, never a silent pass.
    """

    kind = JudgeKind.LLM
    resource: str | None = None
    metric_key: str | None = None
    sampling_rate: float | None = None
    description = "answers from a JSONL log of earlier judgments"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        key: Callable[[Context], object] | None = None,
        model: str | None = None,
    ) -> None:
        file = Path(path)
        self.name = file.stem if name is None else name
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name must be a non-blank string, got {self.name!r}")
        self.model = f"replay:{self.name}" if model is None else model
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"model must be a non-blank string, got {self.model!r}")
        self.path = file
        self._key = _case_id if key is None else key
        self._judgments: Mapping[str, Judgment] = MappingProxyType(_load(file, self.model))

    def __len__(self) -> int:
        """The number of cases in the log."""
        return len(self._judgments)

    def __repr__(self) -> str:
        return f"ReplayJudge({str(self.path)!r}, name={self.name!r}, cases={len(self)})"

    async def __call__(self, ctx: Context, /) -> Judgment:
        """The logged judgment of ``ctx``'s case, or ERROR when the log has none."""
        return self.lookup(ctx)

    def lookup(self, ctx: Context) -> Judgment:
        """The logged judgment of ``ctx``'s case (synchronous `__call__`)."""
        case_id = self._key(ctx)
        if not isinstance(case_id, str):
            source = "ctx.metadata['case_id']" if self._key is _case_id else "the key function"
            return Judgment.errored(
                f"no case id to replay from {self.path}: expected a string from {source}, "
                f"got {case_id!r:.60}"
            )
        judgment = self._judgments.get(case_id)
        if judgment is None:
            return Judgment.errored(
                f"case {case_id!r:.80} is not in the replay log {self.path} ({len(self)} cases)"
            )
        return judgment

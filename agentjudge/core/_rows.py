r"""The results row format: one JSON line per evaluated case (the harness's ``results.jsonl``).

Row keys, in order: ``id``, ``input``, ``output``, ``expected``, ``metadata``, ``results`` (one
`JudgeResult` dump per judge that ran), ``verdict`` (the aggregate `Judgment` dump, null for an
errored case), ``duration_s``, ``error`` (null unless the case errored), and ``tiers`` for
cascades. It lives in the core layer so that both the harness (`agentjudge.harness._results`,
which also reads these files) and the engine's online JSONL sink write exactly the same rows.

Process-global memo caches (both bounded, both only ever speed-ups: a miss encodes afresh, so
an eviction can never change a line; ``tests/harness/test_harness_caches.py`` fills them past
their bounds and checks the lines still equal `encode_row`'s):

* ``_JUDGMENT_TEXTS``: the JSON text of a Judgment object by identity, reused only once the
  judgment is known to be frozen (its text cannot change). At most ``_JUDGMENT_MEMO_LIMIT``
  (256) entries of at most ``_JUDGMENT_MEMO_CHARS`` (8,192) characters; cleared when full.
  Each entry holds its Judgment, so the id cannot be reused by another object meanwhile.
* ``_RESULT_PARTS``: the fixed text of a JudgeResult around its judgment, keyed by every
  field that text depends on (name, sampled, metric_key, tier, error_type). At most
  ``_RESULT_MEMO_LIMIT`` (256) entries; cleared when full. A run has a few judges, so a few keys.

Why not ``orjson`` (issue 14, measured): encoding realistic rows (3 judges and a Majority
verdict) took 10.0-13.0 us/row with `encode_case`, 8.5-13.3 us/row with orjson of the row dicts
(bytes; 8.6-14.1 us decoded to str, as the writer takes), 17-18 us/row with `encode_row`; the
100,000-row one-process harness benchmark ran at the same speed within noise (see
docs/reference/benchmarks.md). orjson would not delete the fallbacks: it writes NaN and
infinities as ``null`` silently (we write ``"nan"``/``"inf"``), rejects lone surrogates, ints
beyond 64 bits and non-string keys (each needing this stdlib path), and formats some floats
differently (``1.5e-05`` vs ``0.000015``). Equal speed does not pay for a compiled dependency,
a silent coercion and two encoders, so the stdlib encoder stays.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agentjudge.core._judgment import Check, Judgment, Status

if TYPE_CHECKING:  # the reading side (`agentjudge report`) loads no case or result models
    from agentjudge.core._results import JudgeResult, TierAttempt, Verdict

__all__ = [
    "USER_MARK",
    "encode_case",
    "encode_row",
    "judge_result_dict",
    "judgment_dict",
    "tier_dict",
    "to_jsonable",
]

USER_MARK = "> "
"""The prefix of a frame in the user's own code, in the short tracebacks rows carry (written by
`agentjudge.judging.short_traceback`, shown by ``agentjudge report``, which needs no judging)."""


def judgment_dict(j: Judgment) -> dict[str, Any]:
    """``j.model_dump(mode="json", exclude_none=True)`` as far as JSON can tell, built by hand.

    Hot path: ``metadata`` stays the judgment's read-only mapping (encoded by `encode_row`).
    """
    out: dict[str, Any] = {"status": j.status.value}
    if j.score is not None:
        out["score"] = j.score
    if j.label is not None:
        out["label"] = j.label
    if j.confidence is not None:
        out["confidence"] = j.confidence
    out["reasoning"] = j.reasoning
    out["checks"] = [{"name": c.name, "passed": c.passed, "message": c.message} for c in j.checks]
    # The read-only mapping itself: the JSON encoder turns it (and nested ones) into objects
    # through `to_jsonable`, which is much cheaper than thawing every nested value up front.
    out["metadata"] = j.metadata if j.metadata else {}
    return out


def judge_result_dict(r: JudgeResult) -> dict[str, Any]:
    """A `JudgeResult` as JSON values; optional fields that are None are left out.

    `JudgeResult.model_validate` reads it back.
    """
    out: dict[str, Any] = {
        "name": r.name,
        "judgment": None if r.judgment is None else judgment_dict(r.judgment),
        "sampled": r.sampled,
    }
    if r.metric_key is not None:
        out["metric_key"] = r.metric_key
    if r.tier is not None:
        out["tier"] = r.tier
    out["attempts"] = r.attempts
    out["duration_s"] = r.duration_s
    out["queued_s"] = r.queued_s
    if r.error_type is not None:
        out["error_type"] = r.error_type
    if r.traceback is not None:
        out["traceback"] = list(r.traceback)
    return out


def tier_dict(t: TierAttempt) -> dict[str, Any]:
    """A compact record of one cascade tier (member results are in the row's ``results``).

    ``label`` and ``confidence`` are the tier judgment's (None when it has none or the tier
    failed): what calibration reads.
    """
    j = t.judgment
    return {
        "name": t.name,
        "policy": t.policy.value,
        "status": None if j is None else j.status.value,
        "label": None if j is None else j.label,
        "confidence": None if j is None else j.confidence,
        "stopped": t.stopped,
        "skipped": list(t.skipped),
        "failure": t.failure,
    }


def to_jsonable(value: Any) -> Any:
    """A JSON-encodable stand-in for values `json` cannot encode itself.

    pydantic models dump in JSON mode, dataclasses become dicts, sets and tuples lists, paths
    and enums their string / value, datetimes ISO 8601; anything else its ``repr``.
    """
    if type(value) is MappingProxyType:  # frozen judgment metadata: by far the common case
        return dict(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return repr(value)


_encoder = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=to_jsonable
)


def _finite(value: Any) -> Any:
    """Replace non-finite floats (not JSON) by their names, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data, or its ``repr`` when it cannot be encoded at all."""
    try:
        return _finite(json.loads(json.dumps(value, default=to_jsonable, allow_nan=True)))
    except (ValueError, TypeError, RecursionError):  # circular, odd dict keys
        return repr(value)


def encode_row(row: Mapping[str, Any]) -> str:
    """One results line (compact JSON, UTF-8 text, newline-terminated).

    Never fails on odd values: non-finite floats (which JSON cannot hold) become the strings
    ``"nan"``, ``"inf"`` and ``"-inf"``, and a value that cannot be encoded at all (a circular
    structure, a dict with tuple keys) is written as its ``repr``.
    """
    try:
        return _encoder.encode(row) + "\n"
    except (ValueError, TypeError, RecursionError):
        return _encoder.encode({key: _plain(value) for key, value in row.items()}) + "\n"


_string = json.encoder.encode_basestring  # what `_encoder` uses for str (ensure_ascii=False)


def _make_one_shot() -> Callable[[Any], str]:
    """``_encoder.encode`` without its Python-level wrappers, when the C encoder is there."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has it
        return _encoder.encode
    iterencode = make(None, to_jsonable, _string, None, ":", ",", False, False, False)

    def encode(value: Any) -> str:
        return "".join(iterencode(value, 0))

    return encode


_one_shot = _make_one_shot()


def _thaw(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A read-only mapping (and the read-only mappings in it) as plain dicts.

    Judgment metadata (voting evidence, for one) is nested read-only mappings: thawing them
    here is cheaper than one encoder callback per mapping.
    """
    return {k: _thaw(v) if type(v) is MappingProxyType else v for k, v in mapping.items()}


def _value(value: Any) -> str:
    """One user value as compact JSON, with `encode_row`'s fallbacks for odd values."""
    kind = type(value)
    if kind is str:
        return _string(value)
    if kind is MappingProxyType:
        value = _thaw(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else _string(repr(value))
    try:
        return _one_shot(value)
    except (ValueError, TypeError, RecursionError):
        return _encoder.encode(_plain(value))


def _encode_judgment(j: Judgment) -> str:
    """``judgment_dict(j)`` encoded, without building the dict."""
    d = j.__dict__  # plain attribute reads: this runs for every judgment of every case
    score, label, checks, metadata = d["score"], d["label"], d["checks"], d["metadata"]
    # Status is a StrEnum: the member is its own JSON text.
    head: str = '{"status":"' + d["status"] + '"'
    if score is not None:
        head += ',"score":' + repr(score)
    if label is not None:
        head += ',"label":' + _string(label)
    confidence = d["confidence"]
    if confidence is not None:
        head += ',"confidence":' + repr(confidence)
    tail = _value([c.model_dump() for c in checks]) if checks else "[]"
    text: str = (
        head
        + ',"reasoning":'
        + _string(d["reasoning"])
        + ',"checks":'
        + tail
        + ',"metadata":'
        + (_value(metadata) if metadata else "{}")
        + "}"
    )
    return text


# Values that cannot change once made: what a validated Judgment holds all the way down.
_IMMUTABLE_SCALARS = frozenset({str, int, float, bool, type(None), Status})


def _immutable(value: Any) -> bool:
    """Whether ``value`` (and everything in it) is immutable, so its JSON text never changes."""
    kind = type(value)
    if kind in _IMMUTABLE_SCALARS:
        return True
    if kind is MappingProxyType:
        for key, item in value.items():
            if type(key) is not str or (
                type(item) not in _IMMUTABLE_SCALARS and not _immutable(item)
            ):
                return False
        return True
    if kind is tuple:
        for item in value:
            if type(item) not in _IMMUTABLE_SCALARS and not _immutable(item):
                return False
        return True
    if kind is Check:
        return _immutable(tuple(value.__dict__.values()))
    return False


def _frozen_judgment(j: Judgment) -> bool:
    """Whether ``j``'s JSON text can never change.

    Validated judgments always qualify: every field is a scalar, metadata is frozen into
    read-only mappings of tuples and scalars, and checks are frozen models. Only
    ``model_construct`` (or writing to ``__dict__``) can smuggle a mutable value in; a subclass
    may be mutable.
    """
    return type(j) is Judgment and _immutable(tuple(j.__dict__.values()))


# Memoised judgment texts by object identity: ``id(j) -> (j, text, frozen)``. Judges that
# return the same Judgment object again and again (constants) and the interned aggregates of
# `Majority` and `Consensus` are encoded once. The entry holds ``j`` itself, so its id cannot be
# taken by another object while the entry exists. Whether ``j`` is frozen (so that its text can
# be reused) is only checked when it comes back: most judgments are seen once. Cleared when
# full; long texts are not kept.
_JUDGMENT_TEXTS: dict[int, tuple[Judgment, str, bool]] = {}
_JUDGMENT_MEMO_LIMIT = 256
_JUDGMENT_MEMO_CHARS = 8192


def _judgment_json(j: Judgment) -> str:
    """``judgment_dict(j)`` encoded, memoised per frozen Judgment object."""
    key = id(j)
    hit = _JUDGMENT_TEXTS.get(key)
    if hit is not None and hit[0] is j:
        if hit[2]:
            return hit[1]
        if _frozen_judgment(j):
            _JUDGMENT_TEXTS[key] = (j, hit[1], True)
            return hit[1]
        _JUDGMENT_TEXTS.pop(key, None)  # mutable: its text is never reused
        return _encode_judgment(j)
    text = _encode_judgment(j)
    if len(text) <= _JUDGMENT_MEMO_CHARS:
        if len(_JUDGMENT_TEXTS) >= _JUDGMENT_MEMO_LIMIT:
            _JUDGMENT_TEXTS.clear()
        _JUDGMENT_TEXTS[key] = (j, text, False)
    return text


def _result_parts(
    name: str, sampled: bool, metric_key: str | None, tier: str | None, error_type: str | None
) -> tuple[str, str, str]:
    """The fixed text of a result around its judgment and its attempts / duration_s / queued_s.

    Returns the text before the judgment, between the judgment and the attempts count, and
    after ``queued_s``'s value.
    """
    middle = ',"sampled":true' if sampled else ',"sampled":false'
    if metric_key is not None:
        middle += ',"metric_key":' + _string(metric_key)
    if tier is not None:
        middle += ',"tier":' + _string(tier)
    tail = "}" if error_type is None else ',"error_type":' + _string(error_type) + "}"
    return '{"name":' + _string(name) + ',"judgment":', middle + ',"attempts":', tail


# The fixed parts of results by (name, sampled, metric_key, tier, error_type): a run has a few
# judges, so a few keys (plus one per error type). Cleared when full.
_RESULT_PARTS: dict[tuple[Any, ...], tuple[str, str, str]] = {}
_RESULT_MEMO_LIMIT = 256


def _result_json(r: JudgeResult) -> str:
    """``judge_result_dict(r)`` encoded, without building the dict."""
    d = r.__dict__
    key = (d["name"], d["sampled"], d["metric_key"], d["tier"], d["error_type"])
    parts = _RESULT_PARTS.get(key)
    if parts is None:
        parts = _result_parts(*key)
        if len(_RESULT_PARTS) >= _RESULT_MEMO_LIMIT:
            _RESULT_PARTS.clear()
        _RESULT_PARTS[key] = parts
    head, middle, tail = parts
    frames = d["traceback"]
    if frames is not None:  # errors only: never memoised
        tail = tail[:-1] + ',"traceback":' + _value(list(frames)) + "}"
    j = d["judgment"]
    return (
        f"{head}{'null' if j is None else _judgment_json(j)}{middle}{d['attempts']}"
        f',"duration_s":{d["duration_s"]!r},"queued_s":{d["queued_s"]!r}{tail}'
    )


def encode_case(
    case_id: str,
    head: Mapping[str, Any],
    verdict: Verdict | None,
    duration_s: float,
    error: str | None,
    traceback: Sequence[str] | None = None,
) -> str:
    """One results line for a finished case, the same text as `encode_row` of its row dict.

    The hot path of a run: the engine's values are written straight to JSON text instead of
    being turned into dicts first. ``head`` holds the row's leading fields in order (``input``,
    ``output``, ``expected``, ``metadata`` and, when there are any, ``extra`` and ``human``).
    """
    parts = ['{"id":', _string(case_id)]
    for key, value in head.items():
        parts += [',"', key, '":', _value(value)]
    if verdict is None:
        parts.append(',"results":[],"verdict":null')
    else:
        parts += [
            ',"results":[',
            ",".join([_result_json(r) for r in verdict.results]),
            '],"verdict":',
            _judgment_json(verdict.judgment),
        ]
        if verdict.tiers:
            parts += [',"tiers":', _value([tier_dict(t) for t in verdict.tiers])]
    parts += [
        ',"duration_s":',
        repr(duration_s),
        ',"error":',
        "null" if error is None else _string(error),
    ]
    if traceback is not None:  # where the task raised
        parts += [',"traceback":', _value(list(traceback))]
    parts.append("}\n")
    return "".join(parts)

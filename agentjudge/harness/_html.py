"""The browser report: one self-contained HTML file (``agentjudge report DIR --html FILE``).

The file holds the run's ``summary.json`` and its cases as one JSON blob in a
``<script type="application/json">`` tag, plus the page's own CSS and JavaScript (package data
in ``_html_assets``), so it opens from ``file://`` and makes no network request (a
Content-Security-Policy of ``default-src 'none'`` forbids any).

Cases are stored compactly: one array per case with fixed positions (`ROW_FIELDS`), statuses as
small integers (`STATUSES`), every repeated string (tags, reasonings, check names and messages,
labels) once in a string table, and long texts cut at `TEXT_LIMIT` characters (results.jsonl
keeps them whole). docs/how-to/offline-evaluation.md gives the size per case this makes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from agentjudge.agreement import wilson_interval
from agentjudge.harness._baseline import (
    TASK_ERROR,
    case_statuses,
    compare_rows,
    load_summary,
    summary_path,
)
from agentjudge.harness._report import row_tags
from agentjudge.harness._results import iter_rows
from agentjudge.harness._summary import RunSummary
from agentjudge.harness._tool_diff import OPS, html_tool_diff, without_diff

__all__ = [
    "ROW_FIELDS",
    "STATUSES",
    "TEXT_LIMIT",
    "build_report_data",
    "render_html",
    "report_server",
    "serve_report",
    "write_html",
]

STATUSES = ("pass", "fail", "abstain", "error", TASK_ERROR, "none")
"""Status words by their code in the embedded data."""
TEXT_LIMIT = 2000
"""Texts (input, output, expected, metadata, reasonings) longer than this are cut."""
ROW_FIELDS = (
    "id",
    "status",
    "score",
    "duration_s",
    "tags",
    "judgments",
    "input",
    "output",
    "expected",
    "metadata",
    "human",
    "error",
    "traceback",
    "tiers",
)
"""The positions of a case's array (trailing nulls are left out)."""
_CODES = {word: code for code, word in enumerate(STATUSES)}
_NONE = _CODES["none"]
_ASSETS = "_html_assets"


class _Strings:
    """A string table: each distinct string once, referred to by its index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: Any) -> int | None:
        if text is None:
            return None
        value = _cut(text if isinstance(text, str) else _json(text))
        index = self._index.get(value)
        if index is None:
            index = self._index[value] = len(self.items)
            self.items.append(value)
        return index


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _cut(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f"\u2026 [cut at {TEXT_LIMIT} of {len(text)} characters]"


def _number(value: Any, digits: int = 6) -> float | None:
    """A finite number rounded for display, else None (NaN is written as a string)."""
    kind = type(value)
    if kind is float:
        return round(value, digits) if math.isfinite(value) else None
    if kind is int:
        return value  # type: ignore[no-any-return]
    return None


def _seconds(value: Any) -> float | None:
    """A duration rounded to 0.1 ms (shorter JSON)."""
    return _number(value, 4)


def _value(value: Any) -> Any:
    """A JSON value as stored: itself when short, else its (cut) JSON text."""
    if value is None or isinstance(value, bool | int | float):
        return value if not isinstance(value, float) else _number(value)
    if isinstance(value, str):
        return _cut(value)
    text = _json(value)
    return value if len(text) <= TEXT_LIMIT else _cut(text)


def _traceback(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return _cut("\n".join(str(v) for v in value))
    return _cut(value if isinstance(value, str) else _json(value))


def _trim(items: list[Any]) -> list[Any]:
    while items and items[-1] is None:
        items.pop()
    return items


@dataclass
class _Collector:
    """Folds results rows into the embedded data (one pass over the file)."""

    judges: list[str]
    strings: _Strings = field(default_factory=_Strings)
    rows: list[list[Any]] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    tags: dict[str, list[int]] = field(default_factory=dict)
    latency: dict[str, list[float]] = field(default_factory=dict)

    def _judgment(self, result: Mapping[str, Any]) -> list[Any] | int:
        judgment = result.get("judgment")
        ref = self.strings.ref
        duration = _seconds(result.get("duration_s"))
        if duration is not None:
            self.latency.setdefault(result["name"], []).append(duration)
        if not isinstance(judgment, Mapping):
            return 0
        checks = [
            _trim([ref(c.get("name")), 1 if c.get("passed") else 0, ref(c.get("message") or None)])
            for c in judgment.get("checks") or ()
        ]
        metadata = judgment.get("metadata") or None
        diff = html_tool_diff(metadata, ref)
        if diff is not None and isinstance(metadata, Mapping):  # drawn as a table, not twice
            metadata = without_diff(metadata) or None
        return _trim(
            [
                _CODES.get(judgment["status"], _NONE),
                _number(judgment.get("score")),
                ref(judgment.get("reasoning") or None),
                checks or None,
                ref(judgment.get("label")),
                _number(judgment.get("confidence")),
                ref(metadata),
                ref(result.get("error_type")),
                duration,
                ref(result.get("tier")),
                _traceback(result.get("traceback")),
                diff,
            ]
        )

    def add(self, row: Mapping[str, Any]) -> None:
        results = {r["name"]: r for r in row.get("results") or () if "name" in r}
        for name in results:
            if name not in self.judges:
                self.judges.append(name)
        verdict = row.get("verdict")
        if row.get("error") is not None:
            status, score = _CODES[TASK_ERROR], None
        elif isinstance(verdict, Mapping):
            status = _CODES.get(verdict["status"], _NONE)
            score = _number(verdict.get("score"))
        else:
            status, score = _NONE, None
        tags = [self.strings.ref(t) for t in row_tags(row)]
        for tag in tags:
            self.tags.setdefault(self.strings.items[tag or 0], [0] * len(STATUSES))[status] += 1
        judgments = [
            self._judgment(results[name]) if name in results else 0 for name in self.judges
        ]
        tiers = row.get("tiers")
        self.index[str(row["id"])] = len(self.rows)
        self.rows.append(
            _trim(
                [
                    str(row["id"]),
                    status,
                    score,
                    _seconds(row.get("duration_s")),
                    tags,
                    _trim(judgments) if any(judgments) else [],
                    _value(row.get("input")),
                    _value(row.get("output")),
                    _value(row.get("expected")),
                    _value(row.get("metadata") or None),
                    _value(row.get("human")),
                    _value(row.get("error")),
                    _traceback(row.get("traceback")),
                    _value(tiers) if tiers else None,
                ]
            )
        )

    def tag_rates(self) -> dict[str, dict[str, Any]]:
        """Per tag: cases, verdict pass rate over PASS+FAIL and its Wilson interval."""
        out: dict[str, dict[str, Any]] = {}
        for tag in sorted(self.tags):
            counts = self.tags[tag]
            passed, decided = (
                counts[_CODES["pass"]],
                counts[_CODES["pass"]] + counts[_CODES["fail"]],
            )
            out[tag] = {
                "n": sum(counts),
                "decided": decided,
                "pass_rate": passed / decided if decided else None,
                "ci95": list(wilson_interval(passed, decided)) if decided else None,
            }
        return out

    def latency_quantiles(self) -> dict[str, list[float]]:
        """Per judge: [p50, p95, max] of its judging time in seconds."""
        out: dict[str, list[float]] = {}
        for name, values in self.latency.items():
            values.sort()
            last = len(values) - 1
            out[name] = [values[last // 2], values[math.ceil(0.95 * last)], values[last]]
        return out


def _summary_json(summary: RunSummary) -> dict[str, Any]:
    return summary.model_dump(mode="json")


def _baseline(
    baseline_dir: Path, results: Path, collector: _Collector, current: RunSummary
) -> dict[str, Any]:
    """The comparison block: the baseline's numbers and each judge's flips (`compare_rows`)."""
    base = load_summary(baseline_dir)
    base_results = summary_path(baseline_dir).parent / "results.jsonl"
    out: dict[str, Any] = {
        "run_id": base.run_id,
        "path": str(baseline_dir),
        "judges": {n: {"mean": s.mean, "pass_rate": s.pass_rate} for n, s in base.judges.items()},
        "verdict": None
        if base.verdict is None
        else {"mean": base.verdict.mean, "pass_rate": base.verdict.pass_rate},
        "same_dataset": base.dataset.sha256 == current.dataset.sha256,
        "compared": base_results.is_file() and results.is_file(),
    }
    if not out["compared"]:
        return out
    comparison = compare_rows(case_statuses(base_results), iter_rows(results))
    where = collector.index
    reasons: dict[tuple[str, str], str | None] = {
        (f.id, name): None for name, flips in comparison.judges.items() for f in flips
    }
    wanted = {case for case, _ in reasons}
    for row in iter_rows(base_results):
        if row["id"] not in wanted:
            continue
        for result in row.get("results") or ():
            judgment = result.get("judgment")
            if (row["id"], result["name"]) in reasons and isinstance(judgment, Mapping):
                reasons[(row["id"], result["name"])] = judgment.get("reasoning")
    ref = collector.strings.ref

    def code(word: str) -> int:
        return _CODES.get(word, _NONE)

    out["flips"] = {
        name: [
            [where[f.id], code(f.before), code(f.after), ref(reasons[(f.id, name)] or None)]
            for f in flips
        ]
        for name, flips in comparison.judges.items()
    }
    out["verdict_flips"] = [
        [where[f.id], code(f.before), code(f.after)]
        for f in comparison.newly_failing + comparison.newly_passing + comparison.changed
    ]
    out["only_before"] = comparison.only_before
    out["only_after"] = len(comparison.only_after)
    return out


def build_report_data(
    run_dir: str | Path, baseline_dir: str | Path | None = None
) -> dict[str, Any]:
    """The JSON data the page renders: the summary, the cases and the comparison.

    Args:
        run_dir: a run's output folder (or its ``summary.json``); without its results.jsonl
            the page shows the summary and no cases.
        baseline_dir: an earlier run to compare with (its flips are listed per judge).

    Raises:
        ValueError: no usable ``summary.json`` in a folder, or a corrupt results file.
    """
    summary = load_summary(run_dir)
    results = summary_path(Path(run_dir)).parent / "results.jsonl"
    collector = _Collector(judges=list(summary.judges))
    if results.is_file():
        for row in iter_rows(results):
            collector.add(row)
    data: dict[str, Any] = {
        "version": 1,
        "statuses": list(STATUSES),
        "diff_ops": list(OPS),
        "fields": list(ROW_FIELDS),
        "summary": _summary_json(summary),
        "results_file": str(results) if results.is_file() else None,
        "judges": collector.judges,
        "tags": collector.tag_rates(),
        "latency": collector.latency_quantiles(),
        "text_limit": TEXT_LIMIT,
    }
    if baseline_dir is not None:
        data["baseline"] = _baseline(Path(baseline_dir), results, collector, summary)
    data["strings"] = collector.strings.items
    data["cases"] = collector.rows
    return data


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(_ASSETS, name).read_text(encoding="utf-8")


def _embed(data: Mapping[str, Any]) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_html(run_dir: str | Path, baseline_dir: str | Path | None = None) -> str:
    """The whole HTML page of a run (and its comparison with ``baseline_dir``).

    Raises:
        ValueError: as `build_report_data`.
    """
    data = build_report_data(run_dir, baseline_dir)
    parts = {
        "%TITLE%": _escape(f"agentjudge report {data['summary']['run_id']}"),
        "/*%CSS%*/": _asset("report.css"),
        "%DATA%": _embed(data),
        "/*%JS%*/": _asset("report.js"),
    }
    # One pass over the template: a marker inside the data is never replaced.
    pattern = "|".join(re.escape(marker) for marker in parts)
    return re.sub(pattern, lambda m: parts[m.group(0)], _asset("report.html"))


def write_html(
    run_dir: str | Path, file: str | Path, baseline_dir: str | Path | None = None
) -> int:
    """Write the HTML report of ``run_dir`` to ``file``; returns its size in bytes.

    Raises:
        ValueError: as `build_report_data`, or the file cannot be written (named).
    """
    page = render_html(run_dir, baseline_dir).encode("utf-8")
    try:
        Path(file).write_bytes(page)
    except OSError as exc:
        raise ValueError(f"cannot write {file}: {exc.strerror or exc}") from None
    return len(page)


class _Handler(BaseHTTPRequestHandler):
    """Serves the page at ``/`` (and ``/index.html``); anything else is 404."""

    page = b""

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] not in ("/", "/index.html"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the command prints the URL once and nothing per request."""


def report_server(page: bytes, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 serving ``page`` (``port`` 0: a free one), not yet started.

    Call ``serve_forever`` on it (and ``server_close`` when done); its URL is
    ``f"http://127.0.0.1:{server.server_address[1]}/"``.

    Raises:
        ValueError: the port cannot be bound (the reason named).
    """
    handler = type("ReportHandler", (_Handler,), {"page": page})
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise ValueError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from None


def serve_report(
    run_dir: str | Path, baseline_dir: str | Path | None = None, port: int = 0
) -> None:
    """`agentjudge view`: serve the page on 127.0.0.1, print its URL, stop on Ctrl-C.

    Raises:
        ValueError: as `build_report_data`, or the port cannot be bound.
    """
    server = report_server(render_html(run_dir, baseline_dir).encode("utf-8"), port)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        print(f"report at {url} (Ctrl-C stops)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

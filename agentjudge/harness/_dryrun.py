"""``agentjudge run --dry-run``: what the judges' model calls would cost, without calling a model.

For every case of the run's part of the dataset and every model-backed judge (an LLM judge, a
judge with a ``client``, or any judge holding a model client), the judge is called with its
model clients' ``complete`` replaced by a recorder: the judge renders its prompt and builds
its request exactly as in a real run, the recorder keeps the request and stops the judge there.
No model is called, the task is not run, nothing is written.

* **The task does not run**: ``{{output}}`` renders as the row's ``output`` field when the
  dataset has one, else as an empty string (so prompts that quote the output are estimated
  short by its length).
* **Input tokens**: ``ceil(characters / 4)`` of the request's message texts and response schema
  (`CHARS_PER_TOKEN`), or the exact count with ``tiktoken`` when it is installed (the model's
  encoding, else ``o200k_base``); per-message overhead is not counted. The same estimator
  prices each request a `Budget` reserves (`agentjudge.models._spend`).
* **Output tokens**: the request's ``max_tokens`` when the judge sets it, else
  `DEFAULT_OUTPUT_TOKENS` per call.
* **Cost**: the estimated tokens at the model's price (the run's ``prices`` applied); a model
  with no price has no estimate (listed as unpriced, never guessed).
* **Cascades**: every tier is counted for every case (an upper bound: a real run stops at the
  first tier that decides). Deterministic judges are not called and cost nothing.
* A judge that cannot render without a model answer (it fails or hangs before calling, or
  makes several calls) is counted as 1 call per case; its tokens are unknown when no request
  was recorded (``unknown_calls``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from agentjudge.core import ExecutionStatus
from agentjudge.engine import Cascade, Jury
from agentjudge.harness._case import Case
from agentjudge.harness._clients import close_model_clients, find_model_clients
from agentjudge.harness._dataset import Dataset
from agentjudge.harness._pipeline import case_context
from agentjudge.harness._pricing import prices_applied, suite_price_table
from agentjudge.harness._report import table
from agentjudge.harness._resolve import resolve_judges
from agentjudge.harness._suite import RunConfigError, Suite
from agentjudge.harness._text import plural
from agentjudge.judging import JudgeKind, judge_name
from agentjudge.models import Usage, prices
from agentjudge.models._spend import (
    CHARS_PER_TOKEN,
    DEFAULT_OUTPUT_TOKENS,
    TokenCounter,
    estimate_input_tokens,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_OUTPUT_TOKENS",
    "DryRunEstimate",
    "DryRunLine",
    "dry_run",
    "format_dry_run",
]

RENDER_TIMEOUT = 30.0
"""Seconds a judge may take to reach its model call before it counts as unknown."""


class DryRunLine(BaseModel):
    """Estimated calls, tokens and dollars of one judge, one model, or the whole run."""

    model_config = ConfigDict(extra="allow")

    calls: int = 0
    unknown_calls: int = 0
    """Calls whose request could not be rendered without a model answer (tokens unknown)."""
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float | None = 0.0
    """Estimated US dollars; None when some call's model has no price."""
    unpriced_calls: int = 0


class DryRunEstimate(BaseModel):
    """What ``--dry-run`` prints (``--json``: this as JSON)."""

    model_config = ConfigDict(extra="allow")

    cases: int
    tokenizer: str
    """``"tiktoken"`` or ``"chars/4"``."""
    total: DryRunLine
    by_judge: dict[str, DryRunLine] = Field(default_factory=dict)
    by_model: dict[str, DryRunLine] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class _Stop(Exception):
    """Raised by the recorder instead of calling the model."""


class _Recorder:
    """Replaces ``complete`` on the clients: records ``(client name, request)``, then stops."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Any]] = []

    def patch(self, client: Any) -> bool:
        """Replace ``client.complete``; False when the client does not allow it."""
        name = str(getattr(client, "name", type(client).__name__))

        async def complete(request: Any, *args: Any, **kwargs: Any) -> Any:
            self.requests.append((name, request))
            raise _Stop

        try:
            client.complete = complete
        except (AttributeError, TypeError):
            return False  # its judges fail to render: counted as unknown calls
        return True

    @staticmethod
    def unpatch(client: Any) -> None:
        vars(client).pop("complete", None)


def _leaves(judges: Any, cascades: list[str]) -> Iterator[tuple[str, Any]]:
    """``(name, judge)`` of every leaf judge (every tier of a cascade, named in ``cascades``)."""

    def node(obj: Any, name: str, prefix: str) -> Iterator[tuple[str, Any]]:
        if isinstance(obj, Jury):
            yield from jury(obj, f"{prefix}{name}/")
        elif isinstance(obj, Cascade):
            yield from cascade(obj, f"{prefix}{name}/")
        else:
            yield f"{prefix}{name}", obj

    def jury(obj: Jury, prefix: str) -> Iterator[tuple[str, Any]]:
        for member, name in zip(obj.members, obj.names, strict=True):
            yield from node(member, name, prefix)

    def cascade(obj: Cascade, prefix: str) -> Iterator[tuple[str, Any]]:
        cascades.append(obj.name)
        for tier in obj.tiers:
            if isinstance(tier.judge, Jury):
                yield from jury(tier.judge, prefix)
            else:
                yield from node(tier.judge, judge_name(tier.judge), prefix)

    if isinstance(judges, Jury):
        yield from jury(judges, "")
    elif isinstance(judges, Cascade):
        yield from cascade(judges, "")
    elif isinstance(judges, Mapping | Sequence) and not isinstance(judges, str | bytes):
        yield from jury(Jury(judges), "")
    else:
        yield judge_name(judges), judges


def _model_backed(judge: Any) -> bool:
    return (
        getattr(judge, "kind", None) == JudgeKind.LLM
        or getattr(judge, "client", None) is not None
        or bool(find_model_clients(judge))
    )


class _Sum:
    def __init__(self) -> None:
        self.line = DryRunLine()

    def add(self, inp: int, out: int, usd: float | None, unknown: bool) -> None:
        line = self.line
        line.calls += 1
        if unknown:
            line.unknown_calls += 1
            return
        line.input_tokens += inp
        line.output_tokens += out
        if usd is None:
            line.unpriced_calls += 1
        elif line.usd is not None:
            line.usd += usd
        if line.unpriced_calls:
            line.usd = None


def _case_output(case: Case) -> Any:
    extra = case.model_extra or {}
    return extra.get("output", "")


async def _render(judge: Any, ctx: Any, limit: float) -> None:
    """Call ``judge`` until it reaches its model (or fails, or takes ``limit`` seconds)."""
    try:
        with anyio.fail_after(limit):
            result = judge(ctx)
            if hasattr(result, "__await__"):
                await result
    except _Stop:
        pass
    except Exception:  # counted as an unknown call by the caller
        pass


class _Tally:
    """The sums of a dry run."""

    def __init__(self, names: list[str]) -> None:
        self.counter = TokenCounter()
        self.total = _Sum()
        self.by_judge = {name: _Sum() for name in names}
        self.by_model: dict[str, _Sum] = {}

    def add(self, judge: str, client: str | None, request: Any) -> None:
        sums = [self.total, self.by_judge[judge]]
        if client is None or request is None:
            for s in sums:
                s.add(0, 0, None, unknown=True)
            return
        inp = estimate_input_tokens(client, request.messages, request.response_schema, self.counter)
        out = request.max_tokens or DEFAULT_OUTPUT_TOKENS
        usd = prices.cost(client, Usage(input_tokens=inp, output_tokens=out))
        sums.append(self.by_model.setdefault(client, _Sum()))
        for s in sums:
            s.add(inp, out, usd, unknown=False)


async def dry_run(suite: Suite, judges: Any, cases: Iterator[Case]) -> DryRunEstimate:
    """Estimate the model calls of ``judges`` over ``cases`` (see the module docs).

    Args:
        suite: The run's settings (``judge_timeout`` bounds each render).
        judges: The run's judges (a judge, list, dict, Jury or Cascade).
        cases: The cases to render prompts for.
    """
    cascades: list[str] = []
    leaves = [(name, judge) for name, judge in _leaves(judges, cascades) if _model_backed(judge)]
    recorder = _Recorder()
    clients = [c for c in find_model_clients([j for _, j in leaves]) if recorder.patch(c)]
    tally = _Tally([name for name, _ in leaves])
    timeout = min(suite.judge_timeout or RENDER_TIMEOUT, RENDER_TIMEOUT)
    count = 0
    try:
        for case in cases:
            count += 1
            ctx = case_context(
                case, _case_output(case), ExecutionStatus.SUCCESS, datetime.now(UTC), 0.0
            )
            for name, judge in leaves:
                recorder.requests.clear()
                await _render(judge, ctx, timeout)
                client, request = recorder.requests[0] if recorder.requests else (None, None)
                tally.add(name, client, request)
    finally:
        for client in clients:
            recorder.unpatch(client)
    return DryRunEstimate(
        cases=count,
        tokenizer=tally.counter.kind,
        total=tally.total.line,
        by_judge={k: v.line for k, v in tally.by_judge.items()},
        by_model={k: v.line for k, v in sorted(tally.by_model.items())},
        notes=_notes(bool(cascades), tally.counter.kind),
    )


def _notes(cascade: bool, tokenizer: str) -> list[str]:
    notes = [
        "no model was called and the task did not run: {{output}} is the dataset's 'output' "
        "field when present, else empty",
        f"input tokens: {tokenizer}"
        + ("" if tokenizer == "tiktoken" else " (install tiktoken for exact counts)")
        + f"; output tokens: max_tokens, else {DEFAULT_OUTPUT_TOKENS} per call",
    ]
    if cascade:
        notes.append("cascade: every tier is counted for every case (an upper bound)")
    return notes


def _usd(line: DryRunLine) -> str:
    if line.usd is None:
        return f"unknown ({plural(line.unpriced_calls, 'call')} unpriced)"
    return f"${line.usd:.4f}"


def format_dry_run(estimate: DryRunEstimate) -> str:
    """The dry run as a table: totals, by judge, by model; then the notes."""

    def row(label: str, line: DryRunLine) -> list[str]:
        return [
            label,
            str(line.calls),
            str(line.unknown_calls),
            str(line.input_tokens),
            str(line.output_tokens),
            _usd(line),
        ]

    rows = [row("total", estimate.total)]
    rows += [row(f"judge {k}", v) for k, v in estimate.by_judge.items()]
    rows += [row(f"model {k}", v) for k, v in estimate.by_model.items()]
    headers = ["", "calls", "unknown", "est input tok", "est output tok", "est usd"]
    lines = [f"dry run: {plural(estimate.cases, 'case')}, no model called", table(headers, rows)]
    lines += [f"note: {n}" for n in estimate.notes]
    return "\n".join(lines)


async def dry_run_suite(suite: Suite) -> DryRunEstimate:
    """`dry_run` for a suite: its judges (closed after) over its dataset (``limit`` applied).

    Raises:
        RunConfigError: no dataset or judges.
        ValueError: an invalid ``prices`` setting (file and field named).
        DatasetError: a malformed dataset row (file, line and field named).
    """
    if suite.dataset is None:
        raise RunConfigError(
            'no dataset given: set dataset = "file.jsonl" in the suite file or pass --dataset'
        )
    table = suite_price_table(suite)
    path, fmt = suite.path(suite.dataset), suite.dataset_format
    dataset = await anyio.to_thread.run_sync(lambda: Dataset.open(path, format=fmt))
    judges = resolve_judges(suite)
    cases = itertools.islice(dataset.iter_cases(), suite.limit)
    try:
        with prices_applied(table):
            return await dry_run(suite, judges, cases)
    finally:
        await close_model_clients(find_model_clients(judges))

"""OpenTelemetry for online evaluation (the ``otel`` extra, imported only when used).

* `OtelEventSink` emits one ``gen_ai.evaluation.result`` event per judge result (and one for
  the verdict) through the OpenTelemetry Logs API, following the GenAI semantic conventions:
  ``gen_ai.evaluation.name`` (the judge's name; the verdict's is ``verdict_name``),
  ``gen_ai.evaluation.score.value`` (the judgment's effective score, when it has one),
  ``gen_ai.evaluation.score.label`` (its label, else its status: pass, fail, abstain),
  ``gen_ai.evaluation.explanation`` (its reasoning), ``error.type`` (on ERROR: the exception
  type, else ``_OTHER``) and ``gen_ai.response.id`` (from the context's metadata key
  ``gen_ai.response.id`` or ``response_id``, when there is one). Each event carries the trace
  context captured at ``offer`` time, so it is parented to the span of the operation that was
  evaluated (the span active when the handler called ``offer``).
* `export_counters` exports a `BackgroundEvaluator`'s counters as observable instruments named
  ``agentjudge.online.<counter>`` (counters for the cumulative ones, gauges for ``running``,
  ``backlog``, ``backlog_bytes`` and ``effective_sample_rate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agentjudge.core import JudgeResult, Judgment, Status
from agentjudge.engine._sinks import OnlineResult, in_slices

if TYPE_CHECKING:
    from agentjudge.engine._background import BackgroundEvaluator

__all__ = [
    "EVENT_NAME",
    "OtelEventSink",
    "evaluation_attributes",
    "export_counters",
    "global_meter_provider",
]

EVENT_NAME = "gen_ai.evaluation.result"
_EXPLANATION_CHARS = 4096
_GAUGES = ("running", "backlog", "backlog_bytes", "effective_sample_rate")
_COUNTERS = (
    "offered",
    "sampled_out",
    "accepted",
    "shed",
    "completed",
    "errored",
    "cancelled",
    "sink_dropped",
    "sink_errors",
)


def _response_id(result: OnlineResult) -> str | None:
    metadata = result.context.metadata
    for key in ("gen_ai.response.id", "response_id"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def evaluation_attributes(
    name: str, judgment: Judgment, error_type: str | None, response_id: str | None
) -> dict[str, Any]:
    """The semantic-convention attributes of one evaluation result."""
    attrs: dict[str, Any] = {"gen_ai.evaluation.name": name}
    score = judgment.effective_score
    if score is not None:
        attrs["gen_ai.evaluation.score.value"] = score
    if judgment.status is Status.ERROR:
        attrs["error.type"] = error_type or "_OTHER"
    else:
        attrs["gen_ai.evaluation.score.label"] = judgment.label or judgment.status.value
    if judgment.reasoning:
        attrs["gen_ai.evaluation.explanation"] = judgment.reasoning[:_EXPLANATION_CHARS]
    if response_id is not None:
        attrs["gen_ai.response.id"] = response_id
    return attrs


class OtelEventSink:
    """Emits ``gen_ai.evaluation.result`` events (see the module docstring).

    Args:
        logger_provider: The OpenTelemetry logger provider (default: the global one).
        verdict_name: The evaluation name of the verdict's event (None: no verdict event).
        judges: Emit one event per judge result (unsampled ones are skipped).

    Raises:
        ImportError: OpenTelemetry is not installed (``pip install agentjudge[otel]``).
    """

    wants_trace_context = True
    """The background evaluator captures the caller's trace context for this sink."""

    def __init__(
        self,
        *,
        logger_provider: Any = None,
        verdict_name: str | None = "verdict",
        judges: bool = True,
    ) -> None:
        try:
            from opentelemetry import _logs
        except ImportError as exc:  # pragma: no cover - the otel extra is installed in CI
            raise ImportError(
                "OtelEventSink needs OpenTelemetry: pip install 'agentjudge[otel]'"
            ) from exc
        provider = logger_provider if logger_provider is not None else _logs.get_logger_provider()
        self._logger = provider.get_logger("agentjudge")
        self._record = _logs.LogRecord
        self.verdict_name = verdict_name
        self.judges = judges

    def _events(self, result: OnlineResult) -> Iterable[dict[str, Any]]:
        verdict = result.verdict
        if verdict is None:
            return
        response_id = _response_id(result)
        if self.judges:
            for r in verdict.results:
                if r.judgment is not None:
                    yield evaluation_attributes(r.name, r.judgment, r.error_type, response_id)
        if self.verdict_name is not None:
            yield evaluation_attributes(
                self.verdict_name, verdict.judgment, _first_error(verdict.results), response_id
            )

    async def write(self, batch: Sequence[OnlineResult], /) -> None:
        """Emit the events of every result in the batch (yielding to the loop between slices)."""
        await in_slices(batch, self._emit)

    def _emit(self, result: OnlineResult) -> None:
        for attrs in self._events(result):
            self._logger.emit(
                self._record(event_name=EVENT_NAME, context=result.trace_context, attributes=attrs)
            )


def _first_error(results: Sequence[JudgeResult]) -> str | None:
    return next((r.error_type for r in results if r.error_type is not None), None)


def global_meter_provider() -> Any:
    """The global meter provider when a real (SDK) one is installed; else None.

    None too when OpenTelemetry is not installed, so nothing is created for a no-op provider.
    """
    try:
        from opentelemetry import metrics
    except ImportError:  # pragma: no cover - the otel extra is installed in CI
        return None
    provider = metrics.get_meter_provider()
    if type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider"):
        return None
    return provider


def export_counters(background: BackgroundEvaluator, meter_provider: Any) -> None:
    """Register observable instruments reading ``background.statistics()``."""
    from opentelemetry.metrics import CallbackOptions, Observation

    meter = meter_provider.get_meter("agentjudge")

    def reader(name: str) -> Any:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(background.statistics()[name])]

        return observe

    for name in _COUNTERS:
        meter.create_observable_counter(
            f"agentjudge.online.{name}", callbacks=[reader(name)], unit="{evaluation}"
        )
    for name in _GAUGES:
        meter.create_observable_gauge(f"agentjudge.online.{name}", callbacks=[reader(name)])

"""OpenTelemetry spans and metrics for harness runs (the ``otel`` extra; a no-op without it).

Spans: ``agentjudge.run`` (one per run) > ``agentjudge.case`` (one per case) >
``agentjudge.judge`` (one per judge result; its start is reconstructed from the result's
``duration_s`` when the verdict arrives). Metrics, fed by the Evaluator's ``on_result`` hook:

* ``agentjudge.judge.duration`` (histogram, s, attribute ``judge``): working time per result;
* ``agentjudge.judge.results`` (counter, attributes ``judge`` and ``status``: pass, fail,
  abstain, error or unsampled);
* ``agentjudge.queue.wait`` (histogram, s, attribute ``judge``): time queued for a slot.

Nothing is recorded unless OpenTelemetry is installed and either providers are passed in or a
real (SDK) provider is installed globally, e.g. by ``opentelemetry-instrument agentjudge run``;
without one the harness does not even create no-op spans, so telemetry costs nothing.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from agentjudge.core import JudgeResult, Verdict

__all__ = ["Telemetry"]


_PROVIDER_VARIABLES = ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")
"""Environment variables naming a global provider OpenTelemetry loads on first use."""


def _global_providers_possible() -> bool:
    """False when no global provider can exist, so OpenTelemetry need not even be imported.

    A program sets one with ``opentelemetry.trace`` / ``opentelemetry.metrics`` (imported then,
    as ``opentelemetry-instrument`` does before the program starts), or names one in the
    environment.
    """
    imported = any(m in sys.modules for m in ("opentelemetry.trace", "opentelemetry.metrics"))
    return imported or any(os.environ.get(name) for name in _PROVIDER_VARIABLES)


def _global_providers_configured() -> tuple[Any, Any] | None:
    from opentelemetry import trace

    from agentjudge.engine._otel import global_meter_provider

    tracer_provider = trace.get_tracer_provider()
    meter_provider = global_meter_provider()
    tracing = not isinstance(tracer_provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
    if not tracing and meter_provider is None:
        return None
    return (tracer_provider if tracing else None, meter_provider)


class Telemetry:
    """Spans and metrics of one run. Build it with `Telemetry.create`."""

    def __init__(self, tracer_provider: Any | None, meter_provider: Any | None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._tracer = None if tracer_provider is None else tracer_provider.get_tracer("agentjudge")
        self._duration = self._results = self._queue = None
        if meter_provider is not None:
            meter = meter_provider.get_meter("agentjudge")
            self._duration = meter.create_histogram(
                "agentjudge.judge.duration", unit="s", description="Working time of a judge call"
            )
            self._results = meter.create_counter(
                "agentjudge.judge.results", unit="{result}", description="Judge results by status"
            )
            self._queue = meter.create_histogram(
                "agentjudge.queue.wait", unit="s", description="Time a judge call waited for a slot"
            )
        self._run_span: Any = None

    @classmethod
    def create(
        cls, *, tracer_provider: Any | None = None, meter_provider: Any | None = None
    ) -> Telemetry | None:
        """Telemetry for explicit providers, else for the global SDK providers, else None.

        Returns None when OpenTelemetry is not installed or nothing would be recorded.
        """
        explicit = tracer_provider is not None or meter_provider is not None
        if not explicit and not _global_providers_possible():
            return None
        try:
            import opentelemetry.trace  # noqa: F401
        except ImportError:
            return None
        if not explicit:
            found = _global_providers_configured()
            if found is None:
                return None
            tracer_provider, meter_provider = found
        return cls(tracer_provider, meter_provider)

    # ------------------------------------------------------------------ metrics
    def on_result(self, result: JudgeResult) -> None:
        """The Evaluator's ``on_result`` hook: record one judge result."""
        attrs = {"judge": result.name}
        if self._duration is not None:
            self._duration.record(result.duration_s, attrs)
        if self._queue is not None:
            self._queue.record(result.queued_s, attrs)
        if self._results is not None:
            status = "unsampled" if result.judgment is None else result.judgment.status.value
            self._results.add(1, {"judge": result.name, "status": status})

    # ------------------------------------------------------------------ spans
    def start_run(self, attributes: dict[str, Any]) -> None:
        """Open the run span."""
        if self._tracer is not None:
            self._run_span = self._tracer.start_span("agentjudge.run", attributes=attributes)

    def end_run(self, attributes: dict[str, Any]) -> None:
        """Close the run span."""
        span, self._run_span = self._run_span, None
        if span is not None:
            span.set_attributes(attributes)
            span.end()

    def start_case(self, case_id: str) -> Any:
        """Open a case span (None when tracing is off)."""
        if self._tracer is None:
            return None
        parent = None if self._run_span is None else self._trace.set_span_in_context(self._run_span)
        return self._tracer.start_span(
            "agentjudge.case", context=parent, attributes={"agentjudge.case.id": case_id}
        )

    def end_case(self, span: Any, verdict: Verdict | None, error: str | None) -> None:
        """Close a case span, with one child span per judge result."""
        if span is None or self._tracer is None:
            return
        end_ns = time.time_ns()
        if verdict is not None:
            span.set_attribute("agentjudge.verdict.status", verdict.judgment.status.value)
            parent = self._trace.set_span_in_context(span)
            for result in verdict.results:
                attrs: dict[str, Any] = {
                    "agentjudge.judge.name": result.name,
                    "agentjudge.judge.attempts": result.attempts,
                    "agentjudge.judge.queued_s": result.queued_s,
                    "agentjudge.judge.status": "unsampled"
                    if result.judgment is None
                    else result.judgment.status.value,
                }
                if result.score is not None:
                    attrs["agentjudge.judge.score"] = result.score
                if result.error_type is not None:
                    attrs["agentjudge.judge.error_type"] = result.error_type
                if result.tier is not None:
                    attrs["agentjudge.judge.tier"] = result.tier
                child = self._tracer.start_span(
                    "agentjudge.judge",
                    context=parent,
                    start_time=end_ns - int(result.duration_s * 1e9),
                    attributes=attrs,
                )
                child.end(end_time=end_ns)
        if error is not None:
            span.set_attribute("agentjudge.case.error", error)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error))
        span.end(end_time=end_ns)

"""Deterministic judges for testing your own juries, cascades and evaluators."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from agentjudge.core import Context, Judgment
from agentjudge.exceptions import RetryableError
from agentjudge.judging import JudgeKind, coerce_judgment

__all__ = ["ConcurrencyProbe", "ScriptedJudge"]


class ConcurrencyProbe:
    """Counts calls in flight across every judge that shares it.

    Attributes:
        in_flight: Calls running now.
        max_in_flight: The most calls that ever ran at once.
    """

    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0

    def enter(self) -> None:
        """Record a call starting."""
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def exit(self) -> None:
        """Record a call ending."""
        self.in_flight -= 1


class ScriptedJudge:
    """A judge that answers from a script.

    Args:
        judgment: What to answer: a Judgment (or bool / float), or a sequence answered in
            order, the last one repeating.
        latency: Seconds to wait before answering (0: answer without suspending).
        fail_times: Raise ``error`` on the first ``fail_times`` calls, then answer.
        error: The exception (instance or class) to raise; default `RetryableError`.
        hang: Never answer (wait until cancelled).
        name: The judge name.
        gate: Wait for this event before answering (order tests without sleeps).
        probe: A `ConcurrencyProbe` shared by judges whose concurrency you assert.
        resource: The Evaluator limit the judge draws on.
        metric_key: Metric key reported in results.
        sampling_rate: Default sampling rate.
        kind: Judge kind.

    Attributes:
        calls: Number of calls started.
        completed: Calls that returned a judgment.
        cancelled: Calls that were cancelled.
        contexts: Every context received, in call order.
        started: Set when the first call starts.
    """

    def __init__(
        self,
        judgment: Judgment | bool | float | Sequence[Judgment | bool | float] = True,
        *,
        latency: float = 0.0,
        fail_times: int = 0,
        error: BaseException | type[BaseException] | None = None,
        hang: bool = False,
        name: str = "scripted",
        gate: anyio.Event | None = None,
        probe: ConcurrencyProbe | None = None,
        resource: str | None = None,
        metric_key: str | None = None,
        sampling_rate: float | None = None,
        kind: JudgeKind = JudgeKind.DETERMINISTIC,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0, got {latency}")
        if fail_times < 0:
            raise ValueError(f"fail_times must be >= 0, got {fail_times}")
        script = (
            list(judgment)
            if isinstance(judgment, Sequence) and not isinstance(judgment, str)
            else [judgment]
        )
        if not script:
            raise ValueError("judgment script must not be empty")
        self._script = [coerce_judgment(j, name) for j in script]
        self.latency = latency
        self.fail_times = fail_times
        self.error = error if error is not None else RetryableError("scripted failure")
        self.hang = hang
        self.name = name
        self.gate = gate
        self.probe = probe
        self.resource = resource
        self.metric_key = metric_key
        self.sampling_rate = sampling_rate
        self.kind = kind
        self.description = "scripted test judge"
        self.calls = 0
        self.completed = 0
        self.cancelled = 0
        self.contexts: list[Context] = []
        self.started = anyio.Event()

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Answer from the script (after the configured latency, failures and gate)."""
        index = self.calls
        self.calls += 1
        self.contexts.append(ctx)
        self.started.set()
        if self.probe is not None:
            self.probe.enter()
        try:
            if index < self.fail_times:
                if self.latency:
                    await anyio.sleep(self.latency)
                error = self.error
                raise (
                    error
                    if isinstance(error, BaseException)
                    else error(f"scripted failure {index + 1} of {self.fail_times}")
                )
            if self.hang:
                await anyio.sleep_forever()
            if self.gate is not None:
                await self.gate.wait()
            if self.latency:
                await anyio.sleep(self.latency)
            answer = self._script[min(index - self.fail_times, len(self._script) - 1)]
            self.completed += 1
            return answer
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        finally:
            if self.probe is not None:
                self.probe.exit()

    def __repr__(self) -> str:
        return f"ScriptedJudge({self.name!r}, calls={self.calls})"

"""Time a judge spends waiting for capacity inside its own call (e.g. a model client's rate limit).

The engine measures the time a leaf waits for its slots (``JudgeResult.queued_s``) and the time
the judge works (``duration_s``). A model client that waits for rate-limit capacity inside the
judge's call reports that wait with `add_queued`; the engine then counts it as queueing, not as
the judge's working time. Outside an engine attempt `add_queued` does nothing.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["QueueClock", "add_queued", "queue_clock"]


class QueueClock:
    """Seconds reported as queueing during one attempt."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


queue_clock: ContextVar[QueueClock | None] = ContextVar("agentjudge_queue_clock", default=None)
"""The clock of the attempt running in this task (set by the engine around each attempt)."""


def add_queued(seconds: float) -> None:
    """Report ``seconds`` spent waiting for capacity inside the current judge call."""
    clock = queue_clock.get()
    if clock is not None and seconds > 0:
        clock.seconds += seconds

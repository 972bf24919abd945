"""Time limits: per-judge attempt timeouts and per-evaluation deadlines (one place for both).

* **Timeouts** bound each attempt of one judge. A judge's timeout is, first match wins: the
  Evaluator's ``timeouts[name]``, the judge's own ``attempt_timeout`` attribute, the
  Evaluator's ``timeout``. `resolve_timeouts` fixes them per leaf when the Evaluator is built
  (unknown names are a ValueError, as for ``limits``); the leaf boundary
  (`agentjudge.engine._leaf`) arms them.
* **Deadlines** bound a whole evaluation (``evaluate(..., deadline=)``, ``verdict(...,
  deadline=)``, ``submit(..., deadline=)``, ``offer(..., deadline=)``): no attempt, retry
  wait, rate-limit wait or slot wait outlives it. Each judge still running when it passes is
  ERROR ``TimeoutError`` saying the evaluation's deadline fired (the leaf boundary's deadline
  scope); `execute_until` bounds what is left (voting, callbacks) ``BACKSTOP_S`` later (or,
  for an evaluation that starts after its deadline, ``BACKSTOP_S`` after it starts) and, if
  it had to cut the evaluation itself short, returns an ERROR verdict saying so, with the
  results recorded by then.

Both errors name the limit that fired: ``judge 'x' timed out after 2 s (timeouts['x'],
attempt 1)`` or ``judge 'x' ran out of the evaluation's deadline (5 s) after 2 attempts``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

import anyio

from agentjudge.core import Judgment, Verdict
from agentjudge.engine._knobs import check_seconds
from agentjudge.engine._plan import Leaf
from agentjudge.engine._state import RunState

__all__ = ["BACKSTOP_S", "deadline_error", "execute_until", "resolve_timeouts"]

BACKSTOP_S = 0.05
"""How long after the deadline the evaluation as a whole is cancelled (see `execute_until`)."""


def resolve_timeouts(
    leaves: Sequence[Leaf],
    default: float | None,
    timeouts: Mapping[str, float | None] | None,
) -> tuple[tuple[float | None, ...], tuple[str, ...]]:
    """Each leaf's attempt timeout (None: none) and where it came from, in leaf order.

    Args:
        leaves: The plan's leaves (each carries its judge's ``attempt_timeout``).
        default: The Evaluator's ``timeout``.
        timeouts: The Evaluator's ``timeouts`` (judge name -> seconds, None: no timeout).

    Raises:
        ValueError: ``timeouts`` names an unknown judge, or a value is not seconds > 0.
    """
    timeouts = dict(timeouts or {})
    names = [leaf.name for leaf in leaves]
    unknown = sorted(set(timeouts) - set(names))
    if unknown:
        raise ValueError(
            f"timeouts names unknown judges {unknown}; known judges: {sorted(names) or 'none'}"
        )
    values: list[float | None] = []
    sources: list[str] = []
    for leaf in leaves:
        if leaf.name in timeouts:
            where = f"timeouts[{leaf.name!r}]"
            given = timeouts[leaf.name]
            values.append(None if given is None else check_seconds(where, given))
            sources.append(where)
            continue
        if leaf.attempt_timeout is not None:
            where = f"judge {leaf.name!r}: attempt_timeout"
            values.append(check_seconds(where, leaf.attempt_timeout))
            sources.append("its attempt_timeout")
            continue
        values.append(default)
        sources.append("the evaluator's timeout")
    return tuple(values), tuple(sources)


def deadline_error(leaf: Leaf, run: RunState, attempts: int) -> TimeoutError:
    """The failure of a judge cut short by its evaluation's deadline."""
    made = "before its first attempt" if attempts == 0 else f"after {_attempts(attempts)}"
    return TimeoutError(
        f"judge {leaf.name!r} ran out of the evaluation's deadline ({run.deadline_s:g} s) {made}"
    )


def _attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


async def execute_until(
    execute: Callable[[RunState], Awaitable[Verdict]], run: RunState, at: float, seconds: float
) -> Verdict:
    """Run ``execute(run)`` with the deadline ``at`` (``anyio.current_time()`` clock).

    ``seconds`` is the deadline as the caller gave it (for messages).
    """
    run.deadline, run.deadline_s = at, seconds
    # Every judge (and its wait for a slot) runs in a scope with the deadline itself and
    # records its TimeoutError; this scope is a backstop for the rest, a moment later so that
    # those records are made first. An evaluation that starts late (a background offer whose
    # worker was busy past the deadline) still gives its judges that moment to record theirs.
    with anyio.CancelScope(deadline=max(at, anyio.current_time()) + BACKSTOP_S):
        return await execute(run)
    return Verdict.fast(  # the deadline cut the evaluation itself short
        judgment=Judgment.errored(
            f"TimeoutError: the evaluation's deadline ({seconds:g} s) expired before it finished"
        ),
        results=tuple(r for r in run.results if r is not None),
        tiers=tuple(run.tiers),
    )

"""Statistics of agreement and of proportions (standard library only).

```python
from agentjudge.agreement import wilson_interval

wilson_interval(81, 263)        # (0.2553..., 0.3662...): 95% interval of 81/263
wilson_interval(30, 30)         # (0.8865..., 1.0): 30 passes out of 30 is not proof of 100%
```
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["wilson_interval"]


def _check_count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number (int), got {value!r}")
    return value


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n`` (Wilson, 1927).

    Unlike a bootstrap or the normal (Wald) interval it is never degenerate: 30 successes out
    of 30 give about ``(0.886, 1.0)`` at 95%, not ``(1.0, 1.0)``, so a gate on the lower bound
    does not pass on a small sample. With ``z`` the standard normal quantile
    ``NormalDist().inv_cdf(1 - (1 - confidence) / 2)`` and ``p = successes / n``::

        centre = (p + z**2 / (2 n)) / (1 + z**2 / n)
        half   = z / (1 + z**2 / n) * sqrt(p (1 - p) / n + z**2 / (4 n**2))

    Args:
        successes: How many of the ``n`` trials succeeded, 0 <= successes <= n.
        n: How many trials, >= 1.
        confidence: Coverage, strictly between 0 and 1.

    Returns:
        ``(low, high)`` within [0, 1]; ``low`` is exactly 0.0 when ``successes`` is 0 and
        ``high`` exactly 1.0 when ``successes`` is ``n``.

    Raises:
        ValueError: ``n`` < 1, ``successes`` outside [0, n], either not an int, or
            ``confidence`` not strictly between 0 and 1.
    """
    n = _check_count(n, "n")
    successes = _check_count(successes, "successes")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within [0, n] = [0, {n}], got {successes}")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise ValueError(f"confidence must be a number within (0, 1), got {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high

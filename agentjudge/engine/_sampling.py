"""Consistent sampling for online evaluation: a key's hash decides, the same in every process.

A request offered with a key (a trace id, a conversation id, a user id) is mapped to a point
``u`` in [0, 1) by a hash that depends on nothing but the key (and an optional salt)::

    digest = blake2b(key.encode("utf-8"), digest_size=8, key=salt).digest()
    u = int.from_bytes(digest, "big") / 2**64

The request is sampled iff ``u < rate``, so the same keys are sampled in every process, after
every restart and by every judge; lowering a rate keeps a subset of the keys sampled before.
A judge with its own rate runs iff ``u < rate * judge_rate`` (judge rates are fractions of the
sampled requests, so a judge at 0.5 sees the same half of them everywhere). The decision is
made once per request, at offer time, so a cascade's tiers all agree on it. Without a key, ``u``
comes from the random source (``random.Random``): sampled at the same rates, but not
reproducibly.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from hashlib import blake2b

from agentjudge.engine._knobs import check_rate

__all__ = ["Sampler", "key_point"]

_SCALE = 2.0**-64


def key_point(key: str, salt: bytes = b"") -> float:
    """The point in [0, 1) a key maps to (see the module docstring for the exact function)."""
    digest = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8, key=salt).digest()
    return int.from_bytes(digest, "big") * _SCALE


class Sampler:
    """Decides which offered requests, and which of their judges, are evaluated.

    Args:
        judge_names: The evaluator's judges, in configured order.
        sample_rate: Fraction of requests evaluated.
        route_rates: Per route (the ``route=`` of an offer), a rate used instead of
            ``sample_rate``.
        judge_rates: Per judge name, the fraction of sampled requests that judge runs on.
        salt: Mixed into the hash: another salt samples another (independent) subset.
        rng: The random source for requests offered without a key.

    Raises:
        ValueError: a rate outside [0, 1], a judge name the evaluator does not have, a salt
            longer than 64 bytes.
    """

    __slots__ = ("_judges", "_random", "_routes", "rate", "salt")

    def __init__(
        self,
        judge_names: Sequence[str],
        *,
        sample_rate: float = 1.0,
        route_rates: Mapping[str, float] | None = None,
        judge_rates: Mapping[str, float] | None = None,
        salt: str | bytes = b"",
        rng: random.Random | None = None,
    ) -> None:
        self.rate = check_rate(sample_rate, "sample_rate")
        self._routes = {
            str(k): check_rate(v, f"route_rates[{k!r}]") for k, v in (route_rates or {}).items()
        }
        judge_rates = dict(judge_rates or {})
        unknown = sorted(set(judge_rates) - set(judge_names))
        if unknown:
            raise ValueError(
                f"judge_rates names unknown judges {unknown}; known judges: "
                f"{sorted(judge_names) or 'none'}"
            )
        rates = [check_rate(judge_rates.get(n, 1.0), f"judge_rates[{n!r}]") for n in judge_names]
        self._judges: tuple[float, ...] | None = (
            tuple(rates) if any(r < 1.0 for r in rates) else None
        )
        self.salt = salt.encode("utf-8") if isinstance(salt, str) else bytes(salt)
        if len(self.salt) > 64:
            raise ValueError(f"the sampling salt must be at most 64 bytes, got {len(self.salt)}")
        self._random = (rng or random.Random()).random

    def route_rate(self, route: str | None) -> float:
        """The base rate of a route (``sample_rate`` for None and routes without their own)."""
        if route is None or not self._routes:
            return self.rate
        return self._routes.get(route, self.rate)

    def point(self, key: str | None) -> float:
        """The request's point in [0, 1): the key's hash, or a random draw without a key."""
        if key is None:
            return self._random()
        return key_point(key, self.salt)

    @property
    def per_judge(self) -> bool:
        """Whether some judge runs on fewer requests than the request rate."""
        return self._judges is not None

    def judges(self, u: float, rate: float) -> tuple[bool, ...] | None:
        """Which judges run on a request sampled at ``rate`` with point ``u`` (None: all)."""
        if self._judges is None:
            return None
        return tuple(u < rate * r for r in self._judges)

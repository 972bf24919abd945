"""Values of every shape a JSON encoder meets, for the encoders' equivalence properties.

`agentjudge.models._json.dumps` (request bodies) and `agentjudge.models._schema._canonical`
(a schema's cache key) each use a C encoder built once and are pinned to the standard
encoder by property tests drawing from these: non-ASCII text and lone surrogates, huge
integers and an int subclass, NaN and infinities, tuples, keys of mixed types (sorting them
fails), and values JSON cannot hold.
"""

from __future__ import annotations

import enum

from hypothesis import strategies as st

__all__ = ["KEYS", "SCALARS", "VALUES", "Level"]


class Level(enum.IntEnum):
    """An int subclass: the encoders write its int value."""

    LOW = 1


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2),
    st.just(Level.LOW),
    st.sampled_from([object(), b"bytes", {1, 2}]),  # not JSON: a TypeError either way
)
KEYS = st.one_of(
    st.text(max_size=5), st.integers(), st.floats(allow_nan=True), st.booleans(), st.none()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(KEYS, inner, max_size=4)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)  # sortable: no key clash
    ),
    max_leaves=12,
)

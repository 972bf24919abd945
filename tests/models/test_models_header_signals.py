"""`header_signals` lowers the names once and answers header-less responses at once (issue 19.11).

It is read for every answer of an adaptive client; these property tests pin it to the
straightforward reading, ``CapacitySignals(parse_retry_after(h), parse_rate_hints(h))``, for
header sets with and without the names it reads, in any case, with hostile values.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from agentjudge.models._headers import (
    _SIGNAL_HEADERS,
    CapacitySignals,
    header_signals,
    parse_rate_hints,
    parse_retry_after,
)

# Each name in any case: bit i of the drawn mask upper-cases letter i (one draw per name, where
# a boolean per letter made drawing most of these tests' time). The mask has a bit for every
# letter of the longest name (the bits past a shorter name's end are not read): one strategy
# for all names, where a flatmap made and checked a new one at every draw.
_LONGEST = max(len(name) for name in _SIGNAL_HEADERS)
NAMES = st.tuples(st.sampled_from(sorted(_SIGNAL_HEADERS)), st.integers(0, 2**_LONGEST - 1)).map(
    lambda drawn: "".join(c.upper() if drawn[1] >> i & 1 else c for i, c in enumerate(drawn[0]))
)
OTHER_NAMES = st.sampled_from(["content-type", "Server", "x-request-id", "Retry-After-X", "date"])
VALUES = st.one_of(
    st.sampled_from(["0", "1", "5", " 7 ", "1_0", "1e3", "0.5", "inf", "nan", "-1", "", "abc"]),
    st.sampled_from(["6m0s", "1s", "20ms", "0.5s", "1h", "1" + "0" * 306 + "h", "99999999"]),
    st.sampled_from(["Wed, 21 Oct 2015 07:28:00 GMT", "2015-10-21T07:28:00Z", "1e-300"]),
    st.text(max_size=6),
)
HEADERS = st.dictionaries(st.one_of(NAMES, OTHER_NAMES), VALUES, max_size=6)


def _straightforward(headers: object) -> CapacitySignals:
    return CapacitySignals(parse_retry_after(headers), parse_rate_hints(headers))  # type: ignore[arg-type]


@settings(max_examples=300)
@given(headers=HEADERS)
def test_header_signals_equals_reading_each_header_family(headers: dict[str, str]) -> None:
    """Same retry-after and rate hints as the two parsers, each lowering the names itself."""
    assert header_signals(headers) == _straightforward(headers)


@settings(max_examples=100)
@given(pairs=st.lists(st.tuples(st.one_of(NAMES, OTHER_NAMES), VALUES), max_size=6))
def test_header_signals_equals_on_aiohttp_headers(pairs: list[tuple[str, str]]) -> None:
    """aiohttp's case-insensitive multidict (repeated names too), as the transport hands it."""
    headers = CIMultiDictProxy(CIMultiDict(pairs))
    assert header_signals(headers) == _straightforward(headers)


def test_an_answer_without_capacity_headers_has_no_signals() -> None:
    """The common answer: no wait asked, no budget reported."""
    plain = {"Content-Type": "application/json", "Content-Length": "323", "Server": "x"}
    assert header_signals(plain) == CapacitySignals(None, None)
    assert header_signals({"RETRY-AFTER": "2"}).retry_after == 2.0

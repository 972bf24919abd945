"""The plain judge's verdict reading without per-call detours (issue 19.11).

`read_verdict` decides whether an answer is JSON with one regex match instead of
``text.lstrip().startswith(("{", "```"))``: for any text (every kind of Unicode space
included) both say the same.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentjudge.judges._verdict import _JSON_START

_SPACES = "".join(chr(c) for c in range(0x3100) if chr(c).isspace()) + "\u3000\ufeff\u200b"


@given(
    st.text(alphabet=st.sampled_from(_SPACES), max_size=4),
    st.text(alphabet=st.sampled_from("{`a \n"), max_size=4),
)
def test_the_json_start_is_lstrip_then_startswith(spaces: str, rest: str) -> None:
    text = spaces + rest
    assert bool(_JSON_START.match(text)) == text.lstrip().startswith(("{", "```"))

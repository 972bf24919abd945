"""A structured answer is decoded by the JSON scanner alone, exactly as before (issue 19.11).

`agentjudge.models._schema.decode_json_object` reads every structured answer. It decoded the
text with ``JSONDecoder.decode`` (Python layers around the C scanner); a text that the scanner
reads whole from its start is now taken from the scanner directly, and the code-fence pattern
is tried only on a text that begins like a fence. Pinned here to the way before: the same
value (types included) or the same `SchemaViolation`, for answers of every shape (fences,
whitespace around and inside, a byte-order mark, NaN and infinities, text after the value,
unterminated values, non-objects).
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentjudge.models import _schema
from agentjudge.models._schema import SchemaViolation, decode_json_object

BEFORE = json.JSONDecoder(parse_constant=_schema._reject_constant)


def _before(text: str) -> dict[str, Any]:
    """decode_json_object as it was."""
    stripped = text.strip()
    fenced = _schema._FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        bom = stripped.startswith("\ufeff")
        value = json.loads(stripped) if bom else BEFORE.decode(stripped)
    except ValueError as exc:
        raise SchemaViolation(f"the answer is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise SchemaViolation(f"the answer must be a JSON object, got {_schema._kind(value)}")
    return value


def _outcome(read: Any, text: str) -> tuple[str, str]:
    try:
        return "value", repr(read(text))  # repr: 1, 1.0 and True differ
    except (ValueError, RecursionError) as exc:
        return "error", f"{type(exc).__name__}: {exc}"


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
SPACE = st.sampled_from(["", " ", "\n", "\t \r\n", "\u00a0", "\ufeff", "\x0b"])
TAIL = st.sampled_from(["", "x", "}", " {}", "\n```", ",", "]"])


@st.composite
def answers(draw: st.DrawFn) -> str:
    body = json.dumps(draw(JSON), indent=draw(st.sampled_from([None, 1])))
    if draw(st.booleans()):
        body = body[: draw(st.integers(0, len(body)))]  # cut off
    text = draw(SPACE) + body + draw(TAIL) + draw(SPACE)
    if draw(st.booleans()):
        text = f"```{draw(st.sampled_from(['', 'json']))}\n{text}\n```"
    return text


@settings(max_examples=300)
@example(text='{"passed": true, "reasoning": "matches"}')
@example(text=' {"a": 1} ')
@example(text='{"a": 1} {"b": 2}')
@example(text='{"a": NaN}')
@example(text='{"a": 1e400}')
@example(text="\ufeff{}")
@example(text='```json\n{"a": 1}\n```')
@example(text="")
@example(text="[1]")
@example(text='{"a": "\\ud800"}')
@given(text=answers() | st.text(max_size=12))
def test_answers_decode_as_before(text: str) -> None:
    """Same value (types included), or the same error."""
    assert _outcome(decode_json_object, text) == _outcome(_before, text)


def test_a_deep_answer_fails_as_before() -> None:
    """Nested past the recursion limit: the same error either way."""
    text = "[" * 100_000 + "]" * 100_000
    assert _outcome(decode_json_object, text) == _outcome(_before, text)


def test_the_w4_answer_is_read() -> None:
    """W4's structured answer: its object, with an int and a float kept apart."""
    assert decode_json_object('{"passed": true, "n": 1, "x": 1.0}') == {
        "passed": True,
        "n": 1,
        "x": 1.0,
    }
    assert type(decode_json_object('{"x": 1.0}')["x"]) is float
    assert math.isinf(decode_json_object('{"x": 1e400}')["x"])

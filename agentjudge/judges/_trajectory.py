"""Agent trajectories: reading them from a context, comparing tool arguments, `TrajectoryMatch`.

A trajectory is the sequence of messages an agent produced: assistant messages with their tool
calls, tool results, the final answer. Judges read the agent's trajectory from
``ctx.messages``, or, when that is empty, from ``ctx.output`` when it is a sequence of messages
or a mapping with ``"messages"`` (`actual_trajectory`); a reference trajectory comes from
``ctx.expected`` in the same forms (`reference_trajectory`). Messages may be `Message` objects,
their JSON dicts, OpenAI chat-format dicts or objects with the same attributes. A message that
cannot be read (a tool call without a name, arguments that are not a JSON object) raises
`TrajectoryError` naming its 0-based index, which judges report as an ERROR judgment.

Tool arguments are compared as JSON values (`json_equal`): ``1 == 1.0`` but ``true != 1``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agentjudge.core import (
    Context,
    Judgment,
    Message,
    ToolCall,
    TrajectoryError,
    as_trajectory,
    thaw,
)
from agentjudge.judges._paths import DeterministicJudge
from agentjudge.judges._trajectory_diff import (
    DIFF_KEY,
    differing,
    json_equal,
    located_steps,
    paired_diff,
    stepwise_diff,
    tool_call_steps,
)

__all__ = [
    "ARGS_MODES",
    "TRAJECTORY_MODES",
    "ArgsMatcher",
    "TrajectoryError",
    "TrajectoryMatch",
    "actual_trajectory",
    "args_matcher",
    "as_trajectory",
    "json_equal",
    "located_calls",
    "reference_trajectory",
    "show_call",
]

TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")
"""The ways `TrajectoryMatch` compares a trajectory with its reference."""
ARGS_MODES = ("exact", "ignore", "subset", "superset")
"""The ways tool-call arguments are compared."""

ArgsMatcher = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""``matcher(actual_arguments, reference_arguments) -> bool``."""
ArgsOverride = str | Sequence[str] | ArgsMatcher
"""Per-tool argument comparison: an `ARGS_MODES` word, key paths, or a matcher."""


# --------------------------------------------------------------------------- reading


def actual_trajectory(ctx: Context) -> tuple[Message, ...]:
    """The agent's trajectory: ``ctx.messages``, else the messages ``ctx.output`` holds.

    Empty when neither holds any.

    Raises:
        TrajectoryError: ``ctx.output`` holds a message that cannot be read.
    """
    if ctx.messages:
        return ctx.messages
    return as_trajectory(ctx.output) or ()


def reference_trajectory(ctx: Context) -> tuple[Message, ...] | None:
    """The reference trajectory in ``ctx.expected`` (None: there is none).

    Raises:
        TrajectoryError: ``ctx.expected`` holds a message that cannot be read.
    """
    return as_trajectory(ctx.expected, "reference")


def located_calls(messages: Sequence[Message]) -> Iterator[tuple[int, int, ToolCall]]:
    """Every tool call with its message index and its index within the message, in order."""
    for i, message in enumerate(messages):
        for j, call in enumerate(message.tool_calls):
            yield i, j, call


def show_call(call: ToolCall, limit: int = 200) -> str:
    """``name({"arg": ...})``, cut to about ``limit`` characters."""
    text = str(call)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- arguments


def _exact(actual: Mapping[str, Any], reference: Mapping[str, Any]) -> bool:
    return json_equal(actual, reference)


def _ignore(actual: Mapping[str, Any], reference: Mapping[str, Any]) -> bool:
    return True


def _within(small: Mapping[str, Any], big: Mapping[str, Any]) -> bool:
    return all(key in big and json_equal(value, big[key]) for key, value in small.items())


def _subset(actual: Mapping[str, Any], reference: Mapping[str, Any]) -> bool:
    return _within(actual, reference)


def _superset(actual: Mapping[str, Any], reference: Mapping[str, Any]) -> bool:
    return _within(reference, actual)


_BY_MODE: dict[str, ArgsMatcher] = {
    "exact": _exact,
    "ignore": _ignore,
    "subset": _subset,
    "superset": _superset,
}
_ABSENT = object()


def _at_path(value: object, path: str) -> object:
    """The value at a dotted key path (``"a.b"``; a number indexes a list), or `_ABSENT`."""
    for part in path.split("."):
        if isinstance(value, Mapping):
            value = value.get(part, _ABSENT)
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _ABSENT
        if value is _ABSENT:
            return value
    return value


def _on_paths(paths: tuple[str, ...]) -> ArgsMatcher:
    def matcher(actual: Mapping[str, Any], reference: Mapping[str, Any]) -> bool:
        for path in paths:
            mine, theirs = _at_path(actual, path), _at_path(reference, path)
            if (mine is _ABSENT) != (theirs is _ABSENT) or not json_equal(mine, theirs):
                return False
        return True

    return matcher


def _check_mode(value: object, what: str) -> str:
    if not isinstance(value, str) or value not in ARGS_MODES:
        raise ValueError(f"{what} must be one of {', '.join(ARGS_MODES)}; got {value!r}")
    return value


def args_matcher(override: ArgsOverride, what: str = "args") -> ArgsMatcher:
    """The matcher an argument-comparison setting stands for.

    Args:
        override: An `ARGS_MODES` word, a sequence of key paths (``"a.b"``) whose values must
            be equal (missing on both sides counts as equal), or a callable
            ``(actual_arguments, reference_arguments) -> bool``.
        what: Names the setting in errors.

    Raises:
        ValueError: an unknown word, an empty or blank key path, or another type.
    """
    if isinstance(override, str):
        return _BY_MODE[_check_mode(override, what)]
    if callable(override):
        return override
    if isinstance(override, Sequence):
        paths = tuple(override)
        if not paths or not all(isinstance(p, str) and p.strip() for p in paths):
            raise ValueError(f"{what}: key paths must be non-blank strings, got {override!r}")
        return _on_paths(paths)
    raise ValueError(
        f"{what} must be one of {', '.join(ARGS_MODES)}, a list of key paths or a callable; "
        f"got {type(override).__name__}"
    )


# --------------------------------------------------------------------------- matching


def max_matching(compatible: Sequence[Sequence[bool]], right: int) -> list[int | None]:
    """A maximum one-to-one matching of a bipartite graph (Kuhn's augmenting paths).

    Starts from a greedy matching and augments only where it fell short; iterative, so long
    trajectories cannot exhaust the recursion limit.

    Args:
        compatible: ``compatible[i][j]``: left item ``i`` may pair with right item ``j``.
        right: How many right items there are.

    Returns:
        For each left item, the right item it is paired with, or None.
    """
    edges = [[j for j in range(right) if row[j]] for row in compatible]
    owner: list[int | None] = [None] * right
    paired: list[int | None] = [None] * len(edges)
    for i, options in enumerate(edges):
        free = next((j for j in options if owner[j] is None), None)
        if free is not None:
            owner[free], paired[i] = i, free
    for i, j in enumerate(paired):
        if j is None:
            _augment(i, edges, owner, paired)
    return paired


def _augment(
    start: int, edges: Sequence[Sequence[int]], owner: list[int | None], paired: list[int | None]
) -> None:
    """Extend the matching by one alternating path from ``start``, if one exists."""
    seen = [False] * len(owner)
    stack = [[start, 0]]  # [left item, index of the next edge to try]
    path: list[tuple[int, int]] = []  # the edge leaving each stacked item but the top
    while stack:
        frame = stack[-1]
        left, k = frame
        options = edges[left]
        while k < len(options) and seen[options[k]]:
            k += 1
        if k == len(options):
            stack.pop()
            if path:
                path.pop()
            continue
        frame[1] = k + 1
        j = options[k]
        seen[j] = True
        path.append((left, j))
        holder = owner[j]
        if holder is None:
            for item, taken in path:
                owner[taken], paired[item] = item, taken
            return
        stack.append([holder, 0])


class _Mismatch(Exception):
    """The first difference found (its message is the judgment's reasoning)."""


class TrajectoryMatch(DeterministicJudge):
    """Does the agent's trajectory match the reference trajectory?

    The trajectory is ``ctx.messages`` (or the messages ``ctx.output`` holds), the reference the
    messages ``ctx.expected`` holds (see the module docs). Modes:

    * ``"strict"``: the same number of messages with the same roles in order; a message has tool
      calls iff its reference counterpart has, the same number of them, with the same names in
      order and arguments matching. Contents are not compared.
    * ``"unordered"``: the two trajectories' tool calls pair up one to one, in any order.
    * ``"subset"``: every tool call of the agent pairs with a distinct reference call (the agent
      did nothing the reference does not do).
    * ``"superset"``: every reference tool call pairs with a distinct call of the agent (the
      agent did at least what the reference does).

    Calls pair when their names are equal and their arguments match under ``args``: ``"exact"``
    (equal JSON), ``"ignore"``, ``"subset"`` (every actual key/value is in the reference's) or
    ``"superset"`` (every reference key/value is in the actual's). ``overrides`` sets it per
    tool name: one of those words, a list of key paths (``"a.b"``) whose values must be equal,
    or a callable ``(actual_arguments, reference_arguments) -> bool``. The pairing is a maximum
    bipartite matching, so a call that could pair with several is never used up greedily.

    PASS (score 1.0) or FAIL (score 0.0) with the first mismatch as reasoning (a FAIL carries
    the expected vs actual tool calls in ``metadata["tool_call_diff"]``, see
    `agentjudge.judges._trajectory_diff`, which reports render); ERROR when there
    is no reference, a message cannot be read (naming its index), or an override raises.

    Args:
        mode: ``"strict"``, ``"unordered"``, ``"subset"`` or ``"superset"``.
        args: How arguments are compared by default.
        overrides: Per tool name, how its arguments are compared instead.
        name: Judge name (default ``"TrajectoryMatch"``).

    Raises:
        ValueError: an unknown mode or args word, or a bad override.
    """

    def __init__(
        self,
        mode: str = "strict",
        *,
        args: str = "exact",
        overrides: Mapping[str, ArgsOverride] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name, description="The agent's tool calls match the reference")
        if not isinstance(mode, str) or mode not in TRAJECTORY_MODES:
            raise ValueError(f"mode must be one of {', '.join(TRAJECTORY_MODES)}; got {mode!r}")
        self.mode = mode
        self.args = _check_mode(args, "args")
        self._default = _BY_MODE[self.args]
        self._overrides = {
            tool: args_matcher(setting, f"overrides[{tool!r}]")
            for tool, setting in (overrides or {}).items()
        }

    def _matcher(self, tool: str) -> ArgsMatcher:
        return self._overrides.get(tool, self._default)

    def _args_match(self, actual: ToolCall, reference: ToolCall) -> bool:
        matcher = self._matcher(reference.name)
        try:
            return bool(matcher(actual.arguments, reference.arguments))
        except Exception as exc:
            raise _OverrideFailed(
                f"the argument comparison for tool {reference.name!r} raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Compare the trajectory with the reference (no I/O)."""
        try:
            actual = actual_trajectory(ctx)
            reference = reference_trajectory(ctx)
        except TrajectoryError as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        if reference is None:
            return Judgment.errored(
                f"{self.name}: no reference trajectory: ctx.expected must be a list of "
                "messages or a mapping with 'messages'"
            )
        try:
            if self.mode == "strict":
                self._strict(actual, reference)
            else:
                self._paired(actual, reference)
        except _OverrideFailed as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        except _Mismatch as exc:
            facts = self._facts(actual, reference)
            diff = self._diff(actual, reference)
            if diff is not None:
                facts[DIFF_KEY] = diff
            return Judgment.failed(str(exc), score=0.0, metadata=facts)
        calls = sum(len(m.tool_calls) for m in actual)
        return Judgment.passed(
            f"The trajectory matches the reference ({self._how()}; {calls} tool "
            f"call{'' if calls == 1 else 's'})",
            score=1.0,
            metadata=self._facts(actual, reference),
        )

    def _how(self) -> str:
        return f"mode={self.mode}, args={self.args}"

    def _facts(self, actual: Sequence[Message], reference: Sequence[Message]) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "args": self.args,
            "tool_calls": [c.name for _, _, c in located_calls(actual)],
            "reference_tool_calls": [c.name for _, _, c in located_calls(reference)],
        }

    def _strict(self, actual: Sequence[Message], reference: Sequence[Message]) -> None:
        for i, (mine, theirs) in enumerate(zip(actual, reference, strict=False)):
            if mine.role != theirs.role:
                raise _Mismatch(f"messages[{i}]: expected role {theirs.role!r}, got {mine.role!r}")
            self._same_calls(i, mine.tool_calls, theirs.tool_calls)
        if len(actual) != len(reference):
            first = min(len(actual), len(reference))
            longer, what = (
                (reference, "is missing") if first == len(actual) else (actual, "is extra")
            )
            raise _Mismatch(
                f"expected {len(reference)} messages, got {len(actual)}: messages[{first}] "
                f"(role {longer[first].role!r}) {what}"
            )

    def _same_calls(self, i: int, mine: Sequence[ToolCall], theirs: Sequence[ToolCall]) -> None:
        if len(mine) != len(theirs):
            raise _Mismatch(
                f"messages[{i}]: expected {_count_calls(theirs)}, got {_count_calls(mine)}"
            )
        for j, (call, ref) in enumerate(zip(mine, theirs, strict=True)):
            if call.name != ref.name:
                raise _Mismatch(
                    f"messages[{i}] tool call {j}: expected {ref.name!r}, got {call.name!r}"
                )
            if not self._args_match(call, ref):
                raise _Mismatch(
                    f"messages[{i}] tool call {j} {ref.name!r}: arguments "
                    f"{_args(call)} do not match the reference {_args(ref)} "
                    f"(args={self._args_word(ref.name)})"
                )

    def _same(self, call: ToolCall, reference: ToolCall) -> bool:
        return call.name == reference.name and self._args_match(call, reference)

    def _diff(
        self, actual: Sequence[Message], reference: Sequence[Message]
    ) -> dict[str, Any] | None:
        """The tool-call diff of a failing comparison (None: no call differs, or one raised)."""
        try:
            if self.mode == "strict":
                diff = stepwise_diff(
                    tool_call_steps(actual), tool_call_steps(reference), self._same
                )
            else:
                mine, theirs = located_steps(actual), located_steps(reference)
                compatible = [[self._same(c, r) for _, r in theirs] for _, c in mine]
                diff = paired_diff(
                    mine,
                    theirs,
                    max_matching(compatible, len(theirs)),
                    report_missing=self.mode != "subset",
                    report_extra=self.mode != "superset",
                )
        except _OverrideFailed:
            return None
        return differing(diff)

    def _args_word(self, tool: str) -> str:
        return self.args if tool not in self._overrides else "override"

    def _paired(self, actual: Sequence[Message], reference: Sequence[Message]) -> None:
        mine = list(located_calls(actual))
        theirs = list(located_calls(reference))
        compatible = [
            [call.name == ref.name and self._args_match(call, ref) for _, _, ref in theirs]
            for _, _, call in mine
        ]
        paired = max_matching(compatible, len(theirs))
        used = {j for j in paired if j is not None}
        if self.mode in ("unordered", "superset"):
            for j, (i, _, ref) in enumerate(theirs):
                if j not in used:
                    raise _Mismatch(
                        f"reference tool call {show_call(ref)} (reference messages[{i}]) has "
                        f"no matching call in the trajectory ({self._how()}; "
                        f"{len(mine)} vs {len(theirs)} tool calls)"
                    )
        if self.mode in ("unordered", "subset"):
            for k, (i, _, call) in enumerate(mine):
                if paired[k] is None:
                    raise _Mismatch(
                        f"tool call {show_call(call)} (messages[{i}]) matches no reference "
                        f"call ({self._how()}; {len(mine)} vs {len(theirs)} tool calls)"
                    )


class _OverrideFailed(Exception):
    """A user's argument comparison raised."""


def _count_calls(calls: Sequence[ToolCall]) -> str:
    if not calls:
        return "no tool calls"
    names = ", ".join(c.name for c in calls)
    return f"{len(calls)} tool call{'' if len(calls) == 1 else 's'} ({names})"


def _args(call: ToolCall) -> str:
    text = json.dumps(thaw(call.arguments), ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 200 else text[:199] + "…"

"""Deterministic agent judges over a trajectory's tool calls.

* `ToolSelection`: did the agent pick the expected tool at each step?
* `ToolArgumentsValid`: do the arguments of every call follow the tool's JSON schema?
* `StepEfficiency`: did the agent stay within a step (tool-call) or token budget, or the
  reference trajectory's number of steps?
* `ForbiddenTools`: did the agent call only what it was permitted to?

Each reads the trajectory like `TrajectoryMatch` (`agentjudge.judges._trajectory`); a message
that cannot be read is an ERROR judgment naming its index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentjudge.core import Check, Context, Judgment, Message, ToolCall, thaw
from agentjudge.judges._paths import DeterministicJudge
from agentjudge.judges._trajectory import (
    TrajectoryError,
    actual_trajectory,
    as_trajectory,
    located_calls,
    reference_trajectory,
    show_call,
)
from agentjudge.judges._trajectory_diff import DIFF_KEY, stepwise_diff, tool_call_steps
from agentjudge.models._schema import compiled_schema, validator_errors

__all__ = [
    "ForbiddenTools",
    "StepEfficiency",
    "ToolArgumentsValid",
    "ToolSelection",
    "tool_steps",
]

if TYPE_CHECKING:  # jsonschema loads with the first compiled schema
    from jsonschema.protocols import Validator


def tool_steps(messages: Sequence[Message]) -> list[tuple[str, ...]]:
    """The names of the tools each tool-calling assistant message called, in order."""
    return [tuple(c.name for c in m.tool_calls) for m in messages if m.tool_calls]


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "no step"


def _expected_steps(value: object) -> list[tuple[str, ...]] | None:
    """Expected tools per step from ``ctx.expected`` (None: it names none)."""
    if isinstance(value, Mapping) and "tools" in value:
        value = value["tools"]
    elif (messages := as_trajectory(value, "reference")) is not None:
        return tool_steps(messages)
    if not isinstance(value, list | tuple):
        return None
    steps: list[tuple[str, ...]] = []
    for i, entry in enumerate(value):
        names = (entry,) if isinstance(entry, str) else entry
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise TrajectoryError(
                f"expected tools[{i}] must be a tool name or a list of names, got {entry!r}"
            )
        steps.append(tuple(names))
    return steps


def _named_steps(steps: Sequence[Sequence[str]]) -> list[tuple[ToolCall, ...]]:
    return [tuple(ToolCall(name) for name in step) for step in steps]


def _same_tool(call: ToolCall, reference: ToolCall) -> bool:
    return call.name == reference.name


class ToolSelection(DeterministicJudge):
    """Did the agent choose the expected tool(s) at each step?

    A step is an assistant message that calls tools. The expected tools per step come from
    ``ctx.expected``: a list with one entry per step (a tool name, or a list of names for
    parallel calls, compared as a multiset), a mapping with such a list under ``"tools"``, or a
    reference trajectory (its tool-calling steps). The score is the share of steps that match,
    over the longer of the two step lists (an extra or a missing step counts as wrong); PASS iff
    score >= ``threshold``. One check per step; a FAIL carries the tool-call diff in
    ``metadata["tool_call_diff"]`` (`agentjudge.judges._trajectory_diff`).

    Args:
        threshold: The share of correct steps needed to pass (default 1.0: every step).
        name: Judge name (default ``"ToolSelection"``).
    """

    def __init__(self, *, threshold: float = 1.0, name: str | None = None) -> None:
        super().__init__(name, description="The agent chose the expected tool at each step")
        if isinstance(threshold, bool) or not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {threshold!r}")
        self.threshold = float(threshold)

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Compare the tools called per step with the expected ones."""
        try:
            messages = actual_trajectory(ctx)
            actual = tool_steps(messages)
            expected = _expected_steps(ctx.expected)
        except TrajectoryError as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        if expected is None:
            return Judgment.errored(
                f"{self.name}: no expected tools: ctx.expected must be a list of tool names per "
                "step, a mapping with 'tools', or a reference trajectory"
            )
        steps = max(len(actual), len(expected))
        checks = []
        for i in range(steps):
            got = actual[i] if i < len(actual) else ()
            want = expected[i] if i < len(expected) else ()
            ok = Counter(got) == Counter(want)
            message = f"expected {_listed(want)}, got {_listed(got)}"
            checks.append(Check(name=f"step {i + 1}", passed=ok, message=message))
        right = sum(c.passed for c in checks)
        score = right / steps if steps else 1.0
        wrong = next((c for c in checks if not c.passed), None)
        reasoning = f"{right} of {_plural(steps, 'step')} chose the expected tools" + (
            f"; first wrong: {wrong.name}: {wrong.message}" if wrong else ""
        )
        metadata: dict[str, Any] = {
            "steps": [list(s) for s in actual],
            "expected": [list(s) for s in expected],
        }
        if score >= self.threshold:
            return Judgment.passed(reasoning, score=score, checks=checks, metadata=metadata)
        reference = reference_trajectory(ctx)  # read above: cannot raise now
        metadata[DIFF_KEY] = stepwise_diff(
            tool_call_steps(messages),
            _named_steps(expected) if reference is None else tool_call_steps(reference),
            _same_tool,
        )
        return Judgment.failed(reasoning, score=score, checks=checks, metadata=metadata)


def _tool_schemas(tools: object, where: str) -> dict[str, Mapping[str, Any]]:
    """``{name: parameters schema}`` from a mapping or a list of tool definitions.

    A definition may be OpenAI's ``{"type": "function", "function": {"name", "parameters"}}``,
    Anthropic's ``{"name", "input_schema"}`` or ``{"name", "parameters"}``.
    """
    if isinstance(tools, Mapping):
        return {str(k): v for k, v in tools.items()}
    if not isinstance(tools, list | tuple):
        raise ValueError(f"{where} must be a mapping or a list of tool definitions")
    schemas: dict[str, Mapping[str, Any]] = {}
    for i, tool in enumerate(tools):
        spec = tool.get("function", tool) if isinstance(tool, Mapping) else None
        name = spec.get("name") if isinstance(spec, Mapping) else None
        if not isinstance(spec, Mapping) or not isinstance(name, str):
            raise ValueError(f"{where}[{i}] is not a tool definition with a name")
        schema = spec.get("parameters", spec.get("input_schema", {}))
        schemas[name] = schema if isinstance(schema, Mapping) else {}
    return schemas


def _compile_tools(tools: object, where: str) -> dict[str, Validator]:
    return {
        name: compiled_schema(schema, f"tool {name!r}")
        for name, schema in _tool_schemas(tools, where).items()
    }


class ToolArgumentsValid(DeterministicJudge):
    """Do the arguments of every tool call follow that tool's JSON schema?

    The schemas come from ``tools`` (fixed for every case) merged with
    ``ctx.metadata["tools"]`` (per case; wins on a name clash). Either may be a mapping
    ``{tool name: parameters schema}`` or a list of tool definitions in the OpenAI
    (``{"type": "function", "function": {"name", "parameters"}}``) or Anthropic
    (``{"name", "input_schema"}``) form. Schemas are validated with `jsonschema` (the same
    checker as structured output) and compiled once. A call of a tool with no schema fails
    unless ``unknown="ignore"``. Score: the share of valid calls (1.0 with no calls); PASS iff
    every call is valid. One check per call.

    Args:
        tools: The tool schemas (None: only per-case ones).
        unknown: ``"fail"`` (default) or ``"ignore"`` calls of tools without a schema.
        name: Judge name (default ``"ToolArgumentsValid"``).

    Raises:
        ValueError: a schema that is not a valid JSON schema (naming the tool), a bad
            ``unknown`` or tool list.
    """

    def __init__(
        self,
        tools: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]] | None = None,
        *,
        unknown: str = "fail",
        name: str | None = None,
    ) -> None:
        super().__init__(name, description="Tool-call arguments follow the tools' schemas")
        if unknown not in ("fail", "ignore"):
            raise ValueError(f"unknown must be 'fail' or 'ignore', got {unknown!r}")
        self.unknown = unknown
        self._validators = {} if tools is None else _compile_tools(tools, "tools")

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Validate each call's arguments against its tool's schema."""
        try:
            messages = actual_trajectory(ctx)
            validators = dict(self._validators)
            if "tools" in ctx.metadata:
                validators.update(_compile_tools(ctx.metadata["tools"], 'metadata["tools"]'))
        except (TrajectoryError, ValueError) as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        checks = [
            check
            for i, j, call in located_calls(messages)
            if (check := self._check(i, j, call, validators)) is not None
        ]
        if not checks:
            return Judgment.passed("No tool calls to check", score=1.0)
        valid = sum(c.passed for c in checks)
        bad = next((c for c in checks if not c.passed), None)
        reasoning = f"{valid} of {_plural(len(checks), 'tool call')} have valid arguments" + (
            f"; first invalid: {bad.name}: {bad.message}" if bad else ""
        )
        score = valid / len(checks)
        if bad is None:
            return Judgment.passed(reasoning, score=score, checks=checks)
        return Judgment.failed(reasoning, score=score, checks=checks)

    def _check(
        self, i: int, j: int, call: ToolCall, validators: Mapping[str, Validator]
    ) -> Check | None:
        label = f"messages[{i}] tool call {j} {call.name!r}"
        validator = validators.get(call.name)
        if validator is None:
            if self.unknown == "ignore":
                return None
            return Check(name=label, passed=False, message="no schema for this tool")
        errors = validator_errors(validator, thaw(call.arguments))
        return Check(name=label, passed=not errors, message="; ".join(errors))


def _total_tokens(ctx: Context) -> int | None:
    """Total tokens the run used: ``usage`` of the output, or a ``usage`` metadata entry."""
    candidates: list[object] = [_get(ctx.output, "usage"), ctx.metadata.get("usage")]
    for prefix in _BRIDGE_PREFIXES:
        candidates.append({k: ctx.metadata.get(f"{prefix}.usage.{k}") for k in _KEYS})
    for usage in candidates:
        if usage is None:
            continue
        total = _get(usage, "total_tokens")
        if isinstance(total, int) and not isinstance(total, bool):
            return total
        parts = [_get(usage, k) for k in ("input_tokens", "output_tokens")]
        if any(isinstance(p, int) and not isinstance(p, bool) for p in parts):
            return sum(p for p in parts if isinstance(p, int) and not isinstance(p, bool))
    return None


_KEYS = ("input_tokens", "output_tokens", "total_tokens")
_BRIDGE_PREFIXES = ("openai", "anthropic", "langchain", "agent", "cli")


def _get(value: object, key: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(key)
    return getattr(value, key, None)


def _budget(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an int >= 0 or None, got {value!r}")
    return value


class StepEfficiency(DeterministicJudge):
    """Did the agent reach its answer within budget?

    Steps are the trajectory's tool calls. The step budget is ``max_steps``, else
    ``ctx.metadata["max_steps"]``, else the number of tool calls of the reference trajectory in
    ``ctx.expected``; the token budget is ``max_tokens`` (else ``ctx.metadata["max_tokens"]``)
    against the run's token usage (``ctx.output.usage`` / ``ctx.output["usage"]``,
    ``ctx.metadata["usage"]``, or the bridges' ``<prefix>.usage.*`` keys). Each budget is a
    check; the score is the smallest ``budget / used`` (capped at 1.0). PASS iff every budget
    holds. With no budget at all the judge ABSTAINs; a token budget without usage data fails
    its check.

    Args:
        max_steps: Tool calls allowed (None: from metadata or the reference).
        max_tokens: Tokens allowed (None: from metadata, or no token budget).
        name: Judge name (default ``"StepEfficiency"``).
    """

    def __init__(
        self,
        *,
        max_steps: int | None = None,
        max_tokens: int | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name, description="The agent stayed within its step and token budget")
        self.max_steps = _budget(max_steps, "max_steps")
        self.max_tokens = _budget(max_tokens, "max_tokens")

    def _step_budget(self, ctx: Context) -> tuple[int | None, str]:
        if self.max_steps is not None:
            return self.max_steps, "max_steps"
        if "max_steps" in ctx.metadata:
            return _budget(ctx.metadata["max_steps"], 'metadata["max_steps"]'), "max_steps"
        reference = reference_trajectory(ctx)
        if reference is None:
            return None, ""
        return sum(len(m.tool_calls) for m in reference), "the reference"

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Compare the steps and tokens used with the budgets."""
        try:
            steps = sum(len(m.tool_calls) for m in actual_trajectory(ctx))
            step_budget, source = self._step_budget(ctx)
            token_budget = self.max_tokens
            if token_budget is None and "max_tokens" in ctx.metadata:
                token_budget = _budget(ctx.metadata["max_tokens"], 'metadata["max_tokens"]')
        except (TrajectoryError, ValueError) as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        checks: list[Check] = []
        ratios: list[float] = []
        metadata: dict[str, Any] = {"steps": steps}
        if step_budget is not None:
            metadata["step_budget"] = step_budget
            ratios.append(_ratio(step_budget, steps))
            checks.append(
                Check(
                    name="steps",
                    passed=steps <= step_budget,
                    message=f"{_plural(steps, 'tool call')}, budget {step_budget} ({source})",
                )
            )
        if token_budget is not None:
            tokens = _total_tokens(ctx)
            metadata["token_budget"] = token_budget
            if tokens is None:
                ratios.append(0.0)
                checks.append(Check(name="tokens", passed=False, message="no token usage found"))
            else:
                metadata["tokens"] = tokens
                ratios.append(_ratio(token_budget, tokens))
                checks.append(
                    Check(
                        name="tokens",
                        passed=tokens <= token_budget,
                        message=f"{tokens} tokens, budget {token_budget}",
                    )
                )
        if not checks:
            return Judgment.abstained(
                f"{self.name}: no budget: set max_steps or max_tokens, metadata "
                "max_steps/max_tokens, or give a reference trajectory"
            )
        reasoning = "; ".join(f"{c.name}: {c.message}" for c in checks)
        score = min(ratios)
        if all(c.passed for c in checks):
            return Judgment.passed(reasoning, score=score, checks=checks, metadata=metadata)
        return Judgment.failed(reasoning, score=score, checks=checks, metadata=metadata)


def _ratio(budget: int, used: int) -> float:
    return 1.0 if used <= budget else budget / used


ToolRule = Callable[[Mapping[str, Any]], bool]
"""``rule(arguments) -> bool``: True when the call is denied."""


def _names(value: object, what: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"{what} must be a collection of tool names, got {value!r}")
    names = frozenset(value)
    if not all(isinstance(n, str) for n in names):
        raise ValueError(f"{what} must hold tool names (strings), got {sorted(map(str, names))}")
    return names


class ForbiddenTools(DeterministicJudge):
    """Did the agent call only tools it was permitted to, in permitted ways?

    A call violates the policy when its tool is in ``forbidden`` (plus
    ``ctx.metadata["forbidden_tools"]``), when ``allowed`` (or ``ctx.metadata["allowed_tools"]``)
    is given and the tool is not in it, or when a ``deny`` rule for its tool returns True for
    its arguments (e.g. ``{"shell": lambda a: "rm -rf" in a.get("command", "")}``). PASS (1.0)
    when no call violates it, else FAIL (0.0) with one failing check per violation. A rule
    that raises is an ERROR naming the tool.

    Args:
        forbidden: Tool names the agent must never call.
        allowed: The only tool names the agent may call (None: any not forbidden).
        deny: Per tool name, a rule over the call's arguments that denies it.
        name: Judge name (default ``"ForbiddenTools"``).
    """

    def __init__(
        self,
        forbidden: Iterable[str] = (),
        *,
        allowed: Iterable[str] | None = None,
        deny: Mapping[str, ToolRule] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name, description="The agent called only permitted tools")
        self.forbidden = _names(forbidden, "forbidden")
        self.allowed = None if allowed is None else _names(allowed, "allowed")
        self.deny = dict(deny or {})
        for tool, rule in self.deny.items():
            if not callable(rule):
                raise ValueError(f"deny[{tool!r}] must be callable, got {type(rule).__name__}")

    def _policy(self, ctx: Context) -> tuple[frozenset[str], frozenset[str] | None]:
        forbidden, allowed = self.forbidden, self.allowed
        if "forbidden_tools" in ctx.metadata:
            forbidden |= _names(ctx.metadata["forbidden_tools"], 'metadata["forbidden_tools"]')
        if "allowed_tools" in ctx.metadata:
            extra = _names(ctx.metadata["allowed_tools"], 'metadata["allowed_tools"]')
            allowed = extra if allowed is None else allowed & extra
        return forbidden, allowed

    async def __call__(self, ctx: Context, /) -> Judgment:
        """Check every tool call against the policy."""
        try:
            messages = actual_trajectory(ctx)
            forbidden, allowed = self._policy(ctx)
            checks = [
                Check(name=f"messages[{i}] tool call {j}", passed=False, message=why)
                for i, j, call in located_calls(messages)
                if (why := self._violation(call, forbidden, allowed)) is not None
            ]
        except (TrajectoryError, ValueError) as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        except _RuleFailed as exc:
            return Judgment.errored(f"{self.name}: {exc}")
        if not checks:
            calls = sum(1 for _ in located_calls(messages))
            return Judgment.passed(f"All {_plural(calls, 'tool call')} permitted", score=1.0)
        first = checks[0]
        return Judgment.failed(
            f"{_plural(len(checks), 'call')} not permitted; first: {first.name}: {first.message}",
            score=0.0,
            checks=checks,
        )

    def _violation(
        self, call: ToolCall, forbidden: frozenset[str], allowed: frozenset[str] | None
    ) -> str | None:
        shown = show_call(call)
        if call.name in forbidden:
            return f"{shown}: tool {call.name!r} is forbidden"
        if allowed is not None and call.name not in allowed:
            return f"{shown}: tool {call.name!r} is not among the allowed tools"
        rule = self.deny.get(call.name)
        if rule is None:
            return None
        try:
            denied = rule(call.arguments)
        except Exception as exc:
            raise _RuleFailed(
                f"the deny rule for tool {call.name!r} raised {type(exc).__name__}: {exc}"
            ) from exc
        return f"{shown}: denied by the rule for {call.name!r}" if denied else None


class _RuleFailed(Exception):
    """A user's deny rule raised."""

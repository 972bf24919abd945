"""Resolving a suite's references: the task, the judges and the Evaluator that runs them.

Every failure here is a `RunConfigError` naming the reference and what was expected, raised
before the run starts (nothing is written).
"""

from __future__ import annotations

import random
from typing import Any

from agentjudge.engine import Budget, Evaluator, Jury, RetryPolicy
from agentjudge.harness._clients import missing_keys
from agentjudge.harness._loading import load_object, names_model, takes_no_arguments
from agentjudge.harness._suite import RunConfigError, Suite
from agentjudge.harness._telemetry import Telemetry

__all__ = [
    "ROOT_JURY",
    "RunConfigError",
    "build_evaluator",
    "check_model_keys",
    "resolve_judges",
    "resolve_task",
    "root_jury_name",
]

ROOT_JURY = "jury"
"""The name of the top-level jury when the judges are a list or mapping (``Jury(judges)``)."""


def _instantiate(obj: Any, ref: str, what: str = "judges") -> Any:
    """Call factories and classes that take no arguments; leave judges alone."""
    if isinstance(obj, type) or (
        takes_no_arguments(obj) and not hasattr(obj, "name") and not hasattr(obj, "tiers")
    ):
        try:
            made = obj()
        except Exception as exc:
            raise RunConfigError(
                f"{what} {ref!r}: calling it (as a factory) raised {type(exc).__name__}: {exc}"
            ) from exc
        if what == "judges" and not callable(made) and not isinstance(made, list | tuple | dict):
            raise RunConfigError(
                f"judges {ref!r}: calling it with no arguments returned a "
                f"{type(made).__name__}; expected a judge, a list or dict of judges, a Jury or "
                "a Cascade (a judge function must take the context as a required argument)"
            )
        return made
    return obj


def root_jury_name(judges: Any) -> str:
    """The top-level jury's name in summaries and gates: a root `Jury`'s, else ``"jury"``."""
    return judges.name if isinstance(judges, Jury) else ROOT_JURY


def resolve_judges(suite: Suite) -> Any:
    """The judge object(s) the suite names (imported, factories called).

    Raises:
        RunConfigError: no judges configured, or a reference does not resolve.
    """
    spec = suite.judges
    if spec is None:
        raise RunConfigError(
            'no judges given: set judges = "module:attr" in the suite file or pass --judges'
        )

    def one(ref: str) -> Any:
        try:
            return _instantiate(load_object(ref, what="judges", base_dir=suite.base_dir), ref)
        except RunConfigError:
            raise
        except ValueError as exc:
            raise RunConfigError(str(exc)) from exc

    judges: Any
    if isinstance(spec, str):
        judges = one(spec)
    elif isinstance(spec, list):
        judges = [one(ref) for ref in spec]
    else:
        judges = {name: one(ref) for name, ref in spec.items()}
    if not suite.calibrated:
        return judges
    from agentjudge.harness._calibrate import cascade_settings  # calibrated suites only

    return cascade_settings(suite, judges)


def resolve_task(suite: Suite) -> Any:
    """The task callable the suite names.

    Raises:
        RunConfigError: no task configured, or the reference does not resolve.
    """
    ref = suite.task
    if ref is None:
        raise RunConfigError(
            'no task given: set task = "module:function" in the suite file or pass --task'
        )
    if names_model(ref):  # the model provider registry decides (agentjudge.models)
        from agentjudge.harness._http_task import model_task

        try:
            return model_task(ref, base_url=suite.task_url)
        except ValueError as exc:
            raise RunConfigError(f"task {ref!r}: {exc}") from exc
    if suite.task_url is not None:
        raise RunConfigError(
            f"task_url is only used with a model task ('openai:<model>'), not with {ref!r}"
        )
    try:
        task = load_object(ref, what="task", base_dir=suite.base_dir)
    except ValueError as exc:
        raise RunConfigError(str(exc)) from exc
    if isinstance(task, type):
        task = _instantiate(task, ref, "task")
    if not callable(task):
        raise RunConfigError(f"task {ref!r} is a {type(task).__name__}, not a callable")
    return task


MISSING_KEY_HINT = (
    "set the variable, or pass api_key='' to a client whose server needs no key "
    "(clients of servers on localhost need none)"
)
"""The advice after the lines of `missing_keys`."""


def check_model_keys(task: Any, judges: Any) -> None:
    """Refuse to start a run while a model client of the task or the judges lacks its API key.

    Raises:
        RunConfigError: one line per such client (`missing_keys`), then `MISSING_KEY_HINT`.
    """
    if problems := missing_keys(task, judges):
        raise RunConfigError("\n".join([*problems, MISSING_KEY_HINT]))


def build_evaluator(
    suite: Suite,
    judges: Any,
    telemetry: Telemetry | None = None,
    *,
    budget: Budget | None = None,
) -> Evaluator:
    """The Evaluator for ``judges`` with the suite's knobs (and ``budget``, if any).

    Raises:
        RunConfigError: the Evaluator refused the judges or a knob.
    """
    try:
        return Evaluator(
            judges,
            max_concurrency=suite.judge_concurrency,
            limits=suite.limits or None,
            timeout=suite.judge_timeout,
            retry=RetryPolicy(attempts=suite.judge_attempts),
            sampling=suite.sampling or None,
            rng=random.Random(suite.seed),
            on_result=None if telemetry is None else telemetry.on_result,
            budget=budget,
        )
    except (TypeError, ValueError) as exc:
        where = "judges" if suite.judges is None else f"judges {suite.judges!r}"
        raise RunConfigError(f"{where}: {exc}") from exc

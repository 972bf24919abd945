"""The agentjudge pytest plugin (``pytest11`` entry point ``agentjudge``): evals as tests.

pytest loads this module in every session of every project where agentjudge is installed, so
it is inert until used: it imports only pytest and the standard library (``agentjudge`` itself
is imported on first use, like hypothesis's plugin does), registers its options, ini keys and
marker, and does nothing else unless

* a test requests the ``agentjudge_evaluator`` fixture,
* a test carries ``@pytest.mark.agentjudge_dataset(path)``,
* a test calls `agentjudge.testing.assert_passes` / ``assert_eval`` (the outcomes they check
  are tallied, and the session ends with a per-judge summary), or
* ``--agentjudge-summary`` or a gate (``--agentjudge-gate`` / ini ``agentjudge_gates``) is
  given.

Disable it entirely with ``-p no:agentjudge``. Under pytest-xdist each worker sends its
outcomes to the controller (``workeroutput``), which prints one summary and checks the gates
over all of them; a failed gate turns a passing session's exit status into 1 (tests failed).
The implementation lives in ``agentjudge._pytest``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agentjudge._pytest._fixtures import EvaluatorFactory
    from agentjudge._pytest._session import SessionReport
    from agentjudge.core import JudgeResult, Judgment
    from agentjudge.harness._gates import Gate

__all__ = ["record_outcome"]

_ROWS = pytest.StashKey[list[str]]()
"""The session's checked outcomes, as results-row JSON lines (this process's and workers')."""
_GATES: pytest.StashKey[list[Gate]] = pytest.StashKey()
_REPORT: pytest.StashKey[SessionReport] = pytest.StashKey()
_WORKER_OUTPUT = "agentjudge_rows"
_CONFIGS: list[pytest.Config] = []
"""Configured sessions, innermost last (pytester runs sessions inside sessions)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the summary flag and the gate option / ini key."""
    group = parser.getgroup("agentjudge", "agentjudge evals as tests")
    group.addoption(
        "--agentjudge-summary",
        action="store_true",
        default=False,
        help="print the per-judge pass-rate summary even when no outcome was checked",
    )
    group.addoption(
        "--agentjudge-gate",
        action="append",
        default=[],
        metavar="EXPR",
        help="fail the session unless EXPR holds over the checked outcomes, e.g. "
        "'correctness.pass_rate>=0.8' (repeatable; the agentjudge gate syntax)",
    )
    parser.addini(
        "agentjudge_gates",
        type="linelist",
        default=[],
        help="gates checked at the end of every session (one per line), like --agentjudge-gate",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker; parse the gates (a malformed one is a usage error)."""
    config.addinivalue_line(
        "markers",
        "agentjudge_dataset(path, *, format=None, argname='case'): run the test once per row "
        "of an agentjudge dataset file (path relative to the test file), with the row's "
        "agentjudge.harness.Case as the `case` argument and its id as the test id",
    )
    config.stash[_ROWS] = []
    _CONFIGS.append(config)
    exprs = [*config.getini("agentjudge_gates"), *config.getoption("agentjudge_gate")]
    # Gates are checked where the session ends: an xdist worker (``workerinput``) never reads
    # them, and its controller parsed them before starting it (a malformed gate stops there).
    if exprs and not hasattr(config, "workerinput"):
        from agentjudge._pytest._record import parse_gates

        try:
            config.stash[_GATES] = parse_gates(exprs)
        except ValueError as exc:
            raise pytest.UsageError(f"agentjudge: {exc}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    """Forget the session."""
    if config in _CONFIGS:
        _CONFIGS.remove(config)


def record_outcome(results: tuple[JudgeResult, ...], aggregate: Judgment | None) -> None:
    """Tally one checked outcome in the innermost running session (called by `assert_passes`)."""
    if not _CONFIGS:
        return
    from agentjudge._pytest._record import encode_outcome

    _CONFIGS[-1].stash[_ROWS].append(encode_outcome(results, aggregate))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per dataset row for tests marked ``agentjudge_dataset``."""
    marker = metafunc.definition.get_closest_marker("agentjudge_dataset")
    if marker is not None:
        from agentjudge._pytest._cases import parametrize_dataset

        parametrize_dataset(metafunc, *marker.args, **marker.kwargs)


@pytest.fixture
def agentjudge_evaluator(request: pytest.FixtureRequest) -> Iterator[EvaluatorFactory]:
    """A factory of Evaluators for this test: ``agentjudge_evaluator(judges, **options)``.

    Each call builds a new `agentjudge.Evaluator` (so its limiters belong to this test's event
    loop, whichever plugin runs it: pytest-asyncio or anyio), with sampling draws seeded from
    the test's id unless ``rng`` is given. See `agentjudge._pytest._fixtures.EvaluatorFactory`.
    """
    from agentjudge._pytest._fixtures import EvaluatorFactory

    factory = EvaluatorFactory(request.node.nodeid)
    yield factory
    factory.close()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: add a finished worker's outcomes to the session's."""
    payload = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT)
    config = getattr(node, "config", None) or (_CONFIGS[-1] if _CONFIGS else None)
    if payload and config is not None:
        config.stash[_ROWS].extend(json.loads(payload))


def _wanted(config: pytest.Config) -> bool:
    return bool(
        config.stash[_ROWS] or _GATES in config.stash or config.getoption("agentjudge_summary")
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Workers hand their outcomes over; the controller concludes (summary and gates)."""
    config = session.config
    if hasattr(config, "workerinput"):
        rows = config.stash[_ROWS]
        if rows:
            config.workeroutput[_WORKER_OUTPUT] = json.dumps(rows)  # type: ignore[attr-defined]
        return
    if not _wanted(config):
        return
    from agentjudge._pytest._session import conclude

    gates: list[Gate] = config.stash.get(_GATES, [])
    collected: list[str] = config.stash[_ROWS]
    report = conclude(collected, gates)
    config.stash[_REPORT] = report
    if not report.passed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print the per-judge pass rates and the gates."""
    report = config.stash.get(_REPORT, None)
    if report is None:
        return
    from agentjudge._pytest._session import report_lines

    terminalreporter.write_sep("=", "agentjudge")
    for line in report_lines(report):
        terminalreporter.write_line(line)

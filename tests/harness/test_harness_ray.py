"""The Ray backend (``backend = "ray"``): the rows of a local run, dead actors, dead drivers.

One local Ray instance serves every test of this module (`ray_address`); the runs join it,
so none pays Ray's start-up, and it stops with the module, before the timing tests that
`make test` runs after it. It runs without the two daemons no test uses, the log and
autoscaler monitors (`_lean_head_node`). Skipped where the ``ray`` extra is not installed.

A Ray run costs mostly Ray's start-up of its processes (each actor and broker an interpreter
importing Ray, ~1-1.5 s of CPU), so where one run can show what several tests assert, a
module fixture holds it (`mixed_run`, `killed_actor_run`), and a run has two actors only
where two are the point. No test asserts on wall-clock time: the waits below are bounds for
a hang, and the killed driver is held by a file until the kill, not raced. The one count a
loaded machine could move is the hidden-rate-limit test's refusals (paced requests meet the
fake server's token bucket, which refills with the clock; a stalled actor sends late ones
together), bounded at a quarter of the requests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import harness_workers_support as support
import pytest
from test_harness_workers import by_id, make_suite, rows

from agentjudge.harness import (
    RunAborted,
    RunConfigError,
    RunSummary,
    Suite,
    iter_rows,
    run_suite,
)
from agentjudge.harness._ray import NO_PRESTART
from agentjudge.testing import FakeModelServer, FakeRateLimit, FakeResponse

# One worker runs them all under pytest-xdist (make test: --dist loadgroup): one Ray instance.
# The 60 s per-test timeout of the suite is too short for these on a busy 2-core machine: a
# test that starts two CLI drivers (killed driver + resume) takes 7-15 s alone but 58 s with
# the machine's load at 12 (fresh clone, 2026-11-26): each Ray run starts several interpreters
# (its actors and the broker), so on CI under load the tests "hung" past 60 s. A real hang is
# still caught, at 240 s.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.ray,
    pytest.mark.xdist_group("ray"),
    pytest.mark.timeout(240),
]


def _log_tails(temp: str, lines: int = 12) -> str:
    """The last lines of the Ray instance's own logs and the error lines of its workers."""
    parts = []
    for log in sorted(Path(temp).glob("session_*/logs/*")):
        if not log.is_file():
            continue
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
        if log.name.startswith(("raylet", "gcs_server")):
            parts.append(f"== {log.name}\n" + "\n".join(text[-lines:]))
        elif errors := [line for line in text if " E " in line or "ERROR" in line]:
            parts.append(f"== {log.name}\n" + "\n".join(errors[-lines:]))
    return "\n".join(parts)[-20_000:]


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A local Ray instance for this module's tests (small object store, no dashboard).

    It is asked for 127.0.0.1 (as a run's own local instance is, see ``_ray._init_ray``)
    and keeps its files in a folder of its own, not in the /tmp/ray that other Ray instances
    on the machine share. A test of this module that failed shows the tails of its logs.
    """
    ray = pytest.importorskip(
        "ray", reason="the Ray backend's tests need the ray extra: pip install 'agentjudge[ray]'"
    )
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # tests/conftest.py switched off Ray's `uv run` workers before ray was imported (here it
    # would be too late: Ray reads the switch on import); the CLI drivers inherit that.
    assert os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"
    with tempfile.TemporaryDirectory(prefix="agentjudge-ray-") as temp:
        with _lean_head_node():  # only while it starts
            ray.init(
                # Logical CPUs, not cores: room for the actors of a test while those of an earlier
                # one (a killed driver's, a replaced actor) are still being reclaimed, so no test
                # waits for placement.
                num_cpus=8,
                include_dashboard=False,
                log_to_driver=False,
                object_store_memory=100 * 1024 * 1024,
                _node_ip_address="127.0.0.1",
                _temp_dir=temp,
                # No idle workers started for the first driver (as a run's own instance): the
                # actors start their own, and this machine's cores are better spent on them.
                _system_config=dict(NO_PRESTART),
            )
        _RAY_TEMP.append(temp)
        try:
            yield str(ray.get_runtime_context().gcs_address)
        finally:
            _RAY_TEMP.remove(temp)
            ray.shutdown()


@contextlib.contextmanager
def _lean_head_node() -> Iterator[None]:
    """While it is entered, a Ray instance that ``ray.init`` starts runs neither the log monitor
    nor the autoscaler monitor, as after ``ray start --head --no-monitor
    --include-log-monitor=False`` (``ray.init`` has no such switches: this sets the same two
    fields of Ray's node parameters).

    Neither serves these tests: the log monitor streams the workers' output to drivers that
    do not print it (``log_to_driver=False``; a failed test reads the log files themselves),
    and the autoscaler monitor watches a one-node instance that never scales. Each is an
    interpreter importing Ray, ~0.8 s of CPU to start and some idle polling after. The GCS,
    raylet, agents and API server start as always. Where Ray's internals differ (another Ray
    version), the instance starts in full.
    """
    try:
        from ray._private.parameter import RayParams
    except ImportError:
        yield
        return
    init = RayParams.__init__

    def lean(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.no_monitor = True
        self.include_log_monitor = False

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RayParams, "__init__", lean)
        yield


_RAY_TEMP: list[str] = []
"""The module instance's folder while it runs (for `_ray_logs_when_a_test_fails`)."""


@pytest.fixture(scope="module")
def brokers() -> Iterator[list[bool]]:
    """Whether each Ray run of this process started the run's broker actor, in order."""
    from agentjudge.harness import _ray

    started: list[bool] = []
    close = _ray.RayPool.close

    def recording(pool: _ray.RayPool) -> None:
        started.append(pool._broker is not None)
        close(pool)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_ray.RayPool, "close", recording)
        yield started


@pytest.fixture(autouse=True)
def _ray_logs_when_a_test_fails(request: pytest.FixtureRequest) -> Iterator[None]:
    """A Ray test that failed shows the tails of the instance's logs (in its teardown output)."""
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed > failed and _RAY_TEMP:
        print(f"the Ray instance's logs end with:\n{_log_tails(_RAY_TEMP[-1])}")


LLM_JUDGES = """
from agentjudge.judges import LLMJudge
from agentjudge.models import OpenAIChat

PROMPT = "Is {{output}} the right answer to {{input}}? Answer YES or NO."


def build():
    model = OpenAIChat("judge-model", base_url=URL, api_key="k")
    return [LLMJudge("correct", model, PROMPT)]
"""


MIXED_JUDGES = """
from pathlib import Path

from agentjudge.core import Judgment
from agentjudge.judges import CommandJudge, LLMJudge
from agentjudge.models import OpenAIChat

HERE = Path(__file__).parent
PROMPT = "Is {{output}} the right answer to {{input}}? Answer YES or NO."
CHECK = CommandJudge(["sh", "-c", "exit $(( $(cat code) ))"], name="command")
LLM = LLMJudge("correct", OpenAIChat("judge-model", base_url=URL, api_key="k"), PROMPT)


def number(ctx):
    return int(ctx.input[1:]) if ctx.input[1:].isdigit() else 0


async def exact(ctx):
    return Judgment.passed("same") if ctx.output == ctx.expected else Judgment.failed("differs")


# judge for one case in every (in the workspace HERE), an instant PASS otherwise; a closure,
# so the run finds (and closes) the model client it holds, as it would a judge's.
def one_in(every, judge, name):
    async def sampled(ctx):
        if number(ctx) % every:
            return Judgment.passed("not asked")
        return await judge(ctx.model_copy(update={"workspace": HERE}))

    sampled.__name__ = sampled.__qualname__ = name
    return sampled


# The model for one case in twenty and a real command for one in two hundred keep the test
# short (each run: 100 loopback HTTP calls, each through the broker's rate controller on Ray,
# about 10 ms of CPU each there, and 10 commands, each under its subreaper launcher, an
# interpreter); the others are instant. They are spread over the chunks, so over both actors.
correct = one_in(20, LLM, "correct")
command = one_in(200, CHECK, "command")
judges = [exact, correct, command]
"""


def _without_elapsed(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The rows without the command's run time (it differs between any two runs), as copies:
    the rows given are a module fixture's, which other tests read as written."""

    def timeless(result: dict[str, Any]) -> dict[str, Any]:
        judgment = result["judgment"]
        metadata = {k: v for k, v in judgment["metadata"].items() if k != "elapsed_ms"}
        return {**result, "judgment": {**judgment, "metadata": metadata}}

    return {
        case_id: {**row, "results": [timeless(result) for result in row["results"]]}
        for case_id, row in rows.items()
    }


MIXED_PAD = 1_000
"""Padding of the 2,000-case suite's rows. What it tests is the rows of 2,000 cases, not their
size: with the 12 KiB rows of the smaller runs its dataset and each results file were 25 MB
(written, sent over Ray, read and compared: ~3 s of the module's CPU); with 1 KiB rows it still
spans 9 of the 256 KiB chunks the driver hands out, two at a time, so both actors get cases."""


class MixedRun(NamedTuple):
    one: RunSummary
    """The run in process."""
    two: RunSummary
    """The run on Ray (two actors)."""
    rows_one: dict[str, dict[str, Any]]
    """The in-process run's rows by id, read once for the tests (2,000 rows, ~0.1 s a read)."""
    rows_two: dict[str, dict[str, Any]]
    """The Ray run's rows by id."""
    calls: int
    """Model calls the server received from the run in process."""
    received: int
    """Model calls the server received from both runs."""
    broker: bool
    """Whether the Ray run started a broker actor."""


@pytest.fixture(scope="module")
def mixed_run(
    tmp_path_factory: pytest.TempPathFactory, ray_address: str, brokers: list[bool]
) -> MixedRun:
    """The 2,000-case suite (instant, LLM and command judges), in process and on two actors.

    Two tests read it (each Ray run starts two actors and a broker, about 4 s of CPU): the
    whole rows and aggregates, and the LLM judge's judgments, calls and cost.
    """
    tmp_path = tmp_path_factory.mktemp("mixed")

    async def answer(body: Any) -> FakeResponse:  # the verdict depends on the case
        verdict = "NO" if "Q12" in json.dumps(body) else "YES"
        return FakeResponse(
            text=f"Answer: {verdict}", usage={"prompt_tokens": 9, "completion_tokens": 2}
        )

    async def both() -> MixedRun:
        async with FakeModelServer(answer) as server:
            judges = f"URL = {server.base_url!r}\n" + textwrap.dedent(MIXED_JUDGES)
            (tmp_path / "mixed.py").write_text(judges, encoding="utf-8")
            (tmp_path / "code").write_text("0")
            data = rows(2000, {7: "boom"})
            for row in data:  # ~1 KiB rows: 9 dataset chunks, several for each actor
                row["metadata"]["pad"] = row["metadata"]["pad"][:MIXED_PAD]
            suite = make_suite(tmp_path, data)
            suite = suite.with_overrides(judges="mixed.py:judges", concurrency=16)
            one = await run_suite(suite, out=tmp_path / "one")
            calls = len(server.requests)
            ray_suite = suite.with_overrides(workers=2, backend="ray")
            two = await run_suite(ray_suite, out=tmp_path / "two")
            found = by_id(tmp_path / "one"), by_id(tmp_path / "two")
            return MixedRun(one, two, *found, calls, len(server.requests), brokers[-1])

    return anyio.run(both)


def test_a_2000_case_suite_with_instant_llm_and_command_judges_matches_in_process(
    mixed_run: MixedRun,
) -> None:
    """2,000 cases, an instant, an LLM (fake server) and a command judge: same rows on Ray."""
    one, two = mixed_run.one, mixed_run.two
    assert mixed_run.calls >= 100 and mixed_run.received == 2 * mixed_run.calls
    assert _without_elapsed(mixed_run.rows_one) == _without_elapsed(mixed_run.rows_two)
    assert two.cases == one.cases and two.cases.total == 2000 and two.cases.errors == 1
    assert two.judges == one.judges and two.verdict == one.verdict and two.cost == one.cost
    assert one.judges["command"].count == 1999 and two.status == "completed"
    assert two.config["backend"] == "ray" and two.config["workers"] == 2
    assert mixed_run.broker  # no limits: started when the LLM judge's client first asked


def test_ray_llm_judge_rows_match_an_in_process_run(mixed_run: MixedRun) -> None:
    """An LLM judge calling a FakeModelServer: the same judgments, calls and cost on Ray.

    It reads the 2,000-case run (its LLM judge asks the server for one case in twenty, both
    verdicts), which a run of its own would only repeat at the price of an actor and a broker.
    """

    def judged(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {
            case_id: [r for r in row["results"] if r["name"] == "correct"]
            for case_id, row in rows.items()
        }

    one, two = mixed_run.one, mixed_run.two
    on_ray = judged(mixed_run.rows_two)
    assert on_ray == judged(mixed_run.rows_one)
    verdicts = Counter(r["judgment"]["status"] for results in on_ray.values() for r in results)
    assert verdicts["pass"] and verdicts["fail"]  # the server's answers, case by case
    assert one.cost is not None and two.cost is not None
    assert one.cost.calls == mixed_run.calls and one.cost.input_tokens == 9 * mixed_run.calls
    assert two.cost.by_judge["correct"] == one.cost.by_judge["correct"]
    assert two.judges["correct"] == one.judges["correct"]


class KilledRun(NamedTuple):
    folder: Path
    one: RunSummary
    """The run in process."""
    two: RunSummary
    """The run on Ray."""
    rows_one: dict[str, dict[str, Any]]
    """The in-process run's rows by id, read once for the tests."""
    rows_two: dict[str, dict[str, Any]]
    """The Ray run's rows by id."""
    broker: bool
    """Whether the Ray run started a broker actor."""


@pytest.fixture(scope="module")
def killed_actor_run(
    tmp_path_factory: pytest.TempPathFactory, ray_address: str, brokers: list[bool]
) -> KilledRun:
    """One 200-case run on two actors, one of them killed mid-case, and the same in process.

    Four tests assert different things about it (each Ray run starts its actors, about a
    second of CPU each): the rows, which cases ran again, no broker, and that a task and
    judges passed as objects (module-level, so pickled) run on the actors. Both runs log to
    the same folder: in process first, with the kill already done.
    """
    tmp_path = tmp_path_factory.mktemp("killed")
    data = rows(200, {5: "boom", 17: "boom", 60: "kill"})
    for row in data:
        row["metadata"]["folder"] = str(tmp_path)  # where `support.logged` logs its calls
    suite = make_suite(tmp_path, data)
    objects: dict[str, Any] = {"task": support.logged, "judges": [support.exact, support.half]}
    (tmp_path / "killed").write_text("in process: nothing to kill")
    one = anyio.run(lambda: run_suite(suite, out=tmp_path / "one", **objects))
    (tmp_path / "killed").unlink()
    (tmp_path / "calls.log").unlink()
    on_ray = suite.with_overrides(workers=2, backend="ray")
    two = anyio.run(lambda: run_suite(on_ray, out=tmp_path / "two", **objects))
    found = by_id(tmp_path / "one"), by_id(tmp_path / "two")
    return KilledRun(tmp_path, one, two, *found, brokers[-1])


def test_ray_writes_the_same_rows_and_aggregates_as_one_process(
    killed_actor_run: KilledRun,
) -> None:
    """Two Ray actors, one killed mid-case: exactly the rows and aggregates of one process."""
    one, two = killed_actor_run.one, killed_actor_run.two
    assert killed_actor_run.rows_one == killed_actor_run.rows_two
    assert two.cases == one.cases and two.cases.errors == 2
    assert two.judges == one.judges
    assert two.verdict == one.verdict
    assert two.status == "completed" and two.config["backend"] == "ray"


def test_a_killed_actor_loses_no_case_and_reruns_none_it_finished(
    killed_actor_run: KilledRun,
) -> None:
    """ray.kill of an actor mid-case: a new actor runs its unfinished cases, each row once."""
    run = killed_actor_run
    tmp_path, summary, found = run.folder, run.two, run.rows_two
    assert sorted(found) == [f"r{i:04d}" for i in range(200)]
    assert found["r0060"]["output"] == "KILL"
    assert summary.status == "completed" and summary.cases.total == 200
    calls = [line.split() for line in (tmp_path / "calls.log").read_text().splitlines()]
    runs = Counter(case_id for case_id, _ in calls)
    first_pid = {case_id: pid for case_id, pid in reversed(calls)}
    assert runs["r0060"] == 2  # killed mid-case, then run again
    # Only cases the killed actor held without their rows having come back run again.
    again = {case_id for case_id, n in runs.items() if n > 1}
    assert {first_pid[case_id] for case_id in again} == {first_pid["r0060"]}
    assert all(n <= 2 for n in runs.values()) and len(again) < 200


def test_a_run_without_model_calls_limits_or_budget_starts_no_broker(
    killed_actor_run: KilledRun,
) -> None:
    """The broker actor (shared limits, budget, rate controllers) is one more interpreter to
    start: a run that needs none of them starts none (the LLM runs below start theirs)."""
    assert killed_actor_run.broker is False


HELD_TASK = """
import threading
from pathlib import Path

HERE = Path(__file__).parent


def answer(case):
    if case.input == "boom":
        raise RuntimeError("kaboom")
    if (HERE / "hold").exists() and int(case.id[1:]) >= 20:
        threading.Event().wait()  # held until the driver (and with it its actor) is killed
    return case.input.upper()
"""


def test_the_module_instance_runs_no_log_or_autoscaler_monitor(ray_address: str) -> None:
    """The module's instance left out the two monitors no test uses (`_lean_head_node`), each an
    interpreter importing Ray (~0.8-1.1 s of CPU); the GCS, raylet and agents run."""
    psutil = pytest.importorskip("psutil")  # a dependency of Ray's
    commands = []
    for proc in psutil.process_iter(["cmdline"]):
        command = " ".join(proc.info["cmdline"] or [])
        if _RAY_TEMP[-1] in command:  # this instance's processes name its folder
            commands.append(command)
    assert any("raylet" in c for c in commands) and any("agent" in c for c in commands)
    assert not [c for c in commands if "log_monitor.py" in c or "/monitor.py" in c]


def test_a_killed_driver_leaves_a_run_that_resume_completes(
    tmp_path: Path, ray_address: str
) -> None:
    """kill -9 of the driver (the CLI, joined to the cluster), then a resumed run: every case
    once.

    The driver gets the first 20 rows and no more (the later cases wait for the kill, however
    slow the machine), so it is killed mid-run. The run resumes in this process, another
    driver of the cluster (as ``--resume`` does: the CLI flag itself is tested on local runs;
    a second CLI would cost an interpreter importing Ray). One actor per driver: what is
    tested is the driver's death, and each actor is an interpreter to start.
    """
    data = rows(200, {3: "boom"})
    suite = make_suite(tmp_path, data).with_overrides(workers=1, backend="ray", concurrency=2)
    (tmp_path / "task.py").write_text(textwrap.dedent(HELD_TASK), encoding="utf-8")
    (tmp_path / "hold").write_text("")
    args = ["--dataset", "data.jsonl", "--task", "task.py:answer", "--judges", "judges.py:judges"]
    args += ["--out", "o", "--progress", "off", "--workers", "1", "--backend", "ray"]
    args += ["--ray-address", ray_address, "--concurrency", "2"]
    command = [sys.executable, "-m", "agentjudge", "run", *args]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL)
    results = tmp_path / "o" / "results.jsonl"
    deadline = time.monotonic() + 180  # a hang guard, not a bound on speed
    while not (results.exists() and len(results.read_bytes().splitlines()) >= 20):
        assert proc.poll() is None, "the driver ended before it was killed"
        assert time.monotonic() < deadline, "no rows within 180 s"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(list(iter_rows(results))) == 20  # the held cases never finished
    (tmp_path / "hold").unlink()
    resumed = anyio.run(lambda: run_suite(suite, out=tmp_path / "o", resume=True))
    assert resumed.status == "completed" and resumed.config["backend"] == "ray"
    assert sorted(by_id(tmp_path / "o")) == [f"r{i:04d}" for i in range(200)]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["resumed"]
    assert summary["cases"]["total"] == 200 and summary["cases"]["errors"] == 1


def test_a_worker_failure_on_ray_reads_as_a_local_one(tmp_path: Path, ray_address: str) -> None:
    """A task that cannot be resolved on the actor fails the run with the local message."""
    suite: Suite = make_suite(tmp_path, rows(5), workers=2, backend="ray")
    settings: dict[str, Any] = {"task": "task.py:nowhere"}
    with pytest.raises(Exception, match=r"nowhere"):
        anyio.run(lambda: run_suite(suite.with_overrides(**settings), out=tmp_path / "o"))


def _llm_suite(tmp_path: Path, url: str, n: int, pad: int = 0, **settings: Any) -> Suite:
    (tmp_path / "llm.py").write_text(f"URL = {url!r}\n" + textwrap.dedent(LLM_JUDGES))
    data = rows(n)
    for row in data:  # big rows: the dataset spans several chunks, so both actors get some
        row["metadata"]["pad"] += "x" * pad
    suite = make_suite(tmp_path, data, workers=2, backend="ray")
    return suite.with_overrides(judges="llm.py:build", **settings)


TWO_MODELS = """
from agentjudge.judges import LLMJudge
from agentjudge.models import OpenAIChat

PROMPT = "Is {{output}} the right answer to {{input}}? Answer YES or NO."


def build():
    return [
        LLMJudge(model, OpenAIChat(model, base_url=URL, api_key="k"), PROMPT)
        for model in ("three", "one")
    ]
"""


async def test_a_limit_holds_across_the_actors(tmp_path: Path, ray_address: str) -> None:
    """limits on two actors: never more calls of a model at the server at once than its limit.

    One run, two limited models: 3 tokens, and 1 (fewer tokens than actors, which take turns).
    """
    in_flight: Counter[str] = Counter()
    peak: Counter[str] = Counter()

    async def answer(body: Any) -> FakeResponse:
        model = body["model"]
        in_flight[model] += 1
        peak[model] = max(peak[model], in_flight[model])
        try:
            await anyio.sleep(0.01)
        finally:
            in_flight[model] -= 1
        return FakeResponse(text="Answer: YES", usage={"prompt_tokens": 1, "completion_tokens": 1})

    async with FakeModelServer(answer) as server:
        limits = {"openai:three": 3, "openai:one": 1}
        suite = _llm_suite(tmp_path, server.base_url, 32, pad=12_000, limits=limits)
        (tmp_path / "llm.py").write_text(f"URL = {server.base_url!r}\n" + TWO_MODELS)
        summary = await run_suite(suite, out=tmp_path / "o", backend="ray")
        assert len(server.requests) == 64
    assert summary.status == "completed" and summary.cases.total == 32
    assert summary.judges["three"].count == summary.judges["one"].count == 32
    assert 1 <= peak["three"] <= 3 and peak["one"] == 1


async def test_max_cost_is_one_budget_for_the_whole_cluster(
    tmp_path: Path, ray_address: str
) -> None:
    """--max-cost on Ray: one budget leased to the actors, not a share each; exit 3 when spent.

    Every paid call is in the first dataset chunk, so one actor makes them all: with the
    budget split in two shares that actor would stop at half of max_cost. The actors together
    never pass it (no actor dies here, and every call's reservation covers its cost).
    """
    paid = FakeResponse(text="Answer: YES", usage={"prompt_tokens": 1000, "completion_tokens": 100})
    free = FakeResponse(text="Answer: YES", usage={"prompt_tokens": 1, "completion_tokens": 1})
    call = 0.002  # a paid call at these prices
    prices = {"openai:judge-model": {"input": 1.0, "output": 10.0}}

    async def answer(body: Any) -> FakeResponse:
        return paid if "paid" in json.dumps(body) else free

    async with FakeModelServer(answer) as server:
        suite = _llm_suite(tmp_path, server.base_url, 60, pad=12_000, max_cost=0.02, prices=prices)
        data = [json.loads(line) for line in (tmp_path / "data.jsonl").read_text().splitlines()[2:]]
        for row in data[:15]:  # the first chunk holds about 20 of these rows
            row["input"] = f"paid {row['input']}"
        (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
        summary = await run_suite(suite, out=tmp_path / "o")
        paid_calls = sum("paid" in json.dumps(body) for body in server.requests)
    assert summary.cost is not None and summary.cost.usd is not None
    assert summary.cost.usd <= 0.02 + 1e-12  # the bound: no actor died, reservations cover
    assert paid_calls >= 8 and summary.cost.usd > 0.02 - 2 * call  # not half of it
    assert summary.status == "aborted" and summary.budget is not None
    assert summary.budget.exhausted and summary.budget.workers == 1
    assert len(by_id(tmp_path / "o")) == 60


async def test_the_actors_obey_one_rate_controller_at_a_hidden_provider_limit(
    tmp_path: Path, ray_address: str
) -> None:
    """A hidden 20 requests/s limit at the fake server: two actors, one controller, no error.

    Every 429 the server sent is seen by the one controller of the endpoint (in the run's
    broker), which pauses and paces both actors' calls; every call is answered in the end.
    """
    usage = {"prompt_tokens": 1, "completion_tokens": 1}
    limit = FakeRateLimit(rps=20, burst=5)
    async with FakeModelServer(
        FakeResponse(text="Answer: YES", usage=usage), rate_limit=limit
    ) as server:
        suite = _llm_suite(tmp_path, server.base_url, 60, pad=12_000)  # 3 chunks: both actors
        summary = await run_suite(suite, out=tmp_path / "o")
        received, throttled = len(server.requests), server.throttled
    found = by_id(tmp_path / "o")
    statuses = Counter(r["judgment"]["status"] for row in found.values() for r in row["results"])
    assert statuses == {"pass": 60} and summary.status == "completed"
    assert received - throttled == 60  # each call answered once
    assert throttled <= received // 4  # paced as one client: few refusals


def test_without_ray_the_run_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """backend = "ray" without Ray: a configuration error naming the extra, no output written."""
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    suite = make_suite(tmp_path, rows(3), backend="ray")
    with pytest.raises(RunConfigError, match=r"pip install 'agentjudge\[ray\]'") as info:
        anyio.run(lambda: run_suite(suite, out=tmp_path / "o"))
    assert isinstance(info.value, ImportError)
    assert not (tmp_path / "o").exists()


def test_a_local_instance_starts_no_idle_workers(tmp_path: Path) -> None:
    """A run's own local Ray instance asks Ray to prestart no idle workers for its driver.

    Ray would start one interpreter per logical CPU (up to the core count) when the first
    driver connects; the run's actors start their own, so those would only cost CPU and memory.
    """
    calls: list[dict[str, Any]] = []

    class FakeRay:
        def init(self, **kwargs: Any) -> None:
            calls.append(kwargs)
            if "_system_config" in kwargs:  # as Ray does, adding the instance's own keys
                kwargs["_system_config"]["object_spilling_config"] = "{...}"

    from agentjudge.harness import _ray

    local = make_suite(tmp_path, rows(1), backend="ray")
    for _ in range(2):  # a second instance in the same process gets the same config
        _ray._init_ray(FakeRay(), local)
        assert calls[-1]["_system_config"].pop("object_spilling_config")
        assert calls[-1]["_system_config"] == {"prestart_worker_first_driver": False}
    _ray._init_ray(FakeRay(), local.with_overrides(ray_address="127.0.0.1:1"))
    assert "_system_config" not in calls[-1]  # a cluster keeps its own configuration


def test_an_actor_the_cluster_cannot_place_is_an_error_not_a_hang(
    tmp_path: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Actors asking for a GPU the local instance lacks: the run fails, naming why (when both
    slots fail at once, the message is the first one's, not "ExceptionGroup: unhandled ...")."""
    from agentjudge.harness import _ray

    # The instance has no GPU, so the actors are never placed however long the run waits: a
    # short wait (the test's idle time) shows the same error as the 120 s of a real run.
    monkeypatch.setattr(_ray, "START_SECONDS", 0.25)
    suite = make_suite(tmp_path, rows(3), backend="ray", ray_num_gpus=1, workers=2)
    with pytest.raises(RunAborted, match=r"did not start within 0.25 s: .*num_gpus=1") as info:
        anyio.run(lambda: run_suite(suite, out=tmp_path / "o"))
    assert str(info.value).startswith("run aborted: WorkerFailed: the Ray actor of worker slot")


def test_a_task_from_main_is_refused_before_the_run_on_ray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task defined in the driver's script cannot reach Ray actors: said before anything runs."""

    def from_script(case: Any) -> str:
        return str(case.input)

    from_script.__module__ = "__main__"
    from_script.__qualname__ = from_script.__name__ = "ray_from_script"
    monkeypatch.setattr(sys.modules["__main__"], "ray_from_script", from_script, raising=False)
    suite = make_suite(tmp_path, rows(3), backend="ray")
    with pytest.raises(RunConfigError, match=r"defined in __main__ .* which Ray actors cannot"):
        anyio.run(lambda: run_suite(suite, out=tmp_path / "o", task=from_script))


def test_objects_reach_the_actors_pickled(killed_actor_run: KilledRun) -> None:
    """A task and judges passed as module-level objects run on the actors (the killed-actor
    run passes them: its replacement actor gets them too)."""
    summary = killed_actor_run.two
    assert summary.status == "completed" and summary.config["backend"] == "ray"
    assert summary.cases.total == 200 and summary.cases.errors == 2
    assert summary.judges["half"].mean == 0.5 and summary.judges["exact"].count == 198
    rows_on_ray = killed_actor_run.rows_two
    assert rows_on_ray["r0060"]["output"] == "KILL"  # the task object, on the new actor

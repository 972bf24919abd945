"""A missing API key stops a run before any case runs (issue 19, item 20)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import anyio.to_thread
import pytest
from cli_support import cli

from agentjudge.harness._clients import missing_keys
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import AnthropicMessages, OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse

JUDGES = """
import os
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import OpenAIChat


def build():
    url = os.environ.get("FAKE_URL")  # unset: api.openai.com (OPENAI_BASE_URL is removed)
    model = OpenAIChat("gpt-4o-mini", **({"base_url": url} if url else {}))
    return [CorrectnessJudge(model, name="Correctness")]
"""

TASK = """
def answer(case):
    return "Paris"
"""


def make_project(folder: Path, task: str = "task:answer") -> Path:
    rows = [{"id": f"q{i}", "input": "capital?", "expected": "Paris"} for i in range(3)]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "judges.py").write_text(textwrap.dedent(JUDGES))
    (folder / "task.py").write_text(textwrap.dedent(TASK))
    (folder / "agentjudge.toml").write_text(
        f'dataset = "data.jsonl"\ntask = "{task}"\njudges = "judges:build"\n'
    )
    return folder


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key or base URL in the environment (the CLI subprocess inherits it)."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_keys")
def test_a_judge_without_its_key_stops_the_run_before_any_case(tmp_path: Path) -> None:
    """run exits 2 naming the judge, the model and the variable; nothing is written."""
    done = cli(make_project(tmp_path), "run", "--out", "out")
    assert done.returncode == 2, done.stderr
    assert (
        "agentjudge: error: judge 'Correctness' (openai:gpt-4o-mini): OPENAI_API_KEY is not set"
        in done.stderr
    )
    assert "pass api_key=''" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.usefixtures("no_keys")
def test_a_model_task_without_its_key_stops_the_run_too(tmp_path: Path) -> None:
    """task = "anthropic:<model>" without ANTHROPIC_API_KEY: exit 2 naming the task."""
    done = cli(make_project(tmp_path, task="anthropic:claude-3-5-haiku-latest"), "run")
    assert done.returncode == 2, done.stderr
    assert "task 'anthropic:claude-3-5-haiku-latest': ANTHROPIC_API_KEY is not set" in done.stderr
    assert "judge 'Correctness' (openai:gpt-4o-mini): OPENAI_API_KEY is not set" in done.stderr


@pytest.mark.usefixtures("no_keys")
async def test_a_local_server_needs_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge whose base_url is on 127.0.0.1 runs without any key and the run completes."""
    async with FakeModelServer(FakeResponse(text="Answer: YES\nReasoning: ok")) as server:
        monkeypatch.setenv("FAKE_URL", server.base_url)
        done = await anyio.to_thread.run_sync(cli, make_project(tmp_path), "run", "--out", "out")
    assert done.returncode == 0, done.stderr
    assert len(server.received) == 3


@pytest.mark.usefixtures("no_keys")
def test_which_clients_need_a_key() -> None:
    """Given keys ("" included), URL credentials, credential headers, local URLs need none."""
    needs = OpenAIChat("gpt-4o-mini")
    assert needs.missing_key == "OPENAI_API_KEY is not set"
    fine = [
        OpenAIChat("m", api_key=""),
        OpenAIChat("m", api_key="sk-live-0123456789"),
        OpenAIChat("m", base_url="https://alice:pa55word@llm.example/v1"),
        OpenAIChat("m", base_url="https://llm.example/v1", headers={"api-key": "az-0123"}),
        OpenAIChat("m", base_url="http://localhost:11434/v1"),
        OpenAIChat("m", base_url="http://[::1]:8000/v1"),
        AnthropicMessages("m", base_url="http://127.0.0.2:8080"),
    ]
    assert [client.missing_key for client in fine] == [None] * len(fine)
    assert AnthropicMessages("m").missing_key == "ANTHROPIC_API_KEY is not set"


def test_an_empty_variable_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_API_KEY exported empty is a missing key ("is empty"), unlike api_key=""."""
    monkeypatch.setenv("OPENAI_API_KEY", "")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIChat("m").missing_key == "OPENAI_API_KEY is empty"
    assert OpenAIChat("m", api_key="").missing_key is None


@pytest.mark.usefixtures("no_keys")
def test_missing_keys_names_the_nearest_judge_once_per_client() -> None:
    """A client shared by two judges is reported once, under the first judge holding it."""
    shared = OpenAIChat("gpt-4o-mini")
    judges = {
        "a": CorrectnessJudge(shared, name="first"),
        "b": CorrectnessJudge(shared, name="second"),
        "c": CorrectnessJudge(OpenAIChat("m", api_key="sk-live-0123456789"), name="third"),
    }
    assert missing_keys(None, judges) == [
        "judge 'first' (openai:gpt-4o-mini): OPENAI_API_KEY is not set"
    ]


@pytest.mark.usefixtures("no_keys")
def test_a_client_after_a_large_replayed_tier_is_still_found(tmp_path: Path) -> None:
    """A cascade whose first tier replays 4,000 logged judgments: the next tier's client is
    key-checked and found for closing (the walk used to spend its object budget inside the log
    and miss it), and a client inside a logged judgment's metadata is not taken for one."""
    from agentjudge import Cascade, Tier, TierPolicy
    from agentjudge.harness._clients import find_model_clients
    from agentjudge.judges import ReplayJudge

    log = tmp_path / "cheap.jsonl"
    rows = [{"id": f"c{i}", "status": "pass", "confidence": 0.9} for i in range(4_000)]
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    replay = ReplayJudge(log)
    client = OpenAIChat("gpt-4o-mini")
    cascade = Cascade(
        [
            Tier("cheap", replay, TierPolicy.STOP_ON_CONFIDENCE, threshold=0.5),
            Tier("strong", CorrectnessJudge(client, name="Correctness")),
        ]
    )
    assert missing_keys(None, cascade) == [
        "judge 'Correctness' (openai:gpt-4o-mini): OPENAI_API_KEY is not set"
    ]
    assert find_model_clients(cascade) == [client]
    logged = next(iter(replay._judgments.values()))
    holder = logged.model_copy(update={"metadata": {"client": OpenAIChat("other")}})
    assert find_model_clients([holder]) == []

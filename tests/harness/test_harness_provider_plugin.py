"""A third-party provider, installed through the ``agentjudge.providers`` entry point, works
everywhere a built-in one does: `model_from_string`, a suite run (task and judges) and
``--batch``. The provider is the worked example of docs/how-to/providers.md, installed as a real
distribution (a ``.dist-info`` folder on ``sys.path``) and run against `FakeModelServer`.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from batch_rows_support import comparable, rows_by_id
from cli_support import cli_async
from docs_support import blocks

from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.models import (
    BatchCollector,
    HTTPModelClient,
    ModelRequest,
    RetryPolicy,
    known_providers,
    model_from_string,
    prices,
)
from agentjudge.testing import FakeModelServer, FakeResponse

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "providers.md"
FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
    "additionalProperties": False,
}


def install(folder: Path) -> None:
    """Write the page's ``gateway_provider.py`` and a distribution registering it into folder."""
    (code,) = [b.code for b in blocks(PAGE.read_text("utf-8")) if b.file == "gateway_provider.py"]
    (folder / "gateway_provider.py").write_text(code, encoding="utf-8")
    info = folder / "gateway_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gateway-provider\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[agentjudge.providers]\ngateway = gateway_provider:GatewayChat\n", encoding="utf-8"
    )


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    install(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gateway_provider", raising=False)
    monkeypatch.delenv("GATEWAY_API_KEY", raising=False)
    monkeypatch.delenv("GATEWAY_BASE_URL", raising=False)
    return tmp_path


def ask(**fields: Any) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="Grade this."),), **fields)


async def test_the_documented_provider_works_in_model_from_string(plugin: Path) -> None:
    """Prefix known, key header sent, structured output and usage read, priced by its name."""
    assert "gateway" in known_providers()
    async with (
        FakeModelServer(FakeResponse(json={"score": 3})) as server,
        model_from_string(
            "gateway:big-model", base_url=server.base_url, api_key="gw-123456789"
        ) as model,
    ):
        assert isinstance(model, HTTPModelClient)
        assert type(model).__name__ == "GatewayChat"
        response = await model.complete(ask(response_schema=SCHEMA))
    assert response.parsed == {"score": 3}
    assert response.usage.input_tokens is not None and response.usage.output_tokens is not None
    received = server.received[0]
    assert received.path == "/v1/chat/completions"
    assert received.headers["x-gateway-key"] == "gw-123456789"
    assert received.json["response_format"]["json_schema"]["schema"] == SCHEMA
    prices.set("gateway:big-model", input=1.0, output=2.0)
    try:
        assert prices.cost("gateway:big-model", response.usage) is not None
    finally:
        prices.set("gateway:big-model", None)


async def test_the_documented_providers_body_wait_pauses_the_client(plugin: Path) -> None:
    """The wait read from the 429's body (no header) pauses every request of the client."""
    body = json.dumps({"error": {"message": "slow down", "retry_after_seconds": 9}})
    async with FakeModelServer(FakeResponse(text="fine")) as server:
        server.enqueue(FakeResponse(status=429, raw_body=body))
        async with model_from_string(
            "gateway:m", base_url=server.base_url, api_key="gw-123456789", retry=FAST
        ) as model:
            with anyio.fail_after(2):
                with pytest.raises(ModelHTTPError, match="asked to wait 9 s"):
                    await model.complete(ask())
                with pytest.raises(ModelHTTPError, match="the wait the provider asked for"):
                    await model.complete(ask())
    assert len(server.requests) == 1


async def test_the_documented_provider_batches_through_its_batch_api(
    plugin: Path, tmp_path: Path
) -> None:
    """BatchCollector drives the provider's batch_api(): one batch, the online answer."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        model = model_from_string("gateway:m", base_url=server.base_url, api_key="gw-123456789")
        assert model.supports_batch
        async with BatchCollector(model, state_path=tmp_path / "s.json", linger=0.01) as batched:
            response = await batched.complete(ask())
    assert response.text == "PASS"
    assert response.batch is True
    assert len(server.batches.created) == 1
    upload = next(r for r in server.received if r.path == "/v1/files")
    assert upload.headers["x-gateway-key"] == "gw-123456789"


JUDGES = """
import os
from agentjudge.judges import CorrectnessJudge
from agentjudge.models import model_from_string


def judge():
    model = model_from_string("gateway:judge-model", base_url=os.environ["FAKE_URL"])
    return CorrectnessJudge(model, name="gw")
"""


def respond(data: dict[str, Any]) -> FakeResponse:
    """The task echoes; the judge says YES for the cases whose input says alpha."""
    if data.get("model") == "task-model":
        return FakeResponse(text="an answer")
    if "alpha" in json.dumps(data):
        return FakeResponse(text="Answer: YES\nReasoning: matches")
    return FakeResponse(text="Answer: NO\nReasoning: does not match")


async def test_the_documented_provider_runs_a_suite_online_and_with_batch(tmp_path: Path) -> None:
    """task = "gateway:..." and judges on it: a suite run, then --batch with the same rows."""
    install(tmp_path)  # in the project folder: the CLI puts it first on sys.path
    rows = [{"id": f"q{i}", "input": f"{'omega' if i % 2 else 'alpha'}-{i}"} for i in range(4)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "judges.py").write_text(textwrap.dedent(JUDGES))
    async with FakeModelServer(default=respond) as server:
        (tmp_path / "agentjudge.toml").write_text(
            'dataset = "data.jsonl"\ntask = "gateway:task-model"\n'
            f'task_url = "{server.base_url}"\njudges = "judges:judge"\n'
            "batch_poll_interval = 0.2\nbatch_linger = 0.05\n"
        )
        env = {**os.environ, "FAKE_URL": server.base_url, "GATEWAY_API_KEY": "gw-123456789"}
        for out, extra in (("online", ()), ("batched", ("--batch",))):
            proc = await cli_async(
                tmp_path, "run", "--progress", "off", "--out", out, *extra, env=env
            )
            assert proc.returncode == 0, proc.stderr
        assert [len(ids) for _, ids in server.batches.created] == [4]  # the judge's calls
    online, batched = rows_by_id(tmp_path / "online"), rows_by_id(tmp_path / "batched")
    assert comparable(batched) == comparable(online)
    verdicts = {k: r["results"][0]["judgment"]["status"] for k, r in online.items()}
    assert verdicts == {"q0": "pass", "q1": "fail", "q2": "pass", "q3": "fail"}
    assert all(r["results"][0]["judgment"]["metadata"]["batch"] for r in batched.values())

"""Gemini batch mode and Azure OpenAI batches through BatchCollector, over loopback HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agentjudge.core import Message
from agentjudge.exceptions import ModelError
from agentjudge.harness._batch_mode import BatchMode
from agentjudge.models import AzureOpenAIChat, BatchCollector, GeminiChat, ModelRequest
from agentjudge.models._batch import custom_id
from agentjudge.testing import FakeModelServer, FakeResponse

FAST: dict[str, Any] = {"linger": 0.01, "poll_interval": 0.01, "max_poll_interval": 0.05}
KEY = "g-key-0123456789abcdef"
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
    "additionalProperties": False,
}


def ask(text: str = "Grade this.", **fields: Any) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), **fields)


def gemini(server: FakeModelServer) -> GeminiChat:
    return GeminiChat("gemini-2.5-flash", base_url=f"{server.url}/v1beta", api_key=KEY)


def azure(server: FakeModelServer) -> AzureOpenAIChat:
    return AzureOpenAIChat("batch-dep", base_url=server.url, api_key=KEY, api_version="2024-10-21")


async def test_gemini_batch_answers_like_online_with_structured_output(tmp_path: Path) -> None:
    """batchGenerateContent with inline requests keyed by custom id; the operation is polled."""
    async with (
        FakeModelServer(FakeResponse(json={"score": 4})) as server,
        BatchCollector(gemini(server), state_path=tmp_path / "s.json", **FAST) as bc,
    ):
        response = await bc.complete(ask(response_schema=SCHEMA))
    assert response.parsed == {"score": 4}
    assert response.batch is True and response.usage.input_tokens is not None
    created = next(r for r in server.received if r.path.endswith(":batchGenerateContent"))
    assert created.path == "/v1beta/models/gemini-2.5-flash:batchGenerateContent"
    assert created.headers["x-goog-api-key"] == KEY
    (inline,) = created.json["batch"]["inputConfig"]["requests"]["requests"]
    assert inline["metadata"]["key"] == server.batches.created[0][1][0]
    assert inline["request"]["generationConfig"]["responseMimeType"] == "application/json"
    polls = [r for r in server.received if r.method == "GET"]
    assert polls and all(r.path.startswith("/v1beta/batches/") for r in polls)
    assert all(KEY not in r.path for r in server.received)  # the key never goes in a URL


async def test_gemini_responses_without_keys_are_matched_by_position(tmp_path: Path) -> None:
    """The API may leave out the responses' metadata: their order then gives the custom ids."""
    answers = {"first": "one", "second": "two", "third": "three"}

    def respond(data: Any) -> FakeResponse:
        return FakeResponse(text=answers[data["contents"][-1]["parts"][0]["text"]])

    async with FakeModelServer(respond) as server:
        server.batches.echo_keys = False
        async with BatchCollector(gemini(server), state_path=tmp_path / "s.json", **FAST) as bc:
            got: dict[str, str] = {}

            async def one(text: str) -> None:
                got[text] = (await bc.complete(ask(text))).text

            async with anyio.create_task_group() as tg:
                for text in answers:
                    tg.start_soon(one, text)
    assert got == answers
    assert len(server.batches.created) == 1


async def test_gemini_failed_batch_and_failed_items_become_errors(tmp_path: Path) -> None:
    """A failed operation fails its requests with its error; a failed item with its status."""
    async with FakeModelServer(FakeResponse(text="ok")) as server:
        model = gemini(server)
        server.batches.fail_batch = "the batch was refused: quota"
        async with BatchCollector(model, state_path=tmp_path / "a.json", **FAST) as bc:
            with pytest.raises(ModelError, match="BATCH_STATE_FAILED: 3: the batch was refused"):
                await bc.complete(ask())
        request = ask("expire me")
        body = model.request_body(request, list(request.messages), None)
        server.batches.expire = {custom_id(body)}
        async with BatchCollector(model, state_path=tmp_path / "b.json", **FAST) as bc:
            with pytest.raises(ModelError, match="the request failed: 4: expired"):
                await bc.complete(request)


async def test_azure_batch_uses_the_openai_routes_with_api_version(tmp_path: Path) -> None:
    """/openai/files and /openai/batches with api-version and the api-key header."""
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        BatchCollector(azure(server), state_path=tmp_path / "s.json", **FAST) as bc,
    ):
        response = await bc.complete(ask())
    assert response.text == "PASS" and response.batch is True
    batch_calls = [r for r in server.received if r.path.startswith("/openai/")]
    assert {r.path.partition("?")[0] for r in batch_calls} >= {"/openai/files", "/openai/batches"}
    assert all(r.path.endswith("?api-version=2024-10-21") for r in batch_calls)
    assert all(r.headers["api-key"] == KEY for r in batch_calls)
    create = next(r for r in batch_calls if r.path.startswith("/openai/batches?"))
    assert create.json["endpoint"] == "/chat/completions"


async def test_the_fake_refuses_azure_batch_calls_without_api_version() -> None:
    """As Azure does: 400 naming the missing api-version."""
    async with FakeModelServer() as server, httpx.AsyncClient() as http:
        answer = await http.get(f"{server.url}/openai/batches/batch_x")
    assert answer.status_code == 400
    assert "api-version" in answer.text


def test_batch_mode_takes_gemini_and_azure_clients(tmp_path: Path) -> None:
    """--batch batches both providers now (their batch_api() is not None)."""
    clients = [
        GeminiChat("m", base_url="http://127.0.0.1:9/v1beta", api_key=KEY),
        AzureOpenAIChat("d", base_url="http://127.0.0.1:9", api_key=KEY),
    ]
    mode = BatchMode(clients, tmp_path, retry_online=False, poll_interval=1.0)
    assert [client for client, _ in mode.pairs] == clients
    assert mode.warnings == []

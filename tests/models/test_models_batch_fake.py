"""FakeModelServer batch endpoints, checked with the official openai and anthropic SDKs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sdk_support import sdk

from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

openai = sdk("openai")
anthropic = sdk("anthropic")
pytestmark = pytest.mark.xdist_group("sdk")


def _jsonl(items: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(item) + "\n" for item in items).encode()


def _chat_line(custom_id: str, text: str) -> dict[str, Any]:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def _echo(data: Any) -> FakeResponse:
    return FakeResponse(text="echo: " + data["messages"][-1]["content"])


async def test_openai_sdk_upload_create_poll_and_download() -> None:
    """The openai SDK uploads a JSONL file, creates a batch, polls it and reads the answers."""
    async with FakeModelServer(_echo) as server:
        server.batches.complete_after = 2
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        uploaded = await client.files.create(
            file=("in.jsonl", _jsonl([_chat_line("a", "one"), _chat_line("b", "two")])),
            purpose="batch",
        )
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        first = await client.batches.retrieve(batch.id)
        second = await client.batches.retrieve(batch.id)
        assert second.output_file_id is not None
        content = await client.files.content(second.output_file_id)
        await client.close()
    assert uploaded.bytes > 0 and uploaded.purpose == "batch"
    assert batch.status == "in_progress" and first.status == "in_progress"
    assert second.status == "completed" and second.error_file_id is None
    assert second.request_counts is not None and second.request_counts.completed == 2
    lines = [json.loads(line) for line in content.text.splitlines()]
    answers = {
        line["custom_id"]: line["response"]["body"]["choices"][0]["message"]["content"]
        for line in lines
    }
    assert answers == {"a": "echo: one", "b": "echo: two"}
    assert server.batches.created == [(batch.id, ["a", "b"])]


async def test_openai_expired_and_errored_items_go_to_the_error_file() -> None:
    """Expired and errored items are listed in the error file with the provider's reason."""
    async with FakeModelServer(_echo) as server:
        server.batches.expire = {"late"}
        server.batches.fail = {"bad"}
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        lines = [_chat_line("ok", "x"), _chat_line("late", "y"), _chat_line("bad", "z")]
        uploaded = await client.files.create(file=("in.jsonl", _jsonl(lines)), purpose="batch")
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        done = await client.batches.retrieve(batch.id)
        assert done.error_file_id is not None
        errors = await client.files.content(done.error_file_id)
        await client.close()
    by_id = {line["custom_id"]: line for line in map(json.loads, errors.text.splitlines())}
    assert by_id["late"]["error"]["code"] == "batch_expired"
    assert by_id["bad"]["response"]["status_code"] == 500
    assert done.request_counts is not None and done.request_counts.failed == 2


async def test_openai_failed_batch_reports_its_errors() -> None:
    """fail_batch makes the batch end 'failed' with the validation message and no output."""
    async with FakeModelServer(_echo) as server:
        server.batches.fail_batch = "line 1: model not available"
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        uploaded = await client.files.create(
            file=("in.jsonl", _jsonl([_chat_line("a", "x")])), purpose="batch"
        )
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        done = await client.batches.retrieve(batch.id)
        await client.close()
    assert done.status == "failed" and done.output_file_id is None
    assert done.errors is not None and done.errors.data is not None
    assert done.errors.data[0].message == "line 1: model not available"


async def test_openai_cancel() -> None:
    """Cancelling a batch ends it 'cancelled' with every item in the error file."""
    async with FakeModelServer(_echo) as server:
        server.batches.complete_after = 5
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        uploaded = await client.files.create(
            file=("in.jsonl", _jsonl([_chat_line("a", "x")])), purpose="batch"
        )
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        cancelled = await client.batches.cancel(batch.id)
        await client.close()
    assert cancelled.status == "cancelled" and cancelled.error_file_id is not None


async def test_anthropic_sdk_create_poll_and_results() -> None:
    """The anthropic SDK creates a message batch, polls it and streams typed results."""
    async with FakeModelServer(_echo) as server:
        server.batches.complete_after = 2
        server.batches.expire = {"c"}
        server.enqueue(FakeResponse(status=400, text="max_tokens too large"))
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="test")
        requests: Any = [
            {
                "custom_id": cid,
                "params": {
                    "model": "claude-x",
                    "max_tokens": 10,
                    "messages": [{"role": "user", "content": text}],
                },
            }
            for cid, text in (("a", "first"), ("b", "second"), ("c", "third"))
        ]
        batch = await client.messages.batches.create(requests=requests)
        first = await client.messages.batches.retrieve(batch.id)
        done = await client.messages.batches.retrieve(batch.id)
        results = {
            r.custom_id: r.result async for r in await client.messages.batches.results(batch.id)
        }
        await client.close()
    assert batch.processing_status == "in_progress" and first.processing_status == "in_progress"
    assert done.processing_status == "ended"
    assert done.request_counts.succeeded == 1 and done.request_counts.errored == 1
    assert done.request_counts.expired == 1
    assert results["a"].type == "errored"  # the queued 400 answered the first item
    assert results["b"].type == "succeeded"
    assert results["b"].message.content[0].type == "text"
    assert results["b"].message.content[0].text == "echo: second"
    assert results["c"].type == "expired"

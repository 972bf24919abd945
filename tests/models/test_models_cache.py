"""SqliteCache: content-addressed, persistent, single-flight, with hit/miss counters."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.models import ModelRequest, ModelResponse, OpenAIChat, SqliteCache
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

REQUEST = ModelRequest(messages=(Message(role="user", content="Is this correct?"),))
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


async def test_single_flight_ten_identical_requests_one_call(tmp_path: Path) -> None:
    """10 identical concurrent requests make 1 server call: 1 miss, 9 hits."""
    cache = SqliteCache(tmp_path / "cache.sqlite")
    responses: list[ModelResponse] = []
    async with (
        FakeModelServer(FakeResponse(text="PASS", latency=0.1)) as server,
        OpenAIChat("m", base_url=server.base_url, cache=cache) as model,
    ):

        async def one() -> None:
            responses.append(await model.complete(REQUEST))

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(one)
    assert len(server.requests) == 1
    assert (cache.misses, cache.hits) == (1, 9)
    assert [r.text for r in responses] == ["PASS"] * 10
    assert sum(r.cached for r in responses) == 9
    assert (tmp_path / "cache.sqlite").stat().st_size > 0
    await cache.aclose()


async def test_cache_persists_across_instances(tmp_path: Path) -> None:
    """A new SqliteCache on the same file answers without calling the model."""
    path = tmp_path / "nested" / "cache.sqlite"
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        async with (
            SqliteCache(path) as cache,
            OpenAIChat("m", base_url=server.base_url, cache=cache) as model,
        ):
            await model.complete(REQUEST)
        async with (
            SqliteCache(path) as reopened,
            OpenAIChat("m", base_url=server.base_url, cache=reopened) as model,
        ):
            response = await model.complete(REQUEST)
    assert len(server.requests) == 1
    assert (reopened.hits, reopened.misses) == (1, 0)
    assert response.cached
    assert response.text == "PASS"
    assert response.queued_s == 0.0


async def test_key_covers_params_sample_index_and_client(tmp_path: Path) -> None:
    """sample_index, temperature, schema and the client name are part of the key."""
    async with (
        SqliteCache(tmp_path / "c.sqlite") as cache,
        FakeModelServer(FakeResponse(json={"ok": True})) as server,
        OpenAIChat("m", base_url=server.base_url, cache=cache) as model,
        OpenAIChat("other", base_url=server.base_url, cache=cache) as other,
    ):
        await model.complete(REQUEST)
        await model.complete(REQUEST)
        await model.complete(REQUEST.model_copy(update={"sample_index": 1}))
        await model.complete(REQUEST.model_copy(update={"temperature": 0.7}))
        await model.complete(REQUEST.model_copy(update={"response_schema": SCHEMA}))
        await other.complete(REQUEST)
    assert len(server.requests) == 5
    assert (cache.hits, cache.misses) == (1, 5)


def test_key_is_stable_and_content_addressed() -> None:
    """Equal requests give equal keys; any change gives another key."""
    key = SqliteCache.key("openai:m", REQUEST)
    assert key == SqliteCache.key("openai:m", ModelRequest(messages=REQUEST.messages))
    assert len(key) == 64
    changed = REQUEST.model_copy(update={"messages": (Message(role="user", content="Other?"),)})
    assert key != SqliteCache.key("openai:m", changed)
    assert key != SqliteCache.key("openai:m", REQUEST, {"seed": 1})


async def test_schema_failures_are_not_cached(tmp_path: Path) -> None:
    """An answer that failed its schema (parsed None) is asked again next time."""
    async with (
        SqliteCache(tmp_path / "c.sqlite") as cache,
        FakeModelServer(FakeResponse(text="not json")) as server,
        OpenAIChat("m", base_url=server.base_url, cache=cache, schema_retries=0) as model,
    ):
        request = REQUEST.model_copy(update={"response_schema": SCHEMA})
        first = await model.complete(request)
        await model.complete(request)
    assert first.parsed is None
    assert len(server.requests) == 2
    assert cache.misses == 2


async def test_a_failing_leader_fails_its_followers(tmp_path: Path) -> None:
    """Followers of an in-flight request that fails get the same error, without new calls."""
    errors: list[BaseException] = []
    async with (
        SqliteCache(tmp_path / "c.sqlite") as cache,
        FakeModelServer(FakeResponse(status=401, latency=0.1)) as server,
        OpenAIChat("m", base_url=server.base_url, cache=cache) as model,
    ):

        async def one() -> None:
            try:
                await model.complete(REQUEST)
            except ModelHTTPError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(one)
    assert len(server.requests) == 1
    assert len(errors) == 5


async def test_a_cancelled_leader_hands_over(tmp_path: Path) -> None:
    """If the leading request is cancelled, a waiting identical request makes the call."""
    arrived = anyio.Event()

    async def slow(request: object) -> FakeResponse:
        arrived.set()
        await anyio.sleep(0.2)
        return FakeResponse(text="PASS")

    results: list[str] = []
    async with (
        SqliteCache(tmp_path / "c.sqlite") as cache,
        FakeModelServer(slow) as server,
        OpenAIChat("m", base_url=server.base_url, cache=cache) as model,
    ):
        leader_scope = anyio.CancelScope()

        async def leader() -> None:
            with leader_scope:
                await model.complete(REQUEST)

        async def follower() -> None:
            results.append((await model.complete(REQUEST)).text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(leader)
            await arrived.wait()
            tg.start_soon(follower)
            await anyio.wait_all_tasks_blocked()
            leader_scope.cancel()
    assert results == ["PASS"]
    assert len(server.requests) == 2


async def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    """Pointing the cache at a non-SQLite file names the file."""
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 100)
    cache = SqliteCache(path)
    with pytest.raises(ValueError, match=r"notes\.txt"):
        await cache.get("x")


async def test_clear_forgets_everything(tmp_path: Path) -> None:
    """clear() empties the cache."""
    async with (
        SqliteCache(tmp_path / "c.sqlite") as cache,
        FakeModelServer() as server,
        OpenAIChat("m", base_url=server.base_url, cache=cache) as model,
    ):
        await model.complete(REQUEST)
        await cache.clear()
        await model.complete(REQUEST)
    assert len(server.requests) == 2

"""Model clients and the judges holding them pickle as configuration (issue 12, item 20)."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from agentjudge import Status
from agentjudge.core import Context, Message
from agentjudge.judges import LLMJudge, ScoreJudge
from agentjudge.models import (
    AnthropicMessages,
    ModelRequest,
    OpenAIChat,
    RateLimit,
    RetryPolicy,
    SqliteCache,
)
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

REQUEST = ModelRequest(messages=(Message(role="user", content="Grade this."),))

CHILD = """
import pickle, sys, anyio
from agentjudge.core import Context
judge = pickle.loads(sys.stdin.buffer.read())
judgment = anyio.run(judge, Context(input="2+2?", output="4"))
print(judgment.status.value, judgment.metadata["raw_output"])
"""


async def test_unpickled_llm_judge_answers_over_loopback() -> None:
    """pickle.loads(pickle.dumps(LLMJudge(client))) works after use and the copy answers."""
    async with FakeModelServer(FakeResponse(text="Answer: YES")) as server:
        model = OpenAIChat("m", base_url=server.base_url, api_key="k", rate_limit=RateLimit(rpm=50))
        judge = LLMJudge("j", model, "Is {{output}} right for {{input}}?")
        ctx = Context(input="2+2?", output="4")
        assert (await judge(ctx)).status is Status.PASS  # connections and limiter now exist
        copy = pickle.loads(pickle.dumps(judge))
        try:
            assert (await copy(ctx)).status is Status.PASS
        finally:
            await copy.model.aclose()
            await model.aclose()
    assert copy.model is not model
    assert copy.model.name == "openai:m" and copy.model.api_key == "k"
    assert copy.model.rate_limit.rpm == 50
    assert len(server.requests) == 2


async def test_pickled_judge_answers_in_another_process() -> None:
    """A pickled LLMJudge is unpickled and answers in a real child process."""
    async with FakeModelServer(FakeResponse(text="Answer: NO")) as server:
        model = AnthropicMessages("m", base_url=server.base_url, api_key="k")
        blob = pickle.dumps(LLMJudge("j", model, "Is {{output}} right?"))
        with anyio.fail_after(60):  # generous bound for a cold interpreter start
            done = await anyio.run_process([sys.executable, "-c", CHILD], input=blob, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["fail", "Answer:", "NO"]
    assert server.received[0].headers["x-api-key"] == "k"


async def test_score_judge_with_a_model_client_pickles() -> None:
    """A ScoreJudge driving a model client pickles and its copy scores over loopback."""
    answer = FakeResponse(json={"score": 0.75, "reasoning": "fine"})
    async with FakeModelServer(answer) as server:
        model = OpenAIChat("m", base_url=server.base_url, retry=RetryPolicy(attempts=2))
        judge = ScoreJudge("s", model, instructions="Score it.", metric_key="quality")
        copy = pickle.loads(pickle.dumps(judge))
        result = await copy.evaluate("q", "a")
        await copy.runner.model.aclose()
    assert result.judgment is not None and result.judgment.score == 0.75


async def test_cache_copy_shares_the_sqlite_file(tmp_path: Path) -> None:
    """A pickled SqliteCache opens its own connection to the same file and sees stored answers."""
    async with FakeModelServer(FakeResponse(text="cached")) as server:
        cache = SqliteCache(tmp_path / "c.db")
        async with OpenAIChat("m", base_url=server.base_url, cache=cache) as model:
            await model.complete(REQUEST)
            copy = pickle.loads(pickle.dumps(model))
            response = await copy.complete(REQUEST)
            await copy.aclose()
        cache.close()
        copy.cache.close()
    assert response.cached and response.text == "cached"
    assert len(server.requests) == 1


async def test_rate_limit_copy_starts_with_a_fresh_budget() -> None:
    """A pickled RateLimit keeps rpm/tpm/period and drops the in-flight bookkeeping."""
    limit = RateLimit(rpm=2, tpm=100, period=30.0)
    lease = await limit.acquire(10)
    copy = pickle.loads(pickle.dumps(limit))
    assert (copy.rpm, copy.tpm, copy.period) == (2, 100, 30.0)
    assert limit.in_flight == 1 and copy.in_flight == 0
    (await copy.acquire(10)).settle()
    lease.settle()


def test_client_with_an_injected_httpx_client_refuses_to_pickle_clearly() -> None:
    """An injected httpx.AsyncClient cannot travel: pickling says what to do instead."""
    model = OpenAIChat("m", client=httpx.AsyncClient())
    with pytest.raises(TypeError, match=r"cannot be pickled: it was given client=<AsyncClient>"):
        pickle.dumps(LLMJudge("j", model, "{{output}}"))

"""BatchCollector means what online means: one item per call, tolerant result files, redaction."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentjudge.core import Context, Status
from agentjudge.engine import Evaluator
from agentjudge.judges import LLMJudge, SelfConsistency
from agentjudge.models import (
    AnthropicMessages,
    AzureOpenAIChat,
    BatchCollector,
    GeminiChat,
    HTTPModelClient,
    ModelRequest,
    OpenAIChat,
)
from agentjudge.models._batch import custom_id
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

TEMPLATE = "Question: {{input}}\nAnswer: {{output}}\nIs the answer correct?"
FAST: dict[str, Any] = {"linger": 30.0, "poll_interval": 0.01, "max_poll_interval": 0.05}
SECRET = "sk-batch-secret-0123456789abcdef"
COMPLETIONS = ("/chat/completions", "/v1/messages", ":generateContent")
YES_SAMPLES = [3, 4, 1, 5]
"""Case i: the first YES_SAMPLES[i] of its 5 sampled answers say YES, the rest NO."""


def _client(provider: str, server: FakeModelServer, key: str = "k") -> HTTPModelClient:
    if provider == "openai":
        return OpenAIChat("m", base_url=server.base_url, api_key=key)
    if provider == "gemini":
        return GeminiChat("m", base_url=f"{server.url}/v1beta", api_key=key)
    if provider == "azure":
        return AzureOpenAIChat("m", base_url=server.url, api_key=key, api_version="2024-10-21")
    return AnthropicMessages("m", base_url=server.base_url, api_key=key)


def _prompt(data: Any) -> str:
    """The last user text of an OpenAI / Anthropic or a Gemini request body."""
    if "contents" in data:
        return str(data["contents"][-1]["parts"][0]["text"])
    return str(data["messages"][-1]["content"])


def _sampler() -> Callable[[Any], FakeResponse]:
    """Answers the k-th request of a case's prompt YES while k < YES_SAMPLES[case]."""
    seen: Counter[str] = Counter()

    def respond(data: Any) -> FakeResponse:
        prompt = _prompt(data)
        match = re.search(r"Question: q(\d+)", prompt)
        assert match is not None
        k = seen[prompt]
        seen[prompt] += 1
        return FakeResponse(text="Answer: YES" if k < YES_SAMPLES[int(match[1])] else "Answer: NO")

    return respond


async def _judge_all(judge: LLMJudge) -> dict[str, Any]:
    contexts = [Context(input=f"q{i}", output=f"a{i}") for i in range(len(YES_SAMPLES))]
    evaluator = Evaluator(judge, max_concurrency=100, timeout=20.0)  # bound for a hang
    cases = [case async for case in evaluator.run(contexts, concurrency=100)]
    return {case.context.input: case.results[0] for case in cases}


def _calls(server: FakeModelServer) -> list[Any]:
    """Completion requests the server answered (online requests and batch items alike)."""
    return [r.json for r in server.received if r.path.partition("?")[0].endswith(COMPLETIONS)]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "azure"])
async def test_self_consistency_in_a_batch_matches_online_call_for_call(
    provider: str, tmp_path: Path
) -> None:
    """SelfConsistency(5) over 4 cases: 20 batch items, the confidences online gives."""
    method = SelfConsistency(samples=5)
    async with FakeModelServer(_sampler()) as server, _client(provider, server) as model:
        online = await _judge_all(LLMJudge("correct", model, TEMPLATE, confidence=method))
    online_calls = len(_calls(server))
    options = {**FAST, "linger": 1.0}
    async with (
        FakeModelServer(_sampler()) as server,
        _client(provider, server) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=20, **options) as bc,
    ):
        batched = await _judge_all(LLMJudge("correct", bc, TEMPLATE, confidence=method))
    items = [cid for _, ids in server.batches.created for cid in ids]
    assert online_calls == len(_calls(server)) == len(items) == 20
    assert len(set(items)) == 20
    for case, result in online.items():
        other = batched[case]
        assert other.judgment is not None and other.judgment.metadata["batch"] is True
        assert (other.status, other.judgment.label) == (result.status, result.judgment.label)
        assert other.judgment.confidence == result.judgment.confidence
        assert other.judgment.metadata["votes"] == result.judgment.metadata["votes"]
    assert [online[f"q{i}"].judgment.confidence for i in range(4)] == [0.6, 0.8, 0.8, 1.0]
    if provider != "anthropic":  # samples 1..4 ask for their own seed; sample 0 as online
        seeds = Counter(
            (body.get("generationConfig") or {}).get("seed", body.get("seed"))
            for body in _calls(server)
        )
        assert seeds == {None: 4, 1: 4, 2: 4, 3: 4, 4: 4}


async def test_a_seed_set_by_the_client_is_kept_for_every_sample(tmp_path: Path) -> None:
    """extra_body={"seed": 7}: both samples keep seed 7 (as online) yet are separate items."""
    async with (
        FakeModelServer(FakeResponse(text="ok")) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k", extra_body={"seed": 7}) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=2, **FAST) as bc,
    ):
        request = _requests(1)[0]
        async with anyio.create_task_group() as tg:
            for i in range(2):
                tg.start_soon(bc.complete, request.model_copy(update={"sample_index": i}))
    [(_, ids)] = server.batches.created
    assert len(set(ids)) == 2
    assert [body["seed"] for body in _calls(server)] == [7, 7]


async def test_a_repeated_identical_call_is_its_own_item(tmp_path: Path) -> None:
    """Two identical calls (same body, same sample index) are two items, two answers."""
    answers = iter(["first", "second"])
    async with (
        FakeModelServer(lambda _: FakeResponse(text=next(answers))) as server,
        AnthropicMessages("m", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=2, **FAST) as bc,
    ):
        request = ModelRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
        texts: list[str] = []

        async def ask() -> None:
            texts.append((await bc.complete(request)).text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            tg.start_soon(ask)
    [(_, ids)] = server.batches.created
    assert ids[0] == custom_id(
        model.request_body(request, list(request.messages), None)
    )  # as before
    assert len(set(ids)) == 2
    assert sorted(texts) == ["first", "second"]


async def test_a_call_retried_after_a_timeout_takes_over_its_item(tmp_path: Path) -> None:
    """An attempt cancelled while its item waits: the retry waits for that item, none new."""
    async with (
        FakeModelServer(FakeResponse(text="late")) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=1, **FAST) as bc,
    ):
        server.batches.complete_after = 10**6
        request = _requests(1)[0]
        async with anyio.create_task_group() as tg:
            tg.start_soon(bc.complete, request)
            await server.batches.wait_created()
            tg.cancel_scope.cancel()  # the attempt times out while its batch is in progress
        server.batches.complete_after = server.batches.polls + 1
        response = await bc.complete(request)
    assert response.text == "late"
    assert len(server.batches.created) == 1


# -- result files that cannot all be read ---------------------------------------------------------


def _requests(n: int) -> list[ModelRequest]:
    return [
        ModelRequest.model_validate({"messages": [{"role": "user", "content": f"prompt {i}"}]})
        for i in range(n)
    ]


async def _ask_all(bc: BatchCollector, requests: list[ModelRequest]) -> list[Any]:
    outcomes: list[Any] = [None] * len(requests)

    async def ask(i: int) -> None:
        try:
            outcomes[i] = await bc.complete(requests[i])
        except Exception as exc:
            outcomes[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(len(requests)):
            tg.start_soon(ask, i)
    return outcomes


def _garbage(data: bytes) -> bytes:
    return data + b"\x00not json at all {\n"


def _cut_mid_line(data: bytes) -> bytes:
    return data[: data.rstrip(b"\n").rfind(b"\n") + 20]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_garbage_line_keeps_the_fifty_paid_answers(provider: str, tmp_path: Path) -> None:
    """50 good lines + 1 garbage line: 50 answers land; the file is downloaded once."""
    async with (
        FakeModelServer(lambda data: FakeResponse(text=data["messages"][-1]["content"])) as server,
        _client(provider, server) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=50, **FAST) as bc,
    ):
        server.batches.result_filter = _garbage
        requests = _requests(50)
        outcomes = await _ask_all(bc, requests)
    assert [o.text for o in outcomes] == [f"prompt {i}" for i in range(50)]
    assert server.batches.downloads == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_file_cut_mid_line_fails_only_the_cut_request(
    provider: str, tmp_path: Path
) -> None:
    """A result file cut inside its last line: 50 answers, 1 ERROR saying why; one download."""
    async with (
        FakeModelServer(lambda data: FakeResponse(text=data["messages"][-1]["content"])) as server,
        _client(provider, server) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=51, **FAST) as bc,
    ):
        server.batches.result_filter = _cut_mid_line
        outcomes = await _ask_all(bc, _requests(51))
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert len(failed) == 1
    assert "without a result for this request (1 result lines could not be read)" in str(failed[0])
    answered = sorted(o.text for o in outcomes if not isinstance(o, Exception))
    assert len(answered) == 50 and len(set(answered)) == 50
    assert server.batches.downloads == 1


def _error_around_success(data: bytes) -> bytes:
    """Every OpenAI success line gets an error line with its custom_id before and after it."""
    out = b""
    for line in data.splitlines(keepends=True):
        cid = json.loads(line)["custom_id"]
        error = {"custom_id": cid, "response": None, "error": {"code": "x", "message": "dup"}}
        bad = json.dumps(error).encode() + b"\n"
        out += bad + line + bad
    return out


async def test_a_custom_id_reported_twice_keeps_its_success_line(tmp_path: Path) -> None:
    """Error line, success line, error line for one custom_id: the success answers."""
    async with (
        FakeModelServer(FakeResponse(text="yes")) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="k") as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=3, **FAST) as bc,
    ):
        server.batches.result_filter = _error_around_success
        outcomes = await _ask_all(bc, _requests(3))
    assert [o.text for o in outcomes] == ["yes"] * 3


# -- redaction ------------------------------------------------------------------------------------


async def test_a_validation_error_echoing_the_key_is_redacted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A failed batch whose validation error echoes the API key: ERROR results without it."""
    caplog.set_level(logging.DEBUG)
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES")) as server,
        OpenAIChat("m", base_url=server.base_url, api_key=SECRET) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=4, **FAST) as bc,
    ):
        server.batches.fail_batch = f"invalid api key {SECRET} for batch"
        results = await _judge_all(LLMJudge("correct", bc, TEMPLATE))
    for result in results.values():
        assert result.status is Status.ERROR
        text = json.dumps(result.model_dump(mode="json"))
        assert SECRET not in text
        assert "invalid api key [REDACTED] for batch" in (result.reasoning or "")
    assert SECRET not in caplog.text


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_per_request_errors_echoing_the_key_are_redacted(
    provider: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An errored batch item whose error body echoes the key: the reason and logs hide it."""
    caplog.set_level(logging.DEBUG)
    answer = FakeResponse(status=400, text=f"Incorrect API key provided: {SECRET}")
    async with (
        FakeModelServer(answer) as server,
        _client(provider, server, SECRET) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=4, **FAST) as bc,
    ):
        results = await _judge_all(LLMJudge("correct", bc, TEMPLATE))
    for result in results.values():
        assert result.status is Status.ERROR
        assert SECRET not in json.dumps(result.model_dump(mode="json"))
        assert "Incorrect API key provided: [REDACTED]" in (result.reasoning or "")
    assert SECRET not in caplog.text


# -- where the Anthropic key goes -----------------------------------------------------------------


async def test_anthropic_results_url_on_another_origin_never_gets_the_key(tmp_path: Path) -> None:
    """A results_url naming another server: the key stays home, the answers still land."""
    async with (
        FakeModelServer(FakeResponse(text="Answer: YES")) as server,
        FakeModelServer(FakeResponse(text="Answer: NO")) as elsewhere,
        AnthropicMessages("m", base_url=server.base_url, api_key=SECRET) as model,
        BatchCollector(model, state_path=tmp_path / "b.json", max_batch_size=4, **FAST) as bc,
    ):
        server.batches.results_base = elsewhere.url
        results = await _judge_all(LLMJudge("correct", bc, TEMPLATE))
    assert [r.status for r in results.values()] == [Status.PASS] * 4
    assert not any(SECRET in json.dumps(dict(r.headers)) for r in elsewhere.received)
    assert elsewhere.received == []
    assert server.batches.downloads == 1

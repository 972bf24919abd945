"""What a model call holds while its request is in flight (issue 19.11, W4's collector work).

At concurrency 100 every object a call keeps alive across its request is walked again by each
collection. `HTTPModelClient._complete` keeps neither the message list it gives the provider's
``request_body`` nor a warnings list across the request, and the responses and usages of
online calls share one ``model_fields_set`` (they are frozen: pydantic copies it before a
change). Against the real loopback server.
"""

from __future__ import annotations

import gc
from typing import Any

import anyio

from agentjudge.core import Message
from agentjudge.models import OpenAIChat
from agentjudge.models._types import ModelRequest
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

REQUEST = ModelRequest(messages=(Message(role="user", content="Is the answer correct?"),))


def _frames_of(name: str) -> list[Any]:
    return [
        o.cr_frame
        for o in gc.get_objects()
        if type(o).__name__ == "coroutine" and o.cr_code.co_qualname == name and o.cr_frame
    ]


async def test_a_call_in_flight_holds_no_list_in_its_frame() -> None:
    arrived, answer = anyio.Event(), anyio.Event()

    async def held(_: dict[str, Any]) -> FakeResponse:
        arrived.set()
        await answer.wait()
        return FakeResponse(text="PASS")

    async with (
        FakeModelServer(held) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="test-key") as model,
    ):
        got: list[str] = []

        async def call() -> None:
            got.append((await model.complete(REQUEST)).text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await arrived.wait()
            (frame,) = _frames_of("HTTPModelClient._complete")
            held_lists = [k for k, v in frame.f_locals.items() if type(v) is list]
            answer.set()
        assert held_lists == []
        assert got == ["PASS"]


async def test_responses_and_usages_share_one_fields_set() -> None:
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        OpenAIChat("m", base_url=server.base_url, api_key="test-key") as model,
    ):
        first = await model.complete(REQUEST)
        second = await model.complete(REQUEST)
    assert first.model_fields_set is second.model_fields_set
    assert first.usage.model_fields_set is second.usage.model_fields_set
    before = set(first.model_fields_set)
    assert first.model_copy(update={"text": "x"}).model_fields_set >= {"text"}
    assert first.model_fields_set == before  # a copy did not change the shared set

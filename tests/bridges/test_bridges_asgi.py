"""A client disconnect cancels the jury: a real uvicorn server, a FastAPI app as in
docs/how-to/fastapi-jury.md, and raw TCP clients that go away mid-request (issue 12 item 21)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from asgi_support import fastapi, responses, uvicorn
from pydantic import BaseModel

from agentjudge import Context, Evaluator, Judgment, Jury
from agentjudge.bridges import cancel_on_disconnect

pytestmark = pytest.mark.xdist_group("asgi")

REQUESTS = 30
JUDGES = 3


class Counters:
    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        self.completed = 0
        self.all_started = anyio.Event()
        self.all_cancelled = anyio.Event()
        self.release = anyio.Event()


class GradeRequest(BaseModel):
    question: str
    answer: str


def make_app(counters: Counters, *, guarded: bool) -> fastapi.FastAPI:
    async def slow_judge(ctx: Context) -> Judgment:
        counters.started += 1
        if counters.started == REQUESTS * JUDGES:
            counters.all_started.set()
        try:
            await counters.release.wait()  # a model call that outlives the client
        except anyio.get_cancelled_exc_class():
            counters.cancelled += 1
            if counters.cancelled == REQUESTS * JUDGES:
                counters.all_cancelled.set()
            raise
        counters.completed += 1
        return Judgment.passed()

    jury = Jury([slow_judge] * JUDGES)

    @asynccontextmanager
    async def lifespan(app: fastapi.FastAPI) -> AsyncIterator[None]:
        async with Evaluator(jury, max_concurrency=256, timeout=60) as evaluator:
            app.state.evaluator = evaluator
            yield

    app = fastapi.FastAPI(lifespan=lifespan)

    @app.post("/grade")
    async def grade(body: GradeRequest, request: fastapi.Request) -> responses.Response:
        evaluator: Evaluator = request.app.state.evaluator
        context = Context(input=body.question, output=body.answer)
        if not guarded:  # the pattern the docs used to show
            verdict = await evaluator.verdict(context)
            return responses.JSONResponse({"status": verdict.judgment.status.value})
        async with cancel_on_disconnect(request.receive) as client:
            verdict = await evaluator.verdict(context)
        if client.disconnected:
            return responses.Response(status_code=499)
        return responses.JSONResponse({"status": verdict.judgment.status.value})

    return app


@asynccontextmanager
async def serving(app: fastapi.FastAPI) -> AsyncIterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        try:
            yield port
        finally:
            server.should_exit = True


def request_bytes(body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    head = (
        "POST /grade HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


async def abort_requests(port: int, counters: Counters) -> None:
    """Send REQUESTS requests, wait until every judge is running, then hang up on all."""
    streams = []
    for i in range(REQUESTS):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(request_bytes({"question": f"q{i}", "answer": "a"}))
        streams.append(stream)
    with anyio.fail_after(20):
        await counters.all_started.wait()
    for stream in streams:
        await stream.aclose()


async def test_disconnect_cancels_the_jury_and_its_calls() -> None:
    """30 aborted requests x 3 judges: all 90 judge calls are cancelled, none completes."""
    counters = Counters()
    async with serving(make_app(counters, guarded=True)) as port:
        await abort_requests(port, counters)
        with anyio.fail_after(20):
            await counters.all_cancelled.wait()
        counters.release.set()
    assert counters.started == REQUESTS * JUDGES
    assert counters.cancelled == REQUESTS * JUDGES
    assert counters.completed == 0


async def test_without_the_guard_the_judges_run_on() -> None:
    """The control: a plain handler keeps judging for a client that is gone (why the guard)."""
    counters = Counters()
    async with serving(make_app(counters, guarded=False)) as port:
        await abort_requests(port, counters)
        for _ in range(50):  # give a (wrong) cancellation every chance to arrive
            await anyio.sleep(0)
        assert counters.cancelled == 0
        counters.release.set()
        with anyio.fail_after(20):
            while counters.completed < REQUESTS * JUDGES:
                await anyio.sleep(0.01)
    assert counters.completed == REQUESTS * JUDGES


async def test_connected_client_gets_its_verdict() -> None:
    """A client that stays gets the verdict through the guarded handler."""
    counters = Counters()
    async with serving(make_app(counters, guarded=True)) as port:
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(request_bytes({"question": "q", "answer": "a"}))
        with anyio.fail_after(20):
            while counters.started < JUDGES:
                await anyio.sleep(0.01)
        counters.release.set()
        data = b""
        with anyio.fail_after(20):
            while b'"status"' not in data:
                data += await stream.receive()
        await stream.aclose()
    assert b"200 OK" in data and b'"pass"' in data


@pytest.mark.parametrize("messages", [[{"type": "http.request"}, {"type": "http.disconnect"}]])
async def test_guard_ignores_body_messages(messages: list[dict[str, str]]) -> None:
    """Only http.disconnect cancels; other messages are skipped."""
    queue = list(messages)
    gate = anyio.Event()

    async def receive() -> dict[str, str]:
        if len(queue) == 1:
            await gate.wait()
        return queue.pop(0)

    async with cancel_on_disconnect(receive) as client:
        gate.set()
        await anyio.sleep_forever()
    assert client.disconnected

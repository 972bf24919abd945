"""Online evaluation in a real service: FastAPI on uvicorn (127.0.0.1), FakeModelServer as the
model, a bounded load generator. Overload sheds exactly what is counted, the backlog stays
bounded, and shutdown drains for at most the drain timeout (issue 21)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from asgi_support import fastapi, responses, uvicorn
from sdk_support import tls_context

from agentjudge import BackgroundEvaluator, CorrectnessJudge, ErrorPolicy, Evaluator, Jury, Majority
from agentjudge.bridges import cancel_on_disconnect
from agentjudge.models import OpenAIChat
from agentjudge.testing import FakeModelServer, FakeResponse, ScriptedJudge

pytestmark = pytest.mark.xdist_group("asgi")

TERMINAL = ("sampled_out", "shed", "completed", "errored", "cancelled")


def make_app(background: BackgroundEvaluator) -> fastapi.FastAPI:
    app = fastapi.FastAPI(lifespan=background.lifespan)

    @app.post("/chat")
    async def chat(body: dict[str, str], request: fastapi.Request) -> dict[str, str]:
        answer = f"echo: {body['question']}"
        request.state.background.offer(
            input=body["question"], output=answer, key=body["trace"], route="/chat"
        )
        return {"answer": answer}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


@asynccontextmanager
async def serving(app: fastapi.FastAPI) -> AsyncIterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


async def load(base: str, requests: int, concurrency: int) -> list[int]:
    """POST /chat ``requests`` times, ``concurrency`` at a time; the status codes."""
    codes: list[int] = []
    limiter = anyio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=30, verify=tls_context()) as client:

        async def one(i: int) -> None:
            async with limiter:
                r = await client.post("/chat", json={"question": f"q{i}", "trace": f"t{i}"})
                codes.append(r.status_code)

        async with anyio.create_task_group() as tg:
            for i in range(requests):
                tg.start_soon(one, i)
        health = await client.get("/health")
        codes.append(health.status_code)
    return codes


async def test_overload_sheds_exactly_and_keeps_the_backlog_bounded() -> None:
    """Judges far slower than the traffic: every request answers, shedding is counted exactly."""
    slow = FakeResponse(text="Answer: YES\nReasoning: fine", latency=0.05)
    async with (
        FakeModelServer(default=slow) as server,
        OpenAIChat("judge", base_url=server.base_url, api_key="test") as model,
    ):
        evaluator = Evaluator(CorrectnessJudge(model), timeout=30)
        background = evaluator.background(max_backlog=10, workers=2, drain_timeout=30)
        async with serving(make_app(background)) as base:
            # 100 requests, 20 at a time, overflow a backlog of 10 served by two 50 ms judges as
            # surely as 200 did (each run sheds most of them), at half the CPU.
            codes = await load(base, requests=100, concurrency=20)
            assert codes == [200] * 101
            during = background.statistics()
        stats = background.statistics()
    assert during["offered"] == 100 and during["shed"] > 0, during
    assert during["backlog_high_water"] <= 10
    assert sum(stats[k] for k in TERMINAL) == 100
    assert stats["backlog"] == stats["running"] == stats["cancelled"] == 0
    assert stats["completed"] == stats["accepted"] == len(server.requests)


async def test_shutdown_under_load_drains_within_the_deadline() -> None:
    """A server stopping with judges that never answer cancels them after drain_timeout."""
    async with (
        FakeModelServer(default=FakeResponse(hang=True)) as server,
        OpenAIChat("judge", base_url=server.base_url, api_key="test") as model,
    ):
        evaluator = Evaluator(CorrectnessJudge(model), timeout=None, retry=None)
        background = evaluator.background(max_backlog=50, workers=4, drain_timeout=0.2)
        with anyio.fail_after(20):  # the drain timeout, not the hanging judges, ends it
            async with serving(make_app(background)) as base:
                codes = await load(base, requests=30, concurrency=10)
                assert codes == [200] * 31
                while len(server.requests) < 4:
                    await anyio.sleep(0.01)
    stats = background.statistics()
    assert (stats["offered"], stats["accepted"], stats["cancelled"]) == (30, 30, 30)
    assert stats["completed"] == stats["errored"] == 0


async def test_an_awaited_handler_answers_within_its_deadline() -> None:
    """A handler awaiting a jury with deadline= answers even though one model never does."""
    async with (
        FakeModelServer(default=FakeResponse(hang=True)) as server,
        OpenAIChat("stuck", base_url=server.base_url, api_key="test") as stuck,
    ):
        jury = Jury(
            [CorrectnessJudge(stuck, name="stuck"), ScriptedJudge(True, name="quick")],
            voting=Majority(errors=ErrorPolicy.IGNORE),
        )
        evaluator = Evaluator(jury, timeout=None)
        app = fastapi.FastAPI()

        @app.post("/grade")
        async def grade(body: dict[str, str], request: fastapi.Request) -> dict[str, Any]:
            async with cancel_on_disconnect(request.receive):
                verdict = await evaluator.verdict(input=body["q"], output="a", deadline=0.2)
            return {
                "status": verdict.judgment.status.value,
                "stuck": verdict.by_name["stuck"].reasoning,
            }

        with anyio.fail_after(20):
            async with (
                serving(app) as base,
                httpx.AsyncClient(base_url=base, verify=tls_context()) as client,
            ):
                response = await client.post("/grade", json={"q": "q"})
    assert response.json()["status"] == "pass"
    assert "deadline (0.2 s)" in response.json()["stuck"]


async def test_an_awaited_handler_with_a_deadline_is_cancelled_when_the_client_leaves() -> None:
    """The how-to's awaited handler: deadline= and cancel_on_disconnect together.

    The jury's slow member would hold the request until its 30 s deadline; the client hangs
    up first, and the disconnect (not the deadline) cancels the jury at once.
    """
    stuck = ScriptedJudge(True, hang=True, name="stuck")
    jury = Jury([stuck, ScriptedJudge(True, name="quick")])
    evaluator = Evaluator(jury, timeout=None)
    outcome: dict[str, Any] = {}
    app = fastapi.FastAPI()

    @app.post("/grade")
    async def grade(body: dict[str, str], request: fastapi.Request) -> responses.Response:
        async with cancel_on_disconnect(request.receive) as client:
            verdict = await evaluator.verdict(input=body["q"], output="a", deadline=30)
        outcome["disconnected"] = client.disconnected
        if client.disconnected:
            return responses.Response(status_code=499)
        return responses.JSONResponse({"status": verdict.judgment.status.value})

    with anyio.fail_after(20):  # far below the 30 s deadline
        async with serving(app) as base:
            host, port = base.removeprefix("http://").split(":")
            stream = await anyio.connect_tcp(host, int(port))
            body = b'{"q": "q"}'
            await stream.send(
                b"POST /grade HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            await stuck.started.wait()
            await stream.aclose()  # the client leaves while the jury waits for its slow member
            while stuck.cancelled == 0:
                await anyio.sleep(0.01)
    assert stuck.calls == stuck.cancelled == 1
    assert outcome == {"disconnected": True}

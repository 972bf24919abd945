"""Cancel an evaluation when the web client that asked for it goes away (any ASGI server).

ASGI servers such as uvicorn do not cancel a request handler when its client disconnects: the
handler runs to the end and every judge makes its model calls for nobody. `cancel_on_disconnect`
watches the request's ``receive`` channel for ``http.disconnect`` and cancels the block it
guards, so the judges and their HTTP calls are cancelled with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

__all__ = ["Disconnect", "cancel_on_disconnect"]

Receive = Callable[[], Awaitable[Mapping[str, Any]]]
"""An ASGI ``receive`` callable (Starlette/FastAPI: ``request.receive``)."""


@dataclass(slots=True)
class Disconnect:
    """What `cancel_on_disconnect` saw: ``disconnected`` is True once the client went away."""

    disconnected: bool = False


@asynccontextmanager
async def cancel_on_disconnect(receive: Receive) -> AsyncIterator[Disconnect]:
    """Cancel the guarded block as soon as the ASGI client disconnects.

    Read the request body before entering (FastAPI does for body parameters; call ``await
    request.body()`` otherwise): the watcher consumes every message ``receive`` yields.
    After a disconnect the block is cancelled (judges included) and execution continues after
    the ``async with``, with ``.disconnected`` set; the response goes nowhere, so return
    anything.

    ```python
    async with cancel_on_disconnect(request.receive) as client:
        verdict = await evaluator.verdict(context)
    if client.disconnected:
        return Response(status_code=499)
    ```
    """
    state = Disconnect()
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            while True:
                message = await receive()
                if message.get("type") == "http.disconnect":
                    state.disconnected = True
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch)
        try:
            yield state
        finally:
            tg.cancel_scope.cancel()  # done (or disconnected): stop watching

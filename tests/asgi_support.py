"""fastapi, its responses module and uvicorn for the ASGI tests, imported on first use.

They cost ~0.8 s of CPU to import, and pytest imports every test module in every xdist worker
while collecting: through `sdk_support.sdk` only the worker running the ``asgi`` group pays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sdk_support import sdk

if TYPE_CHECKING:
    import fastapi
    import uvicorn
    from fastapi import responses
else:
    fastapi = sdk("fastapi")
    responses = sdk("fastapi.responses")
    uvicorn = sdk("uvicorn")

__all__ = ["fastapi", "responses", "uvicorn"]

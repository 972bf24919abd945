"""The dependency internals agentjudge relies on (agentjudge._compat) still hold.

These tests fail loudly, naming the dependency, when an upgrade changes what `_compat` relies
on: fix `_compat` (and the version bounds in pyproject.toml) before anything else.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pydantic
import pytest
from pydantic import BaseModel, ConfigDict, PrivateAttr

from agentjudge import _compat
from agentjudge._compat import PYDANTIC_SLOTS, build_model, check_buildable


class Row(BaseModel):
    """A frozen model with extras, like `Case`."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    n: int = 0
    tags: tuple[str, ...] = ()


def _observable(m: BaseModel) -> tuple[Any, ...]:
    return (
        m.model_dump(),
        m.model_dump_json(),
        m.model_dump(exclude_unset=True),
        repr(m),
        m.model_fields_set,
        m.model_extra,
        hash(m),
    )


def test_pydantic_instance_layout_is_the_one_build_model_sets() -> None:
    """pydantic's BaseModel still has exactly the four slots build_model fills."""
    assert BaseModel.__slots__ == PYDANTIC_SLOTS, f"pydantic {pydantic.VERSION} changed its slots"
    assert _compat.FAST_MODELS, f"pydantic {pydantic.VERSION}: build_model fell back to slow path"


@pytest.mark.parametrize("fast", [True, False], ids=["slots", "model_construct-fallback"])
def test_built_model_is_indistinguishable_from_validated(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """build_model (either way) equals model_validate in values, dumps, repr, hash and copies."""
    if not fast:
        monkeypatch.setattr(_compat, "_SETTERS", None)
    given = {"id": "a", "n": 3, "tags": ("x",), "colour": "red"}
    validated = Row.model_validate(given)
    built = build_model(Row, {"id": "a", "n": 3, "tags": ("x",)}, set(given), {"colour": "red"})
    assert type(built) is Row
    assert built == validated
    assert _observable(built) == _observable(validated)
    assert _observable(copy.deepcopy(built)) == _observable(validated)
    assert _observable(pickle.loads(pickle.dumps(built))) == _observable(validated)
    assert built.model_copy(update={"n": 4}) == validated.model_copy(update={"n": 4})
    with pytest.raises(pydantic.ValidationError):
        built.n = 5  # type: ignore[misc]


def test_built_model_without_extras_dumps_only_fields() -> None:
    """A model built with extra=None has no extras, like a validated extra="forbid" model."""
    built = build_model(Row, {"id": "a", "n": 0, "tags": ()}, {"id"}, None)
    assert built == Row(id="a")
    assert built.model_dump(exclude_unset=True) == {"id": "a"}


def test_check_buildable_rejects_state_build_model_cannot_set_up() -> None:
    """Models with private attributes or model_post_init are refused, naming the class."""

    class Private(BaseModel):
        x: int
        _cache: int = PrivateAttr(default=0)

    class PostInit(BaseModel):
        x: int

        def model_post_init(self, context: Any, /) -> None:
            pass

    check_buildable(Row)
    with pytest.raises(TypeError, match="Private: build_model cannot set up private"):
        check_buildable(Private)
    with pytest.raises(TypeError, match="PostInit: build_model does not run model_post_init"):
        check_buildable(PostInit)


def test_agentjudge_uses_no_private_dependency_names_outside_compat() -> None:
    """No module but _compat names a dependency's private internals."""
    from pathlib import Path

    import agentjudge

    banned = (
        "_get_running_loop",
        "scan_once",
        "anyio._backends",
        "pydantic._internal",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
        "BaseModel.__dict__",
    )
    root = Path(agentjudge.__file__).parent
    found = [
        f"{path.relative_to(root)}: {name}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "_compat.py"
        for name in banned
        if name in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_loop_time_is_anyios_clock_on_asyncio() -> None:
    """anyio (asyncio backend): ``current_time()`` is the running loop's ``time()``."""
    import asyncio

    import anyio

    from agentjudge._compat import loop_time

    async def readings() -> tuple[float, float, float, float]:
        before = anyio.current_time()
        ours = loop_time()
        after = anyio.current_time()
        return before, ours, after, asyncio.get_running_loop().time()

    before, ours, after, loop = anyio.run(readings, backend="asyncio")
    assert before <= ours <= after <= loop, "anyio: current_time() left the asyncio loop clock"


def test_loop_time_outside_a_loop_asks_anyio() -> None:
    """With no asyncio loop running, `loop_time` defers to anyio (which then refuses)."""
    from agentjudge._compat import loop_time

    with pytest.raises(Exception, match="async"):
        loop_time()


def test_running_loop_is_anyios_native_token_on_asyncio() -> None:
    """anyio (asyncio backend): the event-loop token's ``native_token`` is the running loop."""
    import anyio
    import anyio.lowlevel

    from agentjudge._compat import running_loop

    async def both() -> tuple[object, object]:
        return running_loop(), anyio.lowlevel.current_token().native_token

    ours, anyios = anyio.run(both, backend="asyncio")
    assert ours is anyios, "anyio: the asyncio token's native_token is no longer the loop"


def test_the_asyncio_backend_class_is_the_one_anyio_finds() -> None:
    """anyio (asyncio backend): the class `cancel_scope` uses is usable and builds anyio's scope.

    Should an anyio release move or reshape it, `cancel_scope` quietly asks anyio instead
    (correct, ~2 us slower per attempt): this test says so loudly.
    """
    import anyio

    from agentjudge._compat import _asyncio_backend, cancel_scope

    async def built() -> tuple[object, type, type]:
        return _asyncio_backend(), type(cancel_scope()), type(anyio.CancelScope())

    backend, ours, anyios = anyio.run(built, backend="asyncio")
    assert backend, "anyio: _backends._asyncio.backend_class is gone or reshaped"
    assert ours is anyios, "anyio: the asyncio backend's scope class is not CancelScope()'s"


def test_the_preloaded_backend_module_is_the_one_anyio_run_loads() -> None:
    """anyio (asyncio backend): the module the harness's forkserver preloads is anyio's own.

    Should a release move it, the preload would import nothing and each worker would import
    the backend on its first ``anyio.run`` (correct, ~50 ms of CPU slower): said loudly here.
    """
    import importlib
    import sys

    import anyio

    importlib.import_module(_compat.ANYIO_ASYNCIO_BACKEND)
    anyio.run(anyio.lowlevel.checkpoint, backend="asyncio")
    assert _compat.ANYIO_ASYNCIO_BACKEND in sys.modules
    backend = sys.modules[_compat.ANYIO_ASYNCIO_BACKEND]
    assert hasattr(backend, "backend_class"), "anyio: the asyncio backend module moved"


def test_an_untimed_deadline_is_anyios_deadline_without_a_timer() -> None:
    """anyio (asyncio backend): writing ``_deadline`` of an entered scope is its deadline.

    `untimed_deadline` relies on the scope keeping its deadline in ``_deadline`` and its timer
    in ``_timeout_handle``, and `expire` on ``cancel`` being what the scope's timer does.
    """
    import anyio

    from agentjudge._compat import cancel_scope, expire, untimed_deadline

    async def probe() -> tuple[object, float, float, object, bool]:
        with cancel_scope() as scope:
            at = anyio.current_time() + 30.0
            loop = untimed_deadline(scope, at)
            seen = anyio.current_effective_deadline()
            handle = scope._timeout_handle  # type: ignore[attr-defined]
            expire(scope)
            await anyio.lowlevel.checkpoint()  # delivered here, caught by the scope
        return loop, seen, at, handle, scope.cancelled_caught

    loop, seen, at, handle, caught = anyio.run(probe, backend="asyncio")
    assert loop is not None, "anyio: the scope has no _deadline/_timeout_handle slots"
    assert seen == at, "anyio: _deadline is not the deadline current_effective_deadline reads"
    assert handle is None, "anyio: writing _deadline armed a timer"
    assert caught, "anyio: cancel() no longer cancels like the scope's timer"


@pytest.mark.parametrize("timed", [False, True])
def test_a_cleared_deadline_leaves_the_scope_entered_without_one(timed: bool) -> None:
    """`clear_deadline`: no deadline and no timer, whether anyio's own timer served it or not.

    An untimed deadline (`untimed_deadline_in`) is reset in its slot without a lookup of the
    loop; one anyio armed a timer for goes through the public setter, which cancels the timer.
    """
    import math

    import anyio

    from agentjudge._compat import cancel_scope, clear_deadline, untimed_deadline_in

    async def probe() -> tuple[float, object, bool]:
        with cancel_scope() as scope:
            if timed:
                scope.deadline = anyio.current_time() + 30.0
            else:
                assert untimed_deadline_in(scope, 30.0) is not None
            clear_deadline(scope)
            seen = anyio.current_effective_deadline()
            handle = scope._timeout_handle  # type: ignore[attr-defined]
            await anyio.sleep(0.01)
        return seen, handle, scope.cancel_called

    seen, handle, cancelled = anyio.run(probe, backend="asyncio")
    assert seen == math.inf and handle is None and not cancelled

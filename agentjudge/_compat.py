"""The one place agentjudge relies on a dependency's private internals.

Everything here depends on how a dependency works inside, not on its documented API, so it is
pinned by ``tests/test_compat.py`` (which fails loudly, naming the dependency, when an upgrade
changes what is relied on) and by the version bounds in ``pyproject.toml``. Nothing else in
agentjudge may use a dependency's private names: add them here, with a test.

What is relied on today:

* **pydantic's instance layout** (`build_model`): a `pydantic.BaseModel` instance is exactly
  its four slots ``__dict__`` (field values), ``__pydantic_fields_set__``,
  ``__pydantic_extra__`` and ``__pydantic_private__``; validation does nothing else to the
  instance for the models built here (frozen, no private attributes, no ``model_post_init``).
  Setting the slots directly is about ten times cheaper than ``model_construct``. Should a
  pydantic release change the layout, `FAST_MODELS` is False and `build_model` falls back to
  the public ``model_construct`` (slower, same result), so users never see a broken build.

* **anyio's asyncio clock** (`loop_time`): on the asyncio backend ``anyio.current_time()`` is
  the running loop's ``time()``. Reading it directly skips anyio's backend lookup (about 2 us,
  paid several times per model call); any other backend still asks anyio. Likewise
  `running_loop`: anyio's asyncio event-loop token wraps the running loop itself.

* **anyio's asyncio backend class** (`cancel_scope`, `checkpoint_if_cancelled`): with an
  asyncio loop running, ``anyio._backends._asyncio.backend_class`` is the backend anyio would
  find, and its ``create_cancel_scope`` / ``checkpoint_if_cancelled`` are what
  ``anyio.CancelScope()`` and ``anyio.lowlevel.checkpoint_if_cancelled()`` return after a
  backend lookup (~2 us each, paid per judge attempt). ``asyncio._get_running_loop`` tells
  whether a loop runs without raising. When the layout is not the one relied on (no such
  class, or its scope is not an `anyio.CancelScope`), or no asyncio loop runs (trio), anyio
  decides as usual.

* **anyio's asyncio cancel scope's deadline slot** (`untimed_deadline`, `expire`): the
  scope keeps its deadline in ``_deadline`` and arms a loop timer of its own
  (``_timeout_handle``) only from the public ``deadline`` setter, ``__enter__`` and
  ``_timeout``. Writing ``_deadline`` of an entered scope gives it the deadline
  (``anyio.current_effective_deadline()`` and the scope report it) without that timer; the
  engine's attempt timers (`agentjudge.engine._deadline`) then call ``cancel()`` when it
  passes, as the scope's own timer would, one loop timer for every attempt of the same
  length instead of one heap entry per attempt. On another backend, or with a scope laid out
  differently, the public setter is used.

This module is the lowest layer: it imports only the standard library and the dependencies.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel

if TYPE_CHECKING:
    import anyio

__all__ = [
    "ANYIO_ASYNCIO_BACKEND",
    "FAST_MODELS",
    "PYDANTIC_SLOTS",
    "build_model",
    "cancel_scope",
    "check_buildable",
    "checkpoint_if_cancelled",
    "clear_deadline",
    "expire",
    "json_scanner",
    "loop_time",
    "running_loop",
    "untimed_deadline",
    "untimed_deadline_in",
]

_M = TypeVar("_M", bound=BaseModel)

ANYIO_ASYNCIO_BACKEND = "anyio._backends._asyncio"
"""The module of anyio's asyncio backend, which the first ``anyio.run`` imports (a private
name: processes that preload it, like the harness's forkserver, name it from here). Should a
release move it, the preload fails to import it and a worker imports it on first use, as
before; tests/test_compat.py checks it is importable."""

PYDANTIC_SLOTS = (
    "__dict__",
    "__pydantic_fields_set__",
    "__pydantic_extra__",
    "__pydantic_private__",
)
"""The instance slots of `pydantic.BaseModel` that `build_model` fills (pydantic 2.x)."""

_Setter = Callable[[object, Any], None]


def _slot_setters() -> tuple[_Setter, _Setter, _Setter, _Setter] | None:
    """The ``__set__`` of BaseModel's four slot descriptors, or None when the layout changed."""
    if getattr(BaseModel, "__slots__", None) != PYDANTIC_SLOTS:
        return None
    try:
        setters = [BaseModel.__dict__[name].__set__ for name in PYDANTIC_SLOTS]
    except (KeyError, AttributeError):
        return None
    return setters[0], setters[1], setters[2], setters[3]


_SETTERS = _slot_setters()

FAST_MODELS: bool = _SETTERS is not None
"""True when `build_model` sets pydantic's slots directly (the pydantic layout tested here)."""

_new = object.__new__


def build_model(
    cls: type[_M],
    values: dict[str, Any],
    fields_set: set[str],
    extra: dict[str, Any] | None = None,
) -> _M:
    """An instance of ``cls`` holding ``values``, built without validation.

    Only for values that validation would accept unchanged, and for classes that
    `check_buildable` accepts. The result equals ``cls.model_validate(...)`` of the same
    values in everything observable (fields, extras, ``model_fields_set``, equality, dumps,
    repr, copying, pickling).

    Args:
        cls: The model class.
        values: Every field, in declaration order, each already valid; taken over by the
            instance (it becomes its ``__dict__``).
        fields_set: What ``model_fields_set`` reports; may be shared between instances
            (pydantic copies it before changing it, and these models are frozen).
        extra: The extras of an ``extra="allow"`` model (None for the others).

    Returns:
        The instance.
    """
    setters = _SETTERS
    if setters is None:
        return cls.model_construct(fields_set, **values, **(extra or {}))
    obj = _new(cls)
    setters[0](obj, values)
    setters[1](obj, fields_set)
    setters[2](obj, extra)
    setters[3](obj, None)
    return obj


def check_buildable(cls: type[BaseModel]) -> None:
    """Fail loudly unless `build_model` can build ``cls`` exactly as validation would.

    Raises:
        TypeError: ``cls`` has private attributes or a ``model_post_init`` hook (both need
            state `build_model` does not set up).
    """
    if cls.__private_attributes__:
        raise TypeError(f"{cls.__name__}: build_model cannot set up private attributes")
    if cls.__pydantic_post_init__ is not None:
        raise TypeError(f"{cls.__name__}: build_model does not run model_post_init")


_running_loop: Callable[[], object] | None = None
"""``asyncio._get_running_loop`` (bound on first use: importing this module starts no loop)."""


def _bind_running_loop() -> Callable[[], object]:
    """`_running_loop`, bound now if it was not (asyncio is imported here, not at the top)."""
    global _running_loop
    if _running_loop is None:
        import asyncio  # ``agentjudge --help`` imports no event loop

        _running_loop = asyncio._get_running_loop
    return _running_loop


def loop_time() -> float:
    """``anyio.current_time()``, read straight from the running asyncio loop when there is one.

    The same clock (deadlines and cancel scopes compare against it), without anyio's backend
    lookup; on another backend it is ``anyio.current_time()`` itself. Read several times per
    model call: the loop is found without an import statement or an exception.
    """
    loop: Any = (_running_loop or _bind_running_loop())()
    if loop is None:
        import anyio

        return anyio.current_time()
    now: float = loop.time()  # no typing.cast: one Python call fewer
    return now


def running_loop() -> object:
    """``anyio.lowlevel.current_token().native_token``: the asyncio loop, when one is running.

    On another backend it is anyio's native token itself (e.g. trio's).
    """
    loop = (_running_loop or _bind_running_loop())()
    if loop is None:
        import anyio.lowlevel

        return anyio.lowlevel.current_token().native_token
    return loop


_backend: Any = None
"""anyio's asyncio backend class (False: not usable here), looked up on first use."""

_scope_class: Any = None
"""anyio's asyncio ``CancelScope`` class, once `_backend` found it usable."""


def _asyncio_backend() -> Any:
    """Anyio's asyncio backend class when a loop runs here and its layout is the one used."""
    global _backend, _scope_class
    if _bind_running_loop()() is None:
        return None
    if _backend is None:
        import anyio
        from anyio._backends import _asyncio  # loaded already: an asyncio loop runs

        backend = getattr(_asyncio, "backend_class", None)
        scope = getattr(_asyncio, "CancelScope", None)
        usable = (
            isinstance(scope, type)
            and issubclass(scope, anyio.CancelScope)
            and callable(getattr(backend, "create_cancel_scope", None))
            and callable(getattr(backend, "checkpoint_if_cancelled", None))
            and {"_deadline", "_timeout_handle"} <= set(getattr(scope, "__slots__", ()))
        )
        _backend = backend if usable else False
        _scope_class = scope if usable else None
    return _backend


def cancel_scope() -> anyio.CancelScope:
    """``anyio.CancelScope()``, built without anyio's backend lookup on asyncio (~2 us each).

    A running asyncio loop in this thread means the asyncio backend (as `loop_time` reads
    it); elsewhere, or with an anyio whose backend is laid out differently, anyio decides.
    """
    backend = _backend or _asyncio_backend()
    if backend and _running_loop is not None and _running_loop() is not None:
        return cast("anyio.CancelScope", backend.create_cancel_scope())
    import anyio

    return anyio.CancelScope()


def checkpoint_if_cancelled() -> Awaitable[None]:
    """``anyio.lowlevel.checkpoint_if_cancelled()`` without the backend lookup on asyncio."""
    backend = _backend or _asyncio_backend()
    if backend and _running_loop is not None and _running_loop() is not None:
        return backend.checkpoint_if_cancelled()  # type: ignore[no-any-return]  # no cast call
    import anyio.lowlevel

    return anyio.lowlevel.checkpoint_if_cancelled()


def untimed_deadline(scope: anyio.CancelScope, at: float) -> object | None:
    """Give the entered ``scope`` the deadline ``at`` without a loop timer of its own.

    Returns the running asyncio loop when it did (the caller then calls `expire` when ``at``
    passes), or None, having changed nothing, on another backend or with a scope laid out
    differently (the caller then sets ``scope.deadline`` itself).
    """
    if not (_backend or _asyncio_backend()) or _running_loop is None:
        return None
    loop = _running_loop()
    if loop is None or scope._timeout_handle is not None:  # type: ignore[attr-defined]
        return None
    scope._deadline = at  # type: ignore[attr-defined]
    return loop


def untimed_deadline_in(scope: anyio.CancelScope, seconds: float) -> tuple[object, float] | None:
    """`untimed_deadline` ``seconds`` from now on the loop's clock: ``(loop, deadline)``.

    One lookup of the running loop for the clock and the deadline both. None, having changed
    nothing, where `untimed_deadline` would be, and for ``seconds <= 0`` (a deadline already
    passed: the caller sets ``scope.deadline``, which cancels at once).
    """
    if not (_backend or _asyncio_backend()) or _running_loop is None or seconds <= 0:
        return None
    loop: Any = _running_loop()
    if loop is None or scope._timeout_handle is not None:  # type: ignore[attr-defined]
        return None
    at: float = loop.time() + seconds
    scope._deadline = at  # type: ignore[attr-defined]
    return loop, at


def clear_deadline(scope: anyio.CancelScope) -> None:
    """Take the deadline an attempt gave the entered ``scope`` away (it stays entered).

    After the attempt's queue entry is gone (`agentjudge.engine._deadline.disarm`) an untimed
    deadline (`untimed_deadline`) is only the slot anyio reads, reset here without a lookup of
    the loop: what the public setter does for a scope without a timer. A deadline anyio's own
    timer serves, or a scope of another backend, is cleared through the setter (which cancels
    that timer).
    """
    if type(scope) is _scope_class and scope._timeout_handle is None:  # type: ignore[attr-defined]
        scope._deadline = math.inf  # type: ignore[attr-defined]
    else:
        scope.deadline = math.inf


_cancel_reason: list[bool] = []
"""Whether ``CancelScope.cancel`` takes a reason (anyio 4.10+), looked up on first use."""


def expire(scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` because its deadline passed: what the scope's own timer does."""
    if not _cancel_reason:
        import inspect

        import anyio

        _cancel_reason.append("reason" in inspect.signature(anyio.CancelScope.cancel).parameters)
    if _cancel_reason[0]:
        scope.cancel("deadline exceeded")  # type: ignore[call-arg,unused-ignore]
    else:  # pragma: no cover - anyio before the reason argument
        scope.cancel()


def json_scanner(decoder: json.JSONDecoder) -> Callable[[str, int], tuple[Any, int]]:
    """``decoder``'s scanner: ``scan(text, index)`` is the value at ``index`` and the index after.

    It scans as ``decoder.decode`` does (``scan_once``, the attribute the standard library's
    decoder sets and calls itself; not documented, so named only here).

    ``decode`` is ``scan`` after skipping leading whitespace, plus a check that only
    whitespace follows; callers that read whole texts can call it directly.
    """
    scan: Callable[[str, int], tuple[Any, int]] = decoder.scan_once  # type: ignore[attr-defined]
    return scan

"""Model clients the harness owns: found in the judges it built, closed when the run ends.

A suite's judges come from ``judges = "module:attr"``: the harness imports them (and calls a
factory), so it owns the model clients they hold (``OpenAIChat``, ``AnthropicMessages``, or
any object whose class has async ``complete`` and ``aclose`` methods) and closes them when the
run ends, normally or not, in the event loop that used them. A worker process of a parallel run
closes the clients of its own copy of the judges. Judges passed as objects to
``run_suite(judges=...)`` belong to the caller, who closes their clients (``async with``).

Closing is safe for a client that is used again later: the package's clients reopen their
connections on the next request (an injected ``httpx.AsyncClient`` is never closed).

Before a run starts, `missing_keys` asks every client reachable from the task and the judges
(whoever built them) whether it lacks an API key: a client reports that with a ``missing_key``
attribute (``"OPENAI_API_KEY is not set"``, None when it has a key or needs none; see
`HTTPModelClient.missing_key`), so the run stops with exit 2 instead of failing every call.
"""

from __future__ import annotations

import functools
import inspect
import types
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

import anyio

from agentjudge.core import Judgment

__all__ = ["CLOSE_TIMEOUT", "close_model_clients", "find_model_clients", "missing_keys"]

CLOSE_TIMEOUT = 10.0
"""Seconds allowed for closing all of a run's clients (a hung close never hangs the run)."""
MAX_VISITED = 10_000
"""Objects examined at most while looking for clients (judge graphs are small)."""
MAX_DEPTH = 32
"""Attribute hops from the judges at most."""

# What `_is_client` and `_slot_names` found per class: both depend on the class only, and a walk
# meets a few classes thousands of times (a ReplayJudge's logged judgments): asked once per
# class, a walk over 6,000 objects takes ~0.03 s of CPU instead of ~0.2 s.
_CLIENT_CLASSES: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()
_SLOTS: weakref.WeakKeyDictionary[type, tuple[str, ...]] = weakref.WeakKeyDictionary()

# What the walk never enters: plain values, classes, modules, and judgments. A judgment is a
# result, not configuration: a client in its metadata is not one a judge calls, and a
# ReplayJudge holds thousands of them (entered, a 4,000-case log used up `MAX_VISITED` before
# the next tier's client was reached: that client was neither key-checked nor closed).
_VALUES = (str, bytes, bytearray, int, float, complex, bool, type(None))
_ATOMS = (*_VALUES, type, types.ModuleType, Judgment)


def _is_client(obj: Any) -> bool:
    """A model client: its class defines async ``complete`` and ``aclose`` (no proxies)."""
    cls = type(obj)
    known = _CLIENT_CLASSES.get(cls)
    if known is None:
        complete = inspect.getattr_static(cls, "complete", None)
        aclose = inspect.getattr_static(cls, "aclose", None)
        known = inspect.iscoroutinefunction(complete) and inspect.iscoroutinefunction(aclose)
        _CLIENT_CLASSES[cls] = known
    return known


def _slot_names(cls: type) -> tuple[str, ...]:
    names = _SLOTS.get(cls)
    if names is None:
        found: list[str] = []
        for klass in cls.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                if slot not in ("__dict__", "__weakref__"):
                    found.append(slot)
        names = _SLOTS[cls] = tuple(found)
    return names


def _slot_values(obj: Any) -> Iterator[Any]:
    for slot in _slot_names(type(obj)):
        try:
            yield getattr(obj, slot)
        except AttributeError:
            continue


def _children(obj: Any) -> Iterator[Any]:
    """What ``obj`` refers to: items, closure cells, defaults, attributes."""
    if isinstance(obj, Mapping):
        yield from obj.values()
    elif isinstance(obj, list | tuple | set | frozenset):
        yield from obj
    elif isinstance(obj, types.FunctionType):
        for cell in obj.__closure__ or ():
            try:
                yield cell.cell_contents
            except ValueError:  # an empty cell
                continue
        yield from obj.__defaults__ or ()
        yield from (obj.__kwdefaults__ or {}).values()
        yield getattr(obj, "__wrapped__", None)
        yield from vars(obj).values()
    elif isinstance(obj, types.MethodType):
        yield obj.__self__
        yield obj.__func__
    elif isinstance(obj, functools.partial):
        yield obj.func
        yield from obj.args
        yield from obj.keywords.values()
    else:
        instance_dict = getattr(obj, "__dict__", None)
        if isinstance(instance_dict, dict):
            yield from instance_dict.values()
        yield from _slot_values(obj)


def _own_name(obj: Any) -> str | None:
    """The name of a judge or task (a callable with a ``name``, or a function), else None."""
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    name = getattr(obj, "name", None) if callable(obj) else None
    return name if isinstance(name, str) and name.strip() else None


def _walk(root: Any) -> Iterator[tuple[Any, str | None]]:
    """Each model client reachable from ``root`` with the name of its nearest judge or task."""
    seen: set[int] = set()
    stack: list[tuple[Any, int, str | None]] = [(root, 0, None)]
    while stack and len(seen) < MAX_VISITED:
        obj, depth, owner = stack.pop()
        if isinstance(obj, _ATOMS) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if _is_client(obj):
            yield obj, owner
            continue
        if depth < MAX_DEPTH:
            owner = _own_name(obj) or owner
            children = [(child, depth + 1, owner) for child in _children(obj)]
            stack.extend(reversed(children))


def find_model_clients(judges: Any) -> list[Any]:
    """The model clients reachable from ``judges`` (each once, in the order found).

    Walks containers, the attributes of objects (judges, juries, cascades, runners), and the
    closure cells and defaults of functions; it does not descend into a client, a module's
    globals, a class or a `Judgment` (a result, such as a ReplayJudge's logged ones). At most
    `MAX_VISITED` objects and `MAX_DEPTH` hops are examined.
    """
    return [client for client, _ in _walk(judges)]


def missing_keys(task: Any, judges: Any) -> list[str]:
    """One line per model client of ``task`` or ``judges`` that needs an API key and has none.

    E.g. ``judge 'Correctness' (openai:gpt-4o-mini): OPENAI_API_KEY is not set``: the nearest
    judge (or task) holding the client, the client's name and its ``missing_key``.
    """
    lines: list[str] = []
    for what, root in (("task", task), ("judge", judges)):
        for client, owner in _walk(root):
            reason = getattr(client, "missing_key", None)
            if not isinstance(reason, str) or not reason:
                continue
            name = getattr(client, "name", type(client).__name__)
            label = what if owner is None else f"{what} {owner!r}"
            lines.append(f"{label}: {reason}" if owner == name else f"{label} ({name}): {reason}")
    return lines


async def close_model_clients(clients: list[Any], *, grace: float = CLOSE_TIMEOUT) -> list[str]:
    """``aclose()`` every client, shielded from cancellation and bounded by ``grace`` seconds.

    Returns:
        One warning per client whose ``aclose`` raised, and one if closing ran out of time
        (never raises: the run's outcome does not depend on closing connections).
    """
    warnings: list[str] = []
    if not clients:
        return warnings
    with anyio.move_on_after(grace, shield=True) as scope:
        for client in clients:
            try:
                await client.aclose()
            except Exception as exc:
                name = getattr(client, "name", type(client).__name__)
                warnings.append(f"closing model client {name!r} raised {type(exc).__name__}: {exc}")
    if scope.cancelled_caught:
        warnings.append(f"closing the model clients took longer than {grace:g} s; gave up")
    return warnings

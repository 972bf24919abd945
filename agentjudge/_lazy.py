"""Names of a package loaded on first use (PEP 562 module ``__getattr__``).

`agentjudge`, `agentjudge.harness` and `agentjudge.models` list where each public name lives
and import that module only when the name is first read, so ``import agentjudge`` and
``agentjudge --help`` load no pydantic, httpx or jsonschema.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_attribute"]


def lazy_attribute(
    package: str, lazy: Mapping[str, str], namespace: MutableMapping[str, Any], name: str
) -> Any:
    """The value of ``package.name`` from the module ``lazy[name]``, cached in ``namespace``.

    Raises:
        AttributeError: ``name`` is not one of ``lazy``'s names.
    """
    module = lazy.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value

"""Resolve ``module:attr`` references from suite files and command-line flags."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_sys_path", "load_object", "takes_no_arguments"]


def add_sys_path(*folders: Path) -> None:
    """Put ``folders`` first on ``sys.path`` (once), so user modules import from there.

    They stay there: modules imported from them may import their siblings lazily later.
    """
    for folder in reversed(folders):
        entry = str(folder.resolve())
        if entry not in sys.path:
            sys.path.insert(0, entry)


def _import_file(file: Path, ref: str, what: str) -> Any:
    name = "agentjudge_user_" + "_".join(file.resolve().with_suffix("").parts[-3:]).replace(
        "-", "_"
    )
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ValueError(f"{what} {ref!r}: cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module


def load_object(ref: str, *, what: str, base_dir: Path | None = None) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted) and return the object.

    ``module`` may also be a path to a ``.py`` file (relative to ``base_dir``), e.g.
    ``tasks/answer.py:answer``.

    Args:
        ref: The reference.
        what: What it is for, used in messages (``"task"``, ``"judges"``).
        base_dir: Folder relative file paths are resolved against; it is put first on
            ``sys.path`` (then the working directory).

    Raises:
        ValueError: the reference is malformed, the module cannot be imported or the attribute
            does not exist (the message says which).
    """
    module_name, colon, attr = ref.partition(":")
    module_name, attr = module_name.strip(), attr.strip()
    if not colon or not module_name or not attr:
        raise ValueError(
            f"{what} {ref!r}: expected 'module:attribute' (e.g. 'my_module:my_function')"
        )
    folders = [base_dir] if base_dir is not None else []
    folders.append(Path.cwd())
    add_sys_path(*folders)
    if module_name.endswith(".py"):
        file = Path(module_name)
        if not file.is_absolute() and base_dir is not None:
            file = base_dir / file
        if not file.is_file():
            raise ValueError(f"{what} {ref!r}: file not found: {file}")
        try:
            module = _import_file(file, ref, what)
        except ValueError:
            raise
        except Exception as exc:
            raise ValueError(
                f"{what} {ref!r}: importing {file} raised {type(exc).__name__}: {exc}"
            ) from exc
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            where = f" (searched {base_dir} and the working directory)" if base_dir else ""
            raise ValueError(
                f"{what} {ref!r}: cannot import module {module_name!r}{where}: {exc}"
            ) from exc
        except Exception as exc:
            raise ValueError(
                f"{what} {ref!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
            ) from exc
    obj: Any = module
    walked = []
    for part in attr.split("."):
        walked.append(part)
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(
                f"{what} {ref!r}: module {module_name!r} has no attribute {'.'.join(walked)!r}"
            ) from None
    return obj


def takes_no_arguments(obj: Any) -> bool:
    """True when ``obj`` is callable without arguments (a factory or a class to instantiate)."""
    if not callable(obj):
        return False
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    try:
        sig.bind()
    except TypeError:
        return False
    return True

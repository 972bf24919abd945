"""Resolve ``module:attr`` references from suite files and command-line flags.

A task may also name a chat model, ``"<provider>:<model>"``; `names_model` tells the two apart
by the model provider registry (`agentjudge.models`), so a provider added there is a task here
too, and an unknown provider is a config error naming the known ones, not a module import.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from agentjudge.harness._text import did_you_mean
from agentjudge.models import known_providers
from agentjudge.models._registry import is_provider

__all__ = ["add_sys_path", "load_object", "names_model", "takes_no_arguments"]


def add_sys_path(*folders: Path) -> None:
    """Put ``folders`` first on ``sys.path`` (once), so user modules import from there.

    They stay there: modules imported from them may import their siblings lazily later.
    """
    for folder in reversed(folders):
        entry = str(folder.resolve())
        if entry not in sys.path:
            sys.path.insert(0, entry)


def _is_attribute_path(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def names_model(ref: str) -> bool:
    """True when ``ref`` names a chat model (``"<provider>:<model>"``), not ``module:attr``.

    It does when its prefix is a registered provider (any case), or when the part after the
    colon cannot be a Python attribute (``"mistral:mistral-large-latest"``,
    ``"ollama:llama3.1:8b"``): such a reference is handed to `model_from_string`, which
    refuses an unknown provider naming the known ones. Nothing is imported to decide.
    """
    prefix, colon, rest = ref.partition(":")
    prefix, rest = prefix.strip(), rest.strip()
    if not colon or not prefix or not rest:
        return False
    if is_provider(prefix):
        return True
    looks_like_module = any(c in prefix for c in "./\\")  # a dotted module or a path
    return not looks_like_module and not _is_attribute_path(rest)


def _providers_hint(ref: str, module_name: str) -> str:
    """A hint for a bare module name that does not import: maybe a model was meant."""
    if "." in module_name:
        return ""
    return (
        f"; if {ref!r} names a model, its provider must be one of "
        f"{', '.join(known_providers())} ('<provider>:<model>')"
    )


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


def _import_module(module_name: str, folders: list[Path], ref: str, what: str) -> Any:
    """``importlib.import_module``, unless that name is loaded from another file already.

    Two suites in one process (a notebook, a test session) may both say ``task:answer`` with
    their own ``task.py``: the second must get its own file, not the first one's module from
    ``sys.modules``. Such a top-level module file is then imported under a name of its own
    (as a ``.py`` path reference is); its own imports of same-named siblings still resolve
    through ``sys.modules`` as Python does.
    """
    cached = sys.modules.get(module_name)
    if cached is not None and "." not in module_name:
        spec = importlib.machinery.PathFinder.find_spec(module_name, [str(f) for f in folders])
        origin = None if spec is None else spec.origin
        if (
            origin is not None
            and origin.endswith(".py")
            and spec is not None
            and spec.submodule_search_locations is None
            and Path(origin).resolve() != _file_of(cached)
        ):
            return _import_file(Path(origin), ref, what)
    return importlib.import_module(module_name)


def _file_of(module: Any) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if isinstance(file, str) else None


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
            nearby = [f.name for f in file.parent.glob("*.py")] if file.parent.is_dir() else []
            raise ValueError(
                f"{what} {ref!r}: file not found: {file}{did_you_mean(file.name, nearby)}"
            )
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
            module = _import_module(module_name, folders, ref, what)
        except ImportError as exc:
            where = f" (searched {base_dir} and the working directory)" if base_dir else ""
            hint = _providers_hint(ref, module_name) if what == "task" else ""
            near = (
                did_you_mean(module_name, _modules_in(folders)) if exc.name == module_name else ""
            )
            raise ValueError(
                f"{what} {ref!r}: cannot import module {module_name!r}{near}{where}: {exc}{hint}"
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
            names = [n for n in dir(obj) if not n.startswith("_") or part.startswith("_")]
            raise ValueError(
                f"{what} {ref!r}: module {module_name!r} has no attribute {'.'.join(walked)!r}"
                f"{did_you_mean(part, names)}"
            ) from None
    return obj


def _modules_in(folders: list[Path]) -> list[str]:
    """Top-level modules and packages in ``folders`` (for a "did you mean")."""
    found = []
    for folder in folders:
        if folder.is_dir():
            found += [f.stem for f in folder.glob("*.py")]
            found += [d.name for d in folder.iterdir() if (d / "__init__.py").is_file()]
    return found


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

"""``@pytest.mark.agentjudge_dataset(path)``: one test per dataset row, with the row's id.

The file is read with the harness's reader (`Dataset.open`), so a malformed row fails
collection with the same message ``agentjudge run`` gives (file, line and field), and every
format the harness reads (JSONL, CSV, a JSON array, YAML) works here too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentjudge.exceptions import DatasetError
from agentjudge.harness._dataset import Dataset

__all__ = ["parametrize_dataset"]

_MARK = "@pytest.mark.agentjudge_dataset"


def parametrize_dataset(
    metafunc: pytest.Metafunc,
    path: str | Path,
    *,
    format: str | None = None,
    argname: str = "case",
) -> None:
    """Parametrize ``argname`` with the cases of ``path`` (relative to the test's file).

    Args:
        metafunc: The test being collected.
        path: The dataset file; a relative path is taken from the test file's folder.
        format: ``"jsonl"``, ``"csv"``, ``"json"`` or ``"yaml"`` (None: by the extension).
        argname: The test's argument that receives each `Case`.
    """
    __tracebackhide__ = True
    if argname not in metafunc.fixturenames:
        pytest.fail(
            f"{_MARK}: {metafunc.definition.name} has no {argname!r} argument to receive the "
            f"cases (add it, or pass argname=...)",
            pytrace=False,
        )
    file = metafunc.definition.path.parent / Path(path)
    try:
        dataset = Dataset.open(file, format=format)
        dataset.require_cases()
        cases = list(dataset.iter_cases())
    except (DatasetError, ValueError) as exc:
        problem = str(exc)
    else:
        metafunc.parametrize(argname, cases, ids=[case.id for case in cases])
        return
    # Failed outside the handler: the message alone, without "During handling of ...".
    pytest.fail(f"{_MARK}: {problem}", pytrace=False)

"""The pytest sessions these tests start skip langsmith's pytest plugin, as the suite does.

``pytester`` removes ``PYTEST_ADDOPTS`` (where tests/conftest.py blocks that plugin) so that
its sessions see no outer options. An in-process session then loaded the plugin, and since
pytester restores ``sys.modules`` after each session, every session imported langsmith (and
the pydantic models it defines) again: about 0.5 s of CPU per session, a dozen sessions here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    """pytest's ``pytester``, its sessions started with ``-p no:langsmith_plugin``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_ADDOPTS", "-p no:langsmith_plugin")
        yield pytester

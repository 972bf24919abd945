"""The pytest sessions these tests start skip langsmith's pytest plugin, as the suite does.

``pytester`` removes ``PYTEST_ADDOPTS`` (where tests/conftest.py blocks that plugin) so that
its sessions see no outer options. An in-process session then loaded the plugin, and since
pytester restores ``sys.modules`` after each session, every session imported langsmith (and
the pydantic models it defines) again: about 0.5 s of CPU per session, a dozen sessions here.

For the same reason the plugin's own modules, which a session imports on first use (the
summary, the gates and the dataset rows, and through them the harness's summary, report and
dataset modules; xdist's controller side for the ``-n 2`` sessions), are imported here once:
otherwise every session that uses the plugin imported them again (~0.1 s of CPU each). The
plugin module itself still imports none of them (test_loading_the_plugin_imports_no_agentjudge
checks that in a fresh interpreter).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import xdist.dsession  # noqa: F401  (kept imported across sessions, see above)

import agentjudge._pytest._cases
import agentjudge._pytest._session  # noqa: F401


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    """pytest's ``pytester``, its sessions started with ``-p no:langsmith_plugin``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_ADDOPTS", "-p no:langsmith_plugin")
        yield pytester

"""Every Python block of every page in docs/ runs, or is marked as not meant to run alone.

The rules (the markers are described in tests/docs_support.py):

- A ```` ```python ```` block runs. By default here, standalone: its own process in an empty
  folder, which must exit 0 (forked from one preloaded interpreter, see tests/zygote_support.py:
  a fresh ``python`` per example cost most of this file's CPU time). The bridges page's
  examples call the SDKs (openai, anthropic, pydantic-ai, openai-agents, LangGraph,
  LlamaIndex: ~9 s of CPU to import), which the "sdk" tests (tests/bridges) import in their
  worker anyway: those examples run in that worker, each forked from the pytest process
  (`python_c_here`) instead of importing every SDK a second time in the zygote. On a page
  whose examples build on each other (`OWN_TESTS`), the page's own test runs them all, in
  order, in one namespace.
- A piece of a program that cannot run alone (a signature, an excerpt using names defined
  elsewhere) is a ```` ```py ```` block with the line ``<!-- fragment -->`` right before its
  fence. Writers: mark a block only when it cannot be made to run; a ```` ```py ```` block
  without a marker fails here.
- A file of a worked example (a suite, a judges module, a dataset) has ``<!-- file: NAME -->``
  right before its fence; its page's test (`FILE_TESTS`, or `OWN_TESTS`) writes it and runs
  the page's commands on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_support import DOCS, ROOT, Block, blocks
from zygote_support import python_c, python_c_here

# One worker runs the zygote's examples, so one preloaded interpreter serves them all.
ZYGOTE = pytest.mark.xdist_group("docs-examples")
# Pages whose examples run forked from the worker of the "sdk" tests, which import their SDKs.
SDK_PAGES = {"docs/how-to/bridges.md"}

# Pages whose examples build on each other run in one namespace in their own tests.
OWN_TESTS = {
    "docs/concepts/voting.md": "tests/test_voting_docs.py",
    "docs/how-to/llm-judges.md": "tests/judges/test_llm_docs.py",
    "docs/how-to/fastapi-jury.md": "tests/judges/test_llm_docs.py",
    "docs/how-to/deterministic-judges.md": "tests/judges/test_judges_deterministic_docs.py",
    "docs/how-to/model-clients.md": "tests/models/test_models_docs.py",
    "docs/how-to/trust.md": "tests/test_calibration_docs.py",
}
# Pages with `<!-- file: NAME -->` blocks, and the test that writes and runs them.
FILE_TESTS = {
    "docs/quickstart.md": "tests/harness/test_quickstart.py",
    "docs/how-to/offline-evaluation.md": "tests/harness/test_harness_model_clients.py",
    "docs/how-to/offline-llm-suite.md": "tests/test_docs_offline_llm.py",
    "docs/how-to/pytest.md": "tests/testing_plugin/test_pytest_xdist.py",
    "docs/how-to/providers.md": "tests/harness/test_harness_provider_plugin.py",
}


def _pages() -> dict[str, list[Block]]:
    return {
        str(path.relative_to(ROOT)): blocks(path.read_text("utf-8"))
        for path in sorted(DOCS.rglob("*.md"))
    }


PAGES = _pages()
STANDALONE = [
    pytest.param(
        block.code,
        page in SDK_PAGES,
        id=f"{page}:{block.line}",
        marks=pytest.mark.xdist_group("sdk") if page in SDK_PAGES else ZYGOTE,
    )
    for page, found in PAGES.items()
    if page not in OWN_TESTS
    for block in found
    if block.lang == "python" and block.marker is None
]


def test_pages_with_their_own_tests_have_them() -> None:
    """Every page excluded here is exercised by a test file that exists and names it."""
    for page, test in {**OWN_TESTS, **FILE_TESTS}.items():
        if (ROOT / page).exists():
            assert (ROOT / test).exists(), f"{page} is not tested: {test} is missing"
            assert Path(page).name in (ROOT / test).read_text("utf-8"), f"{test} skips {page}"


def test_every_python_block_runs_or_is_marked() -> None:
    """A ```py block is a marked fragment or file; a fragment is never a ```python block
    (which the namespace tests would run); file blocks are on pages whose tests run them."""
    problems = []
    for page, found in PAGES.items():
        for block in found:
            where = f"{page}:{block.line}"
            if block.lang == "py" and block.marker is None:
                problems.append(f"{where}: ```py without <!-- fragment --> or <!-- file: -->")
            if block.marker == "fragment" and block.lang != "py":
                problems.append(f"{where}: a fragment must be a ```py block, not ```{block.lang}")
            if block.marker == "file" and page not in {**OWN_TESTS, **FILE_TESTS}:
                problems.append(f"{where}: <!-- file: {block.file} --> on a page no test runs")
    assert not problems, "\n".join(problems)


def test_standalone_blocks_are_collected() -> None:
    """The collection sees blocks without ``anyio.run`` too (they used to be skipped)."""
    ids = [param.id for param in STANDALONE]
    assert any(i.startswith("docs/quickstart.md:") for i in ids)
    assert any(i.startswith("docs/concepts/judges.md:") for i in ids)  # no anyio.run in it


@pytest.mark.parametrize(("code", "sdk_page"), STANDALONE)
def test_docs_example_runs(code: str, sdk_page: bool, tmp_path: Path) -> None:
    """The example runs to completion without errors."""
    proc = (python_c_here if sdk_page else python_c)(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]

"""Take the browser report screenshots of the docs (docs/img/html-report*.png).

Run once after changing the page: ``uv run python benchmarks/report_screenshot.py``. It runs the
shipped example (examples/rag_qa) twice, the second time with a worse task, writes the HTML
report of the second run against the first and photographs it in headless Chromium
(/usr/bin/chromium): the overview, and the case table with a case open.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip

WORSE_TASK = """
from task import answer as _answer

def answer(case):
    out = _answer(case)
    if case.id in ("rag-004", "rag-011", "rag-021"):
        return out.model_copy(update={"citations": ()})
    return out
"""


def runs(root: Path) -> tuple[Path, Path]:
    """The example run as baseline, and a run whose task drops three answers' citations."""
    from agentjudge.harness import load_suite, run_suite

    suite = load_suite(ROOT / "examples" / "rag_qa" / "agentjudge.toml")
    (root / "worse.py").write_text(WORSE_TASK, encoding="utf-8")
    sys.path.insert(0, str(root))
    anyio.run(lambda: run_suite(suite, out=root / "base"))
    worse = suite.with_overrides(task=f"{root / 'worse.py'}:answer")
    anyio.run(lambda: run_suite(worse, out=root / "new"))
    return root / "base", root / "new"


def main() -> None:
    from playwright.sync_api import sync_playwright

    from agentjudge.harness._html import write_html

    with tempfile.TemporaryDirectory() as tmp:
        base, new = runs(Path(tmp))
        html = Path(tmp) / "report.html"
        write_html(new, html, base)
        out = ROOT / "docs" / "img"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            page.goto(html.as_uri())
            page.wait_for_selector("body[data-ready]")
            page.screenshot(path=out / "html-report.png")
            page.click("#tab-cases")
            page.select_option("select[name=judge]", label="citation_recall")
            page.select_option("select[name=status]", label="flipped vs baseline")
            page.locator(".grow").first.click()
            page.screenshot(path=out / "html-report-case.png")
            browser.close()
    print(f"wrote {out / 'html-report.png'} and {out / 'html-report-case.png'}")


if __name__ == "__main__":
    main()

"""Browser report benchmark: a 100,000-case run's HTML report, generated and used in Chromium.

Run: ``uv run python benchmarks/bench_report.py [ROWS]`` (needs /usr/bin/chromium; without it
the browser numbers are skipped).

Measures, on one run made with `run_suite` (3 judges: a PASS/FAIL judge with a per-case
reasoning, a scored judge with a check, a constant PASS; two tags; about 2% task errors):

* ``text_report_s``: `render_report` (the plain text report) - the reference;
* ``html_s`` / ``html_bytes`` / ``bytes_per_case``: `write_html`, the file it writes;
* ``open_s``: Chromium loading the file until the page is rendered (``body[data-ready]``);
* ``filter_status_s``, ``filter_text_s``, ``sort_s``: a status filter, a text search (the
  first builds the search index) and a sort on the case table, until the row count updates.

Prints one JSON line. Targets (issue 20): opens and filters within a few seconds.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROWS = 100_000
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip

JUDGES = """
from agentjudge import Check, Judgment

PASS = Judgment.passed("ok")

async def exact(ctx):
    if ctx.output == ctx.expected:
        return Judgment.passed("the answer names the expected product")
    return Judgment.failed(f"expected {ctx.expected[:40]!r}, got {ctx.output[:40]!r}")

async def length(ctx):
    n = len(ctx.output)
    check = Check(name="short", passed=n <= 120, message=f"{n} characters")
    return Judgment.from_score(min(1.0, n / 160), reasoning="length", checks=(check,))

async def always(ctx):
    return PASS

judges = [exact, length, always]
"""

TASK = """
async def answer(case):
    i = int(case.id.split("-")[1])
    if i % 50 == 7:
        raise RuntimeError(f"upstream timeout on {case.id}")
    return case.expected if i % 9 else case.input.upper()
"""


def make_run(root: Path, rows: int) -> Path:
    """A finished run of ``rows`` cases under ``root/out``."""
    from agentjudge.harness import Suite, run_suite

    with (root / "data.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(rows):
            question = f"How do I reset the Nimbus R{i % 9} router to its factory settings? #{i}"
            answer = f"Hold the reset button of the Nimbus R{i % 9} for ten seconds, then wait."
            row = {
                "id": f"case-{i:06d}",
                "input": question,
                "expected": answer,
                "metadata": {"tags": ["setup" if i % 3 else "billing"]},
            }
            handle.write(json.dumps(row) + "\n")
    (root / "task.py").write_text(TASK, encoding="utf-8")
    (root / "judges.py").write_text(JUDGES, encoding="utf-8")
    suite = Suite(
        dataset=Path("data.jsonl"), task="task.py:answer", judges="judges.py:judges", base_dir=root
    )
    anyio.run(lambda: run_suite(suite, out=root / "out"))
    return root / "out"


def timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def browser_numbers(html: Path, rows: int) -> dict[str, float]:
    """Open, filter, search and sort timings in headless Chromium."""
    from playwright.sync_api import sync_playwright

    def wait_count(page: Any, pattern: str) -> None:
        page.locator(".count", has_text=re.compile(pattern)).wait_for(timeout=60_000)

    out: dict[str, float] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        start = time.perf_counter()
        page.goto(html.as_uri(), timeout=120_000)
        page.wait_for_selector("body[data-ready]", timeout=120_000)
        out["open_s"] = time.perf_counter() - start
        page.click("#tab-cases")
        total = f"{rows:,}"
        start = time.perf_counter()
        page.select_option("select[name=status]", label="fail")
        wait_count(page, f"^[0-9,]+ of {total} cases$")
        out["filter_status_s"] = time.perf_counter() - start
        page.select_option("select[name=status]", label="any")
        wait_count(page, f"^{total} of {total} cases$")
        start = time.perf_counter()
        page.fill("input[name=q]", "case-000123")
        wait_count(page, f"^1 of {total} cases$")
        out["filter_text_s"] = time.perf_counter() - start  # includes the 120 ms debounce
        page.fill("input[name=q]", "")
        wait_count(page, f"^{total} of {total} cases$")
        start = time.perf_counter()
        page.click("button[data-sort=score]")
        page.locator("[role=columnheader][aria-sort=ascending]").wait_for()
        out["sort_s"] = time.perf_counter() - start
        out["rows_in_dom"] = page.locator(".grow").count()
        browser.close()
    return out


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    from agentjudge.harness._html import write_html
    from agentjudge.harness._report import render_report

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_dir, run_s = timed(lambda: make_run(root, rows))
        _, text_s = timed(lambda: render_report(run_dir))
        html = root / "report.html"
        size, html_s = timed(lambda: write_html(run_dir, html))
        result: dict[str, Any] = {
            "rows": rows,
            "run_s": round(run_s, 2),
            "results_bytes": (run_dir / "results.jsonl").stat().st_size,
            "text_report_s": round(text_s, 2),
            "html_s": round(html_s, 2),
            "html_bytes": size,
            "bytes_per_case": round(size / rows),
        }
        if CHROMIUM.exists():
            result.update({k: round(v, 2) for k, v in browser_numbers(html, rows).items()})
        else:
            result["browser"] = f"skipped: {CHROMIUM} missing"
        print(json.dumps(result))


if __name__ == "__main__":
    main()

"""The browser report in a real browser: headless Chromium (Debian's) driven by Playwright.

Skipped when Chromium (/usr/lib/chromium/chromium) is missing, unless AGENTJUDGE_REQUIRE_BROWSER=1
(CI sets it, and `.ci/run` installs chromium): then missing Chromium fails the tests. One browser
per module.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentjudge.harness._html import write_html
from tests.harness.html_support import build_labelled_run, build_runs
from tests.harness.trajectory_support import build_trajectory_run

# One worker runs them all: one browser for the module (pytest-xdist would start one per worker).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]  # starts a browser process

CHROMIUM = Path("/usr/lib/chromium/chromium")
"""Debian's Chromium itself: its launcher script, /usr/bin/chromium, cost ~0.1 s of CPU in the
processes it runs (grep, findmnt, ...) for flags and settings a headless run does not use
(Playwright passes --disable-dev-shm-usage itself)."""
# The last three spare processes a one-tab headless run does not need: the GPU thread runs in
# the browser process (no GPU process), no SwiftShader is set up (--disable-gpu already paints
# in software), one renderer. The module's CPU: ~10.2 -> ~9.1 s (two runs each, testcpu).
# Rejected: --single-process (unsupported by Chromium; similar CPU, but twice the wall time).
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--in-process-gpu",
    "--disable-software-rasterizer",
    "--renderer-process-limit=1",
]
NODE_CACHE = Path(__file__).resolve().parent / "__pycache__" / "playwright-node"
"""Node's compile cache for Playwright's driver: its start costs ~0.9 s of CPU, 0.2 s less with
the driver's 7 MB of JavaScript compiled by an earlier run (Node 22+, ``NODE_COMPILE_CACHE``)."""


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Any]:
    """The module's Chromium; ``report`` first, as Playwright's loop cannot host `anyio.run`."""
    required = os.environ.get("AGENTJUDGE_REQUIRE_BROWSER") == "1"
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if required:
            pytest.fail(f"AGENTJUDGE_REQUIRE_BROWSER=1 but {message}")
        pytest.skip(message)
    sync_api = pytest.importorskip("playwright.sync_api")
    with pytest.MonkeyPatch.context() as patch:  # the driver copies the environment at start
        patch.setenv("NODE_COMPILE_CACHE", str(NODE_CACHE))
        playwright = sync_api.sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()
    finally:
        playwright.stop()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    base, new = build_runs(root)
    out = root / "report.html"
    write_html(new, out, base)
    # Before the browser starts: Playwright's loop cannot host `anyio.run`.
    write_html(build_trajectory_run(root), root / "trajectory.html")
    write_html(build_labelled_run(root), root / "labelled.html")
    return out


class Page:
    """A report page loaded in the module's tab, with the console messages, page errors and
    requests of this load (the tab is reused: a new page per test cost ~0.45 s of CPU)."""

    def __init__(self, tab: Any, report: Path) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = tab
        self.path = report
        self._listeners = {
            "console": self._console,
            "pageerror": lambda exc: self.errors.append(f"pageerror: {exc}"),
            "request": lambda request: self.requests.append(request.url),
        }
        for event, listener in self._listeners.items():
            tab.on(event, listener)
        self.page.goto(report.as_uri())
        self.page.wait_for_selector("body[data-ready]")

    def close(self) -> None:
        """Stop recording this load's messages and requests (the tab stays for the next)."""
        for event, listener in self._listeners.items():
            self.page.remove_listener(event, listener)

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def ids(self) -> list[str]:
        """The case ids of the rows in the DOM (the visible window of the table)."""
        ids: list[str] = self.page.locator(".grow > div:first-child").all_inner_texts()
        return ids

    def wait_count(self, text: str) -> None:
        """Wait for the row count to read ``text`` (the search is debounced)."""
        self.page.locator(".count", has_text=re.compile(f"^{text}$")).wait_for()

    def count(self) -> str:
        text: str = self.page.locator(".count").inner_text()
        return text


class Tab:
    """The module's one tab and the report load in it.

    A test that changes the page (clicks, filters, opens a case) gets a fresh load; a test that
    only reads what a fresh load shows (``read_only``) leaves it untouched, so the next test on
    the same report takes that load instead of loading it again (a navigation costs ~0.3 s of
    CPU in Chromium and the Playwright driver). Read-only tests come first in this module.
    """

    def __init__(self, tab: Any) -> None:
        self.tab = tab
        self._current: Page | None = None
        self._untouched = False

    def open(self, report: Path, *, read_only: bool = False) -> Page:
        """``report`` as a fresh load shows it (its console errors and requests since then)."""
        current = self._current
        if current is None or not self._untouched or current.path != report:
            if current is not None:
                current.close()
            current = self._current = Page(self.tab, report)
        self._untouched = read_only
        return current

    def close(self) -> None:
        """Stop recording the last load's messages."""
        if self._current is not None:
            self._current.close()


@pytest.fixture(scope="module")
def tab(browser: Any) -> Iterator[Tab]:
    """One tab for the module's tests: each test opens its report in it (`Tab.open`)."""
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    shared = Tab(opened)
    yield shared
    shared.close()
    opened.close()


@pytest.fixture
def page(tab: Tab, report: Path) -> Page:
    """The report as loaded, for a test that changes the page."""
    return tab.open(report)


@pytest.fixture
def overview(tab: Tab, report: Path) -> Page:
    """The report as loaded, for a test that only reads it (the load stays untouched)."""
    return tab.open(report, read_only=True)


def _add_bytes(a: bytes, b: bytes) -> bytes:
    """``a`` and ``b`` added byte by byte, modulo 256 (one big-integer sum, no carries across)."""
    n = len(a)
    low = int.from_bytes(b"\x7f" * n, "big")
    x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
    return (((x & low) + (y & low)) ^ ((x ^ y) & ~low & ((1 << 8 * n) - 1))).to_bytes(n, "big")


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit, non-interlaced RGB/RGBA PNG: (width, channels, rows of pixel bytes).

    Rows filtered with "up" (most of Chromium's) are undone in one step (`_add_bytes`), the
    others byte by byte.
    """
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytes] = []
    prev = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1 : start + 1 + stride]
        if kind == 2:
            line = _add_bytes(line, prev)
        elif kind != 0:
            line = _unfilter(kind, bytearray(line), prev, channels)
        rows.append(line)
        prev = line
    return width, channels, rows


def _unfilter(kind: int, line: bytearray, prev: bytes, channels: int) -> bytes:
    """Undo filter ``kind`` (1 sub, 3 average, 4 Paeth) of one row, given the row above."""
    assert kind in (1, 3, 4)
    for i in range(len(line)):
        left = line[i - channels] if i >= channels else 0
        up, corner = prev[i], prev[i - channels] if i >= channels else 0
        if kind == 1:
            line[i] = (line[i] + left) & 255
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 255
        else:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            line[i] = (line[i] + pred) & 255
    return bytes(line)


def test_page_loads_without_errors_or_requests_and_renders(overview: Page, tmp_path: Path) -> None:
    """No console errors, no request but the file itself; the screenshot is not blank."""
    page = overview
    assert page.errors == []
    assert page.requests == [page.page.url]
    assert page.page.locator("svg[role=img]").count() >= 3  # per-judge charts and the tag chart
    shot = page.page.screenshot(clip={"x": 0, "y": 0, "width": 400, "height": 300})
    (tmp_path / "shot.png").write_bytes(shot)
    width, channels, rows = png_pixels(shot)
    colours: set[tuple[int, int, int]] = set()
    lum: list[float] = []
    for row in rows:
        pixels = list(zip(row[0::channels], row[1::channels], row[2::channels], strict=True))
        colours.update(pixels)
        lum.extend((r + g + b) / 3 for r, g, b in pixels)
    assert len(lum) == width * len(rows)
    mean = sum(lum) / len(lum)
    variance = sum((v - mean) ** 2 for v in lum) / len(lum)
    assert len(colours) > 20 and variance > 50


def test_no_confusion_matrix_without_human_labels(overview: Page) -> None:
    """A run without human labels shows no agreement section."""
    assert overview.page.locator("table.confusion").count() == 0
    assert "Agreement with human labels" not in overview.page.locator("#view-overview").inner_text()


def test_filters_and_sorting_change_the_visible_rows(page: Page) -> None:
    """Status, tag, judge and text filters narrow the rows; headers sort both ways."""
    page.page.click("#tab-cases")
    assert page.count() == "10 of 10 cases"
    page.page.select_option("select[name=status]", label="fail")
    assert sorted(page.ids()) == ["c01", "c03", "c05", "c07"]
    page.page.select_option("select[name=judge]", label="exact")
    assert sorted(page.ids()) == ["c01", "c03", "c05"]
    page.page.select_option("select[name=status]", label="any")
    page.page.select_option("select[name=tag]", label="fruit")
    assert page.count() == "5 of 10 cases"
    page.page.select_option("select[name=tag]", label="any")
    page.page.fill("input[name=q]", "BERRY")
    page.wait_count("1 of 10 cases")
    assert page.ids() == ["c05"]
    page.page.fill("input[name=q]", "")
    page.wait_count("10 of 10 cases")
    page.page.click("button[data-sort=id]")
    assert page.ids() == [f"c{i:02d}" for i in range(10)]
    page.page.click("button[data-sort=id]")
    assert page.ids() == [f"c{i:02d}" for i in reversed(range(10))]
    assert page.errors == []


def test_case_view_opens_from_the_keyboard_with_its_traceback(page: Page) -> None:
    """Enter on the active row opens the case: judgments, checks and the task's traceback."""
    page.page.click("#tab-cases")
    page.page.click("button[data-sort=id]")
    page.page.focus(".viewport")
    for _ in range(8):
        page.page.keyboard.press("ArrowDown")
    page.page.keyboard.press("Enter")
    dialog = page.page.locator("dialog#case")
    assert dialog.is_visible()
    text = dialog.inner_text()
    assert "Case c08" in text and "kaboom" in text and 'File "task.py", line 4' in text
    page.page.click("button[aria-label='Previous case']")
    text = dialog.inner_text()
    assert "Case c07" in text and "Checks" in text and "short" in text
    page.page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert page.page.locator(".viewport").evaluate("node => node === document.activeElement")
    assert page.errors == []


def test_comparison_view_highlights_each_judges_flips(page: Page) -> None:
    """The comparison lists exact's three flips; the case table marks them and filters them."""
    page.page.click("#tab-compare")
    view = page.page.locator("#view-compare")
    assert "Compared with baseline" in view.inner_text()
    assert [t.split()[0] for t in view.locator("tr.flip").all_inner_texts()] == ["exact"]
    exact = view.locator("details", has_text="exact")
    assert exact.locator("button.linkrow").all_inner_texts() == ["c01", "c03", "c05"]
    exact.locator("button.linkrow", has_text="c03").click()
    assert "(flipped)" in page.page.locator("dialog#case").inner_text()
    page.page.keyboard.press("Escape")
    page.page.click("#tab-cases")
    page.page.select_option("select[name=judge]", label="exact")
    page.page.select_option("select[name=status]", label="flipped vs baseline")
    assert sorted(page.ids()) == ["c01", "c03", "c05"]
    assert page.page.locator(".grow .flip").count() >= 3
    assert page.errors == []


def test_case_view_shows_a_failing_trajectorys_tool_call_diff(tab: Tab, report: Path) -> None:
    """The case view of a failing trajectory has a table of expected vs actual tool calls."""
    page = tab.open(report.with_name("trajectory.html"))
    page.page.click("#tab-cases")
    page.page.click("button[data-sort=id]")
    page.page.locator(".grow", has_text="bad").click()
    table = page.page.locator(
        "table[aria-label='Tool calls of TrajectoryMatch: expected vs actual']"
    )
    assert table.is_visible()
    rows = table.locator("tbody tr")
    assert rows.count() == 3
    assert [rows.nth(k).get_attribute("class") for k in range(3)] == [
        "d-arguments",
        "d-extra",
        "d-missing",
    ]
    first = rows.nth(0).inner_text()
    assert "other arguments (unit)" in first and '"unit": "C"' in first and '"unit": "F"' in first
    assert 'delete_booking({"id": 7})' in rows.nth(1).inner_text()
    assert "book_table(" in rows.nth(2).inner_text()
    missing = rows.nth(2).locator("td").nth(2)
    colour = missing.evaluate("node => getComputedStyle(node).backgroundColor")
    assert colour not in ("rgba(0, 0, 0, 0)", "transparent")  # the kinds stand out
    assert page.errors == [] and page.requests == [page.page.url]


def test_overview_shows_a_confusion_matrix_per_labelled_judge(tab: Tab, report: Path) -> None:
    """With human labels, each judge and the verdict get a matrix; the diagonal is marked."""
    loaded = tab.open(report.parent / "labelled.html", read_only=True)
    overview = loaded.page.locator("#view-overview")
    assert "Agreement with human labels" in overview.inner_text()
    matrices = overview.locator("table.confusion")
    labels = [matrices.nth(i).get_attribute("aria-label") for i in range(matrices.count())]
    assert labels == [
        f"Confusion matrix of {name} (rows: human label, columns: judge)"
        for name in ("exact", "length", "(verdict)")
    ]
    exact = matrices.first
    assert exact.locator("thead th").all_inner_texts() == [
        "human \\ judge",
        "fail",
        "pass",
        "total",
    ]
    assert exact.locator("tbody th").all_inner_texts() == ["fail", "pass"]
    assert exact.locator("tbody td").all_inner_texts() == ["2", "1", "3", "1", "5", "6"]
    assert exact.locator("td.agree").all_inner_texts() == ["2", "5"]
    assert exact.locator("td.disagree").all_inner_texts() == ["1", "1"]
    jury = overview.locator("table[aria-label='Per-jury agreement'] tbody td")
    assert jury.all_inner_texts()[-1] == "exact ~ length: 0.556 [0.267, 0.811] (n 9)"
    assert loaded.errors == []


def test_case_view_highlights_the_users_frames_in_a_traceback(tab: Tab, report: Path) -> None:
    """The task error's traceback marks the user's own frame (task.py), not the library's."""
    loaded = tab.open(report.parent / "labelled.html")
    loaded.page.click("#tab-cases")
    loaded.page.fill("input[name=q]", "kaboom")
    loaded.wait_count("1 of 10 cases")
    loaded.page.click(".grow")
    dialog = loaded.page.locator("dialog#case")
    assert "Traceback (innermost last; highlighted: your code)" in dialog.inner_text()
    marked = dialog.locator("pre.tb mark.user").all_inner_texts()
    assert len(marked) == 1 and marked[0].startswith("> ")
    assert marked[0].endswith("task.py:4 in answer")
    assert "agentjudge/" in dialog.locator("pre.tb").inner_text()  # library frames stay
    assert loaded.errors == []


def test_comparison_lists_each_flips_reasoning_before_and_after(page: Page) -> None:
    """A judge's flip shows the baseline's reasoning and the current one."""
    page.page.click("#tab-compare")
    exact = page.page.locator("#view-compare details", has_text="exact")
    assert "reasoning: baseline → now" in exact.locator("thead").inner_text()
    row = exact.locator("tbody tr", has_text="c01").inner_text()
    assert "same as expected → expected 'BANANA'" in row

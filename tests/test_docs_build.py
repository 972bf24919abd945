"""The documentation site builds with `mkdocs build --strict` (offline), as `make docs` does.

The build is the slowest docs test, so it runs once, in one test (pytest-xdist may send the
tests of a module to different processes, which would build it again), and every check reads
its output: the theme (mkdocs-material) renders admonitions and highlights code at build time,
the pages load no script, style sheet or font from the network, and the build itself connects
to nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# An audit hook that refuses every connection and name lookup outside this machine: a build
# that would fetch a font, a plugin asset or an inventory fails instead.
_NO_NETWORK = """
import ipaddress, sys

def _local(host):
    if host in (None, "", "localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False

def _guard(event, args):
    if event == "socket.getaddrinfo" and not _local(args[0]):
        raise OSError(f"network access during the docs build: lookup of {args[0]!r}")
    if event == "socket.connect" and isinstance(args[1], tuple) and not _local(args[1][0]):
        raise OSError(f"network access during the docs build: connect to {args[1]!r}")

sys.addaudithook(_guard)
"""
_OFFLINE_BUILD = (
    _NO_NETWORK
    + """
import runpy
sys.argv = ["mkdocs", *sys.argv[1:]]
runpy.run_module("mkdocs", run_name="__main__")
"""
)

# Tags that make a browser fetch a script, a style sheet, a font or a frame.
_FETCHING_TAG = re.compile(r"<(?:script|link|iframe|img|source)\b[^>]*>", re.I)
_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)
_CSS_EXTERNAL = re.compile(r"""(?:@import\s*|url\(\s*)["']?(?:https?:)?//""", re.I)


def _build(out: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _OFFLINE_BUILD, "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # mkdocs-material's banner
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def _check_admonitions_and_highlighting(site: Path) -> None:
    """`!!! note` becomes a note box, not text; code blocks carry Pygments token spans."""
    pages = {page: page.read_text("utf-8") for page in site.rglob("*.html")}
    assert not [str(p) for p, html in pages.items() if "!!! note" in html]
    llm = pages[site / "how-to" / "llm-judges" / "index.html"]
    assert '<div class="admonition note">' in llm
    quickstart = pages[site / "quickstart" / "index.html"]
    assert '<div class="highlight">' in quickstart
    assert '<span class="kn">import</span>' in quickstart  # a keyword token, highlighted


def _check_nothing_loaded_from_the_network(site: Path) -> None:
    """No page or style sheet references an http(s) script, style sheet, font or frame."""
    offending: list[str] = []
    for page in site.rglob("*.html"):
        html = page.read_text("utf-8")
        offending += [f"{page}: {t}" for t in _FETCHING_TAG.findall(html) if _EXTERNAL.search(t)]
        for style in re.findall(r"<style\b[^>]*>(.*?)</style>", html, re.S | re.I):
            offending += [f"{page}: {m}" for m in _CSS_EXTERNAL.findall(style)]
    for sheet in site.rglob("*.css"):
        offending += [f"{sheet}: {m}" for m in _CSS_EXTERNAL.findall(sheet.read_text("utf-8"))]
    assert not offending, offending[:10]


def test_docs_build_strict(tmp_path: Path) -> None:
    """Every page renders, every link and API reference resolves (warnings are errors), without
    network access; admonitions and highlighted code render; the pages fetch nothing remote."""
    _build(tmp_path)
    assert (tmp_path / "how-to" / "trust" / "index.html").is_file()
    _check_admonitions_and_highlighting(tmp_path)
    _check_nothing_loaded_from_the_network(tmp_path)


def test_the_build_guard_refuses_the_network() -> None:
    """The audit hook the build runs under stops a lookup of a remote host (a cheap check)."""
    code = _NO_NETWORK + "import socket\nsocket.getaddrinfo('example.com', 443)\n"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode != 0
    assert "network access during the docs build: lookup of 'example.com'" in proc.stderr

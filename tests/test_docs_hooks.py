"""The docs build's cost hook (docs/hooks/build_cost.py) changes no output, only the CPU spent.

The site it builds is checked whole by tests/test_docs_build.py; here each replacement is
compared with the code it stands in for, in this process and without a build: the search
sections of tricky HTML, the lexers and the formatters' style tables. Importing the hook
patches nothing (it patches when a mkdocs command starts).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pygments.lexers
import pytest
from material.plugins.search import plugin as search
from pygments.formatters.html import HtmlFormatter

HOOK = Path(__file__).resolve().parent.parent / "docs" / "hooks" / "build_cost.py"


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agentjudge_docs_build_cost", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_cost = _hook()

# Every rule of the plugin's parser, and its quirks: headings with and without ids, a heading
# nested in another element, a preface before the first heading, permalinks, excluded blocks
# (nested, and closed by an inner element of the same tag), line-number tables, scripts and
# styles, void tags, whitespace in and out of <pre>, kept tags left empty, stray end tags.
PAGES = [
    "<p>preface</p><h1 id='t'>Title <a class='headerlink' href='#t'>¶</a></h1><p>x</p>",
    "<h2 id='a'>A</h2><p>one\ntwo  <code>c</code></p><p>   </p><ul><li>i</li><li> </li></ul>",
    "<div><h3 id='n'>Nested</h3><p>in</p></div><p>after the div</p><h2>no id</h2><p>z</p>",
    "<div data-search-exclude><p>hidden</p><div>inner</div><p>shown again</p></div><p>o</p>",
    "<table class='x'><tr><td class='linenodiv'><pre>1\n2</pre></td><td><pre>a\n\n  b</pre>"
    "</td></tr></table><script>var s = '<p>';</script><style>p {}</style><br><img src=x>",
    "text <b>bold</b></i> &amp; &lt;tag&gt; <sub>2</sub><sup> </sup>"
    "<h4 id='q'><code>f</code>(<span>x</span>)</h4><pre><code>  x\n\n</code></pre>",
    "<h1 id='top'>Top</h1><pre><span>x</span>\n<span> </span>\n</pre><p>a</p>\n <p>b</p>",
    "<h2 id='d' data-search-exclude>Gone</h2><p>its text</p><h2 id='e'>E</h2><object>o</object>",
]


def _sections(parser_class: Any, html: str) -> list[tuple[object, ...]]:
    parser = parser_class()
    parser.feed(html)
    parser.close()
    return [
        (s.el.tag, s.id, s.depth, s.title, s.text, s.is_excluded(), s is parser.section)
        for s in parser.data
    ]


@pytest.mark.parametrize("html", PAGES)
def test_search_sections_are_the_plugins(html: str) -> None:
    """The counting parser splits a page into the sections the plugin's own parser does, with
    the same titles, texts, ids, depths and exclusions."""
    assert _sections(build_cost.SearchSectionParser, html) == _sections(search.Parser, html)


@pytest.mark.parametrize("name", ["python", "py", "pycon", "bash", "json", "toml", "text"])
def test_lexers_are_pygments(name: str) -> None:
    """The remembered lexer class is the one Pygments finds, built with the given options."""
    lexer = build_cost._get_lexer_by_name(name, stripnl=False)
    expected = pygments.lexers.get_lexer_by_name(name, stripnl=False)
    assert type(lexer) is type(expected)
    assert lexer.options == expected.options
    with pytest.raises(pygments.util.ClassNotFound):
        build_cost._get_lexer_by_name("no-such-language")


def test_style_tables_are_the_formatters() -> None:
    """A formatter given the remembered tables has the ones it computes, per style and prefix;
    each formatter gets its own copies."""
    for options in ({}, {"style": "monokai"}, {"classprefix": "x-"}, {}):
        fresh = HtmlFormatter(**options)
        cached = HtmlFormatter(**options)
        build_cost._create_stylesheet_once(cached)
        assert (cached.ttype2class, cached.class2style) == (fresh.ttype2class, fresh.class2style)
    again = HtmlFormatter()
    build_cost._create_stylesheet_once(again)
    again.class2style.clear()
    build_cost._create_stylesheet_once(cached := HtmlFormatter())
    assert cached.class2style == HtmlFormatter().class2style


def test_importing_the_hook_patches_nothing() -> None:
    """Only a mkdocs command (`on_startup`) swaps the parser, the lexer look-up and the tables."""
    assert search.Parser is not build_cost.SearchSectionParser
    assert HtmlFormatter._create_stylesheet is not build_cost._create_stylesheet_once

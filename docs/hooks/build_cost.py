"""A mkdocs hook: the same site for less CPU (repeated work of the theme's plugins done once).

Three costs of every build that produce nothing new (measured 2026-11-26 on a ~9 s build):

- The search plugin (mkdocs-material's) splits every page into sections with its `Parser` (an
  `html.parser.HTMLParser`). For each tag and each piece of text it asks whether an element it
  skips is open by intersecting two sets of `Element` objects, which compare by tag through
  Python-level ``__eq__``/``__hash__``: ~1.5 million calls, about a third of the ~1.5 s the
  index costs. `SearchSectionParser` keeps the same rules and keeps counts of the open tags
  instead, so each question is a few dictionary look-ups. The index it writes is byte-identical
  (checked on this site, and by tests/test_docs_hooks.py against the plugin's own parser).
- pymdownx.highlight asks Pygments for a lexer by name for every code block and every
  highlighted signature of the API pages (~700), and Pygments finds it by scanning its ~600
  lexers' aliases each time; the class found for a name is kept here (`_lexer_class`).
- Every Pygments HTML formatter (one per block) recomputes the style's token-to-CSS-class tables;
  they depend only on the style and the class prefix, so they are computed once per pair.

Together ~0.8-1 s less CPU per build (`make docs`, tests/test_docs_build.py); every file of the
site is byte-identical. The patches are made when the command starts (`on_startup`), before any
page is read, in the mkdocs process only (importing this module changes nothing).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from html import escape
from typing import Any

import pymdownx.highlight
from material.plugins.search import plugin as search
from pygments.formatters.html import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import find_lexer_class_by_name

__all__ = ["SearchSectionParser", "on_startup"]

_HEADINGS = frozenset(f"h{level}" for level in range(1, 7))
_ALWAYS_SKIPPED = ("script", "style", "object")


class SearchSectionParser(search.Parser):
    """mkdocs-material's search `Parser` (same sections, titles and texts), with the open tags
    counted: "is a skipped element open?" and "is the heading open?" without set intersections.

    The plugin's elements compare by tag, so its ``skip`` set is in effect a set of tags and
    ``el in context`` asks whether an element with that tag is open; `_open` counts the open
    elements per tag and `_skip_tags` mirrors ``skip`` by tag.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._open: defaultdict[str, int] = defaultdict(int)
        self._skip_tags = set(_ALWAYS_SKIPPED)
        self._skipped = 0  # open elements whose tag is in `_skip_tags`

    def _skipping(self) -> bool:
        return self._skipped > 0

    def _target(self) -> list[str]:
        """The section's title while its heading is open, else its text."""
        section = self.section
        return section.title if self._open[section.el.tag] else section.text

    def _skip(self, el: Any) -> None:
        self.skip.add(el)
        if el.tag not in self._skip_tags:
            self._skip_tags.add(el.tag)
            self._skipped += self._open[el.tag]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """An opening tag: a heading with an id starts a section; kept tags are written."""
        attributes = dict(attrs)
        el = search.Element(tag, attributes)
        if tag in search.void:
            return
        self.context.append(el)
        self._open[tag] += 1
        if tag in self._skip_tags:
            self._skipped += 1
        if tag in _HEADINGS and "id" in attributes:
            depth = len(self.context)
            if tag != "h1" and not self.data:
                self.section = search.Section(search.Element("hx"), depth)
                self.data.append(self.section)
            self.section = search.Section(el, depth)
            if self.data:
                self.section.id = attributes["id"]
            self.data.append(self.section)
        if not self.section:
            self.section = search.Section(search.Element("hx"))
            self.data.append(self.section)
        for key, value in attributes.items():
            if key == "data-search-exclude" or (key == "class" and value == "linenodiv"):
                self._skip(el)
                return
        if tag in self.keep and not self._skipping():
            self._target().append(f"<{tag}>")

    def handle_endtag(self, tag: str) -> None:
        """A closing tag: leaves a nested heading's section; empty kept tags are dropped."""
        if not self.context or self.context[-1].tag != tag:
            return
        if self.section.depth > len(self.context):
            for section in reversed(self.data):
                if section.depth <= len(self.context):
                    self.section.depth = float("inf")
                    self.section = section
                    break
        el = self.context.pop()
        self._open[tag] -= 1
        if tag in self._skip_tags:
            self._skipped -= 1
            if tag not in _ALWAYS_SKIPPED:
                self.skip.remove(el)
                self._skip_tags.discard(tag)
                self._skipped -= self._open[tag]
            return
        if tag in self.keep and not self._skipping():
            self._close(self._target(), tag)

    @staticmethod
    def _close(data: list[str], tag: str) -> None:
        """Close ``tag`` in ``data``: drop it with its content when that is only whitespace."""
        index = data.index(f"<{tag}>")
        if any(not piece.isspace() for piece in data[index + 1 :]):
            data.append(f"</{tag}>")
        else:
            del data[index:]

    def handle_data(self, data: str) -> None:
        """Text: into the section's title (permalinks excepted) or text, whitespace collapsed."""
        if self._skipping():
            return
        in_pre = self._open["pre"] > 0
        if not in_pre:
            data = " " if data.isspace() else data.replace("\n", " ")
        if not self.section:
            self.section = search.Section(search.Element("hx"))
            self.data.append(self.section)
        section = self.section
        if self._open[section.el.tag]:
            if not self._open["a"] or not any(
                el.tag == "a" and el.attrs.get("class") == "headerlink" for el in self.context
            ):
                section.title.append(escape(data, quote=False))
        elif data.isspace():
            if not section.text or not section.text[-1].isspace() or in_pre:
                section.text.append(data)
        else:
            section.text.append(escape(data, quote=False))


@functools.cache
def _lexer_class(alias: str) -> type[Lexer]:
    """The Pygments lexer class for a language name (looked up once per name)."""
    return find_lexer_class_by_name(alias)


def _get_lexer_by_name(alias: str, **options: Any) -> Lexer:
    """`pygments.lexers.get_lexer_by_name`, with the class found for a name remembered."""
    return _lexer_class(alias)(**options)


_STYLE_TABLES: dict[tuple[Any, str], tuple[dict[Any, str], dict[str, Any]]] = {}
_create_stylesheet = HtmlFormatter._create_stylesheet


def _create_stylesheet_once(formatter: HtmlFormatter) -> None:
    """The formatter's token-to-class tables, computed once per style and class prefix."""
    key = (formatter.style, formatter.classprefix)
    if key not in _STYLE_TABLES:
        _create_stylesheet(formatter)
        _STYLE_TABLES[key] = (formatter.ttype2class, formatter.class2style)
    token_classes, class_styles = _STYLE_TABLES[key]
    formatter.ttype2class, formatter.class2style = dict(token_classes), dict(class_styles)


def on_startup(command: str, dirty: bool) -> None:
    """Before the build: the search plugin, pymdownx.highlight and Pygments use the above."""
    del command, dirty
    search.Parser = SearchSectionParser
    pymdownx.highlight.get_lexer_by_name = _get_lexer_by_name
    HtmlFormatter._create_stylesheet = _create_stylesheet_once

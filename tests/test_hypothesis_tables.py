"""The UTF-8 table `make test` writes for hypothesis (tests/hypothesis_tables.py) is right and
is the one hypothesis reads."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from hypothesis.internal import charmap
from hypothesis_tables import seed_utf8_table, utf8_intervals


def encodes(point: int) -> bool:
    try:
        chr(point).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_the_intervals_are_the_code_points_utf8_encodes() -> None:
    (low, high), (after, last) = utf8_intervals()[0]
    assert utf8_intervals()[1] == []  # every encodable code point decodes back
    assert (low, high, after, last) == (0, 0xD7FF, 0xE000, sys.maxunicode)
    points = {*range(0, sys.maxunicode + 1, 997), *range(0xD7F0, 0xE010), sys.maxunicode}
    for point in points:
        assert encodes(point) == (low <= point <= high or after <= point <= last), hex(point)


def test_hypothesis_reads_the_table_where_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hypothesis's reader takes what is at the path `seed_utf8_table` writes to, in its form.

    A different table planted there (only ASCII encodable) is what hypothesis answers with; a
    table already in place is left alone.
    """
    path = tmp_path / "unicode_data" / "codec-v2-utf-8.json.gz"
    monkeypatch.setattr(
        charmap,
        "charmap_file",
        lambda name="charmap": tmp_path / "unicode_data" / f"{name}.json.gz",
    )
    assert seed_utf8_table() == path
    with gzip.GzipFile(path) as table:
        assert json.load(table) == [[[0, 0xD7FF], [0xE000, sys.maxunicode]], []]
    with gzip.GzipFile(path, "wb") as table:
        table.write(json.dumps([[[0, 127]], []]).encode())
    assert seed_utf8_table() == path  # kept
    encodable, lossy = charmap.intervals_from_codec.__wrapped__("utf-8")
    assert encodable.intervals == ((0, 127),) and lossy.intervals == ()

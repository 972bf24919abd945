"""The browser report's file: self-contained, compact data, flips, `agentjudge view`'s server."""

from __future__ import annotations

import io
import json
import queue
import re
import shutil
import signal
import socket
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentjudge.harness._cli import main
from agentjudge.harness._html import (
    STATUSES,
    TEXT_LIMIT,
    render_html,
    report_server,
    serve_report,
)
from tests.harness.html_support import TRACEBACK, build_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_runs(tmp_path_factory.mktemp("html"))


def embedded(page: str) -> dict[str, Any]:
    """The JSON blob a page carries."""
    match = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def case(data: dict[str, Any], case_id: str) -> dict[str, Any]:
    """One case's array as a dict keyed by the data's field names."""
    row = next(r for r in data["cases"] if r[0] == case_id)
    return dict(zip(data["fields"], row, strict=False))


def test_report_html_writes_one_file_that_asks_for_nothing(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report --html` writes one file: inline CSS/JS, a CSP forbidding every fetch, no URLs."""
    base, new = runs
    out = tmp_path / "report.html"
    assert main(["report", str(new), "--html", str(out), "--baseline", str(base)]) == 0
    assert f"html report: {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert "default-src 'none'" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert '<link rel="stylesheet"' not in page and "<script src" not in page
    assert "%DATA%" not in page and "/*%JS%*/" not in page


def test_data_holds_cases_statuses_traceback_and_tag_rates(runs: tuple[Path, Path]) -> None:
    """Each case is stored with its verdict status, judgments, traceback; tags get Wilson rates."""
    base, new = runs
    data = embedded(render_html(new, base))
    assert len(data["cases"]) == 10 and data["judges"] == ["exact", "length"]
    boom = case(data, "c08")
    assert STATUSES[boom["status"]] == "task_error"
    assert boom["error"] == "RuntimeError: kaboom" and boom["traceback"] == TRACEBACK
    banana = case(data, "c01")
    exact, length = banana["judgments"]
    assert STATUSES[exact[0]] == "fail" and data["strings"][exact[2]] == "expected 'BANANA'"
    name, passed, message = length[3][0]
    assert (data["strings"][name], passed, data["strings"][message]) == ("short", 1, "5 characters")
    other = data["tags"]["other"]
    assert (other["n"], other["decided"], other["pass_rate"]) == (5, 5, 0.2)
    assert 0 < other["ci95"][0] < 0.2 < other["ci95"][1] < 1


def test_flips_per_judge_name_the_cases_and_the_reason_before(runs: tuple[Path, Path]) -> None:
    """The comparison lists each judge's PASS <-> not PASS flips with the baseline's reasoning."""
    base, new = runs
    data = embedded(render_html(new, base))
    flips = data["baseline"]["flips"]
    assert set(flips) == {"exact"}
    ids = [data["cases"][f[0]][0] for f in flips["exact"]]
    assert ids == ["c01", "c03", "c05"]
    assert {(STATUSES[f[1]], STATUSES[f[2]]) for f in flips["exact"]} == {("pass", "fail")}
    assert {data["strings"][f[3]] for f in flips["exact"]} == {"same as expected"}
    assert len(data["baseline"]["verdict_flips"]) == 3
    assert "baseline" not in embedded(render_html(new))


def test_markup_in_the_data_cannot_end_the_script_or_fill_a_marker(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Text like ``</script>`` or the template's markers in a case stays data."""
    _, new = runs
    copy = tmp_path / "run"
    shutil.copytree(new, copy)
    results = copy / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    rows[1]["output"] = "</script><!-- /*%JS%*/ %DATA% " + "x" * (2 * TEXT_LIMIT)
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    page = render_html(copy)
    assert page.count("</script>") == 2
    output = case(embedded(page), rows[1]["id"])["output"]
    assert output.startswith("</script><!-- /*%JS%*/ %DATA% x")
    assert output.endswith(f"[cut at {TEXT_LIMIT} of {2 * TEXT_LIMIT + 30} characters]")


def test_a_run_without_results_shows_its_summary(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """Only summary.json: the page has the summary and no cases (no error)."""
    _, new = runs
    shutil.copy(new / "summary.json", tmp_path / "summary.json")
    data = embedded(render_html(tmp_path))
    assert data["cases"] == [] and data["results_file"] is None
    assert data["summary"]["judges"].keys() == {"exact", "length"}


def test_report_baseline_without_html_and_missing_runs_are_usage_errors(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--baseline`` alone, or a folder without a summary, exits 2 naming the problem."""
    base, new = runs
    assert main(["report", str(new), "--baseline", str(base)]) == 2
    assert "--baseline needs --html" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--html", str(tmp_path / "x.html")]) == 2
    assert "summary not found" in capsys.readouterr().err
    assert main(["view", str(tmp_path)]) == 2
    assert "summary not found" in capsys.readouterr().err


@pytest.fixture
def served(runs: tuple[Path, Path]) -> Iterator[str]:
    base, new = runs
    server = report_server(render_html(new, base).encode(), 0)
    # shutdown() waits for serve_forever's next poll: 0.5 s by default, at the end of each test
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


def test_view_serves_the_page_on_loopback(served: str) -> None:
    """`agentjudge view`'s server answers / with the page and anything else with 404."""
    with urllib.request.urlopen(served, timeout=10) as response:
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert embedded(response.read().decode())["baseline"]["compared"] is True
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(served + "favicon.ico", timeout=10)
    assert caught.value.code == 404
    caught.value.close()


def test_view_names_a_port_it_cannot_bind(served: str) -> None:
    """A busy port is a ValueError naming it."""
    port = int(served.rsplit(":", 1)[1].strip("/"))
    with pytest.raises(ValueError, match=f"cannot serve on 127.0.0.1:{port}"):
        report_server(b"", port)


def test_view_prints_its_url_serves_and_stops_on_ctrl_c(
    runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve_report` prints the URL, serves the page and returns on Ctrl-C (KeyboardInterrupt).

    Ordered by what happens, not by time, so that no load can break it: the port stays
    reserved until the server binds it (a socket bound with SO_REUSEADDR, never listening,
    which the server may share and no other process can take); the visitor starts when the
    URL is printed (the server listens by then) and sends Ctrl-C once the page came back, so
    while ``serve_forever`` runs; SIGINT raises KeyboardInterrupt here whatever this session
    inherited (a session started in the background has it ignored, and Ctrl-C would never
    come).
    """
    reserved = socket.socket()
    reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    reserved.bind(("127.0.0.1", 0))
    port = reserved.getsockname()[1]
    printed: queue.Queue[str] = queue.Queue()

    class Console(io.StringIO):
        def write(self, text: str) -> int:
            printed.put(text)
            return super().write(text)

    console = Console()
    monkeypatch.setattr(sys, "stdout", console)
    pages: list[bytes] = []

    def visit_then_interrupt() -> None:
        try:
            url = printed.get(timeout=120).split()[2]  # "report at URL (Ctrl-C stops)"
        except queue.Empty:
            return  # nothing printed: serve_report failed, and says so in the main thread
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                pages.append(response.read())
        finally:
            # the line was printed: the main thread is in the try. A real SIGINT, as Ctrl-C
            # sends: it interrupts serve_forever's select (interrupt_main only set a flag,
            # seen when the select's 0.5 s poll ran out)
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    visitor = threading.Thread(target=visit_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        visitor.start()
        serve_report(runs[1], None, port)
    finally:
        signal.signal(signal.SIGINT, previous)
        visitor.join()
        reserved.close()
    assert f"report at http://127.0.0.1:{port}/ (Ctrl-C stops)" in console.getvalue()
    assert pages and b'id="report-data"' in pages[0]

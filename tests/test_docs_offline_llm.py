"""`python -m agentjudge.testing serve` and the how-to that uses it with an LLM-judge suite.

The page (docs/how-to/offline-llm-suite.md) is run as written: the server starts as its own
process from the page's command, the page's files are written and its commands run against
it. The one change is the port: the page's `--port 8765` becomes `--port 0` (a free port, so
parallel test runs on one machine never collide) and `8765` in the later commands becomes the
port the server printed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import DOCS, blocks, shell_commands, write_files

from agentjudge.testing._serve import main

PAGE = DOCS / "how-to" / "offline-llm-suite.md"
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def _env() -> dict[str, str]:
    """A user's shell with agentjudge installed and no model credentials at all."""
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def test_llm_suite_runs_offline_against_the_served_fake_server(tmp_path: Path) -> None:
    """The page's server command serves both provider formats; the suite's two LLM judges
    (OpenAI and Anthropic clients) judge every case PASS with no key; SIGTERM stops the
    server, which counts the requests; the banner is the one the page shows."""
    text = PAGE.read_text(encoding="utf-8")
    assert write_files(text, tmp_path) == ["data.jsonl", "task.py", "judges.py", "agentjudge.toml"]
    serve, *commands = shell_commands(text)
    assert serve.startswith("python -m agentjudge.testing serve --port 8765 ")
    server = subprocess.Popen(
        ["bash", "-c", "exec " + serve.replace("--port 8765", "--port 0")],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = [server.stdout.readline()]
        found = re.search(r"base URL http://127\.0\.0\.1:(\d+)/v1$", banner[0].strip())
        assert found, banner[0]
        port = found[1]
        while banner[-1] and "Ctrl-C stops it" not in banner[-1]:  # "": the server died
            banner.append(server.stdout.readline())
        script = "set -e\n" + "\n".join(c.replace(":8765/", f":{port}/") for c in commands)
        run = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        assert "result: PASSED" in run.stdout
    finally:
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    results = (tmp_path / "runs/offline/results.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in results.splitlines()]
    judged = sorted((r["name"], r["judgment"]["status"]) for row in rows for r in row["results"])
    assert judged == [("claude", "pass")] * 3 + [("gpt", "pass")] * 3
    assert out.rstrip().endswith("stopped after 6 requests")
    shown = next(b.code for b in blocks(text) if b.lang == "text")
    assert "".join(banner) == shown.replace("8765", port)


def test_serve_reports_a_taken_port(capsys: pytest.CaptureFixture[str]) -> None:
    """A port in use is exit code 2 with a message naming it and the way out."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"error: cannot listen on 127.0.0.1:{port}: " in err
    assert "(pick another --port; 0 picks a free one)" in err


@pytest.mark.parametrize("args", [["--port", "70000"], ["--latency", "-1"], ["--latency", "nan"]])
def test_serve_refuses_bad_options(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Out-of-range options are exit code 2 before anything listens."""
    assert main(["serve", *args]) == 2
    assert capsys.readouterr().err.startswith("error: --")

"""Cost in offline runs: the summary's cost block, cost gates, --max-cost, --prices, --dry-run.

End to end: the real CLI in a subprocess, LLM judges calling a FakeModelServer over loopback
HTTP with fixed token usage, priced by a suite price file.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_support import cli_async

from agentjudge.harness import iter_rows
from agentjudge.harness._gates import parse_gate
from agentjudge.testing import FakeModelServer, FakeResponse

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
YES = FakeResponse(text="Answer: YES\nReasoning: fine", usage=USAGE)
CALL_USD = 0.002
"""1,000 input tokens at $1/M plus 100 output tokens at $10/M."""

JUDGES = """
import os
from agentjudge import Cascade, Tier
from agentjudge.judges import LLMJudge
from agentjudge.models import OpenAIChat

URL = os.environ.get("FAKE_URL", "http://127.0.0.1:9/v1")
PROMPT = "Is {{output}} the right answer to {{input}}? Answer YES or NO."


def build():
    return LLMJudge("correct", OpenAIChat("judge-model", base_url=URL, api_key="k"), PROMPT)


def capped():
    model = OpenAIChat("judge-model", base_url=URL, api_key="k")
    return LLMJudge("correct", model, PROMPT, max_tokens=50)


def cascade():
    cheap = LLMJudge("cheap", OpenAIChat("judge-model", base_url=URL, api_key="k"), PROMPT)
    big = LLMJudge("big", OpenAIChat("big-model", base_url=URL, api_key="k"), PROMPT)
    return Cascade([Tier("t1", cheap), Tier("t2", big)])
"""

PRICES = """
as_of = "2026-01-01"
[models."openai:judge-model"]
input = 1.0
output = 10.0
"""

TASK = """
def answer(case):
    return "Paris"
"""


def make_project(folder: Path, n: int = 4, *, suite: str = "", prices: bool = True) -> Path:
    rows = [{"id": f"q{i}", "input": f"capital {i}?", "expected": "Paris"} for i in range(n)]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "judges.py").write_text(textwrap.dedent(JUDGES))
    (folder / "task.py").write_text(textwrap.dedent(TASK))
    (folder / "prices.toml").write_text(textwrap.dedent(PRICES))
    head = 'dataset = "data.jsonl"\ntask = "task:answer"\njudges = "judges:build"\n'
    head += 'prices = "prices.toml"\n' if prices else ""
    (folder / "agentjudge.toml").write_text(head + textwrap.dedent(suite))
    return folder


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FAKE_URL"}
    env["FAKE_URL"] = url
    return env


async def cli(project: Path, url: str, *args: str) -> tuple[int, str, str]:
    """Run ``agentjudge ARGS`` in ``project`` in its own process: (exit code, stdout, stderr)."""
    proc = await cli_async(project, *args, env=_env(url))
    return proc.returncode, proc.stdout, proc.stderr


def summary(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((project / "out" / "summary.json").read_text())
    return data


RUN = ("run", "--out", "out", "--progress", "off")


@pytest.mark.parametrize("workers", [1, 2])
async def test_summary_has_a_cost_block_that_gates_and_the_report_read(
    tmp_path: Path, workers: int
) -> None:
    """summary.json's cost block sums tokens and dollars per judge and model, also with workers."""
    project = make_project(tmp_path, suite='gates = ["cost.usd<=0.01", "cost.tokens<=4400"]\n')
    async with FakeModelServer(default=YES) as server:
        code, out, err = await cli(project, server.base_url, *RUN, "--workers", str(workers))
        assert len(server.requests) == 4
    assert code == 0, err
    cost = summary(project)["cost"]
    assert cost["calls"] == 4
    assert (cost["input_tokens"], cost["output_tokens"]) == (4000, 400)
    assert cost["usd"] == pytest.approx(4 * CALL_USD)
    assert cost["unpriced_calls"] == 0
    assert cost["by_judge"]["correct"]["usd"] == pytest.approx(4 * CALL_USD)
    assert list(cost["by_model"]) == ["openai:judge-model"]
    assert [g["passed"] for g in summary(project)["gates"]] == [True, True]
    assert "cost (judge model calls)" in out and "$0.0080" in out
    code, report, _ = await cli(project, "http://127.0.0.1:9/v1", "report", "out")
    assert code == 0 and "$0.0080" in report


async def test_an_unpriced_model_makes_usd_unknown_and_a_usd_gate_fail(tmp_path: Path) -> None:
    """Without a price, cost.usd is None with unpriced_calls counted, and cost.usd gates fail."""
    project = make_project(tmp_path, suite='gates = ["cost.usd<=5"]\n', prices=False)
    async with FakeModelServer(default=YES) as server:
        code, out, _ = await cli(project, server.base_url, *RUN)
    assert code == 1
    cost = summary(project)["cost"]
    assert (cost["usd"], cost["priced_usd"], cost["unpriced_calls"]) == (None, 0.0, 4)
    assert summary(project)["gates"][0] == {"expr": "cost.usd<=5", "value": None, "passed": False}
    assert "4 unpriced calls" in out


async def test_cascade_costs_are_broken_down_by_tier(tmp_path: Path) -> None:
    """by_tier splits a cascade's cost by tier; escalated cases count in both tiers."""
    project = make_project(tmp_path, n=2)
    unsure = FakeResponse(text="Answer: maybe", usage=USAGE)
    async with FakeModelServer(default=unsure) as server:
        code, _, err = await cli(project, server.base_url, *RUN, "--judges", "judges:cascade")
    assert code in (0, 1), err
    cost = summary(project)["cost"]
    assert set(cost["by_tier"]) <= {"t1", "t2"} and "t1" in cost["by_tier"]
    assert sum(line["calls"] for line in cost["by_tier"].values()) == cost["calls"]


async def test_max_cost_refuses_calls_exits_3_and_resume_runs_only_refused_cases(
    tmp_path: Path,
) -> None:
    """--max-cost stops new calls (ERROR BudgetExhausted rows, exit 3); --resume re-runs those."""
    project = make_project(tmp_path, n=6, suite="concurrency = 4\n")
    async with FakeModelServer(default=YES) as server:
        code, _, err = await cli(project, server.base_url, *RUN, "--max-cost", "0.005")
        assert len(server.requests) == 2  # $0.002 each: a third would pass $0.005
        assert code == 3, err
        assert "budget exhausted" in err and "--resume" in err
        data = summary(project)
        assert data["status"] == "aborted" and data["passed"] is None
        assert data["budget"]["exhausted"] is True and data["budget"]["refused"] == 4
        assert data["budget"]["spent_usd"] == pytest.approx(2 * CALL_USD)
        rows = list(iter_rows(project / "out" / "results.jsonl"))
        assert len(rows) == 6  # never missing: refused judgments are ERROR rows
        refused = [r for r in rows if r["results"][0].get("error_type") == "BudgetExhausted"]
        assert len(refused) == 4
        assert all(r["results"][0]["judgment"]["status"] == "error" for r in refused)

        code, _, err = await cli(project, server.base_url, *RUN, "--resume", "--max-cost", "1")
        assert len(server.requests) == 6  # only the 4 refused cases ran again
    assert code == 0, err
    rows = list(iter_rows(project / "out" / "results.jsonl"))
    assert sorted(r["id"] for r in rows) == [f"q{i}" for i in range(6)]
    assert all(r["results"][0]["judgment"]["status"] == "pass" for r in rows)
    data = summary(project)
    assert data["status"] == "completed" and data["cost"]["usd"] == pytest.approx(6 * CALL_USD)
    assert data["budget"]["spent_usd"] == pytest.approx(4 * CALL_USD)


async def test_max_cost_is_split_across_workers(tmp_path: Path) -> None:
    """With workers = 2 each process gets half of --max-cost, so together they stay under it."""
    project = make_project(tmp_path, n=8)
    async with FakeModelServer(default=YES) as server:
        code, _, err = await cli(
            project, server.base_url, *RUN, "--workers", "2", "--max-cost", "0.009"
        )
        assert len(server.requests) * CALL_USD <= 0.009
    assert code == 3, err
    data = summary(project)
    assert data["budget"]["workers"] == 2 and data["budget"]["refused"] >= 4
    assert len(list(iter_rows(project / "out" / "results.jsonl"))) == 8


async def test_max_cost_holds_with_workers_when_the_first_call_is_cheap(tmp_path: Path) -> None:
    """--workers 2 --max-cost: a cheap first call opens no wave; the bill stays within the limit.

    Each process gets half of the limit and reserves every call's bound (estimated input +
    max_tokens at the model's price) before sending it. A budget that extrapolated from a
    process's first call once let its whole concurrency through at the later calls' price.
    """
    bill: list[float] = []

    def answer(body: Any) -> FakeResponse:
        contents = [m["content"] for m in body["messages"]]
        if any("capital 0?" in c for c in contents):
            tokens_in = tokens_out = 1  # the first case is cheap
        else:  # the others use what their bound allows: the estimated input, max_tokens out
            tokens_in = sum(-(-len(c) // 4) for c in contents)
            tokens_out = body["max_tokens"]
        bill.append(tokens_in * 1e-6 + tokens_out * 1e-5)
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}
        return FakeResponse(text="Answer: YES", usage=usage)

    project = make_project(tmp_path, n=16, suite="concurrency = 8\n")
    args = (*RUN, "--judges", "judges:capped", "--workers", "2", "--max-cost", "0.003")
    async with FakeModelServer(answer) as server:
        code, _, err = await cli(project, server.base_url, *args)
    assert code == 3, err
    assert sum(bill) <= 0.003 + 1e-12  # what the provider billed, both processes together
    assert summary(project)["cost"]["usd"] == pytest.approx(sum(bill))
    assert len(list(iter_rows(project / "out" / "results.jsonl"))) == 16


async def test_dry_run_estimates_without_calling_a_model(tmp_path: Path) -> None:
    """--dry-run prints calls, tokens and cost per judge and model; no request, no file."""
    project = make_project(tmp_path, n=3)
    async with FakeModelServer(default=YES) as server:
        args = (*RUN, "--dry-run", "--judges", "judges:capped", "--json")
        code, out, err = await cli(project, server.base_url, *args)
        assert server.requests == []
    assert code == 0, err
    assert not (project / "out").exists()
    estimate = json.loads(out)
    total = estimate["total"]
    assert (estimate["cases"], total["calls"], total["unknown_calls"]) == (3, 3, 0)
    assert total["output_tokens"] == 3 * 50  # max_tokens
    prompts = [f"Is  the right answer to capital {i}?? Answer YES or NO." for i in range(3)]
    if estimate["tokenizer"] == "chars/4":
        assert total["input_tokens"] == sum(-(-len(p) // 4) for p in prompts)
    expected_usd = (total["input_tokens"] * 1.0 + total["output_tokens"] * 10.0) / 1e6
    assert total["usd"] == pytest.approx(expected_usd)
    assert estimate["by_model"]["openai:judge-model"]["calls"] == 3
    code, text, _ = await cli(project, "http://127.0.0.1:9/v1", *RUN, "--dry-run")
    assert code == 0 and "dry run: 3 cases" in text and "judge correct" in text


async def test_dry_run_counts_every_cascade_tier_and_unpriced_models(tmp_path: Path) -> None:
    """A cascade's tiers are all counted (upper bound); a model without a price has no usd."""
    project = make_project(tmp_path, n=2)
    async with FakeModelServer(default=YES) as server:
        args = (*RUN, "--dry-run", "--judges", "judges:cascade", "--json")
        code, out, err = await cli(project, server.base_url, *args)
        assert server.requests == []
    assert code == 0, err
    estimate = json.loads(out)
    assert estimate["total"]["calls"] == 4
    assert estimate["by_model"]["openai:big-model"]["usd"] is None
    assert estimate["by_model"]["openai:judge-model"]["usd"] > 0
    assert estimate["total"]["usd"] is None
    assert any("every tier" in note for note in estimate["notes"])


async def test_an_invalid_price_file_is_a_usage_error_naming_file_and_field(
    tmp_path: Path,
) -> None:
    """A price with a bad field exits 2 naming the file and field, before any call."""
    project = make_project(tmp_path)
    (project / "prices.toml").write_text('[models."openai:judge-model"]\ninput = -1\noutput = 1\n')
    async with FakeModelServer(default=YES) as server:
        code, _, err = await cli(project, server.base_url, *RUN)
        assert server.requests == []
    assert code == 2
    assert "prices.toml" in err and "input" in err


def test_a_prices_table_in_the_suite_is_checked() -> None:
    """An inline prices table with an unknown field names the setting and the field."""
    from agentjudge.harness import Suite
    from agentjudge.harness._pricing import suite_price_table

    suite = Suite(prices={"openai:x": {"inp": 1.0, "output": 2.0}})
    with pytest.raises(ValueError, match=r"prices\.openai:x.*inp"):
        suite_price_table(suite)


def test_a_prices_table_in_the_suite_takes_numbers_only() -> None:
    """An inline price written as a string or a boolean is refused, naming setting and field."""
    from agentjudge.harness import Suite
    from agentjudge.harness._pricing import suite_price_table

    suite = Suite(prices={"openai:x": {"input": "0.15", "output": True}})
    with pytest.raises(ValueError) as caught:
        suite_price_table(suite)
    message = str(caught.value)
    assert "setting 'prices.openai:x'" in message
    assert "field 'input': a price must be a number of USD, got \"0.15\"" in message
    assert "field 'output': a price must be a number of USD, got true" in message


async def test_a_quoted_price_in_a_prices_file_is_a_usage_error(tmp_path: Path) -> None:
    """--prices with "0.15" exits 2 naming the file, the model and the field; nothing is sent."""
    project = make_project(tmp_path)
    (project / "prices.toml").write_text(
        '[models."openai:judge-model"]\ninput = "0.15"\noutput = 1\n'
    )
    async with FakeModelServer(default=YES) as server:
        code, _, err = await cli(project, server.base_url, *RUN)
        assert server.requests == []
    assert code == 2
    assert "prices.toml" in err and "model 'openai:judge-model' field 'input'" in err


def test_cost_gates_parse_and_unknown_cost_stats_are_refused() -> None:
    """cost.<stat> gates parse; an unknown stat lists the valid ones."""
    assert parse_gate("cost.usd<=5").subject == "cost"
    with pytest.raises(ValueError, match="valid: usd, priced_usd"):
        parse_gate("cost.dollars<=5")


async def test_compare_shows_the_change_in_cost(tmp_path: Path) -> None:
    """agentjudge compare prints both runs' cost and the change."""
    project = make_project(tmp_path, n=2)
    async with FakeModelServer(default=YES) as server:
        assert (await cli(project, server.base_url, *RUN))[0] == 0
        code, _, err = await cli(project, server.base_url, "run", "--out", "out2", "--limit", "1")
        assert code == 0, err
        code, out, _ = await cli(project, server.base_url, "compare", "out", "out2")
        assert len(server.requests) == 3
    assert code == 0
    assert "cost:" in out and "-0.0020" in out


ROUTER_JUDGES = """
import os
from agentjudge.judges import LLMJudge
from agentjudge.models import model_from_string

URL = os.environ.get("FAKE_URL", "http://127.0.0.1:9/v1")


def build():
    model = model_from_string("openrouter:openai/gpt-4o-mini", base_url=URL, api_key="k")
    return LLMJudge("correct", model, "Is {{output}} right? Answer YES or NO.")
"""


async def test_an_openrouter_run_costs_what_each_answer_reported(tmp_path: Path) -> None:
    """No price needed: summary.json's cost is the sum of OpenRouter's reported charges."""
    project = make_project(tmp_path, suite='gates = ["cost.usd<=0.01"]\n', prices=False)
    (project / "judges.py").write_text(textwrap.dedent(ROUTER_JUDGES))
    charged = FakeResponse(text="Answer: YES", usage=USAGE, cost=0.0015)
    async with FakeModelServer(default=charged) as server:
        code, _, err = await cli(project, server.base_url, *RUN)
        assert len(server.requests) == 4
    assert code == 0, err
    cost = summary(project)["cost"]
    assert cost["usd"] == pytest.approx(4 * 0.0015) and cost["unpriced_calls"] == 0
    assert list(cost["by_model"]) == ["openrouter:openai/gpt-4o-mini"]

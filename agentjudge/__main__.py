"""``python -m agentjudge``: the command line (see `agentjudge.harness`)."""

from __future__ import annotations

from agentjudge.harness._cli import cli

if __name__ == "__main__":
    cli()

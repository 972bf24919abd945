"""``python -m agentjudge.testing serve``: `FakeModelServer` as a stand-alone process.

It lets an LLM-judge suite run offline from the command line: start the server in one
terminal, point the model clients at it (``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``) and run
``agentjudge run`` in another. Every request in every provider format the server speaks
(OpenAI chat completions, Anthropic messages, both batch APIs) is answered with the same
scripted text. It runs until Ctrl-C or SIGTERM and then says how many requests it answered.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import TextIO

import anyio

from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

__all__ = ["ServeError", "main", "serve"]

DEFAULT_ANSWER = "Answer: YES\nReasoning: the fake model server approves every answer."


class ServeError(Exception):
    """The server could not start (the port is taken, the address is not this machine's)."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m agentjudge.testing``."""
    parser = argparse.ArgumentParser(
        prog="python -m agentjudge.testing",
        description="Test doubles of agentjudge, from the command line.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve_cmd = commands.add_parser(
        "serve",
        help="run FakeModelServer (OpenAI and Anthropic formats) on 127.0.0.1 until Ctrl-C",
        description=(
            "Serve scripted model answers over HTTP on a loopback port: OpenAI chat "
            "completions (POST /v1/chat/completions), Anthropic messages (POST /v1/messages) "
            "and both batch APIs. Point clients at the printed base URL."
        ),
    )
    serve_cmd.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    serve_cmd.add_argument(
        "--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)"
    )
    serve_cmd.add_argument(
        "--answer",
        default=DEFAULT_ANSWER,
        help="the text of every answer (default: 'Answer: YES' with a reasoning line); "
        "a JSON object is sent as structured output to judges that ask for one",
    )
    serve_cmd.add_argument(
        "--latency", type=float, default=0.0, help="seconds to wait before each answer"
    )
    return parser


def banner(server: FakeModelServer, answer: str) -> str:
    """What ``serve`` prints once listening: the base URL and how to point clients at it."""
    base = server.base_url
    return "\n".join(
        [
            f"agentjudge fake model server: base URL {base}",
            f"  OpenAI chat completions  POST {base}/chat/completions  (batches: {base}/batches)",
            f"  Anthropic messages       POST {base}/messages  (batches: {base}/messages/batches)",
            f"every request is answered {answer!r}",
            f"point clients at it: export OPENAI_BASE_URL={base} ANTHROPIC_BASE_URL={base}",
            "(no API key is needed for a server on this machine); Ctrl-C stops it",
        ]
    )


async def serve(
    *, host: str, port: int, answer: str, latency: float = 0.0, out: TextIO | None = None
) -> int:
    """Serve until SIGINT or SIGTERM; returns the number of requests answered.

    Raises:
        ServeError: The server could not listen on ``host:port``.

    Args:
        host: The address to listen on.
        port: The port (0 picks a free one).
        answer: The text of every answer.
        latency: Seconds to wait before each answer.
        out: Where the banner and the closing line go (default stdout).
    """
    stream = out if out is not None else sys.stdout
    server = FakeModelServer(FakeResponse(text=answer, latency=latency), host=host, port=port)
    async with AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(server)
        except OSError as exc:
            raise ServeError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} "
                "(pick another --port; 0 picks a free one)"
            ) from exc
        print(banner(server, answer), file=stream, flush=True)
        await _until_stopped()
        received = len(server.received)
    noun = "request" if received == 1 else "requests"
    print(f"agentjudge fake model server: stopped after {received} {noun}", file=stream)
    return received


async def _until_stopped() -> None:
    try:
        receiver = anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)
        with receiver as signals:
            async for _ in signals:
                return
    except NotImplementedError:  # pragma: no cover - Windows: Ctrl-C raises KeyboardInterrupt
        await anyio.sleep_forever()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 when the port cannot be bound)."""
    args = build_parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"error: --port must be 0-65535, got {args.port}", file=sys.stderr)
        return 2
    if not (math.isfinite(args.latency) and args.latency >= 0):
        print(f"error: --latency must be >= 0, got {args.latency}", file=sys.stderr)
        return 2
    try:
        anyio.run(
            lambda: serve(host=args.host, port=args.port, answer=args.answer, latency=args.latency)
        )
    except ServeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - only where signal receivers are unsupported
        pass
    return 0

"""The harness tests' processes come from one forkserver per test process.

Runs with ``workers`` > 1 in this process fork their workers from multiprocessing's forkserver,
and `cli_support` forks its CLI runs from that same server (a process has one). Whichever
starts it first decides what it imports: the parallel runs' list (`_WORKER_PRELOAD`) is made
`cli_support`'s, which holds it, so a CLI run never imports the CLI, the judges and the model
clients itself because a parallel run happened to start the server.
"""

from __future__ import annotations

from cli_support import PRELOAD

from agentjudge.harness import _processes

_processes._WORKER_PRELOAD[:] = PRELOAD

"""``bench_online.py --http``'s /health prober: a process of its own, standard library only.

Usage: ``python benchmarks/_health_probe.py HOST PORT EVERY_S``. On one keep-alive connection
it sends ``GET /health`` every ``EVERY_S`` seconds until its stdin is closed, then prints one
JSON line: a list of ``[began, milliseconds]`` pairs (``began`` on `time.perf_counter`, the
system's monotonic clock, so the parent can keep only the samples taken during its load).

It runs in its own process so that the load generator's work (and its event loop) never sits
between a probe and its answer: what it measures is the service.
"""

from __future__ import annotations

import http.client
import json
import select
import sys
from time import perf_counter


def probe(host: str, port: int, every: float) -> list[list[float]]:
    """Probe until stdin closes; the samples."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    samples: list[list[float]] = []
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        began = perf_counter()
        conn.request("GET", "/health")
        response = conn.getresponse()
        response.read()
        samples.append([began, (perf_counter() - began) * 1000])
        if select.select([sys.stdin], [], [], every)[0] and not sys.stdin.readline():
            return samples


if __name__ == "__main__":
    host, port, every = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    print(json.dumps(probe(host, port, every)))

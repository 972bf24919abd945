"""Imported last by `cli_support`'s forkserver: what CLI runs would each do again, done once.

Every CLI run (and every worker of a run with ``--workers``) is a fork of that server, so what
the server did before forking is done for all of them. Besides the modules of `PRELOAD`:

- the modules the runs with batch mode or a Bedrock judge import on first use (httpx's own
  transport, which the batch APIs use, and botocore's request signer: ~0.05 s and ~0.1 s of
  CPU per run);
- the batch APIs' TLS context (`agentjudge.models._batch`: loading the CA bundle costs ~0.05 s
  of CPU; the product makes it once per process and keys it by the trust settings of the
  environment, so a run whose ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` differs still makes its own);
- ``gc.freeze()``, as the zygote (tests/zygote_support.py) does: the preloaded objects move to
  the collector's permanent generation, so a child's collections skip them instead of walking
  (and so copying, page by page) the server's whole heap.

A module that is not installed is skipped (as the forkserver skips a preload it cannot import).
"""

from __future__ import annotations

import contextlib
import gc
import importlib

_FIRST_USE = (
    "httpcore",
    "agentjudge.models._batch",
    "agentjudge.models._bedrock",
    "botocore.auth",
    "botocore.awsrequest",
    "botocore.credentials",
)

for _name in _FIRST_USE:
    with contextlib.suppress(ImportError):
        importlib.import_module(_name)

with contextlib.suppress(ImportError):
    from agentjudge.models._batch import _tls_context

    _tls_context()

gc.freeze()

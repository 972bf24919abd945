"""Two files a child process writes its stdout and stderr to, read back once it ended.

Shared by the test helpers that start processes without `subprocess` pipes
(tests/harness/cli_support.py forks them from a multiprocessing forkserver,
tests/zygote_support.py from a preloaded interpreter): the child opens the paths itself.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["OutputFiles"]


class OutputFiles:
    """An empty ``out`` and ``err`` file in a new temporary folder.

    Args:
        prefix: The folder's name prefix.
    """

    def __init__(self, prefix: str) -> None:
        folder = tempfile.mkdtemp(prefix=prefix)
        self.out, self.err = os.path.join(folder, "out"), os.path.join(folder, "err")
        for path in (self.out, self.err):
            Path(path).touch()

    def read_and_remove(self) -> tuple[str, str]:
        """What was written to ``(out, err)``; the files and their folder are removed."""
        texts = [
            Path(p).read_text(encoding="utf-8", errors="replace") for p in (self.out, self.err)
        ]
        for path in (self.out, self.err):
            os.unlink(path)
        os.rmdir(os.path.dirname(self.out))
        return texts[0], texts[1]

"""``python -m agentjudge.testing serve --port 8765 --answer "..."``: see `_serve`."""

from __future__ import annotations

from agentjudge.testing._serve import main

if __name__ == "__main__":
    raise SystemExit(main())

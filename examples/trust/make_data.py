"""Regenerate this example's data: ``python examples/trust/make_data.py`` (deterministic).

A labelled sample of 1,000 pass/fail cases (``calibration.jsonl``: 600, ``test.jsonl``: 400,
each row with its ``human`` label) and the logs of two judges that saw every case
(``cheap.jsonl``, ``strong.jsonl``, in the `ReplayJudge` format): each judge is right with
probability equal to its confidence (well calibrated); the cheap one is often unsure
(confidence 0.5-1.0, $0.0001 a call), the strong one rarely (0.75-1.0, $0.01 a call).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLIP = {"pass": "fail", "fail": "pass"}


def _judge_row(rng: random.Random, case_id: str, truth: str, low: float, cost: float) -> dict:
    confidence = round(low + (1.0 - low) * rng.random(), 4)
    status = truth if rng.random() < confidence else FLIP[truth]
    return {"id": case_id, "status": status, "confidence": confidence, "cost_usd": cost}


def main() -> None:
    """Write the four JSONL files next to this script."""
    rng = random.Random(2026)
    files: dict[str, list[dict]] = {n: [] for n in ("calibration", "test", "cheap", "strong")}
    for i in range(1000):
        case_id, truth = f"t{i:04d}", rng.choice(["pass", "fail"])
        split = "calibration" if i < 600 else "test"
        files[split].append({"id": case_id, "input": f"claim {i}", "human": truth})
        files["cheap"].append(_judge_row(rng, case_id, truth, 0.5, 0.0001))
        files["strong"].append(_judge_row(rng, case_id, truth, 0.75, 0.01))
    for name, rows in files.items():
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (HERE / f"{name}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

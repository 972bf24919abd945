"""The suite: what to run (dataset, task, judges) and how (concurrency, timeouts, gates).

A suite comes from an ``agentjudge.toml`` file (`load_suite`), from command-line flags, or from
Python (``Suite(dataset=..., task=..., judges=...)``). Relative paths in a suite file, and
``file.py:attr`` references, resolve against the file's folder, which is also put first on
``sys.path`` so ``task = "task:answer"`` imports ``task.py`` from beside the suite file.

```toml
dataset = "data.jsonl"                # also .csv, .json (an array), .yaml
task = "task:answer"                 # module:function, or "openai:<model>"
judges = "judges:cascade"            # module:attr -> a judge, list, dict, Jury, Cascade or factory
concurrency = 16                     # cases in flight
task_timeout = 30.0                  # seconds per case
judge_timeout = 60.0                 # seconds per judge attempt
gates = ["citation_precision.mean>=0.9", "errors.rate<=0.02"]
allow_errors = false                 # true: a run with no judged case still passes its gates
batch = false                        # true: LLM judges' calls go through provider batch APIs
calibration = false                  # true: the cascade judges every case with every tier
thresholds = "thresholds.json"       # a cascade's calibrated thresholds (agentjudge calibrate)
```
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from agentjudge.exceptions import AgentJudgeError
from agentjudge.harness._formats import DatasetFormat
from agentjudge.harness._text import did_you_mean

__all__ = ["RunConfigError", "Suite", "load_suite"]

JudgesRef = str | list[str] | dict[str, str]


class RunConfigError(AgentJudgeError, ValueError):
    """The run cannot start: a missing or invalid setting, file or output folder."""


class Suite(BaseModel):
    """A validated suite configuration (see the module docstring for the file format)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = None
    """Label of the suite; the default output folder is ``.agentjudge/<name>``."""
    dataset: Path | None = None
    """The dataset file (JSONL, CSV, a JSON array or YAML; see ``dataset_format``)."""
    dataset_format: DatasetFormat | None = None
    """``"jsonl"``, ``"csv"``, ``"json"`` or ``"yaml"``; None (the default) chooses by the
    dataset's extension (``.csv``, ``.json``, ``.yaml``/``.yml``; anything else is JSONL)."""
    task: str | None = None
    """``module:function`` (or ``file.py:function``), or ``openai:<model>``."""
    task_url: str | None = None
    """Base URL of the OpenAI-compatible endpoint an ``openai:<model>`` task calls."""
    judges: JudgesRef | None = None
    """``module:attr`` of a judge, a list / dict of judges, a Jury, a Cascade, or a factory
    returning one; or a list / table of such references."""
    concurrency: int = Field(default=16, ge=1)
    """Cases in flight at once."""
    task_timeout: float | None = Field(default=60.0, gt=0, allow_inf_nan=False)
    """Seconds per case for the task (None: no limit)."""
    workers: int = Field(default=1, ge=1)
    """Processes that run cases: 1 runs them in this process; N > 1 starts N worker processes
    (each running ``concurrency`` cases at once) for CPU-bound tasks and judges, while this
    process reads the dataset and writes the results."""
    backend: Literal["local", "ray"] = "local"
    """Where the worker slots run: ``"local"`` (worker processes on this machine) or ``"ray"``
    (one Ray actor per worker slot, on a local Ray instance or the cluster at
    ``ray_address``; needs ``agentjudge[ray]``, see the "Scale out" how-to)."""
    ray_address: str | None = None
    """With ``backend = "ray"``: the cluster to join (e.g. ``"ray://head:10001"`` or
    ``"auto"``); None starts a local Ray instance for the run."""
    ray_num_cpus: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """CPUs each Ray actor reserves (``backend = "ray"``)."""
    ray_num_gpus: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """GPUs each Ray actor reserves (``backend = "ray"``)."""
    ray_runtime_env: dict[str, Any] | None = None
    """Ray ``runtime_env`` of the actors (e.g. ``{"working_dir": ".", "pip": [...]}``) to ship
    the task's and judges' code and dependencies to the cluster."""
    judge_timeout: float | None = Field(default=60.0, gt=0, allow_inf_nan=False)
    """Seconds per judge attempt (None: no limit)."""
    judge_concurrency: int = Field(default=64, ge=1)
    """Judge calls in flight across all cases."""
    judge_attempts: int = Field(default=3, ge=1)
    """Attempts per judge call (1 = no retries)."""
    limits: dict[str, int] = Field(default_factory=dict)
    """Per-resource caps on judge calls (e.g. ``{"openai:gpt-4o-mini" = 8}``)."""
    sampling: dict[str, float] = Field(default_factory=dict)
    """Per judge name, the fraction of cases it runs on."""
    gates: list[str] = Field(default_factory=list)
    """Gates that decide the exit code, e.g. ``"correctness.mean>=0.9"``."""
    baseline: Path | None = None
    """A previous run's ``summary.json`` to compare against."""
    max_regression: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Largest allowed drop of any judge's mean against the baseline."""
    max_flips: int | None = Field(default=None, ge=0)
    """Largest allowed number of cases that passed in the baseline and no longer pass."""
    allow_errors: bool = False
    """Accept a run that cannot be trusted: by default a completed run fails (exit 1) when no
    case got a PASS or FAIL from any judge, or when some judge errored on every judgment, gates
    or not. True reports those checks in ``summary.json`` without failing the run."""
    out: Path | None = None
    """Output folder (default ``.agentjudge/<name>`` in the working directory)."""
    limit: int | None = Field(default=None, ge=0)
    """Run only the first N cases of the dataset."""
    seed: int = 0
    """Seed for judge sampling and the bootstrap confidence intervals."""
    max_cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """US dollars this invocation's judge model calls may spend (an `agentjudge.Budget`;
    split evenly across ``workers``). When it runs out the run ends "aborted" (exit 3)."""
    prices: Path | dict[str, dict[str, Any]] | None = None
    """Model prices for this run: a price file (``.json`` / ``.toml``, the shape of the
    shipped ``prices.json``) or a table ``{"provider:model" = {input = ..., output = ...}}``
    (USD per million tokens, numbers only: the price fields are checked strictly, so ``"0.15"``
    and ``true`` are refused); they override the shipped prices while the run lasts."""
    batch: bool = False
    """Send the LLM judges' model calls through the providers' batch APIs (about half the
    price, minutes to hours of latency; see ``agentjudge.harness._batch_mode``)."""
    batch_retry_online: bool = False
    """In batch mode, send a request that expired or errored inside a batch once more online
    instead of making its judgment ERROR (needs ``batch = true``)."""
    batch_poll_interval: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    """In batch mode, seconds before the second poll of a batch (doubling up to 300 s)."""
    batch_linger: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """In batch mode, seconds without a new model call after which the calls waiting are
    submitted as one batch (each cascade tier's calls come after the previous tier's answers,
    so a run waits this long once per tier)."""
    calibration: bool = False
    """Run the suite's cascade without short-circuiting: every tier judges every case and is
    recorded, for ``agentjudge calibrate`` (see ``agentjudge.harness._calibrate``)."""
    thresholds: Path | None = None
    """A thresholds file ``agentjudge calibrate`` wrote: the suite's cascade runs with its
    non-final tiers ``STOP_ON_CONFIDENCE`` and its final tier ``FINAL`` at those thresholds."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    """Folder relative paths and ``file.py`` references resolve against."""
    source: Path | None = Field(default=None, exclude=True)
    """The suite file this came from, if any."""

    @field_validator("task", "task_url")
    @classmethod
    def _not_blank(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be blank")
        return v

    @field_validator("batch_retry_online")
    @classmethod
    def _needs_batch(cls, v: bool, info: ValidationInfo) -> bool:
        if v and not info.data.get("batch"):
            raise ValueError("needs batch = true (or --batch)")
        return v

    @field_validator("thresholds")
    @classmethod
    def _not_calibrating(cls, v: Path | None, info: ValidationInfo) -> Path | None:
        if v is not None and info.data.get("calibration"):
            raise ValueError("a calibration run takes no thresholds (calibration = true)")
        return v

    @field_validator("gates")
    @classmethod
    def _gates_parse(cls, v: list[str]) -> list[str]:
        if not v:
            return v
        # Imported by the first suite with gates: a worker process or Ray actor gets its suite
        # unpickled (no validation) and never evaluates a gate (~15 ms of CPU per interpreter).
        from agentjudge.harness._gates import parse_gate

        for expr in v:
            parse_gate(expr)
        return v

    @property
    def out_of_process(self) -> bool:
        """True when cases run outside this process (``workers > 1`` or the Ray backend)."""
        return self.workers > 1 or self.backend == "ray"

    @property
    def calibrated(self) -> bool:
        """True when ``calibration`` or ``thresholds`` is set (the cascade is rebuilt for it)."""
        return self.calibration or self.thresholds is not None

    def path(self, value: Path) -> Path:
        """``value`` resolved against `base_dir` when relative."""
        return value if value.is_absolute() else self.base_dir / value

    @property
    def label(self) -> str:
        """The suite's name, else its folder's name, else the dataset's stem."""
        if self.name:
            return self.name
        if self.source is not None:
            return self.source.resolve().parent.name
        if self.dataset is not None:
            return self.dataset.stem
        return "run"

    def with_overrides(self, **overrides: Any) -> Suite:
        """A copy with the non-None ``overrides`` applied (validated again).

        Relative paths among the overrides must already be resolved by the caller (flags are
        relative to the working directory, not the suite file).
        """
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        data["base_dir"] = self.base_dir
        data["source"] = self.source
        return Suite.model_validate(data)


def describe_validation_error(exc: ValidationError, where: str, text: str | None = None) -> str:
    """One line per problem: ``<where> line N: setting 'x': message``.

    Args:
        exc: The validation error.
        where: The suite file, or "command line".
        text: The suite file's text, to name the line each setting is on (when found).
    """
    valid = [k for k in Suite.model_fields if k not in ("base_dir", "source")]
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        line = _line_of(text, str(err["loc"][0])) if text is not None and err["loc"] else None
        at = where if line is None else f"{where} line {line}"
        if err["type"] == "extra_forbidden":
            lines.append(
                f"{at}: unknown setting {loc!r}{did_you_mean(loc, valid)} "
                f"(valid settings: {', '.join(valid)})"
            )
        else:
            message = err["msg"].removeprefix("Value error, ")
            lines.append(f"{at}: setting {loc!r}: {message}")
    return "\n".join(lines)


def _line_of(text: str, key: str) -> int | None:
    """The 1-based line of the TOML file ``text`` where the top-level ``key`` is set."""
    name = re.escape(key)
    pattern = re.compile(rf"""^\s*(?:["']?{name}["']?\s*[=.]|\[\s*["']?{name}["']?\s*[].])""")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return number
    return None


def load_suite(path: str | Path) -> Suite:
    """Read and validate an ``agentjudge.toml`` suite file.

    Raises:
        ValueError: the file is missing or is not valid TOML (line and column named), or a
            setting is unknown or invalid (the setting named).
    """
    file = Path(path)
    if file.is_dir():
        file = file / "agentjudge.toml"
    try:
        text = file.read_text(encoding="utf-8")
        data: Mapping[str, Any] = tomllib.loads(text)
    except FileNotFoundError:
        raise ValueError(f"suite file not found: {file}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: not valid UTF-8 ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{file}: invalid TOML: {exc}") from None
    base = file.resolve().parent
    for key in ("base_dir", "source"):
        if key in data:
            raise ValueError(f"{file}: unknown setting {key!r}")
    try:
        return Suite.model_validate({**data, "base_dir": base, "source": file.resolve()})
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc, str(file), text)) from None

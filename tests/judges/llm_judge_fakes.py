"""Test doubles for the LLM judge tests: a scripted ModelClient and a scripted Runner."""

from __future__ import annotations

import json
from typing import Any

from agentjudge.judges._score import RunnerResult
from agentjudge.models._types import ModelRequest, ModelResponse, Usage

Script = str | dict[str, Any] | ModelResponse | BaseException


class FakeModel:
    """A ModelClient that records requests and answers from a script (then `default`)."""

    def __init__(self, *script: Script, name: str = "fake:judge", default: Script = "ok") -> None:
        self.name = name
        self.requests: list[ModelRequest] = []
        self._script = list(script)
        self._default = default

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def prompt(self) -> str:
        """The user message of the last request."""
        return self.requests[-1].messages[-1].content

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        item = self._script.pop(0) if self._script else self._default
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ModelResponse):
            return item
        usage = Usage(input_tokens=12, output_tokens=5)
        if isinstance(item, dict):
            return ModelResponse(text=json.dumps(item), parsed=item, model="fake-1", usage=usage)
        return ModelResponse(text=item, model="fake-1", usage=usage, finish_reason="stop")


class FakeRunner:
    """A Runner that records (input, schema) calls and answers from a script."""

    def __init__(self, *script: RunnerResult | BaseException | str | dict[str, Any]) -> None:
        self.calls: list[tuple[str, dict[str, Any] | None]] = []
        self._script = list(script)

    async def run(self, input: str, output_schema: dict[str, Any] | None = None) -> RunnerResult:
        self.calls.append((input, output_schema))
        item = self._script.pop(0) if self._script else {"score": 1.0, "reasoning": "fine"}
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, RunnerResult):
            return item
        if isinstance(item, dict):
            return RunnerResult(json.dumps(item), parsed=item)
        return RunnerResult(item)

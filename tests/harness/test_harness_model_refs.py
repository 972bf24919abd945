"""Model task references (``"<provider>:<model>"``) are decided by the provider registry."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from agentjudge.harness import ModelTask, RunConfigError, Suite
from agentjudge.harness._run import resolve_task
from agentjudge.models import OpenAIChat
from agentjudge.models._registry import PROVIDERS


def _close(task: object) -> None:
    assert isinstance(task, ModelTask)
    anyio.run(task.aclose)


def test_unknown_provider_is_a_config_error_not_a_module_import(tmp_path: Path) -> None:
    """'mistral:mistral-large-latest' names the known providers and imports no 'mistral'."""
    (tmp_path / "mistral_m14.py").write_text("IMPORTED = True\n", encoding="utf-8")
    suite = Suite(task="mistral_m14:mistral-large-latest", base_dir=tmp_path)
    with pytest.raises(RunConfigError) as caught:
        resolve_task(suite)
    message = str(caught.value)
    assert "unknown model provider 'mistral_m14'" in message
    assert "known providers: anthropic, azure" in message
    assert "mistral_m14" not in sys.modules


def test_model_ids_with_colons_and_dots_are_model_references(tmp_path: Path) -> None:
    """'olama:llama3.1:8b' (an unknown provider) is refused naming the known providers."""
    with pytest.raises(RunConfigError, match="known providers: anthropic, azure"):
        resolve_task(Suite(task="olama:llama3.1:8b", base_dir=tmp_path))


def test_provider_prefix_is_case_insensitive_as_in_model_from_string(tmp_path: Path) -> None:
    """'OpenAI:gpt-4o-mini' is a model task in the harness, as it is for model_from_string."""
    task = resolve_task(
        Suite(task="OpenAI:gpt-4o-mini", task_url="http://127.0.0.1:9/v1", base_dir=tmp_path)
    )
    assert isinstance(task, ModelTask)
    assert task.name == "openai:gpt-4o-mini"
    _close(task)


def test_a_registered_provider_is_a_task_prefix_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider added to the registry is known to the harness without another list."""
    monkeypatch.setitem(PROVIDERS, "local", OpenAIChat)
    task = resolve_task(
        Suite(task="local:my_model", task_url="http://127.0.0.1:9/v1", base_dir=tmp_path)
    )
    assert isinstance(task, ModelTask)
    assert isinstance(task.model, OpenAIChat)
    assert task.model.model == "my_model"
    _close(task)


def test_python_references_still_load_as_modules(tmp_path: Path) -> None:
    """'module:function' and 'file.py:function' references are not mistaken for models."""
    (tmp_path / "answer_m14.py").write_text("def answer(case):\n    return 1\n", encoding="utf-8")
    for ref in ("answer_m14:answer", "answer_m14.py:answer"):
        task = resolve_task(Suite(task=ref, base_dir=tmp_path))
        assert callable(task)
        assert not isinstance(task, ModelTask)


def test_a_missing_task_module_mentions_the_model_providers(tmp_path: Path) -> None:
    """A task module that does not import says which providers a model reference may use."""
    with pytest.raises(RunConfigError) as caught:
        resolve_task(Suite(task="no_such_module_m14:answer", base_dir=tmp_path))
    message = str(caught.value)
    assert "cannot import module 'no_such_module_m14'" in message
    assert "provider must be one of anthropic, azure, bedrock, deepseek" in message

"""The provider registry: OpenAI-compatible presets, Azure OpenAI and entry-point providers.

Every client is exercised over real loopback HTTP against `FakeModelServer`; the entry-point
test installs a real distribution (a ``.dist-info`` folder on ``sys.path``), no mocks.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from agentjudge.core import Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.harness import ModelTask, Suite
from agentjudge.harness._batch_mode import BatchMode
from agentjudge.models import (
    AzureOpenAIChat,
    BatchCollector,
    ModelRequest,
    OpenAICompatible,
    OpenAIPreset,
    RetryPolicy,
    known_providers,
    model_from_string,
)
from agentjudge.models._registry import PROVIDERS
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

PRESETS = sorted(name for name, entry in PROVIDERS.items() if isinstance(entry, OpenAIPreset))
HOSTED = [name for name in PRESETS if PROVIDERS[name].key_required]  # type: ignore[union-attr]
LOCAL = [name for name in PRESETS if name not in HOSTED]
FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.02)
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
    "additionalProperties": False,
}
AZURE_ENV = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "OPENAI_API_VERSION")


def ask(**fields: Any) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="Grade this."),), **fields)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PRESETS:
        preset = PROVIDERS[name]
        assert isinstance(preset, OpenAIPreset)
        monkeypatch.delenv(preset.api_key_env, raising=False)
        monkeypatch.delenv(f"{name.upper()}_BASE_URL", raising=False)
    for var in AZURE_ENV:
        monkeypatch.delenv(var, raising=False)


# -- presets ------------------------------------------------------------------------------------


def test_the_required_presets_are_registered() -> None:
    """Every preset the issue names is a registry entry (and so a harness task prefix)."""
    wanted = {"mistral", "groq", "together", "fireworks", "deepseek", "openrouter", "xai"}
    wanted |= {"ollama", "vllm", "lmstudio", "llamacpp"}
    assert wanted <= set(PRESETS)
    assert wanted <= set(known_providers())


@pytest.mark.parametrize("provider", PRESETS)
def test_a_preset_builds_a_client_named_after_its_prefix(provider: str) -> None:
    """'<preset>:<model>' builds an OpenAICompatible at the preset's URL, keeping the prefix."""
    preset = PROVIDERS[provider]
    assert isinstance(preset, OpenAIPreset)
    model = model_from_string(f"{provider}:some-model:7b")
    assert isinstance(model, OpenAICompatible)
    assert model.name == f"{provider}:some-model:7b"
    assert model.model == "some-model:7b"
    assert model.base_url == preset.base_url.rstrip("/")
    assert model.url == f"{preset.base_url.rstrip('/')}/chat/completions"


@pytest.mark.parametrize("provider", HOSTED)
def test_a_hosted_preset_without_its_key_names_the_variable(provider: str) -> None:
    """missing_key names the preset's own variable (GROQ_API_KEY...), never OPENAI_API_KEY."""
    preset = PROVIDERS[provider]
    assert isinstance(preset, OpenAIPreset)
    model = model_from_string(f"{provider}:m")
    assert model.missing_key == f"{preset.api_key_env} is not set"
    assert model_from_string(f"{provider}:m", api_key="k-123456789").missing_key is None


@pytest.mark.parametrize("provider", LOCAL)
def test_a_local_preset_needs_no_key_even_on_another_host(provider: str) -> None:
    """Local servers take no key: none is missing, on localhost or at a base_url elsewhere."""
    assert model_from_string(f"{provider}:m").missing_key is None
    remote = model_from_string(f"{provider}:m", base_url="http://gpu-box.internal:9000/v1")
    assert remote.missing_key is None


async def test_a_hosted_preset_sends_its_key_and_reads_structured_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """groq: GROQ_API_KEY as bearer token, base_url= override, json_schema answer parsed."""
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test-123456")
    async with (
        FakeModelServer(FakeResponse(json={"score": 3})) as server,
        model_from_string("groq:llama-3.1-8b-instant", base_url=server.base_url) as model,
    ):
        response = await model.complete(ask(response_schema=SCHEMA))
    assert response.parsed == {"score": 3}
    received = server.received[0]
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer gsk-test-123456"
    assert received.json["model"] == "llama-3.1-8b-instant"
    assert received.json["response_format"]["type"] == "json_schema"


async def test_a_local_preset_sends_no_key_and_reads_its_url_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ollama: OLLAMA_BASE_URL moves it; no authorization header is sent without a key."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        monkeypatch.setenv("OLLAMA_BASE_URL", server.base_url)
        async with model_from_string("ollama:llama3.1") as model:
            response = await model.complete(ask())
    assert response.text == "PASS"
    assert "authorization" not in server.received[0].headers
    assert model.name == "ollama:llama3.1"


async def test_a_preset_retries_a_429_like_the_openai_client() -> None:
    """Rate-limit handling is OpenAIChat's: a 429 with Retry-After is retried, then answered."""
    async with FakeModelServer(FakeResponse(text="ok")) as server:
        server.enqueue(FakeResponse(status=429, headers={"retry-after-ms": "1"}))
        async with model_from_string(
            "together:m", base_url=server.base_url, api_key="tg-123456789", retry=FAST
        ) as model:
            response = await model.complete(ask())
    assert response.text == "ok"
    assert response.attempts == 2


def test_a_preset_client_pickles_with_its_provider() -> None:
    """Worker processes get the same provider, URL and key variable (instance configuration)."""
    model = model_from_string("mistral:mistral-small-latest")
    copy = pickle.loads(pickle.dumps(model))
    assert copy.name == "mistral:mistral-small-latest"
    assert copy.base_url == "https://api.mistral.ai/v1"
    assert copy.missing_key == "MISTRAL_API_KEY is not set"


def test_a_preset_client_can_be_built_directly() -> None:
    """OpenAICompatible('m', provider='vllm') uses the registry's preset; unknown ones list them."""
    assert OpenAICompatible("m", provider="vllm").base_url == "http://localhost:8000/v1"
    with pytest.raises(ValueError, match=r"not an OpenAI-compatible preset.*groq"):
        OpenAICompatible("m", provider="openai")


def test_batch_mode_takes_only_presets_with_a_batch_api(tmp_path: Path) -> None:
    """ollama has no batch API: BatchCollector refuses it and --batch sends it online."""
    local = model_from_string("ollama:m")
    with pytest.raises(TypeError, match="no batch API"):
        BatchCollector(local, state_path=tmp_path / "s.json")
    groq = model_from_string("groq:m", api_key="gsk-123456789")
    mode = BatchMode([local, groq], tmp_path, retry_online=False, poll_interval=1.0)
    assert [client for client, _ in mode.pairs] == [groq]
    assert "'ollama:m'" in mode.warnings[0]


# -- Azure OpenAI --------------------------------------------------------------------------------


async def test_azure_posts_to_the_deployment_with_the_api_key_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """azure:<deployment>: endpoint from AZURE_OPENAI_ENDPOINT, api-version, api-key header."""
    async with FakeModelServer(FakeResponse(json={"score": 9})) as server:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-123456")
        monkeypatch.setenv("OPENAI_API_VERSION", "2024-06-01")
        async with model_from_string("azure:my-gpt4o") as model:
            assert isinstance(model, AzureOpenAIChat)
            response = await model.complete(ask(response_schema=SCHEMA))
    assert response.parsed == {"score": 9}
    assert model.name == "azure:my-gpt4o"
    received = server.received[0]
    assert received.path == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-06-01"
    assert received.headers["api-key"] == "azure-key-123456"
    assert "authorization" not in received.headers


async def test_azure_entra_token_is_a_bearer_token_and_is_redacted() -> None:
    """azure_ad_token= is sent as Authorization: Bearer, needs no key, and never shows."""
    token = "eyJ0eXAiOiJKV1QiLCJhbGciOi.entra-token"
    async with FakeModelServer(FakeResponse(status=401, text=f"bad token {token}")) as server:
        model = AzureOpenAIChat("dep", base_url=server.url, azure_ad_token=token)
        assert model.missing_key is None
        async with model:
            with pytest.raises(ModelHTTPError) as caught:
                await model.complete(ask())
    assert server.received[0].headers["authorization"] == f"Bearer {token}"
    assert "api-key" not in server.received[0].headers
    assert token not in str(caught.value)
    assert token not in repr(model)


def test_azure_configuration_errors_name_the_variables() -> None:
    """No endpoint is a ValueError naming AZURE_OPENAI_ENDPOINT; no key names its variable."""
    with pytest.raises(ValueError, match="AZURE_OPENAI_ENDPOINT"):
        model_from_string("azure:dep")
    model = model_from_string("azure:dep", base_url="https://res.openai.azure.com")
    assert model.missing_key == "AZURE_OPENAI_API_KEY is not set"
    assert "api-version=2024-10-21" in model.url


# -- entry points --------------------------------------------------------------------------------


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: str, module: str) -> None:
    """Install a distribution 'agentjudge-plugin-demo' into tmp_path and put it on sys.path."""
    info = tmp_path / "agentjudge_plugin_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: agentjudge-plugin-demo\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[agentjudge.providers]\n{entries}", encoding="utf-8")
    (tmp_path / "agentjudge_plugin_demo.py").write_text(module, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "agentjudge_plugin_demo", raising=False)


PLUGIN = """
from typing import ClassVar
from agentjudge.models import OpenAIChat, OpenAIPreset

PRESET = OpenAIPreset("https://api.democloud.example/v1", "DEMO_CLOUD_KEY")

class DemoChat(OpenAIChat):
    provider: ClassVar[str] = "democlass"
    api_key_env: ClassVar[str] = "DEMO_CLASS_KEY"

NOT_A_PROVIDER = 42
"""


async def test_an_installed_entry_point_provider_works_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A preset and a class registered under agentjudge.providers work like built-ins."""
    monkeypatch.delenv("DEMO_CLOUD_KEY", raising=False)
    _install(
        tmp_path,
        monkeypatch,
        "democloud = agentjudge_plugin_demo:PRESET\ndemoclass = agentjudge_plugin_demo:DemoChat\n",
        PLUGIN,
    )
    assert {"democloud", "democlass"} <= set(known_providers())
    preset_client = model_from_string("democloud:m1")
    assert preset_client.name == "democloud:m1"
    assert preset_client.base_url == "https://api.democloud.example/v1"
    assert preset_client.missing_key == "DEMO_CLOUD_KEY is not set"
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        model_from_string(
            "democlass:m2", base_url=server.base_url, api_key="demo-123456789"
        ) as model,
    ):
        assert type(model).__name__ == "DemoChat"
        response = await model.complete(ask())
    assert response.text == "PASS"
    assert model.name == "democlass:m2"
    from agentjudge.harness._run import resolve_task

    task = resolve_task(
        Suite(task="DemoCloud:m3", task_url="http://127.0.0.1:9/v1", base_dir=tmp_path)
    )
    assert isinstance(task, ModelTask)
    assert task.name == "democloud:m3"
    await task.aclose()


def test_a_broken_entry_point_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry point that is not a provider, or does not import, names itself in the error."""
    _install(
        tmp_path,
        monkeypatch,
        "demonumber = agentjudge_plugin_demo:NOT_A_PROVIDER\n"
        "demomissing = agentjudge_plugin_demo_gone:X\n",
        PLUGIN,
    )
    with pytest.raises(ValueError, match=r"demonumber.*not an HTTPModelClient subclass"):
        model_from_string("demonumber:m")
    with pytest.raises(ValueError, match=r"demomissing.*failed to load"):
        model_from_string("demomissing:m")


def test_a_built_in_prefix_wins_over_an_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin named 'openai' cannot take over the built-in client."""
    _install(tmp_path, monkeypatch, "openai = agentjudge_plugin_demo:PRESET\n", PLUGIN)
    assert type(model_from_string("openai:m", api_key="sk-123456789")).__name__ == "OpenAIChat"

"""Secrets never leave a model client: reprs, errors, results (issue 12, item 18)."""

from __future__ import annotations

import base64
import traceback
from typing import Any

import httpx
import pytest

from agentjudge import Evaluator, Status
from agentjudge.core import Context, Message
from agentjudge.exceptions import ModelHTTPError
from agentjudge.judges import LLMJudge
from agentjudge.models import AnthropicMessages, ModelRequest, OpenAIChat
from agentjudge.models._secrets import MIN_SECRET_CHARS, REDACTED, Secrets
from agentjudge.testing._fake_server import FakeModelServer, FakeResponse

KEY = "sk-live-0123456789abcdef"
REQUEST = ModelRequest(messages=(Message(role="user", content="Grade this."),))


def _with_userinfo(url: str, userinfo: str) -> str:
    return url.replace("http://", f"http://{userinfo}@", 1)


def _everything(exc: BaseException) -> str:
    """The exception as a log or a span would record it: message, causes and traceback."""
    return "".join(traceback.format_exception(exc))


async def test_key_echoed_in_a_401_body_is_redacted_from_the_exception() -> None:
    """A 401 body echoing the API key shows [REDACTED] in the message, excerpt and chain."""
    echo = FakeResponse(status=401, text=f"Incorrect API key provided: {KEY}.")
    async with (
        FakeModelServer(echo) as server,
        OpenAIChat("m", base_url=server.base_url, api_key=KEY) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert "Incorrect API key provided: [REDACTED]." in str(caught.value)
    assert KEY not in caught.value.body_excerpt
    assert KEY not in _everything(caught.value)


async def test_key_echoed_in_a_401_body_is_redacted_from_the_judge_result() -> None:
    """Through an Evaluator, the ERROR result of an LLMJudge carries [REDACTED], not the key."""
    echo = FakeResponse(status=401, text=f"bad key {KEY}")
    async with (
        FakeModelServer(echo) as server,
        OpenAIChat("m", base_url=server.base_url, api_key=KEY) as model,
    ):
        [result] = await Evaluator(LLMJudge("j", model, "{{output}}")).evaluate(Context(output="a"))
    assert result.judgment is not None and result.judgment.status is Status.ERROR
    assert "bad key [REDACTED]" in result.judgment.reasoning
    assert KEY not in result.model_dump_json()


async def test_anthropic_key_echoed_by_retried_statuses_is_redacted_from_every_cause() -> None:
    """A 500 echoing x-api-key, retried until exhausted: no message in the chain shows it."""
    echo = FakeResponse(status=500, text=f"upstream saw x-api-key={KEY}")
    async with (
        FakeModelServer(echo) as server,
        AnthropicMessages("m", base_url=server.base_url, api_key=KEY, retry=None) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert "x-api-key=[REDACTED]" in str(caught.value)
    assert KEY not in _everything(caught.value)


async def test_credential_headers_are_redacted_too() -> None:
    """Values of credential headers given with headers= are redacted from error texts."""
    echo = FakeResponse(
        status=400, text="rejected token Bearer hdr-tok-42 and api-key az-0123456789"
    )
    async with (
        FakeModelServer(echo) as server,
        OpenAIChat(
            "m",
            base_url=server.base_url,
            api_key="",
            headers={"Authorization": "Bearer hdr-tok-42", "api-key": "az-0123456789"},
        ) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert "hdr-tok-42" not in str(caught.value)
    assert "az-0123456789" not in str(caught.value)
    assert "rejected token [REDACTED] and api-key [REDACTED]" in str(caught.value)


def test_repr_shows_neither_the_key_nor_url_credentials() -> None:
    """repr() of a client hides the API key and the user:password of its base_url."""
    model = OpenAIChat("m", base_url="https://alice:pa55word@llm.example/v1", api_key="")
    anthropic = AnthropicMessages("m", api_key=KEY)
    assert repr(model) == "OpenAIChat('m', base_url='https://llm.example/v1')"
    assert model.base_url == "https://llm.example/v1"
    assert KEY not in repr(anthropic)


async def test_url_credentials_are_sent_as_basic_auth() -> None:
    """user:password@ in base_url becomes an Authorization: Basic header; the request works."""
    async with FakeModelServer(FakeResponse(text="PASS")) as server:
        url = _with_userinfo(server.base_url, "alice:pa%40ss")
        async with OpenAIChat("m", base_url=url, api_key="") as model:
            assert (await model.complete(REQUEST)).text == "PASS"
    sent = server.received[0].headers["authorization"]
    assert sent == "Basic " + base64.b64encode(b"alice:pa@ss").decode()


async def test_url_password_echoed_back_is_redacted() -> None:
    """A body echoing the base_url password (or the Basic token) shows [REDACTED]."""
    token = base64.b64encode(b"alice:hunter2-secret").decode()
    echo = FakeResponse(status=403, text=f"user alice with hunter2-secret ({token}) denied")
    async with FakeModelServer(echo) as server:
        url = _with_userinfo(server.base_url, "alice:hunter2-secret")
        async with AnthropicMessages("m", base_url=url, api_key=KEY) as model:
            with pytest.raises(ModelHTTPError) as caught:
                await model.complete(REQUEST)
    text = str(caught.value)
    assert "hunter2-secret" not in text and token not in text
    assert "user alice with [REDACTED] ([REDACTED]) denied" in text


def test_url_credentials_plus_an_api_key_is_a_clear_error() -> None:
    """Credentials in the URL and an OpenAI api_key both want Authorization: a clear ValueError."""
    with pytest.raises(ValueError, match="carries credentials") as caught:
        OpenAIChat("m", base_url="https://bob:t0ps3cret@llm.example/v1", api_key=KEY)
    assert "t0ps3cret" not in str(caught.value) and KEY not in str(caught.value)
    assert "pass api_key='' to send none" in str(caught.value)


def test_bad_base_url_error_hides_credentials() -> None:
    """A base_url with a wrong scheme is refused without echoing its password."""
    with pytest.raises(ValueError, match="must start with http") as caught:
        OpenAIChat("m", base_url="ftp://bob:t0ps3cret@llm.example/v1")
    assert "t0ps3cret" not in str(caught.value)
    assert "[REDACTED]@llm.example" in str(caught.value)


async def test_transport_error_text_holding_the_key_is_redacted() -> None:
    """A transport error whose text holds the key (e.g. from a proxy) is raised redacted."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"proxy refused Bearer {KEY}", request=request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with OpenAIChat(
        "m", base_url="https://llm.example/v1", api_key=KEY, client=http, retry=None
    ) as model:
        with pytest.raises(httpx.ConnectError) as caught:
            await model.complete(REQUEST)
    await http.aclose()
    assert str(caught.value) == "proxy refused [REDACTED]"
    assert KEY not in _everything(caught.value)


async def test_transport_error_whose_cause_holds_the_key_is_raised_without_the_cause() -> None:
    """A transport error chained to an exception holding the key is raised with no chain."""

    def handler(request: httpx.Request) -> httpx.Response:
        try:
            raise OSError(f"tunnel closed for Bearer {KEY}")
        except OSError as inner:
            raise httpx.ConnectError("proxy tunnel failed", request=request) from inner

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with OpenAIChat(
        "m", base_url="https://llm.example/v1", api_key=KEY, client=http, retry=None
    ) as model:
        with pytest.raises(httpx.ConnectError, match="proxy tunnel failed") as caught:
            await model.complete(REQUEST)
    await http.aclose()
    assert KEY not in _everything(caught.value)


class _SigningChat(OpenAIChat):
    """A provider whose ``_post`` hook does its own async work first (as Bedrock signs)."""

    async def _post(self, poster: Any, content: bytes, headers: Any) -> Any:
        request = httpx.Request("POST", self.url)
        raise httpx.ConnectError(f"signer refused Bearer {KEY}", request=request)


async def test_a_transport_error_from_the_post_hook_itself_is_redacted() -> None:
    """The POST is awaited in `_once`, which redacts: also what a ``_post`` hook raises itself.

    (Before, only errors of the poster, inside the base ``_post``, were redacted.)
    """
    async with (
        FakeModelServer(FakeResponse(text="PASS")) as server,
        _SigningChat("m", base_url=server.base_url, api_key=KEY, retry=None) as model,
    ):
        with pytest.raises(httpx.ConnectError) as caught:
            await model.complete(REQUEST)
        assert server.requests == []
    assert str(caught.value) == "signer refused [REDACTED]"
    assert KEY not in _everything(caught.value)


@pytest.mark.parametrize("dummy", ["k", "x", "EMPTY", "none", "sk-no-key-required"])
async def test_a_dummy_key_leaves_error_texts_intact(dummy: str) -> None:
    """A short or placeholder key (local servers) is not redacted: the words stay readable."""
    body = f"Incorrect API key provided: {dummy}. Check your key; the lookup key is {dummy}."
    async with (
        FakeModelServer(FakeResponse(status=401, text=body)) as server,
        OpenAIChat("m", base_url=server.base_url, api_key=dummy) as model,
    ):
        with pytest.raises(ModelHTTPError) as caught:
            await model.complete(REQUEST)
    assert body in str(caught.value)
    assert REDACTED not in _everything(caught.value)


def test_redaction_starts_at_the_documented_length() -> None:
    """Values of MIN_SECRET_CHARS characters are redacted everywhere; shorter ones never."""
    text = "token abcdefgh, again abcdefgh; short abcdefg; Bearer k okay"
    long_value = "abcdefgh"[:MIN_SECRET_CHARS]
    assert Secrets([long_value]).redact(text) == (
        "token [REDACTED], again [REDACTED]; short abcdefg; Bearer k okay"
    )
    assert Secrets(["abcdefg"], {"Authorization": "Bearer k"}).redact(text) == text
    assert not Secrets(["k", "EMPTY", None, ""], {"x-api-key": "none"})

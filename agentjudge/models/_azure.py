"""`AzureOpenAIChat`: chat completions of an Azure OpenAI deployment.

Configured the way the official ``openai.AzureOpenAI`` client is: ``AZURE_OPENAI_ENDPOINT``
(the resource, ``https://<resource>.openai.azure.com``), ``AZURE_OPENAI_API_KEY`` (sent in
the ``api-key`` header) and ``OPENAI_API_VERSION``; or a Microsoft Entra ID token
(``azure_ad_token=``, sent as a bearer token) instead of the key. Requests go to
``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``; the body and
the answer are OpenAI's, so everything else (structured output, usage, logprobs) is `OpenAIChat`.
"""

from __future__ import annotations

import os
from typing import ClassVar, Unpack
from urllib.parse import quote

from agentjudge.models._batch_api import BatchAPI, OpenAIBatchAPI
from agentjudge.models._openai import OpenAIChat
from agentjudge.models._options import ClientKeywords

__all__ = ["DEFAULT_AZURE_API_VERSION", "AzureBatchAPI", "AzureOpenAIChat"]

DEFAULT_AZURE_API_VERSION = "2024-10-21"
"""The ``api-version`` used when neither ``api_version=`` nor ``OPENAI_API_VERSION`` is set (a
generally available data-plane version that supports JSON-schema structured output)."""


class AzureBatchAPI(OpenAIBatchAPI):
    """The OpenAI Batch API as Azure serves it: ``{endpoint}/openai/...?api-version=...``.

    Lines and the batch name ``/chat/completions`` as their endpoint (no ``/v1``).
    """

    endpoint = "/chat/completions"
    api_version = DEFAULT_AZURE_API_VERSION
    """The ``api-version`` query parameter (the client's)."""

    def url(self, path: str) -> str:
        """``{endpoint}/openai{path}?api-version=...``."""
        return f"{self.base_url}/openai{path}?api-version={quote(self.api_version, safe='')}"


class AzureOpenAIChat(OpenAIChat):
    """A client for one Azure OpenAI deployment (``model_from_string("azure:<deployment>")``).

    Args:
        model: The deployment name (what Azure routes on; the client's name is
            ``"azure:<deployment>"``).
        api_version: The ``api-version`` query parameter (default ``OPENAI_API_VERSION``, else
            `DEFAULT_AZURE_API_VERSION`).
        azure_ad_token: A Microsoft Entra ID access token, sent as ``Authorization: Bearer``
            instead of the ``api-key`` header; never shown (reprs and errors redact it).
        strict_schema: As for `OpenAIChat`.
        **options: The options every client shares (see `ClientOptions`); ``base_url`` is the
            resource endpoint (default ``AZURE_OPENAI_ENDPOINT``), ``api_key`` the key
            (default ``AZURE_OPENAI_API_KEY``).

    Raises:
        ValueError: No endpoint: neither ``base_url=`` nor ``AZURE_OPENAI_ENDPOINT``.
    """

    provider: ClassVar[str] = "azure"
    base_url_env: ClassVar[str] = "AZURE_OPENAI_ENDPOINT"
    api_key_header: ClassVar[str] = "api-key"
    api_key_env: ClassVar[str] = "AZURE_OPENAI_API_KEY"
    default_base_url: ClassVar[str] = ""

    def __init__(
        self,
        model: str,
        *,
        api_version: str | None = None,
        azure_ad_token: str | None = None,
        strict_schema: bool = True,
        **options: Unpack[ClientKeywords],
    ) -> None:
        if not options.get("base_url") and not os.environ.get(self.base_url_env):
            raise ValueError(
                f"azure:{model} needs the Azure OpenAI resource endpoint: set "
                f"{self.base_url_env} (https://<resource>.openai.azure.com) or pass base_url="
            )
        self.api_version = (
            api_version or os.environ.get("OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION
        )
        self.azure_ad_token = azure_ad_token or None
        super().__init__(model, strict_schema=strict_schema, **options)

    @property
    def url(self) -> str:
        """``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``."""
        deployment = quote(self.model, safe="")
        version = quote(self.api_version, safe="")
        return (
            f"{self.base_url}/openai/deployments/{deployment}/chat/completions"
            f"?api-version={version}"
        )

    def batch_api(self) -> BatchAPI | None:
        """Azure OpenAI's Batch API (``/openai/files`` + ``/openai/batches``, ``api-version``).

        The requests go to this client's deployment, which must be a batch deployment (Azure's
        "Global Batch" or "Data Zone Batch" type); a standard deployment's batch is refused by
        Azure, and that error reaches every request of the batch.
        """
        api = AzureBatchAPI.of(self)
        api.api_version = self.api_version
        return api

    @property
    def missing_key(self) -> str | None:
        """None with an Entra ID token; else ``"AZURE_OPENAI_API_KEY is not set"`` and the like."""
        if self.azure_ad_token:
            return None
        return super().missing_key

    def auth_headers(self) -> dict[str, str]:
        """The Entra ID token as a bearer token, else the key in ``api-key``."""
        if self.azure_ad_token:
            return {"authorization": f"Bearer {self.azure_ad_token}"}
        return super().auth_headers()

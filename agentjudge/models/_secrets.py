"""Keeping credentials out of every text a model client lets out.

One helper, `Secrets`, knows a client's secret strings (the API key, the password and the
``user:password`` pair of a base URL, the values of credential-bearing headers and the
``Authorization`` values built from them) and replaces each occurrence with ``[REDACTED]``.
The clients pass every text built from a response body, a URL or a transport error through it
before it reaches an exception, and from there results, spans and logs.

Only values that can be secrets are redacted (`can_be_secret`): at least `MIN_SECRET_CHARS`
(8) characters and not a well-known placeholder key (`PLACEHOLDER_KEYS`: ``"EMPTY"``,
``"none"``, ``"sk-no-key-required"``...). Local servers are commonly given dummy keys such as
``"x"`` or ``"k"``; replacing those everywhere would mangle ordinary words of every error text
("Incorrect API [REDACTED]ey") while hiding nothing. A provider's real keys are far longer.

`split_credentials` takes ``user:password@`` out of a base URL, so the URL itself (shown in
reprs, hints and transport errors) never carries them; the client sends them as HTTP Basic
authentication instead.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "MIN_SECRET_CHARS",
    "PLACEHOLDER_KEYS",
    "REDACTED",
    "Secrets",
    "basic_authorization",
    "can_be_secret",
    "is_local_url",
    "is_sensitive_header",
    "mask_url",
    "missing_key_reason",
    "split_credentials",
]

REDACTED = "[REDACTED]"
"""What every secret is replaced with."""

MIN_SECRET_CHARS = 8
"""Shorter values are never redacted: no real credential is that short, words are."""

PLACEHOLDER_KEYS = frozenset(
    {
        "dummy",
        "empty",
        "lm-studio",
        "n/a",
        "no-key",
        "none",
        "not-needed",
        "null",
        "ollama",
        "placeholder",
        "sk-no-key-required",
        "unused",
        "x",
    }
)
"""Dummy keys local servers are given (compared case-insensitively); never redacted."""

_SENSITIVE_HEADER = re.compile(r"auth|key|token|secret|password|cookie|credential", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\s+(\S+)$")

E = TypeVar("E", bound=BaseException)


def is_sensitive_header(name: str) -> bool:
    """True for a header whose value is a credential (authorization, x-api-key, cookie...)."""
    return bool(_SENSITIVE_HEADER.search(name))


def can_be_secret(value: str | None) -> bool:
    """True when ``value`` can be a secret worth redacting (see the module notes).

    It must have at least `MIN_SECRET_CHARS` characters (surrounding blanks not counted) and
    not be one of `PLACEHOLDER_KEYS`.
    """
    if not value:
        return False
    value = value.strip()
    return len(value) >= MIN_SECRET_CHARS and value.lower() not in PLACEHOLDER_KEYS


def is_local_url(url: str) -> bool:
    """True when ``url`` names this machine: ``localhost`` (``*.localhost``) or a loopback IP.

    Servers there (Ollama, vLLM, llama.cpp, a test double) commonly take no API key.
    """
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def missing_key_reason(
    env: str, key: str | None, base_url: str, headers: Mapping[str, str]
) -> str | None:
    """``"<env> is not set"`` (or ``"is empty"``) for a client that has no key but needs one.

    None when ``key`` is set, when ``headers`` hold a credential (`is_sensitive_header`) or
    when ``base_url`` is on this machine (`is_local_url`). The harness refuses to start a run
    while a model client of its task or judges reports a missing key.
    """
    if key or is_local_url(base_url):
        return None
    if any(value and is_sensitive_header(name) for name, value in headers.items()):
        return None
    return f"{env} is {'empty' if key == '' else 'not set'}"


def basic_authorization(user: str, password: str) -> str:
    """The ``Authorization`` value for HTTP Basic authentication."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return f"Basic {token}"


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without ``user:password@``, and the (percent-decoded) credentials it carried.

    Returns:
        ``(url, None)`` when the URL carries no userinfo.
    """
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, (unquote(user), unquote(password))


def mask_url(url: str) -> str:
    """``url`` with any ``user:password@`` shown as ``[REDACTED]@`` (for error messages)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    if "@" not in authority:
        return url
    return f"{scheme}://{REDACTED}@{authority.rpartition('@')[2]}{slash}{tail}"


class Secrets:
    """The secret strings of one client, and the redaction of any text that might hold them.

    Args:
        values: Secret strings; those that cannot be secrets (`can_be_secret`: None, short
            ones, placeholders) are ignored.
        headers: Headers whose sensitive values (see `is_sensitive_header`) are secrets too,
            both whole (``"Bearer abc..."``) and without their scheme (``"abc..."``), when the
            part without the scheme can be a secret.
    """

    __slots__ = ("_values",)

    def __init__(
        self, values: Iterable[str | None] = (), headers: Mapping[str, str] | None = None
    ) -> None:
        found = {v for v in values if v is not None and can_be_secret(v)}
        for name, value in (headers or {}).items():
            if not is_sensitive_header(name) or not value:
                continue
            scheme = _SCHEME.match(value.strip())
            credential = scheme.group(1) if scheme else value
            if can_be_secret(credential):
                found.update((value, credential))
        # longest first, so a secret containing another is replaced whole
        self._values = tuple(sorted(found, key=len, reverse=True))

    def __repr__(self) -> str:
        return f"Secrets({len(self._values)} hidden)"

    def __bool__(self) -> bool:
        return bool(self._values)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``."""
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def _leaks(self, exc: BaseException) -> bool:
        """True when the text of ``exc`` or of any exception it chains to holds a secret."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if self.redact(str(current)) != str(current):
                return True
            current = current.__cause__ or current.__context__
        return False

    def scrub(self, exc: E) -> E:
        """``exc`` itself when no text in its chain holds a secret, else a redacted copy.

        The copy has the same type and attributes but no traceback, cause or context (those
        could repeat the secret); raise it ``from None``.
        """
        if not self or not self._leaks(exc):
            return exc
        clean = copy.copy(exc)
        clean.args = tuple(self.redact(a) if isinstance(a, str) else a for a in exc.args)
        return clean
